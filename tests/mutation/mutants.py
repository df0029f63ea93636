"""Deliberately broken variants of library pieces (never used outside the tests).

Each is a small subclass of the real thing with one line changed (or, for the run
checks of ``ladder_mcmc.diagnostics``, a function with
one step left out), so that the checks of ``ladder_mcmc.verify`` and the tests of
the run checks can be shown to catch it
(``tests/mutation/test_mutants.py``; table in ``docs/mutation.md``).
The engine is mutated in its source instead (:data:`ENGINE_MUTANTS`,
:func:`install_engine_mutant`): the ragged step (``engine/ragged.py``), the compiled
loop (``engine/jax_loop.py``) and its pre-drawn numbers (``engine/block_draws.py``); the
composition property (``tests/unit/driver_equivalence.py``) or a dedicated test must catch
each (``tests/mutation/test_engine_mutants.py``). So is the ragged step's sum of log
Jacobians (:data:`RAGGED_JACOBIAN_MUTANTS`).
The mutants of a parameter with a state-dependent law (docs/design.md §14) break the
finite model (:class:`~ladder_mcmc.verify.AuxiliaryLadder` subclasses), the refresh order
or the sampled map (``tests/mutation/test_auxiliary_mutants.py``).
"""

from __future__ import annotations

import inspect
import types
from fractions import Fraction

import attrs
import numpy as np
from exact_properties import FallThroughMetropolisRule  # tests/exact, on the path of the users

from ladder_mcmc.diagnostics.ess import _rhat_rows, _split_rows, _z_scale
from ladder_mcmc.diagnostics.gradient import _gradient_error
from ladder_mcmc.engine import block_draws, jax_loop, numpy_loop, ragged
from ladder_mcmc.hamiltonian import Leapfrog, MomentumRefresh, PhaseState
from ladder_mcmc.ladder import (
    STAY,
    AuxiliaryMap,
    ComposedRefresh,
    Ladder,
    LogScaleWalk,
    LookAheadRule,
    batch,
)
from ladder_mcmc.models import energy_and_grad
from ladder_mcmc.verify import AuxiliaryLadder, MeasuredLadder


@attrs.frozen
class NoReverseTermRule(LookAheadRule):
    """The paper's π_a with the reverse factor ``(1 − Σ_{b<a} π_b(F L^a ζ))`` dropped.

    ``π_a = min(1 − C_{a−1}, p_a/p_0)``, so ``C_a = min(1, C_{a−1} + p_a/p_0)``.
    Identical to the correct rule for ``K = 1``.
    """

    def update(self, memory, stage, ratio):
        cum = np.minimum(1, memory + ratio)
        return cum, cum


@attrs.frozen
class OffByOneRule(LookAheadRule):
    """Closed form with its range off by one: ``C_a = min(1, max_{1≤j≤a−1} p_j/p_0)`` (a ≥ 2).

    The ``range(1, a)`` for ``range(1, a + 1)`` bug: rung ``a`` is accepted on
    the strength of rung ``a − 1``'s density. Identical for ``K = 1``.
    """

    def update(self, memory, stage, ratio):
        lagged = np.where(stage == 0, ratio, memory)
        return np.maximum(memory, ratio), np.minimum(1, lagged)


@attrs.frozen
class NoFlipRule(LookAheadRule):
    """When no rung is accepted the chain stays with its direction instead of flipping."""

    fallthrough = STAY


@attrs.frozen
class StopIsAcceptRule(FallThroughMetropolisRule):
    """HMC as a fall-through rule with the stop probability ``min(1, r)`` (the acceptance
    probability) instead of ``1 − min(1, r)``: flips when it should move."""

    def update(self, memory, stage, ratio):
        return memory, np.minimum(1, ratio)


class StaleFallThroughLadder(Ladder):
    """The synchronous step recording the fall-through rung but leaving the chain where it was
    (what ``Ladder.step`` did for ``fallthrough > 0`` before the rule contract fixed it)."""

    def step(self, ks, rng):
        new, info = super().step(ks, rng)
        stale = info.rung == self.rule.fallthrough
        if self.rule.fallthrough <= 0 or not stale.any():
            return new, info
        state = batch.where(stale, ks.state, new.state)
        log_p = np.where(stale, ks.log_density, new.log_density)
        return type(new)(state, new.direction, log_p, new.carry), info


@attrs.frozen(eq=False)
class NoFinalHalfKickLeapfrog(Leapfrog):
    """Leapfrog whose last half momentum kick is missing."""

    def integrate(self, x, v, g):
        eps = float(self.step_size)
        v = v - (0.5 * eps) * g
        for i in range(self.n_steps):
            x = x + eps * self.metric.velocity(v)
            if i < self.n_steps - 1:
                g = np.asarray(self.target.grad(x), dtype=float)
                v = v - eps * g
        e, g = energy_and_grad(self.target, x)
        return PhaseState(x=x, v=v, energy=e, grad=g)  # bug: no final v -= ε/2 · g


@attrs.frozen(eq=False)
class NoKineticLeapfrog(Leapfrog):
    """Leapfrog whose log density forgets the kinetic energy: ``log p = −E(x)``."""

    def log_density(self, state):
        return -state.energy


@attrs.frozen
class LinearRefresh(MomentumRefresh):
    """Partial refresh without the square roots: ``v' = (1 − β) v + β n``."""

    def __call__(self, state, direction, rng):
        noise = self.metric.sample_momentum(rng, state.v.shape)
        v_new = (1.0 - self.beta) * state.v + self.beta * (direction[:, None] * noise)
        return attrs.evolve(state, v=v_new), direction


def source_mutant(module: types.ModuleType, changes: list[tuple[str, str]]) -> types.ModuleType:
    """``module``'s source with each ``(old, new)`` of ``changes`` applied, run as a new
    module."""
    source = inspect.getsource(module)
    for old, new in changes:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    mutant = types.ModuleType(module.__name__.rsplit(".", 1)[-1] + "_mutant")
    exec(compile(source, mutant.__name__, "exec"), mutant.__dict__)
    return mutant


# ---- maps that change volume (docs/design.md §13)
class DroppedJacobianLadder(MeasuredLadder):
    """Exact matrices without the Jacobian: every step's ratio is 1 (density ratios only)."""

    def move_jacobian(self, state, moved, direction):
        return np.full(np.shape(state), Fraction(1), dtype=object)


class BackwardSignLadder(MeasuredLadder):
    """Exact matrices with the wrong sign for backward steps: a step to ``s' = L⁻¹ s``
    multiplied by ``m(L s')/m(s')`` instead of divided by it."""

    def move_jacobian(self, state, moved, direction):
        d = np.broadcast_to(np.asarray(direction), np.shape(state))
        return np.where(d > 0, self.jacobian(state), self.jacobian(moved))


def _backward_sign(map_, state, moved, direction):
    """``move_log_det_jacobian`` with ``+log_det_jacobian(moved)`` for ``d = −1``."""
    d = np.asarray(direction)
    return np.where(d > 0, map_.log_det_jacobian(state), map_.log_det_jacobian(moved))


class BackwardSignSampledLadder(MeasuredLadder):
    """Sampling with the wrong sign for backward steps (the exact matrices are right)."""

    def move_log_det_jacobian(self, state, moved, direction):
        return _backward_sign(self, state, moved, direction)


class DroppedJacobianSampledLadder(MeasuredLadder):
    """Sampling without the Jacobian: the engine takes the map for volume preserving."""

    @property
    def volume_preserving(self) -> bool:
        return True


@attrs.frozen(eq=False)
class DroppedJacobianWalk(LogScaleWalk):
    """The log-scale walk with its Jacobian dropped: density ratios only."""

    @property
    def volume_preserving(self) -> bool:
        return True


@attrs.frozen(eq=False)
class BackwardSignWalk(LogScaleWalk):
    """The log-scale walk with the wrong sign of the Jacobian for backward steps."""

    def move_log_det_jacobian(self, state, moved, direction):
        return _backward_sign(self, state, moved, direction)


# ---- the engine: (old source, new source) pairs per module, applied by install_engine_mutant
_JACOBIAN_SUM = (
    "        log_jacobian = xp.where("
    "_at(xp, plan.from_origin, stage), step_jac, log_jacobian + step_jac)"
)

#: the ragged step's sum of log Jacobians along the ladder (docs/design.md §13)
RAGGED_JACOBIAN_MUTANTS = {
    # restarted at the first stage only, not where a stage starts again from the origin
    # (the backward rungs of the reduced-flip rules)
    "not restarted at a jump": {
        "ragged": [
            (
                _JACOBIAN_SUM,
                _JACOBIAN_SUM.replace("_at(xp, plan.from_origin, stage)", "stage == 0"),
            )
        ]
    },
    # the Jacobian of the latest map application only, not summed along the ladder
    "not summed": {"ragged": [(_JACOBIAN_SUM, "        log_jacobian = step_jac")]},
}

#: deliberately broken engines: name -> {module: [(old, new), ...]}
ENGINE_MUTANTS = {
    **RAGGED_JACOBIAN_MUTANTS,
    # ---- engine/ragged.py: whose random numbers move on, and when
    "refresh stream of a decided chain not advanced": {
        "ragged": [
            (
                "nxt_lp, draws.view(advance)",
                "nxt_lp, draws.view(xp.zeros(done.shape, dtype=bool))",
            )
        ]
    },
    "refresh stream of an undecided chain advanced": {
        "ragged": [("nxt_lp, draws.view(advance)", "nxt_lp, draws.view(None)")]
    },
    "next uniform drawn for every chain": {
        "ragged": [
            (
                "draws.view(None if all_on else going_on)",
                "draws.view(None)",
            )
        ]
    },
    # ---- the outcome
    "fall-through taken for a flip": {
        "ragged": [
            (
                "_at(xp, plan.outcome, stage), plan.fallthrough)",
                "_at(xp, plan.outcome, stage), FLIP)",
            )
        ]
    },
    "a flip moves to the rung": {
        "ragged": [
            (
                "keep_old = ~accept if host and everyone else done & ~accept",
                "keep_old = done & (code < 0)",
            )
        ]
    },
    # ---- the rule's memory and carry
    "memory not restarted after a step": {
        "ragged": [("memory=xp.where(done, 0.0, memory),", "memory=memory,")]
    },
    "carry not updated": {
        "ragged": [
            (
                "carry = new_carry if everyone else batch.where(done, new_carry, carry)",
                "carry = carry",
            )
        ]
    },
    "carry updated for undecided chains": {
        "ragged": [
            (
                "carry = new_carry if everyone else batch.where(done, new_carry, carry)",
                "carry = new_carry",
            )
        ]
    },
    # ---- what a step records
    "first_prob of the latest stage": {
        "ragged": [
            (
                "cumulative if one else xp.where(stage == 0, cumulative, rs.first_prob)",
                "cumulative",
            )
        ]
    },
    "non-finite count not restarted after a step": {
        "ragged": [("non_finite=xp.where(done, 0, non_finite),", "non_finite=non_finite,")]
    },
    "map applications not restarted after a step": {
        "ragged": [("n_moves=xp.where(done, 0, n_moves),", "n_moves=n_moves,")]
    },
    # ---- engine/jax_loop.py
    "a finished chain still moving in the JAX loop": {
        "jax_loop": [
            (
                "iterate(kernel, plan, rs, d, steps, rs.step < steps)",
                "iterate(kernel, plan, rs, d, steps, rs.step >= 0)",
            )
        ]
    },
    "a step written to the next column": {
        "jax_loop": [
            (
                "column = jnp.where(decided, step, width)",
                "column = jnp.where(decided, step + 1, width)",
            )
        ]
    },
    # ---- engine/block_draws.py
    "block offsets advanced for every chain": {
        "block_draws": [
            (
                "step = k if self.advance is None else xp.where(self.advance, k, 0)",
                "step = k",
            )
        ]
    },
    "block offsets one number off": {
        "block_draws": [
            (
                "index = offset[:, None] + xp.arange(k)[None, :]",
                "index = offset[:, None] + 1 + xp.arange(k)[None, :]",
            )
        ]
    },
    "normals read at the uniforms' offset": {
        "block_draws": [
            (
                "offset = self.block.offsets[:, column]",
                "offset = self.block.offsets[:, 0]",
            )
        ]
    },
}


def install_engine_mutant(monkeypatch, changes: dict[str, list[tuple[str, str]]]) -> None:
    """Make ``sample`` run on an engine built from its sources with ``changes`` applied
    (``{"ragged" | "jax_loop" | "block_draws": [(old, new), ...]}``; ``{}`` for the
    unmutated sources through the same harness).

    The numpy loop's ``iterate`` and ``start`` are replaced by the mutated ragged module's;
    the JAX backend's ``run_jax`` by that of a fresh copy of ``engine/jax_loop.py`` (its
    own compiled function, so nothing compiled before is reused) that takes its step
    from the mutated ragged module and its numbers from the mutated ``block_draws``.
    The classes stay the library's (pytree registration, ``isinstance`` checks).
    """
    unknown = set(changes) - {"ragged", "jax_loop", "block_draws"}
    assert not unknown, unknown
    step = source_mutant(ragged, changes.get("ragged", []))
    for name in ("Plan", "RaggedState", "StepRecord"):
        setattr(step, name, getattr(ragged, name))
    numbers = source_mutant(block_draws, changes.get("block_draws", []))
    loop = source_mutant(jax_loop, changes.get("jax_loop", []))
    loop.iterate, loop.start = step.iterate, step.start
    for name in ("BlockDraws", "consumption", "draw_block"):
        setattr(loop, name, getattr(numbers, name))
    monkeypatch.setattr(numpy_loop, "iterate", step.iterate)
    monkeypatch.setattr(numpy_loop, "start", step.start)
    monkeypatch.setattr(jax_loop, "run_jax", loop.run_jax)


# ---- a parameter with a state-dependent law (docs/design.md §14)
@attrs.frozen
class HiddenOrderRefresh(ComposedRefresh):
    """Its parts in order as one refresh that declares the law it redraws but not its parts
    (``refresh_parts`` opens ``ComposedRefresh`` exactly, not a subclass): ``Ladder`` cannot see
    that ``α`` is redrawn before ``ζ`` is refreshed (mutant a, with the parts
    ``AuxiliaryRefresh`` then ``InnerRefresh``)."""

    @property
    def auxiliary_law(self):
        return next(p.auxiliary_law for p in self.parts if p.auxiliary_law is not None)


class DroppedLawLadder(AuxiliaryLadder):
    """The rules see ``p(ζ)`` only: ``p(α | ζ)`` dropped from the density ratio (mutant c)."""

    def rung_weights(self, states, direction):
        return np.array(self.family.weights, dtype=object)[np.asarray(states) % self.n_inner]


class DirectionalLawLadder(AuxiliaryLadder):
    """A law that reads ``d``: chains with ``d = −1`` read each row of the table backwards,
    in the rungs' densities and in the redraw (mutant b)."""

    def law_for(self, direction):
        table = self.law.table
        return table if direction > 0 else tuple(row[::-1] for row in table)


class PhysicalLawLadder(AuxiliaryLadder):
    """The law read at the physical state ``F^{[d = −1]} ζ`` (GIST's ``p(α | θ, ρ)``), and a
    table that need not be flip-invariant (mutant d): the law then reads ``d``, unless the
    table is flip-invariant, when this is the correct ladder."""

    @staticmethod
    def check_law_flip_invariance(table, flip):
        return None  # bug: accepts p(α | F ζ) ≠ p(α | ζ)

    def law_for(self, direction):
        table, flip = self.law.table, self.family.flip_permutation
        return table if direction > 0 else tuple(table[f] for f in flip)


@attrs.frozen(eq=False)
class DroppedLawMap(AuxiliaryMap):
    """Sampling with ``log p(ζ)`` for the density: ``p(α | ζ)`` dropped (mutant c)."""

    def log_density(self, state):
        return np.asarray(self.family.log_density(state.inner), dtype=float)


@attrs.frozen(eq=False)
class DroppedFamilyJacobianMap(AuxiliaryMap):
    """The family's declared Jacobian not passed through: taken for volume preserving."""

    @property
    def volume_preserving(self) -> bool:
        return True


def unfolded_rank_rhat(draws):
    """Rank-normalised split R-hat without its folded part: the bulk R-hat alone.

    ``draws`` (steps, chains). Blind to chains that agree in location but not in
    scale (Vehtari et al. 2021, section 4.2).
    """
    y = np.ascontiguousarray(np.asarray(draws, dtype=float).T[None])  # (1, chains, steps)
    return float(_rhat_rows(_z_scale(_split_rows(y))[0])[0])  # bug: no max with the folded R-hat


def sign_blind_gradient_error(analytic, numeric, floor):
    """``gradient._gradient_error`` comparing magnitudes only: ``|g|`` against ``|fd|``."""
    return _gradient_error(np.abs(analytic), np.abs(numeric), floor)
