"""What the ragged step (:mod:`ladder_mcmc.engine.ragged`) carries and records.

* :class:`Plan` — a rule's static plan as tables indexed by stage;
* :class:`RaggedState` — where every chain is in its own step, a pytree of arrays;
* :class:`StepRecord` — the steps that ended in one iteration;
* :class:`Draws` — the random numbers of a batch of chains, as the loops hand them out.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs
import numpy as np

from ladder_mcmc.ladder.kernel import LadderState
from ladder_mcmc.ladder.rules import Rule, base_for


class Draws(Protocol):
    """The random numbers of a batch of chains: ``view(advance)`` is a generator-like
    object (``random``, ``standard_normal``, …; ``size[0]`` the number of chains) that
    hands every chain its next numbers and moves on only the streams of the chains in
    ``advance`` (all of them for ``None``)."""

    def view(self, advance: Any) -> Any: ...

    def subset(self, ids: Any) -> Draws:
        """The draws of the chains ``ids`` only (host loop: a refresh that spends gradients
        runs on the chains that decided)."""


@attrs.frozen(eq=False)
class Plan:
    """A rule's static plan as tables indexed by stage (:func:`~ladder_mcmc.ladder.rules.base_for`).

    Attributes
    ----------
    from_origin : bool array (stages,)
        Stage ``s``'s rung is computed from the step's origin (else from the previous rung).
    jump : bool array (stages,)
        ``from_origin`` at a stage after the first: the chain goes back to its origin.
    sign : int8 array (stages,)
        The map is applied as ``L^{sign·d}``.
    outcome : int64 array (stages,)
        The code a chain that stops at stage ``s`` takes.
    fallthrough : int
        The code of a chain no stage stopped.
    any_jump, all_forward : bool
        Whether some stage goes back to the origin; whether every stage applies ``L^d``.
    """

    from_origin: np.ndarray
    jump: np.ndarray
    sign: np.ndarray
    outcome: np.ndarray
    fallthrough: int
    any_jump: bool
    all_forward: bool

    @classmethod
    def of(cls, rule: Rule) -> Plan:
        positions = tuple(rule.positions)
        steps = [base_for(positions, s) for s in range(len(positions))]
        from_origin = np.array([origin for origin, _ in steps], dtype=bool)
        jump = from_origin & (np.arange(len(steps)) > 0)
        sign = np.array([sign for _, sign in steps], dtype=np.int8)
        return cls(
            from_origin=from_origin,
            jump=jump,
            sign=sign,
            outcome=np.array(rule.outcomes, dtype=np.int64),
            fallthrough=int(rule.fallthrough),
            any_jump=bool(jump.any()),
            all_forward=bool((sign == 1).all()),
        )

    @property
    def last(self) -> int:
        return len(self.outcome) - 1


@attrs.frozen(eq=False)
class RaggedState:
    """Where every chain is in its own step: a pytree of arrays, chains on axis 0.

    Attributes
    ----------
    origin : State
        ``ζ`` at the start of the chain's step (after the previous step's refresh).
    current : State
        What the chain's next rung is computed from (its last rung, or its origin).
    direction : int8 array
        ``d``.
    log_density : float array
        ``log p`` of the origin.
    carry : Any
        The rule's memory between steps (``None`` for most rules).
    u : float array
        The step's uniform.
    stage, n_moves, non_finite : int64 arrays
        The stage about to be computed; map applications and non-finite rungs so far.
    memory : float array
        The rule's memory within the step.
    log_jacobian : float array
        ``log |det ∂(current)/∂(origin)|`` (maps that change volume; zeros otherwise).
    first_prob : float array
        ``C_0`` of the step (the first stage's probability, once computed).
    energy_error : float array
        The largest ``log p(ζ) − log p(rung)`` over the step's rungs so far (``inf`` for a
        rung of density zero): for leapfrog, the largest energy error of the step.
    step : int64 array
        Steps the chain has completed.
    """

    origin: Any
    current: Any
    direction: Any
    log_density: Any
    carry: Any
    u: Any
    stage: Any
    memory: Any
    n_moves: Any
    non_finite: Any
    log_jacobian: Any
    first_prob: Any
    energy_error: Any
    step: Any

    def ladder_state(self) -> LadderState:
        """The chains as a :class:`~ladder_mcmc.ladder.kernel.LadderState` (between steps)."""
        return LadderState(self.origin, self.direction, self.log_density, self.carry)


@attrs.frozen(eq=False)
class StepRecord:
    """The steps that ended in one :func:`iterate`: entry ``i`` is chain ``i``'s, valid
    where ``decided[i]``.

    Attributes
    ----------
    decided : bool array
        The chains that completed a step.
    step : int64 array
        Its index (steps the chain had completed before it).
    draw : Any
        ``map.draw`` of the state after the step and its refresh.
    rung, n_moves, non_finite : int64 arrays
        As :class:`~ladder_mcmc.ladder.kernel.StepInfo`'s.
    first_prob : float array
        ``C_0``, the probability of stopping at the first stage.
    energy, energy_error : float arrays
        ``−log p`` of the state after the step and its refresh (for leapfrog the
        Hamiltonian); the step's largest energy error (:class:`RaggedState`).
    cost, overhead : int64 arrays or None
        Gradient evaluations per map application (maps with ``cost_of``) and outside
        them (a refresh's, the density's after it), as :class:`StepInfo`'s.
    """

    decided: Any
    step: Any
    draw: Any
    rung: Any
    n_moves: Any
    non_finite: Any
    first_prob: Any
    energy: Any
    energy_error: Any
    cost: Any = None
    overhead: Any = None


#: the per-step figures a step records beside its rung (``Trace.step_stats``)
STEP_STATS = ("energy", "acceptance_rate", "energy_error")


def step_stats(rec: StepRecord) -> dict[str, Any]:
    """A record's per-step figures by name: ``energy`` (``−log p`` after the step),
    ``acceptance_rate`` (``C_0``), ``energy_error`` (the step's largest)."""
    return {
        "energy": rec.energy,
        "acceptance_rate": rec.first_prob,
        "energy_error": rec.energy_error,
    }


__all__ = ["STEP_STATS", "Draws", "Plan", "RaggedState", "StepRecord", "step_stats"]
