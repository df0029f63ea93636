"""The default kernel's geometry check: does the step a draw needs move with a coordinate?

``sample(target)`` runs ``lahmc(target)``; on a funnel (Neal's, or a centred
hierarchical model's ``log τ``) one adapted step cannot suit both the neck and the
mouth, and ``lahmc`` never reaches the neck. :class:`GeometrySwitch` tells the two
apart from the first :data:`PROBE_STEPS` steps after warm-up (``docs/design.md``
§12.1), at no gradient beyond one per draw it reads:

* at each draw ``x``, the **local step scale** ``s(x) = log₂(ε ‖∇E(x)‖_{M⁻¹} / √d)``
  (the adapted ``ε`` and inverse mass ``M⁻¹``): the level centre of
  :class:`~ladder_mcmc.hamiltonian.gradient_level.GradientLevelLaw` with ``c = 1``;
* ``ρ = max_i |ρ_S(s, x_i)|``, the largest Spearman rank correlation between ``s`` and
  a coordinate, over the probe's draws pooled over chains.

On a funnel the scale is set by one coordinate (``v``, ``log τ``): ``ρ`` is near 1. On
a Gaussian ``s`` follows the distance from the mode, which no coordinate's value orders
(``ρ ≈ 0`` by symmetry); on the suite's other posteriors ``ρ ≤ 0.37``
(``benchmarks/results/hard.md``). At ``ρ ≥`` :data:`THRESHOLD` the run switches to
``span_lahmc(target, n_steps=8, beta=1.0)``
(:func:`~ladder_mcmc.hamiltonian.span_step.span_lahmc`), the setting measured on the
hard models.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.hamiltonian.span_step import span_lahmc
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.models.parameters import parameters_of
from ladder_mcmc.validation import positive_int

#: steps after warm-up whose draws the check reads (they stay the run's first draws
#: when the kernel is kept)
PROBE_STEPS = 200
#: the rank correlation at and above which the run switches to ``span_lahmc``
THRESHOLD = 0.6
#: what ``span_lahmc`` keeps fixed after a switch (``ε`` and the mass adapted)
SPAN_SETTINGS = {"n_steps": 8, "beta": 1.0}


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks along axis 0 (ties broken by order: the draws are continuous)."""
    order = np.argsort(values, axis=0, kind="stable")
    ranks = np.empty_like(order, dtype=float)
    np.put_along_axis(ranks, order, np.arange(values.shape[0], dtype=float)[:, None], axis=0)
    return ranks


def scale_correlation(
    target: Any, positions: np.ndarray, step_size: float, inverse_mass: Any
) -> tuple[float, int]:
    """``(ρ, i)``: the largest ``|Spearman ρ(s, x_i)|`` over coordinates and its ``i``
    (module docstring); ``(0, 0)`` with fewer than 3 finite draws.

    Parameters
    ----------
    target : Target
        Its ``grad`` is evaluated at every draw (one gradient per draw).
    positions : array (draws, chains, dim) or (n, dim)
    step_size : float
        ``ε``.
    inverse_mass : array (dim,) or (dim, dim), or None (the identity)
    """
    x = np.asarray(positions, dtype=float)
    x = x.reshape(-1, x.shape[-1])
    dim = x.shape[1]
    with np.errstate(all="ignore"):
        grad = np.asarray(target.grad(x), dtype=float)
        if inverse_mass is None:
            quad = np.sum(grad * grad, axis=1)
        elif np.ndim(inverse_mass) == 1:
            quad = np.sum(grad * grad * np.asarray(inverse_mass), axis=1)
        else:
            quad = np.einsum("ni,ij,nj->n", grad, np.asarray(inverse_mass), grad)
        s = np.log2(step_size * np.sqrt(quad) / np.sqrt(dim))
    finite = np.isfinite(s) & np.all(np.isfinite(x), axis=1)
    if finite.sum() < 3:
        return 0.0, 0
    rs = _ranks(s[finite][:, None])[:, 0]
    rx = _ranks(x[finite])
    rs, rx = rs - rs.mean(), rx - rx.mean(axis=0)
    with np.errstate(all="ignore"):
        rho = np.abs(rx.T @ rs) / np.sqrt(np.sum(rx * rx, axis=0) * np.sum(rs * rs))
    rho = np.where(np.isfinite(rho), rho, 0.0)
    i = int(np.argmax(rho))
    return float(rho[i]), i


def _as_threshold(value: Any) -> float:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not (ok and 0 < value <= 1):
        raise ValueError(f"threshold must be a number in (0, 1], got {value!r}")
    return float(value)


@attrs.frozen(eq=False)
class GeometrySwitch:
    """``sample``'s ``switch`` for ``lahmc(target)``: after warm-up, the first
    ``probe_steps`` draws decide whether the run goes on with the adapted ``lahmc`` or
    switches to ``span_lahmc(target, n_steps=8, beta=1.0)`` (module docstring).

    Parameters
    ----------
    target : Target
    probe_steps : int
        Steps after warm-up that the check reads.
    threshold : float in (0, 1]
        The rank correlation at which the run switches.
    """

    target: Any
    probe_steps: int = attrs.field(
        default=PROBE_STEPS, converter=lambda v: positive_int("probe_steps", v)
    )
    threshold: float = attrs.field(default=THRESHOLD, converter=_as_threshold)
    #: the check evaluates the gradient at each draw it reads (counted as warm-up's)
    gradients_per_draw: int = attrs.field(default=1, init=False)

    def decide(self, kernel: Ladder, positions: np.ndarray, warm: Any) -> tuple[Any, dict]:
        """``(kernel to switch to or None, record)`` from the probe's ``positions``
        (draws, chains, dim) and the warm-up's result ``warm``."""
        inv = getattr(warm, "inverse_mass", None)
        rho, i = scale_correlation(self.target, positions, float(warm.step_size), inv)
        coordinate = f"coordinate {i}"  # of the unconstrained positions the sampler moves
        labels = getattr(parameters_of(self.target), "labels", None)
        if labels is not None and len(labels) == np.shape(positions)[-1]:
            coordinate += f" ({labels[i]})"
        record = {
            "checked": True,
            "statistic": "max |Spearman rank correlation| of log2(eps |grad E|_{M^-1} / sqrt d) "
            "with a coordinate",
            "value": round(rho, 4),
            "coordinate": coordinate,
            "threshold": self.threshold,
            "probe_steps": self.probe_steps,
        }
        if rho < self.threshold:
            reason = (
                f"kept the kernel: the local step scale moves with no coordinate (rank "
                f"correlation {rho:.2f} with {coordinate}, below {self.threshold})"
            )
            return None, {**record, "switched": False, "to": None, "reason": reason}
        reason = (
            f"switched to span_lahmc(n_steps=8, beta=1.0): the local step scale moves with "
            f"{coordinate} (rank correlation {rho:.2f} ≥ {self.threshold}), a funnel"
        )
        new = span_lahmc(self.target, **SPAN_SETTINGS)
        return new, {**record, "switched": True, "to": "span_lahmc", "reason": reason}


__all__ = ["PROBE_STEPS", "SPAN_SETTINGS", "THRESHOLD", "GeometrySwitch", "scale_correlation"]
