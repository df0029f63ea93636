"""Mutation sensitivity of the checks of a parameter with a state-dependent law (§14).

Four ways to get the construction wrong (``mutants.py``), each shown caught by the check
named, which passes on the correct construction (the controls here and in
``tests/exact/test_auxiliary_exact.py``, ``tests/statistical/test_auxiliary_walk.py``):

(a) ``α`` redrawn **before** the refresh of ``ζ`` (which keeps ``p(ζ)`` only): refused by
    ``Ladder`` when the order is visible; hidden in one refresh, caught by the exact fixed
    point of the whole step and by sampled-vs-exact;
(b) a law that reads ``d``: refused by signature; on the finite model, caught by the
    exact fixed point and generalized detailed balance;
(c) ``p(α | ζ)`` dropped from the density ratio: caught exactly (finite model), by
    sampled-vs-exact (the sampled map) and by one-step invariance (the continuous walk);
(d) a law that is not flip-invariant: caught by ``check_map`` (both values named) and
    refused by ``AuxiliaryLadder``; read at the physical state, as GIST writes it, it reads
    ``d``, and the exact checks catch it.

And the family's Jacobian not passed through (§13): caught by one-step invariance on the
log-scale walk with a state-dependent step.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np
import pytest
from auxiliary_walk import (
    GAMMA,
    LAW,
    LogScaleFamily,
    LogStepLaw,
    StepWalk,
    TurnRefresh,
    WalkState,
    draw_exact,
    walk_kernel,
)
from exact_properties import (
    auxiliary_exact_property,
    auxiliary_persistent_uniform_property,
)
from hypothesis import Phase
from hypothesis import strategies as st
from mutants import (
    DirectionalLawLadder,
    DroppedFamilyJacobianMap,
    DroppedLawLadder,
    DroppedLawMap,
    HiddenOrderRefresh,
    PhysicalLawLadder,
)

from ladder_mcmc.ladder import (
    AuxiliaryLaw,
    AuxiliaryMap,
    AuxiliaryRefresh,
    InnerRefresh,
    Ladder,
    LogScaleRefresh,
    LookAheadRule,
    ReducedFlipLookAheadRule,
)
from ladder_mcmc.verify import (
    AuxiliaryLadder,
    InnerResample,
    TableLaw,
    assert_exact,
    assert_fixed_point,
    assert_generalized_detailed_balance,
    assert_map,
    assert_one_step_invariance,
    assert_transition_frequencies,
    auxiliary_ladders,
    check_map,
)

F = Fraction
MUTANT_SETTINGS = {
    "derandomize": True,
    "database": None,
    "report_multiple_bugs": False,
    "phases": (Phase.explicit, Phase.generate),
}
# construction (b): F = (0 1)(2 3), π_0 = F ∘ (1 2), π_1 = F ∘ (0 3); the table constant on
# the orbits of F and not on the orbits of the π_α: every mutant is wrong on it
WITNESS = (
    [[1, 3, 0, 2], [2, 0, 3, 1]],
    [2, 2, 3, 3],
    [[F(1, 4), F(3, 4)], [F(1, 4), F(3, 4)], [F(2, 3), F(1, 3)], [F(2, 3), F(1, 3)]],
    [1, 0, 3, 2],
)
SKEWED = [[F(1, 4), F(3, 4)], [F(1, 2), F(1, 2)], [F(2, 3), F(1, 3)], [F(1, 5), F(4, 5)]]


def _refresh(ladder, redraw_first=False):
    inner = InnerRefresh(InnerResample(ladder.family.weights))
    redraw = AuxiliaryRefresh(ladder.law)
    return HiddenOrderRefresh((redraw, inner)) if redraw_first else inner + redraw


# ------------------------------------------------------------------ (a) redraw first
def test_a_ladder_refuses_the_redraw_before_a_refresh_of_zeta():
    ladder = AuxiliaryLadder(*WITNESS)
    Ladder(ladder.map, LookAheadRule(2), _refresh(ladder))  # control
    inner = InnerRefresh(InnerResample(ladder.family.weights))
    message = (
        r"AuxiliaryRefresh must be the last part of the refresh that changes the state, but "
        r"InnerRefresh\(InnerResample\) comes after it \(order: AuxiliaryRefresh \+ "
        r"InnerRefresh\(InnerResample\)\)"
    )
    with pytest.raises(ValueError, match=message):
        Ladder(ladder.map, LookAheadRule(2), AuxiliaryRefresh(ladder.law) + inner)


def test_a_exact_fixed_point_catches_the_hidden_order():
    ladder = AuxiliaryLadder(*WITNESS)
    assert_exact(Ladder(ladder.map, LookAheadRule(3), _refresh(ladder)), ladder)  # control
    kernel = Ladder(ladder.map, LookAheadRule(3), _refresh(ladder, redraw_first=True))
    assert_exact(kernel, ladder, include_refresh=False)  # the move is right
    with pytest.raises(AssertionError, match=r"full step: πT ≠ π at state"):
        assert_exact(kernel, ladder)


def test_a_exact_property_catches_the_hidden_order():
    def redraw_first(ladder):
        return [_refresh(ladder, redraw_first=True)]

    with pytest.raises(AssertionError, match="full step"):
        auxiliary_exact_property(refreshes=redraw_first, max_examples=100, **MUTANT_SETTINGS)()


def test_a_sampled_frequencies_catch_the_hidden_order(schedule="ragged"):
    ladder = AuxiliaryLadder(*WITNESS)
    correct = Ladder(ladder.map, LookAheadRule(2), _refresh(ladder))
    mutant = Ladder(ladder.map, LookAheadRule(2), _refresh(ladder, redraw_first=True))
    with pytest.raises(AssertionError, match="chains went|binomial p-value"):
        assert_transition_frequencies(
            mutant, correct, n_per_state=500, schedule=schedule, ladder=ladder
        )


# ------------------------------------------------------------------ (b) a law that reads d
class ReadsDirection(AuxiliaryLaw):
    def log_prob(self, alpha, state, direction):
        return np.where(direction > 0, 0.0, -1.0)

    def sample(self, state, rng):
        return np.zeros(len(state))


class SamplesByDirection(AuxiliaryLaw):
    def log_prob(self, alpha, state):
        return np.zeros(len(state))

    def sample(self, state, rng, d=None):
        return np.zeros(len(state))


@pytest.mark.parametrize("law", [ReadsDirection(), SamplesByDirection()], ids=type)
def test_b_a_law_taking_the_direction_is_refused_by_signature(law):
    family = AuxiliaryLadder(*WITNESS).family
    with pytest.raises(ValueError, match="may not read the direction d"):
        AuxiliaryMap(family, law)
    with pytest.raises(ValueError, match="may not read the direction d"):
        AuxiliaryRefresh(law)


def test_b_exact_checks_catch_a_law_that_reads_d_on_a_witness():
    good, bad = AuxiliaryLadder(*WITNESS), DirectionalLawLadder(*WITNESS)
    assert_fixed_point(LookAheadRule(2), good)  # control
    assert_generalized_detailed_balance(LookAheadRule(2), good)
    with pytest.raises(AssertionError, match=r"πT ≠ π at state \(i="):
        assert_fixed_point(LookAheadRule(2), bad)
    with pytest.raises(AssertionError, match="generalized detailed balance fails"):
        assert_generalized_detailed_balance(LookAheadRule(2), bad)


def test_b_exact_property_catches_a_law_that_reads_d():
    with pytest.raises(AssertionError):
        auxiliary_exact_property(DirectionalLawLadder, max_examples=100, **MUTANT_SETTINGS)()


# ------------------------------------------------------------------ (c) the law dropped
def test_c_exact_checks_catch_the_dropped_law_on_a_witness():
    bad = DroppedLawLadder(*WITNESS)
    with pytest.raises(AssertionError, match=r"ladder move: πT ≠ π at state"):
        assert_fixed_point(LookAheadRule(3), bad)
    with pytest.raises(AssertionError, match="generalized detailed balance fails"):
        assert_generalized_detailed_balance(LookAheadRule(3), bad)


def test_c_exact_properties_catch_the_dropped_law():
    with pytest.raises(AssertionError):
        auxiliary_exact_property(DroppedLawLadder, max_examples=100, **MUTANT_SETTINGS)()
    with pytest.raises(AssertionError):
        auxiliary_persistent_uniform_property(
            DroppedLawLadder, max_examples=60, **MUTANT_SETTINGS
        )()


@pytest.mark.parametrize("schedule", ["synchronous", "ragged"])
def test_c_sampled_frequencies_catch_the_dropped_law(schedule):
    ladder = AuxiliaryLadder(*WITNESS)
    correct = Ladder(ladder.map, ReducedFlipLookAheadRule(2), _refresh(ladder))
    mutant = Ladder(
        DroppedLawMap(ladder.family, ladder.law), ReducedFlipLookAheadRule(2), _refresh(ladder)
    )
    with pytest.raises(AssertionError, match="chains went|binomial p-value"):
        assert_transition_frequencies(
            mutant, correct, n_per_state=500, schedule=schedule, ladder=ladder
        )


def test_c_one_step_invariance_catches_the_dropped_law_on_the_walk():
    assert_one_step_invariance(walk_kernel(), draw_exact, n_chains=50_000, seed=3)  # control
    with pytest.raises(AssertionError, match="one step changed the distribution"):
        assert_one_step_invariance(walk_kernel(DroppedLawMap), draw_exact, n_chains=50_000, seed=3)


# ------------------------------------------------------------------ (d) not flip-invariant
def test_d_check_map_catches_a_law_that_is_not_flip_invariant():
    good = AuxiliaryLadder(*WITNESS)
    states = good.encode(np.arange(good.n))
    assert check_map(good.map, states).law_flip_error == 0  # control
    bad = AuxiliaryMap(good.family, TableLaw(SKEWED))
    report = check_map(bad, states)
    assert report.law_flip_error > 0
    # the worst chain, 2: (ζ = 2, α = 0), F ζ = 3: log p(α | F ζ) = log 1/5, log p(α | ζ) = log 2/3
    message = r"law: p\(α \| F ζ\) ≠ p\(α \| ζ\) at chain 2: log p\(α \| F ζ\) = -1.60944, "
    message += r"log p\(α \| ζ\) = -0.405465"
    with pytest.raises(AssertionError, match=message):
        assert_map(bad, states)


@attrs.frozen
class AheadStepLaw(type(LAW)):
    """The walk's law with longer steps where ``v x < 0`` (heading for the mode): reads the
    sign of ``v``, which the flip changes."""

    def scale(self, state):
        return super().scale(state) * np.where(state.v * state.x < 0, 2.0, 1.0)


def test_d_check_map_catches_a_law_of_the_walk_that_reads_v():
    rng = np.random.default_rng(0)
    good = AuxiliaryMap(StepWalk(), LAW)
    states = good.prepare(draw_exact(8, rng), rng)
    assert_map(good, states)  # control
    with pytest.raises(AssertionError, match=r"law: p\(α \| F ζ\) ≠ p\(α \| ζ\)"):
        assert_map(AuxiliaryMap(StepWalk(), AheadStepLaw()), states)


def test_d_a_law_declared_not_flip_invariant_is_refused_with_a_flip():
    @attrs.frozen
    class Declared(type(LAW)):
        flip_invariant = False

    with pytest.raises(ValueError, match="declares flip_invariant = False"):
        AuxiliaryMap(StepWalk(), Declared())
    AuxiliaryMap(AuxiliaryLadder([[1, 0]], [1, 1], [[1], [1]]).family, Declared())  # no flip


def test_d_a_product_ladder_refuses_a_table_that_is_not_flip_invariant():
    with pytest.raises(ValueError, match="table must be invariant under the flip"):
        AuxiliaryLadder(*WITNESS[:2], SKEWED, WITNESS[3])


def test_d_read_at_the_physical_state_the_law_reads_d_and_the_exact_checks_catch_it():
    control = PhysicalLawLadder(*WITNESS)  # flip-invariant: the same as the correct ladder
    assert control.extended_masses == AuxiliaryLadder(*WITNESS).extended_masses
    assert_exact(Ladder(control.map, LookAheadRule(3), _refresh(control)), control)
    bad = PhysicalLawLadder(*WITNESS[:2], SKEWED, WITNESS[3])
    with pytest.raises(AssertionError, match=r"πT ≠ π|generalized detailed balance"):
        assert_exact(Ladder(bad.map, LookAheadRule(3), _refresh(bad)), bad)


INVOLUTIONS = auxiliary_ladders(1, 5, 3, 6, 4, construction="involutions")


@st.composite
def skewed_physical_ladders(draw):
    """An involution ladder whose table is drawn per state: in general not flip-invariant."""
    ladder = draw(INVOLUTIONS)
    rows = []
    for _ in range(ladder.n_inner):
        digits = draw(st.lists(st.integers(1, 4), min_size=ladder.n_alpha, max_size=ladder.n_alpha))
        rows.append([F(x, sum(digits)) for x in digits])
    family = ladder.family
    return PhysicalLawLadder(family.permutations, family.weights, rows, family.flip_permutation)


def test_d_exact_property_catches_the_physical_reading_and_passes_it_when_invariant():
    auxiliary_exact_property(PhysicalLawLadder, ladders=INVOLUTIONS, max_examples=40)()  # control
    with pytest.raises(AssertionError):
        auxiliary_exact_property(
            PhysicalLawLadder,
            ladders=skewed_physical_ladders(),
            max_examples=100,
            **MUTANT_SETTINGS,
        )()


def test_the_correct_walk_uses_every_part():
    """The walk's kernel turns ``v`` and redraws ``α`` (so the controls above test them)."""
    kernel = walk_kernel()
    rng = np.random.default_rng(1)
    ks = kernel.init(draw_exact(200, rng), rng)
    ks1, _ = kernel.step(ks, rng)
    assert isinstance(ks1.state.inner, WalkState)
    assert np.mean(ks1.state.alpha != ks.state.alpha) > 0.9
    assert np.mean(ks1.state.inner.v != ks.state.inner.v) > 0.1
    assert isinstance(kernel.refresh.parts[0].refresh, TurnRefresh)


# ------------------------------------------------------------------ the Jacobian (§13)
def test_one_step_invariance_catches_a_family_jacobian_not_passed_through():
    law = LogStepLaw()
    refresh = InnerRefresh(LogScaleRefresh(0.5)) + AuxiliaryRefresh(law)

    def kernel(map_class):
        return Ladder(map_class(LogScaleFamily(), law), LookAheadRule(3), refresh)

    assert_one_step_invariance(kernel(AuxiliaryMap), GAMMA.sample, n_chains=20_000, seed=4)
    with pytest.raises(AssertionError, match="one step changed the distribution"):
        assert_one_step_invariance(
            kernel(DroppedFamilyJacobianMap), GAMMA.sample, n_chains=20_000, seed=4
        )
