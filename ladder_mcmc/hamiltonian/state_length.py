"""A leapfrog whose number of steps is drawn from a law that depends on the position.

On a multiscale target (Neal's funnel) one step size must suit the narrowest region, and
then a fixed number of steps is far too few where the target is wide. Here the number of
steps ``n`` is an auxiliary variable with a law that reads the position (docs/design.md
§14, "A length drawn from the position"):

* a local scale ``s(x)`` — a hint of the caller's (``scale(x)``), or the target's
  ``local_scale(x)``, or from the cached gradient, ``s = √dim / |∇E(x)|`` (for a
  Gaussian of scale ``σ`` at a typical point, ``|∇E| ≈ √dim / σ``): no gradient is spent.
  With a mass (the law's ``metric``: given, or adapted by warm-up) the gradient is
  whitened, ``|∇E|² = ∇Eᵀ M⁻¹ ∇E``, and the scale capped at the mass's, ``s ≤ 1``: the
  estimate blows up where the gradient vanishes (near a mode; in few dimensions a
  typical point's gradient is often small), and a length that swings with it puts
  rungs outside each other's range (density zero);
* the nominal length ``N(x) = clip(round(τ s(x) / ε), 1, N_max)``: the steps of size
  ``ε`` that cover ``τ`` local scales, so the trajectory travels the same distance in
  units of the local scale wherever it starts;
* ``n`` uniform on ``{⌈c N⌉, …, N}`` (``c = low``, ½ by default): the jitter breaks the
  resonances of a fixed length, and the range overlaps that of a rung whose ``N`` is up
  to ``1/c`` times larger or smaller, so a rung in a region of another scale keeps a
  positive density ``p(n | x_a)`` (a rung outside the range has density zero).

The law reads ``x`` only, which the momentum flip keeps: it is flip-invariant, so the
physical reading ``p(n | x, d·v)`` is the same law. A forward U-turn length would not be:
it reads ``v`` and changes under ``v → −v`` (symmetrising it, e.g. the shorter of the two
U-turn lengths from ``(x, v)`` and ``(x, −v)``, would make it admissible).

One application costs ``n`` gradient evaluations (:meth:`StateLengthLeapfrog.cost_of`);
the law costs none (it declares no ``log_prob_cost`` or ``sample_with_cost``: a ``scale``
hint is taken to evaluate no gradient).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import TRACED, namespace
from ladder_mcmc.hamiltonian.kinetic import KineticEnergy
from ladder_mcmc.hamiltonian.leapfrog import PhaseState
from ladder_mcmc.hamiltonian.leapfrog_family import (
    LeapfrogFamily,
    auxiliary_lahmc,
    leapfrog_start,
)
from ladder_mcmc.hamiltonian.metrics import row_dot
from ladder_mcmc.ladder.auxiliary import AuxiliaryLaw
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.models.targets import Target
from ladder_mcmc.validation import (
    attrs_converter,
    in_open_closed,
    positive_finite,
    positive_int,
)

__all__ = ["LocalLengthLaw", "StateLengthLeapfrog", "state_length_lahmc"]


@attrs.frozen(eq=False)
class StateLengthLeapfrog(LeapfrogFamily):
    """``L_n``: ``n`` leapfrog steps of size ``ε``, ``n = α`` the chain's own (docs/design.md §14).

    Parameters
    ----------
    target, step_size, metric
        As for :class:`~ladder_mcmc.hamiltonian.leapfrog_family.LeapfrogFamily`.
    """

    def forward(self, state: PhaseState, alpha: Any) -> PhaseState:
        """``n = alpha[i]`` steps of size ``ε`` for chain ``i``."""
        xp = namespace(alpha)
        return self.run(state, self.step_size, xp.asarray(alpha, dtype=xp.int64))

    def cost_of(self, state: PhaseState, alpha: Any) -> np.ndarray:
        """Gradient evaluations of one application: ``n`` per chain (the law costs none)."""
        xp = namespace(alpha)
        return xp.asarray(alpha, dtype=xp.int64)


def checked_scale(value: Any, positions: tuple[int, ...], xp: Any) -> Any:
    """A ``scale`` hint's value at positions of shape ``positions`` as float64, after
    checking its shape: ``(chains,)``.

    Raises
    ------
    ValueError
        Naming ``scale``, the shape it returned and the one expected (a shape is known on
        the host and when traced alike, so the first evaluation, at ``Ladder.init``,
        refuses it before any step).
    """
    shape = tuple(getattr(value, "shape", np.shape(value)))
    if shape != positions[:1]:
        raise ValueError(
            f"scale must return one local scale per chain, shape {positions[:1]}, for "
            f"positions of shape {positions}; it returned shape {shape}"
        )
    return xp.asarray(value, dtype=xp.float64)


def _as_low(value: object) -> float:
    return in_open_closed("low", value, 0.0, 1.0, " (the shortest length, a fraction of N)")


@attrs.frozen
class LocalLengthLaw(AuxiliaryLaw):
    """``n`` uniform on ``{⌈c N(x)⌉, …, N(x)}``, ``N(x) = clip(round(τ s(x) / ε), 1, N_max)``.

    Reads the position only (its scale, or the cached gradient), so it is invariant under
    the momentum flip.

    Parameters
    ----------
    step_size : float
        ``ε``, the family's step (warm-up sets both together).
    time : float
        ``τ``: the trajectory covers ``τ`` local scales.
    max_steps : int
        ``N_max``.
    low : float in (0, 1]
        ``c``: the shortest length is ``⌈c N⌉``.
    scale : callable, optional
        ``x -> s(x)``, shape ``(chains,)``; default: the target's ``local_scale`` if the
        caller passes it here, else ``√dim / |∇E(x)|`` from the state's cached gradient.
        Taken to evaluate no gradient (``Trace.grad_evals`` counts none for it).
    metric : KineticEnergy, optional
        The family's mass (warm-up sets both together): the default scale whitens the
        gradient with it, ``√dim / √(∇Eᵀ M⁻¹ ∇E)``, and is at most 1, the mass's scale;
        None: the raw gradient, uncapped. Not used with a ``scale`` hint.
    """

    step_size: float = attrs.field(
        converter=attrs_converter(positive_finite, "step_size"), metadata=TRACED
    )
    time: float = attrs.field(default=1.0, converter=attrs_converter(positive_finite, "time"))
    max_steps: int = attrs.field(default=64, converter=attrs_converter(positive_int, "max_steps"))
    low: float = attrs.field(default=0.5, converter=_as_low)
    scale: Callable[[np.ndarray], np.ndarray] | None = None
    metric: KineticEnergy | None = None

    def local_scale(self, state: PhaseState) -> np.ndarray:
        """``s(x)`` per chain (a ``scale`` hint is called on the positions as they are:
        numpy arrays, or JAX values inside the compiled loop)."""
        xp = namespace(state.x, state.grad)
        if self.scale is not None:
            return checked_scale(self.scale(state.x), tuple(state.x.shape), xp)
        grad = xp.asarray(state.grad, dtype=xp.float64)
        with np.errstate(all="ignore"):
            if self.metric is None:
                return xp.sqrt(grad.shape[1]) / xp.linalg.norm(grad, axis=1)
            whitened = xp.sqrt(row_dot(grad, self.metric.velocity(grad)))
            return xp.minimum(xp.sqrt(grad.shape[1]) / whitened, 1.0)

    def nominal(self, state: PhaseState) -> np.ndarray:
        """``N(x)`` per chain (``N_max`` where the scale is not finite)."""
        scale = self.local_scale(state)
        xp = namespace(scale)
        with np.errstate(all="ignore"):
            raw = xp.round(self.time * scale / self.step_size)
        raw = xp.where(xp.isnan(raw), self.max_steps, raw)
        return xp.clip(raw, 1, self.max_steps).astype(xp.int64)

    def bounds(self, state: PhaseState) -> tuple[np.ndarray, np.ndarray]:
        """``(⌈c N⌉, N)`` per chain: the range of ``n``."""
        top = self.nominal(state)
        xp = namespace(top)
        return xp.maximum(1, xp.ceil(self.low * top)).astype(xp.int64), top

    def log_prob(self, alpha: Any, state: PhaseState) -> np.ndarray:
        """``−log(N − ⌈c N⌉ + 1)`` in range, ``−inf`` outside."""
        lo, hi = self.bounds(state)
        xp = namespace(lo, alpha)
        n = xp.asarray(alpha)
        inside = (n >= lo) & (n <= hi)
        return xp.where(inside, -xp.log(hi - lo + 1.0), -xp.inf)

    def sample(self, state: PhaseState, rng: Any) -> np.ndarray:
        """``⌈c N⌉ + ⌊u (N − ⌈c N⌉ + 1)⌋`` from one uniform per chain."""
        lo, hi = self.bounds(state)
        u = rng.random(lo.shape[0])
        xp = namespace(lo, u)
        return lo + xp.minimum(xp.floor(u * (hi - lo + 1)).astype(xp.int64), hi - lo)

    def describe(self) -> dict:
        return {
            "law": "LocalLengthLaw",
            "step_size": float(self.step_size),
            "time": float(self.time),
            "max_steps": int(self.max_steps),
            "low": float(self.low),
            "scale": (
                getattr(self.scale, "__name__", "?")
                if self.scale is not None
                else "gradient"
                if self.metric is None
                else "whitened gradient, at most 1"
            ),
        }


def state_length_lahmc(
    target: Target,
    step_size: float | None = None,
    time: float = 1.0,
    max_steps: int = 64,
    beta: float = 1.0,
    look_ahead: int = 4,
    low: float = 0.5,
    scale: Callable[[np.ndarray], np.ndarray] | None = None,
    inverse_mass: np.ndarray | None = None,
) -> Ladder:
    """Look-ahead HMC with ``n`` drawn from the position (:class:`LocalLengthLaw`).

    ``Ladder(AuxiliaryMap(StateLengthLeapfrog, law), LookAheadRule(K),
    InnerRefresh(MomentumRefresh(β)) + AuxiliaryRefresh(law))``. ``ε`` should suit the
    narrowest region (the law lengthens the trajectory elsewhere). What is left unset
    (``step_size``, ``inverse_mass``) is adapted by the warm-up
    :func:`~ladder_mcmc.sample` runs by default, as for :func:`~ladder_mcmc.lahmc`, and
    listed in :attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt`; what is given is kept.
    The length's law is not adapted: ``time``, ``max_steps`` and ``low`` are kept.

    Parameters
    ----------
    target : Target
    step_size : float, optional
        ``ε`` (adapted: a first guess from one leapfrog step, then dual averaging of the
        first-rung probability; the family and the law take it together).
    time, max_steps, low, scale
        As for :class:`LocalLengthLaw`; the default scale (no ``scale``) whitens the
        gradient with the mass and is capped at it, unless ``step_size`` is given without
        ``inverse_mass`` (then the raw gradient, as the step was chosen for it).
    beta : float in (0, 1]
        Momentum refresh per step.
    look_ahead : int
        ``K``.
    inverse_mass : array, optional
        Diagonal or dense inverse mass matrix (adapted: the chains' variances, from the
        identity). A given ``step_size`` was chosen for a mass: with ``step_size`` given,
        the mass is not adapted (the identity, unless ``inverse_mass`` is given too).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import sample
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2, log_condition=1)
    >>> kernel = state_length_lahmc(target, time=1.5)
    >>> sorted(kernel.adapt)
    ['inverse_mass', 'step_size']
    >>> init = target.sample(4, np.random.default_rng(0))
    >>> trace = sample(kernel, init, 50, seed=1, warmup=100)
    >>> trace.positions.shape, trace.warmup.adapted
    ((50, 4, 2), ('step_size', 'inverse_mass'))
    """
    step_size, metric, adapt = leapfrog_start(step_size, inverse_mass)
    # the law whitens with the mass and caps the scale at it, unless ε alone was given
    # (then chosen for the raw coordinates, with the identity kept)
    raw = "step_size" not in adapt and inverse_mass is None
    law = LocalLengthLaw(step_size, time, max_steps, low, scale, None if raw else metric)
    family = StateLengthLeapfrog(target, step_size, metric)
    return auxiliary_lahmc(family, law, beta, look_ahead, adapt)
