"""A level of step refinement drawn from the gradient's size: no gradient spent on the law.

Where a target narrows (a funnel's neck, a hierarchical model's small scale) the
gradient grows as the inverse of the local width: for a Gaussian of scale ``σ`` at a
typical point, ``‖∇E(x)‖ ≈ √d / σ``. So the cached gradient says, at no cost, how much
finer than the adapted ``ε`` the step should be there (docs/design.md §14, "A level drawn
from the gradient's size"):

* the **scale** ``s(x) = log₂(ε ‖∇E(x)‖_{M⁻¹} / (c √d))``, with the gradient whitened by
  the family's mass, ``‖g‖²_{M⁻¹} = gᵀ M⁻¹ g``: ``s ≈ 0`` where ``ε`` is ``c`` local
  widths, ``s ≈ k`` where the target is ``2^k`` times narrower (``s = ℓ_max + 4w`` where
  it is not finite, ``ℓ_min − 1 − 4w`` where the gradient vanishes);
* the **law** ``p(ℓ | ζ) ∝ exp(−(ℓ − s(x))² / (2 w²))`` on the integers
  ``ℓ_min … ℓ_max`` (``w``, ``width``), ``s`` clipped to
  ``[ℓ_min − 1 − 4w, ℓ_max + 4w]``: every level keeps a positive probability everywhere,
  so a rung where the gradient is larger or smaller than at the origin never has
  density zero — it is weighed by the law *there* (§14), which is what makes the level
  that suits the origin also acceptable at the end.

The law reads ``x`` (through the gradient the state caches) and the family's ``ε`` and
mass, never ``v`` or the direction: the momentum flip leaves it unchanged, so it is
flip-invariant. It evaluates no gradient (no ``log_prob_cost``, no
``sample_with_cost``): the gradient at ``x`` is the one the leapfrog already computed.
This is the self-tuning idea of GIST (Bou-Rabee, Carpenter & Marsden 2024) with a
no-cost law, on the refined leapfrog of
:mod:`~ladder_mcmc.hamiltonian.refined_step` or the family of
:mod:`~ladder_mcmc.hamiltonian.span_step`, which also lengthens the trajectory at the
negative levels.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import TRACED, namespace
from ladder_mcmc.hamiltonian.kinetic import KineticEnergy
from ladder_mcmc.hamiltonian.leapfrog import PhaseState
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.ladder.auxiliary import AuxiliaryLaw
from ladder_mcmc.validation import attrs_converter, positive_finite

__all__ = ["GradientLevelLaw"]

#: how far (in widths ``w``) the scale may sit outside the levels: the clip that keeps
#: every level's probability positive (at least ``exp(−(ℓ_max − ℓ_min + 1 + 4w)²/(2w²))``)
CLIP_WIDTHS = 4.0


def _level(name: str) -> Any:
    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        return int(value)

    return convert


@attrs.frozen
class GradientLevelLaw(AuxiliaryLaw):
    """``p(ℓ | ζ) ∝ exp(−(ℓ − s(x))² / (2 w²))`` on ``ℓ_min … ℓ_max`` (module docstring).

    Parameters
    ----------
    step_size : float
        ``ε``, the family's base step (warm-up sets both together).
    scale : float
        ``c > 0``: level 0 is centred where ``ε ‖∇E‖_{M⁻¹} = c √d``.
    width : float
        ``w > 0``, the spread of the levels.
    min_level, max_level : int
        ``ℓ_min ≤ ℓ_max``: the levels. A negative level needs a family that defines it
        (:class:`~ladder_mcmc.hamiltonian.span_step.SpanLeapfrog`); the refined
        leapfrog's levels are ``0 … ℓ_max``.
    metric : KineticEnergy
        The family's kinetic energy (warm-up sets both together): it whitens the gradient.

    Raises
    ------
    ValueError
        ``step_size``, ``scale`` or ``width`` not positive and finite; a level that is
        not an integer; ``min_level > max_level``.
    """

    step_size: float = attrs.field(
        converter=attrs_converter(positive_finite, "step_size"), metadata=TRACED
    )
    scale: float = attrs.field(default=2.0, converter=attrs_converter(positive_finite, "scale"))
    width: float = attrs.field(default=2.0, converter=attrs_converter(positive_finite, "width"))
    min_level: int = attrs.field(default=-2, converter=_level("min_level"))
    max_level: int = attrs.field(default=4, converter=_level("max_level"))
    metric: KineticEnergy = attrs.field(factory=Metric)

    def __attrs_post_init__(self) -> None:
        if self.min_level > self.max_level:
            raise ValueError(
                f"min_level must be at most max_level, got min_level={self.min_level}, "
                f"max_level={self.max_level}"
            )

    @property
    def levels(self) -> int:
        """``ℓ_max − ℓ_min + 1``."""
        return self.max_level - self.min_level + 1

    def centre(self, state: PhaseState) -> Any:
        """``s(x)`` per chain, clipped to ``[ℓ_min − 1 − 4w, ℓ_max + 4w]``."""
        xp = namespace(state.x, state.grad)
        dim = state.x.shape[1]
        low = self.min_level - 1.0 - CLIP_WIDTHS * self.width
        high = self.max_level + CLIP_WIDTHS * self.width
        with np.errstate(all="ignore"):
            norm = xp.sqrt(2.0 * self.metric.kinetic(xp.asarray(state.grad, dtype=xp.float64)))
            s = xp.log2(self.step_size * norm / (self.scale * np.sqrt(dim)))
        s = xp.where(xp.isnan(s), high, s)  # a gradient not finite: the finest level
        return xp.clip(s, low, high)

    def log_weights(self, state: PhaseState) -> Any:
        """``log p(ℓ | ζ)`` at every level, shape (chains, ``levels``)."""
        s = self.centre(state)
        xp = namespace(s)
        grid = xp.arange(self.min_level, self.max_level + 1, dtype=xp.float64)
        logits = -0.5 * ((grid[None, :] - s[:, None]) / self.width) ** 2
        top = xp.max(logits, axis=1, keepdims=True)
        return logits - top - xp.log(xp.sum(xp.exp(logits - top), axis=1, keepdims=True))

    def log_prob(self, alpha: Any, state: PhaseState) -> Any:
        """``log p(ℓ | ζ)`` per chain; ``−inf`` off ``ℓ_min … ℓ_max``."""
        weights = self.log_weights(state)
        xp = namespace(weights, alpha)
        ell = xp.asarray(alpha, dtype=xp.int64)
        inside = (ell >= self.min_level) & (ell <= self.max_level)
        column = xp.clip(ell, self.min_level, self.max_level) - self.min_level
        picked = xp.take_along_axis(weights, column[:, None], axis=1)[:, 0]
        return xp.where(inside, picked, -xp.inf)

    def sample(self, state: PhaseState, rng: Any) -> Any:
        """``ℓ`` by inversion of the cumulative law, one uniform per chain."""
        weights = self.log_weights(state)
        u = rng.random(weights.shape[0])
        xp = namespace(weights, u)
        cdf = xp.cumsum(xp.exp(weights), axis=1)
        below = xp.sum(cdf[:, :-1] < u[:, None], axis=1)
        return (below + self.min_level).astype(xp.int64)

    def describe(self) -> dict:
        return {
            "law": "GradientLevelLaw",
            "step_size": float(self.step_size),
            "scale": float(self.scale),
            "width": float(self.width),
            "min_level": int(self.min_level),
            "max_level": int(self.max_level),
        }
