"""The leapfrog as a :class:`~ladder_mcmc.ladder.auxiliary.MapFamily`: one map per parameter ``α``.

:class:`LeapfrogFamily` holds what every member shares — the target, the base step ``ε``,
the kinetic energy, the flip ``F(x, v) = (x, −v)``, the density ``exp(−E(x) − K(v))`` and
``prepare`` — and integrates, for each chain, ``n`` steps of its own size
(:meth:`LeapfrogFamily.run`). Its subclasses choose what ``α`` means: the number of steps
(:class:`~ladder_mcmc.hamiltonian.state_length.StateLengthLeapfrog`) or a level of step
refinement (:class:`~ladder_mcmc.hamiltonian.refined_step.RefinedLeapfrog`). Each member is
a leapfrog, so it is volume preserving with ``F L_α F = L_α⁻¹`` (docs/design.md §1, §14).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import TRACED, namespace
from ladder_mcmc.hamiltonian.jittered_length import integrate_lengths
from ladder_mcmc.hamiltonian.kinetic import KineticEnergy
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.hamiltonian.momentum import MomentumRefresh
from ladder_mcmc.hamiltonian.samplers import STARTING_VALUES
from ladder_mcmc.ladder.auxiliary import AuxiliaryLaw, AuxiliaryMap, MapFamily
from ladder_mcmc.ladder.auxiliary_refresh import AuxiliaryRefresh, InnerRefresh
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.ladder.rules import LookAheadRule
from ladder_mcmc.models.targets import Target
from ladder_mcmc.validation import attrs_converter, positive_finite

__all__ = ["LeapfrogFamily", "auxiliary_lahmc", "leapfrog_start", "phase_energy"]


def phase_energy(metric: KineticEnergy, state: PhaseState) -> np.ndarray:
    """``H(x, v) = E(x) + K(v)`` per chain (``+inf`` where it is not finite)."""
    xp = namespace(state.energy, state.v)
    with np.errstate(all="ignore"):
        h = xp.asarray(state.energy, dtype=xp.float64) + xp.asarray(metric.kinetic(state.v))
    return xp.where(xp.isfinite(h), h, xp.inf)


@attrs.frozen(eq=False)
class LeapfrogFamily(MapFamily):
    """Leapfrog maps ``L_α`` on phase states, one per value of ``α`` (subclasses say which).

    Parameters
    ----------
    target : Target
        Energy and gradient.
    step_size : float
        The base step ``ε`` (a traced leaf of the compiled loop: warm-up adapts it).
    metric : KineticEnergy
        The kinetic energy (identity :class:`~ladder_mcmc.hamiltonian.metrics.Metric` by
        default).

    Notes
    -----
    Its :meth:`adaptation` is the leapfrog's warm-up, so a kernel on
    ``AuxiliaryMap(family, law)`` adapts what it leaves unset (its
    :attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt`): the step size and the mass, set in
    the family, the law and the refresh together
    (:func:`~ladder_mcmc.hamiltonian.warmup.parameters.with_hmc_parameters`).
    """

    target: Target
    step_size: float = attrs.field(
        converter=attrs_converter(positive_finite, "step_size"), metadata=TRACED
    )
    metric: KineticEnergy = attrs.field(factory=Metric)

    @property
    def kinetic_energy(self) -> KineticEnergy:
        """:attr:`metric` (read by ``InnerRefresh(MomentumRefresh)``'s check)."""
        return self.metric

    def run(self, state: PhaseState, eps: Any, n: np.ndarray) -> PhaseState:
        """``n[i]`` leapfrog steps of size ``eps`` from chain ``i``: ``n[i]`` gradients each.

        ``eps``: a number, or one step per chain as a (chains, 1) column.
        """
        xp = namespace(state.x, state.v, state.grad, n, eps)
        if xp is np and np.ndim(eps) == 0:
            eps = float(eps)
        x, v, e, g = integrate_lengths(
            self.target,
            self.metric.velocity,
            eps,
            xp.asarray(state.x, dtype=xp.float64),
            xp.asarray(state.v, dtype=xp.float64),
            xp.asarray(state.grad, dtype=xp.float64),
            xp.asarray(n, dtype=xp.int64),
        )
        return PhaseState(x=x, v=v, energy=e, grad=g)

    def flip(self, state: PhaseState, alpha: Any) -> PhaseState:
        """``F(x, v) = (x, −v)`` for every member."""
        return attrs.evolve(state, v=-state.v)

    def log_density(self, state: PhaseState) -> np.ndarray:
        """``−E(x) − K(v)``."""
        return -(state.energy + self.metric.kinetic(state.v))

    def prepare(self, init: Any, rng: np.random.Generator) -> PhaseState:
        """As :meth:`Leapfrog.prepare <ladder_mcmc.hamiltonian.leapfrog.Leapfrog.prepare>`."""
        return Leapfrog(self.target, self.step_size, 1, self.metric).prepare(init, rng)

    def draw(self, state: PhaseState) -> np.ndarray:
        """Positions."""
        return state.x

    def adaptation(self, kernel: Any, settings: Any, init: Any, checks: bool = True) -> Any:
        """The warm-up of a kernel on ``AuxiliaryMap(self, law)``: the step size and mass it
        leaves unset (:class:`~ladder_mcmc.hamiltonian.warmup.adaptation.HMCAdaptation`),
        or ``None`` for none."""
        from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation

        state = getattr(init, "state", init)
        x = getattr(getattr(state, "inner", state), "x", state)
        n_chains, dim = np.shape(x)[0], np.shape(x)[-1]
        return HMCAdaptation.for_kernel(kernel, settings, n_chains, dim, checks)

    def describe(self) -> dict:
        return {
            "family": type(self).__name__,
            "target": type(self.target).__name__,
            "step_size": float(self.step_size),
            **self.metric.describe(),
        }


def leapfrog_start(
    step_size: float | None, inverse_mass: np.ndarray | None
) -> tuple[float, Metric, frozenset[str]]:
    """The starting ``ε`` and metric of a family's kernel, and what warm-up adapts, as
    :func:`~ladder_mcmc.lahmc` has them: an unset ``step_size`` starts at 1 and is
    adapted; an unset ``inverse_mass`` is the identity, adapted only if ``step_size`` is
    unset too (a given ``ε`` was chosen for a mass); given values are kept."""
    adapt = set()
    if step_size is None:
        adapt.add("step_size")
        if inverse_mass is None:
            adapt.add("inverse_mass")
        step_size = STARTING_VALUES["step_size"]
    return positive_finite("step_size", step_size), Metric(inverse_mass), frozenset(adapt)


def auxiliary_lahmc(
    family: LeapfrogFamily,
    law: AuxiliaryLaw,
    beta: float,
    look_ahead: int,
    adapt: frozenset[str] | None = None,
) -> Ladder:
    """Look-ahead HMC on a leapfrog family whose parameter has the law ``law``:
    ``Ladder(AuxiliaryMap(family, law), LookAheadRule(K),
    InnerRefresh(MomentumRefresh(β)) + AuxiliaryRefresh(law), adapt=adapt)``, the
    parameter redrawn last (docs/design.md §14)."""
    refresh = InnerRefresh(MomentumRefresh(beta, family.metric)) + AuxiliaryRefresh(law)
    return Ladder(AuxiliaryMap(family, law), LookAheadRule(look_ahead), refresh, adapt=adapt)
