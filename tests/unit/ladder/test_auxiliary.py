"""``AuxiliaryMap``, ``AuxiliaryRefresh``, ``InnerRefresh``: the plumbing and the refusals (§14)."""

from __future__ import annotations

import json
from fractions import Fraction

import attrs
import numpy as np
import pytest
from auxiliary_walk import LAW, StepWalk, TurnRefresh, WalkState, draw_exact, walk_kernel
from driver_equivalence import assert_same_trace

from ladder_mcmc import DirectionRefresh, MomentumRefresh, sample
from ladder_mcmc.hamiltonian import Metric
from ladder_mcmc.ladder import (
    AuxiliaryLaw,
    AuxiliaryMap,
    AuxiliaryRefresh,
    AuxiliaryState,
    ComposedRefresh,
    InnerRefresh,
    Ladder,
    LookAheadRule,
    MapFamily,
    ReducedFlipLookAheadRule,
)
from ladder_mcmc.ladder.auxiliary import check_law
from ladder_mcmc.ladder.auxiliary_refresh import refresh_parts
from ladder_mcmc.verify import AuxiliaryLadder, InnerResample, TableLaw

F = Fraction
WALK = AuxiliaryMap(StepWalk(), LAW)
# 3 states, 2 values of α, no flip (the inverse permutations are used)
CYCLE = AuxiliaryLadder(
    [[1, 2, 0], [2, 0, 1]], [1, 2, 3], [[F(1, 2), F(1, 2)], [F(1, 3), F(2, 3)], [F(3, 4), F(1, 4)]]
)


def _states(n=6, seed=0):
    rng = np.random.default_rng(seed)
    return WALK.prepare(draw_exact(n, rng), rng)


# ------------------------------------------------------------------ the map
def test_the_map_moves_zeta_with_its_own_alpha_and_keeps_alpha():
    s = _states()
    fwd = WALK.forward(s)
    np.testing.assert_array_equal(fwd.inner.x, s.inner.x + s.alpha * s.inner.v)
    np.testing.assert_array_equal(fwd.alpha, s.alpha)
    back = WALK.backward(fwd)  # F L F, from the family's flip
    np.testing.assert_allclose(back.inner.x, s.inner.x, rtol=0, atol=1e-15)
    flipped = WALK.flip(s)
    np.testing.assert_array_equal(flipped.inner.v, -s.inner.v)
    np.testing.assert_array_equal(flipped.alpha, s.alpha)
    assert WALK.has_flip and WALK.volume_preserving and WALK.cost_of is None


def test_the_density_includes_the_law_at_the_state():
    s = _states()
    want = -0.5 * s.inner.x**2 + LAW.log_prob(s.alpha, s.inner)
    np.testing.assert_array_equal(WALK.log_density(s), want)
    # at a rung: the law is read at the rung's ζ, with the chain's α
    rung = WALK.forward(s)
    np.testing.assert_array_equal(
        WALK.log_density(rung), -0.5 * rung.inner.x**2 + LAW.log_prob(s.alpha, rung.inner)
    )


def test_prepare_draws_alpha_from_the_law_or_keeps_a_given_one():
    s = _states(5)
    assert isinstance(s, AuxiliaryState) and s.alpha.shape == (5,) and np.all(s.alpha > 0)
    kept = WALK.prepare(AuxiliaryState(s.inner, s.alpha), np.random.default_rng(9))
    np.testing.assert_array_equal(kept.alpha, s.alpha)
    with pytest.raises(ValueError, match=r"init.alpha must have one entry per chain \(5\)"):
        WALK.prepare(AuxiliaryState(s.inner, s.alpha[:3]), np.random.default_rng(0))
    assert WALK.draw(s) is s.inner.x


def test_a_law_is_checked_when_the_map_and_the_refresh_are_built():
    with pytest.raises(ValueError, match="family must be a MapFamily"):
        AuxiliaryMap(object(), LAW)
    with pytest.raises(ValueError, match="law must be an AuxiliaryLaw instance, got FarLaw"):

        class FarLaw:
            def log_prob(self, alpha, state): ...
            def sample(self, state, rng): ...

        AuxiliaryMap(StepWalk(), FarLaw())
    with pytest.raises(ValueError, match="got ShortTailStepLaw"):
        AuxiliaryRefresh(type(LAW))  # the class, not an instance

    class OneArgument(AuxiliaryLaw):
        def log_prob(self, state):
            return np.zeros(len(state))

        def sample(self, state, rng):
            return np.zeros(len(state))

    with pytest.raises(ValueError, match=r"must be callable as log_prob\(alpha, state\)"):
        check_law(OneArgument())


def test_a_log_prob_of_the_wrong_shape_is_refused():
    class Scalar(type(LAW)):
        def log_prob(self, alpha, state):
            return 0.0

    with pytest.raises(ValueError, match=r"Scalar.log_prob returned shape \(\), expected \(6,\)"):
        AuxiliaryMap(StepWalk(), Scalar()).log_density(_states())


def test_a_family_needs_an_inverse():
    class NoInverse(MapFamily):
        def forward(self, state, alpha):
            return state

        def log_density(self, state):
            return np.zeros(len(state))

    with pytest.raises(TypeError, match="must define backward"):
        AuxiliaryMap(NoInverse(), CYCLE.law).backward(CYCLE.encode(np.arange(3)))


def test_cost_and_jacobian_pass_through_from_the_family():
    class Costly(type(CYCLE.family)):
        cost = 3

        def cost_of(self, state, alpha):
            return 1 + np.asarray(alpha)

    family = CYCLE.family
    costly = Costly(family.permutations, family.weights)
    aux = AuxiliaryMap(costly, CYCLE.law)
    state = CYCLE.encode(np.arange(6))
    assert aux.cost == 3
    np.testing.assert_array_equal(aux.cost_of(state), [1, 1, 1, 2, 2, 2])
    kernel = Ladder(aux, LookAheadRule(2), AuxiliaryRefresh(CYCLE.law))
    for schedule in ("synchronous", "ragged"):
        trace = sample(kernel, CYCLE.encode(np.arange(6)), 20, seed=1, schedule=schedule)
        assert trace.step_cost is not None
        assert int(trace.grad_evals.sum()) == int((trace.n_moves * trace.step_cost).sum())


# ------------------------------------------------------------------ the refreshes
def test_the_redraw_draws_from_the_law_given_zeta():
    s = _states(4000)
    out, d = AuxiliaryRefresh(LAW)(s, np.ones(4000, dtype=np.int8), np.random.default_rng(2))
    assert out.inner is s.inner and d.tolist() == [1] * 4000
    # Gamma(4) with mean 2 e^{-|x|}: out.alpha / mean has mean 1 and variance 1/4
    z = out.alpha / (2 * np.exp(-np.abs(s.inner.x)))
    assert abs(z.mean() - 1) < 4 * 0.5 / np.sqrt(4000)
    assert AuxiliaryRefresh(LAW).changes_state  # α enters log p


def test_the_inner_refresh_acts_on_zeta_only_and_declares_its_kinetic_energy():
    s = _states()
    out, _ = InnerRefresh(TurnRefresh(1.0))(s, np.ones(6, dtype=np.int8), np.random.default_rng(3))
    np.testing.assert_array_equal(out.alpha, s.alpha)
    np.testing.assert_array_equal(out.inner.x, s.inner.x)
    momentum = MomentumRefresh(0.5, Metric(np.array([2.0])))
    assert InnerRefresh(momentum).kinetic_energies == momentum.kinetic_energies
    assert not InnerRefresh(DirectionRefresh(0.5)).changes_state
    with pytest.raises(ValueError, match="refresh must be a Refresh instance"):
        InnerRefresh(TurnRefresh)
    with pytest.raises(ValueError, match="needs a state with a inner field"):
        AuxiliaryRefresh(LAW)(np.zeros(3), np.ones(3), np.random.default_rng(0))


def test_refresh_parts_open_declared_compositions_only():
    inner, redraw = InnerRefresh(TurnRefresh()), AuxiliaryRefresh(LAW)
    nested = ComposedRefresh((inner, ComposedRefresh((DirectionRefresh(0.5), redraw))))
    assert refresh_parts(nested) == (inner, DirectionRefresh(0.5), redraw)
    assert refresh_parts(nested, inner=True) == (TurnRefresh(), DirectionRefresh(0.5), redraw)
    assert refresh_parts(None) == ()

    class Opaque(ComposedRefresh):
        pass

    opaque = Opaque((inner, redraw))
    assert refresh_parts(opaque) == (opaque,)


# ------------------------------------------------------------------ Ladder's refusals
def test_ladder_refuses_a_state_change_after_the_redraw_even_nested():
    inner, redraw = InnerRefresh(TurnRefresh()), AuxiliaryRefresh(LAW)
    for refresh in (
        redraw + inner,
        ComposedRefresh((redraw, ComposedRefresh((DirectionRefresh(0.5), inner)))),
        inner + redraw + inner,
    ):
        with pytest.raises(ValueError, match=r"AuxiliaryRefresh must be the last part .*\(order: "):
            Ladder(WALK, LookAheadRule(2), refresh)
    # a part that changes only d may follow
    Ladder(WALK, LookAheadRule(2), inner + redraw + DirectionRefresh(0.5))


def test_ladder_refuses_a_refresh_that_never_redraws_alpha():
    for refresh in (None, DirectionRefresh(1.0), InnerRefresh(TurnRefresh())):
        with pytest.raises(ValueError, match="never redraws it: add AuxiliaryRefresh"):
            Ladder(WALK, LookAheadRule(2), refresh)


def test_ladder_refuses_a_redraw_from_another_law_or_for_a_map_without_one():
    other = type(LAW)(top=3.0)
    message = r"redraws α from ShortTailStepLaw\(top=3.0, shape=4.0\), but the map's density"
    with pytest.raises(ValueError, match=message):
        Ladder(WALK, LookAheadRule(2), AuxiliaryRefresh(other))
    Ladder(WALK, LookAheadRule(2), AuxiliaryRefresh(type(LAW)()))  # an equal law is the same law
    with pytest.raises(ValueError, match="the map AuxiliaryLadder carries none"):
        Ladder(CYCLE, LookAheadRule(2), AuxiliaryRefresh(CYCLE.law))


def test_ladder_refuses_an_inner_momentum_refresh_for_another_kinetic_energy():
    @attrs.frozen(eq=False)
    class Kinetic(StepWalk):
        @property
        def kinetic_energy(self):
            return Metric(np.array([1.0]))

    aux = AuxiliaryMap(Kinetic(), LAW)
    wrong = InnerRefresh(MomentumRefresh(0.5, Metric(np.array([4.0]))))
    with pytest.raises(ValueError, match="draws momenta for"):
        Ladder(aux, LookAheadRule(2), wrong + AuxiliaryRefresh(LAW))


# ------------------------------------------------------------------ sampling
def test_both_schedules_give_the_same_trace_on_the_finite_model():
    kernel = Ladder(
        CYCLE.map,
        ReducedFlipLookAheadRule(2),
        InnerRefresh(InnerResample(CYCLE.family.weights)) + AuxiliaryRefresh(CYCLE.law),
    )
    init = CYCLE.encode(np.arange(6).repeat(3))
    ragged = sample(kernel, init, 40, seed=7)
    assert_same_trace(ragged, sample(kernel, init, 40, seed=7, schedule="synchronous"))
    assert set(np.unique(ragged.final.state.alpha)) <= {0, 1}


def test_the_walk_samples_and_describes_itself():
    kernel = walk_kernel()
    trace = sample(kernel, draw_exact(4, np.random.default_rng(0)), 30, seed=0)
    assert trace.states.shape == (30, 4)
    assert isinstance(trace.final.state.inner, WalkState)
    text = json.dumps(kernel.describe())
    assert "AuxiliaryMap" in text and "AuxiliaryRefresh" in text and "InnerRefresh" in text
    assert json.dumps(CYCLE.describe()) and TableLaw([[1]]).describe()["table"] == [["1"]]


def test_a_checkpointed_run_resumes_with_its_alphas(tmp_path):
    from ladder_mcmc import resume

    kernel = walk_kernel()
    init = draw_exact(4, np.random.default_rng(0))
    straight = sample(kernel, init, 30, seed=3, checks=False)
    path = tmp_path / "walk.npz"
    sample(kernel, init, 15, seed=3, checkpoint=path, checks=False)
    resumed = resume(path, kernel, 15, checks=False)
    np.testing.assert_array_equal(resumed.states, straight.states)
    np.testing.assert_array_equal(resumed.final.state.alpha, straight.final.state.alpha)
