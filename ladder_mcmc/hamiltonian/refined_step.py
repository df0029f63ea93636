"""A leapfrog whose step is refined where the energy error is large (WALNUTS' idea, on the ladder).

``α = ℓ``, a level of refinement: :class:`RefinedLeapfrog` ``L_ℓ`` integrates the same
physical time ``M ε`` with ``M 2^ℓ`` steps of size ``ε / 2^ℓ``. The level is drawn from
:class:`RefinementLaw`, a law of the phase state (docs/design.md §14, "A step refined
where the energy error is large"):

* the **probe** at level ``ℓ``: ``P 2^ℓ`` steps of size ``ε / 2^ℓ`` (``P`` macro steps,
  ``probe_steps``) from ``(x, v)`` and from ``(x, −v)``; its error
  ``e_ℓ(ζ) = max(|H(end₊) − H(ζ)|, |H(end₋) − H(ζ)|)`` (``+inf`` if not finite). Both
  directions make it flip-invariant: the probe from ``F ζ`` runs the same two
  trajectories, negated;
* ``ℓ*(ζ)``: the first ``ℓ < ℓ_max`` with ``e_ℓ ≤ δ``, else ``ℓ_max``;
* ``ℓ = ℓ*`` or ``ℓ* + 1`` with probability ½ each (``ℓ_max`` with probability 1 if
  ``ℓ* = ℓ_max``). The randomisation lets a rung where the error is smaller (or larger)
  by one level keep a positive density ``p(ℓ | ζ_a)``.

**Cost.** ``p(ℓ | ζ)`` is part of the density (§14), so it is evaluated at every rung.
Deciding whether ``ℓ*(ζ) ∈ {ℓ − 1, ℓ}`` needs the probes at levels ``0 … min(ℓ, ℓ_max −
1)``, all of them (no early stop, so the cost depends on ``ℓ`` alone):
``C(ℓ) = Σ_{k ≤ min(ℓ, ℓ_max − 1)} 2 P 2^k`` gradients
(:meth:`RefinementLaw.log_prob_cost`). One application of the map then costs
``M 2^ℓ + C(ℓ)`` (:meth:`RefinedLeapfrog.cost_of` plus the law, ``AuxiliaryMap.cost_of``).
Once per step, the redraw probes the levels ``0 … min(ℓ*, ℓ_max − 1)``, ``C(ℓ*)``
(:meth:`RefinementLaw.sample_with_cost`), and the law at the refreshed origin costs
``C(ℓ)`` again: the engine records both (``Trace.step_overhead``), so
``Trace.grad_evals`` counts every gradient of the steps.

**One level per step.** All rungs of a step are iterates of one map ``L_ℓ`` (§1: the
reverse terms of the look-ahead rule read the rungs computed from ``ζ`` as the rungs of
``F L^a ζ``), so the level cannot change from rung to rung within a step; it is redrawn
by the refresh after every step.
"""

from __future__ import annotations

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
    phase_energy,
)
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.auxiliary import AuxiliaryLaw
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.models.targets import Target
from ladder_mcmc.validation import attrs_converter, positive_finite, positive_int

__all__ = ["RefinedLeapfrog", "RefinementLaw", "refined_lahmc"]

#: ``log ½``, the law's mass at each of its two levels
_LOG_HALF = float(np.log(0.5))


@attrs.frozen
class RefinementLaw(AuxiliaryLaw):
    """``ℓ ∈ {ℓ*, ℓ* + 1}`` with probability ½ each; ``ℓ*``: the coarsest accurate level.

    Parameters
    ----------
    target : Target
    step_size : float
        ``ε``, the coarsest step (the family's; warm-up sets both together).
    threshold : float
        ``δ``: a level is accurate if its probe's energy error is at most ``δ``.
    max_level : int
        ``ℓ_max ≥ 1``.
    probe_steps : int
        ``P``, macro steps of the probe.
    metric : KineticEnergy
        The family's kinetic energy (warm-up sets both together).
    """

    target: Target
    step_size: float = attrs.field(
        converter=attrs_converter(positive_finite, "step_size"), metadata=TRACED
    )
    threshold: float = attrs.field(
        default=0.5, converter=attrs_converter(positive_finite, "threshold")
    )
    max_level: int = attrs.field(default=4, converter=attrs_converter(positive_int, "max_level"))
    probe_steps: int = attrs.field(
        default=1, converter=attrs_converter(positive_int, "probe_steps")
    )
    metric: KineticEnergy = attrs.field(factory=Metric)

    def _family(self) -> LeapfrogFamily:
        return RefinedLeapfrog(self.target, self.step_size, self.metric)

    def probe_error(self, state: PhaseState, level: int) -> np.ndarray:
        """``e_ℓ(ζ)``: the larger energy error of the probe from ``(x, v)`` and ``(x, −v)``."""
        family = self._family()
        xp = namespace(state.x)
        h0 = phase_energy(self.metric, state)
        levels = xp.full(state.x.shape[0], level, dtype=xp.int64)
        with np.errstate(all="ignore"):
            ahead = family.run_levels(state, levels, self.probe_steps)
            behind = family.run_levels(family.flip(state, None), levels, self.probe_steps)
            err = xp.maximum(
                xp.abs(phase_energy(self.metric, ahead) - h0),
                xp.abs(phase_energy(self.metric, behind) - h0),
            )
        return xp.where(xp.isnan(err), xp.inf, err)

    def probe_cost(self, alpha: Any) -> np.ndarray:
        """``C(ℓ) = Σ_{k ≤ min(ℓ, ℓ_max − 1)} 2 P 2^k``: the probes at levels ``0 … ℓ``."""
        xp = namespace(alpha)
        top = xp.clip(xp.asarray(alpha, dtype=xp.int64), 0, self.max_level - 1)
        return 2 * self.probe_steps * (2 ** (top + 1) - 1)

    def log_prob_cost(self, alpha: Any, state: PhaseState) -> np.ndarray:
        """Gradients of one :meth:`log_prob` per chain: ``C(ℓ)``."""
        return self.probe_cost(alpha)

    def first_accurate(self, state: PhaseState, depth: np.ndarray) -> np.ndarray:
        """Per chain, the first ``ℓ ≤ depth`` with ``e_ℓ ≤ δ``, or ``depth + 1`` if none.

        Probes every level ``0 … depth`` of each chain (``depth < ℓ_max``): on numpy the
        chains that need a level, on JAX values every chain at every level below
        ``ℓ_max``, the others' results discarded.
        """
        xp = namespace(state.x, depth)
        first = depth + 1
        if xp is not np:
            for level in range(self.max_level):
                ok = self.probe_error(state, level) <= self.threshold
                first = xp.where(ok & (depth >= level) & (first > level), level, first)
            return first
        n = state.x.shape[0]
        for level in range(int(depth.max(initial=-1)) + 1):
            rows = np.flatnonzero(depth >= level)
            ok = self.probe_error(batch.take(state, rows), level) <= self.threshold
            hit = rows[ok & (first[rows] > level)]
            first[hit] = level
        return first if n else depth

    def log_prob(self, alpha: Any, state: PhaseState) -> np.ndarray:
        """``log ½`` (or ``0`` at ``ℓ_max``, when no coarser level is accurate), ``−inf`` else."""
        xp = namespace(state.x, alpha)
        ell = xp.asarray(alpha, dtype=xp.int64)
        top = self.max_level
        depth = xp.clip(ell, 0, top - 1)
        first = self.first_accurate(state, depth)  # ℓ* if ≤ depth, else "> depth"
        lower = xp.where((first == ell) | (first == ell - 1), _LOG_HALF, -xp.inf)
        at_top = xp.where(first == top - 1, _LOG_HALF, xp.where(first == top, 0.0, -xp.inf))
        out = xp.where(ell == top, at_top, lower)
        return xp.where((ell < 0) | (ell > top), -xp.inf, out)

    def level_star(self, state: PhaseState) -> np.ndarray:
        """``ℓ*(ζ)``, probing from level 0 up until a level is accurate (on JAX values, every
        level below ``ℓ_max`` for every chain, the first accurate one kept)."""
        xp = namespace(state.x)
        n = state.x.shape[0]
        if xp is not np:
            star = xp.full(n, self.max_level, dtype=xp.int64)
            found = xp.zeros(n, dtype=bool)
            for level in range(self.max_level):
                ok = self.probe_error(state, level) <= self.threshold
                star = xp.where(ok & ~found, level, star)
                found = found | ok
            return star
        star = np.full(n, self.max_level, dtype=np.int64)
        rows = np.arange(n)
        for level in range(self.max_level):
            if rows.size == 0:
                break
            ok = self.probe_error(batch.take(state, rows), level) <= self.threshold
            star[rows[ok]] = level
            rows = rows[~ok]
        return star

    def sample(self, state: PhaseState, rng: Any) -> np.ndarray:
        """``ℓ*`` or ``ℓ* + 1`` from one uniform per chain (``ℓ_max`` stays)."""
        return self.sample_with_cost(state, rng)[0]

    def sample_with_cost(self, state: PhaseState, rng: Any) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`sample`'s draw and its gradients per chain, ``C(ℓ*)`` (the probes up to
        ``ℓ*``, :meth:`level_star`)."""
        star = self.level_star(state)
        u = rng.random(star.shape[0])
        xp = namespace(star, u)
        level = xp.where(star < self.max_level, star + (u < 0.5), star).astype(xp.int64)
        return level, self.probe_cost(star)

    def describe(self) -> dict:
        return {
            "law": "RefinementLaw",
            "step_size": float(self.step_size),
            "threshold": float(self.threshold),
            "max_level": int(self.max_level),
            "probe_steps": int(self.probe_steps),
        }


@attrs.frozen(eq=False)
class RefinedLeapfrog(LeapfrogFamily):
    """``L_ℓ``: ``M 2^ℓ`` leapfrog steps of size ``ε / 2^ℓ``, the same physical time ``M ε``.

    Parameters
    ----------
    target, step_size, metric
        As for :class:`~ladder_mcmc.hamiltonian.leapfrog_family.LeapfrogFamily`.
    n_steps : int
        ``M``, the steps at level 0 (a traced leaf of the compiled loop, as the leapfrog's).
    """

    n_steps: int = attrs.field(
        default=8, converter=attrs_converter(positive_int, "n_steps"), metadata=TRACED
    )

    def plan(self, alpha: Any, macro: Any = None) -> tuple[Any, Any]:
        """Level ``ℓ``'s step and number of steps, ``ε / 2^ℓ`` and ``m 2^ℓ`` (``m``:
        ``macro``, default ``M``): per chain for an array of levels, as a float and an int
        for one level given as an ``int``."""
        m = self.n_steps if macro is None else macro
        if isinstance(alpha, int):
            return float(self.step_size) / 2**alpha, int(m) * 2**alpha
        xp = namespace(alpha, m, self.step_size)
        scale = 2 ** xp.asarray(alpha, dtype=xp.int64)
        m = m if xp is not np else int(m)
        return self.step_size / scale.astype(xp.float64), (m * scale).astype(xp.int64)

    def run_levels(self, state: PhaseState, alpha: Any, macro: Any = None) -> PhaseState:
        """Each chain's level ``ℓ = alpha[i]`` of :meth:`plan` from ``state``.

        On numpy the chains are grouped by level (one integration per level, a scalar
        step); on JAX values one masked integration with a step per chain (the same
        arithmetic on each row: the steps are ``ε`` over powers of two, exact). ``ε`` and
        ``macro`` may be traced (inside a compiled warm-up).
        """
        xp = namespace(state.x, alpha, self.step_size, macro)
        if xp is not np:
            eps, n = self.plan(xp.asarray(alpha, dtype=xp.int64), macro)
            return self.run(state, eps[:, None], n)
        levels = np.asarray(alpha, dtype=np.int64)
        values = np.unique(levels).tolist()
        if len(values) == 1:
            eps, n = self.plan(values[0], macro)
            return self.run(state, eps, np.full(levels.size, n))
        size, dim = state.x.shape
        out = {name: np.empty((size, dim)) for name in ("x", "v", "grad")}
        energy = np.empty(size)
        for k in values:
            rows = np.flatnonzero(levels == k)
            eps, n = self.plan(k, macro)
            end = self.run(batch.take(state, rows), eps, np.full(rows.size, n))
            out["x"][rows], out["v"][rows], out["grad"][rows] = end.x, end.v, end.grad
            energy[rows] = end.energy
        return PhaseState(x=out["x"], v=out["v"], energy=energy, grad=out["grad"])

    def forward(self, state: PhaseState, alpha: Any) -> PhaseState:
        """Each chain's level ``ℓ = alpha[i]``: ``M 2^ℓ`` steps of ``ε / 2^ℓ``."""
        return self.run_levels(state, alpha)

    def cost_of(self, state: PhaseState, alpha: Any) -> np.ndarray:
        """``M 2^ℓ``: the integration (``AuxiliaryMap`` adds the law's probes ``C(ℓ)``)."""
        return self.plan(alpha)[1]

    def adaptation(self, kernel: Any, settings: Any, init: Any, checks: bool = True) -> Any:
        """With :class:`RefinementLaw`, the family's warm-up with the step capped where the
        law's level-0 probe stays accurate
        (:class:`~ladder_mcmc.hamiltonian.warmup.probe_cap.ProbeCappedAdaptation`: dual
        averaging of the first-rung fraction alone meets only the law's rejections); with
        a law of your own, the leapfrog family's."""
        from ladder_mcmc.hamiltonian.warmup.probe_cap import ProbeCappedAdaptation

        if not isinstance(getattr(getattr(kernel, "map", None), "law", None), RefinementLaw):
            return super().adaptation(kernel, settings, init, checks)
        state = getattr(init, "state", init)
        x = getattr(getattr(state, "inner", state), "x", state)
        n_chains, dim = np.shape(x)[0], np.shape(x)[-1]
        return ProbeCappedAdaptation.for_kernel(kernel, settings, n_chains, dim, checks)

    def describe(self) -> dict:
        return {**super().describe(), "n_steps": int(self.n_steps)}


def refined_lahmc(
    target: Target,
    step_size: float | None = None,
    n_steps: int = 8,
    threshold: float = 0.5,
    max_level: int = 4,
    probe_steps: int = 1,
    beta: float = 1.0,
    look_ahead: int = 4,
    inverse_mass: np.ndarray | None = None,
) -> Ladder:
    """Look-ahead HMC with the step refined where the energy error is large.

    ``Ladder(AuxiliaryMap(RefinedLeapfrog, law), LookAheadRule(K),
    InnerRefresh(MomentumRefresh(β)) + AuxiliaryRefresh(law))`` with
    ``law = RefinementLaw(target, ε, δ, ℓ_max, P)``. What is left unset (``step_size``,
    ``inverse_mass``) is adapted by the warm-up :func:`~ladder_mcmc.sample` runs by
    default, as for :func:`~ladder_mcmc.lahmc`, and listed in
    :attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt`; what is given is kept. ``M``, ``δ``,
    ``ℓ_max`` and ``P`` are not adapted.

    Parameters
    ----------
    target : Target
    step_size : float, optional
        ``ε``, the coarsest step (adapted: a first guess from one leapfrog step, then
        dual averaging of the first-rung probability below a cap where the level-0
        probe stays accurate, :mod:`~ladder_mcmc.hamiltonian.warmup.probe_cap`; the
        family and the law take it together).
    n_steps : int
        ``M``: every rung integrates the time ``M ε``.
    threshold, max_level, probe_steps
        ``δ``, ``ℓ_max``, ``P`` (:class:`RefinementLaw`).
    beta : float in (0, 1]
        Momentum refresh per step.
    look_ahead : int
        ``K``.
    inverse_mass : array, optional
        Diagonal or dense inverse mass matrix (adapted: the chains' variances, from the
        identity; the family, the law and the momentum refresh take it together). A given
        ``step_size`` was chosen for a mass: with ``step_size`` given, the mass is not
        adapted (the identity, unless ``inverse_mass`` is given too).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import sample
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2, log_condition=1)
    >>> kernel = refined_lahmc(target, n_steps=4, max_level=2)
    >>> sorted(kernel.adapt)
    ['inverse_mass', 'step_size']
    >>> init = target.sample(4, np.random.default_rng(0))
    >>> trace = sample(kernel, init, 20, seed=1, warmup=60)
    >>> trace.positions.shape, trace.warmup.adapted
    ((20, 4, 2), ('step_size', 'inverse_mass'))
    >>> given = refined_lahmc(target, 0.5, n_steps=4, max_level=2)  # ε given: mass kept
    >>> sample(given, init, 20, seed=1).warmup is None  # nothing to adapt: no warm-up
    True
    """
    step_size, metric, adapt = leapfrog_start(step_size, inverse_mass)
    law = RefinementLaw(target, step_size, threshold, max_level, probe_steps, metric)
    family = RefinedLeapfrog(target, step_size, metric, n_steps)
    return auxiliary_lahmc(family, law, beta, look_ahead, adapt)
