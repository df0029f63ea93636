"""``verify.finite``: finite ladders, their validation, and exact transition matrices."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladder_mcmc import ComposedRefresh, DirectionRefresh, Ladder, LookAhead, MomentumRefresh
from ladder_mcmc.ladder import LookAheadRule
from ladder_mcmc.verify import (
    FiniteLadder,
    exact_transition_matrix,
    extended_index,
    finite_ladders,
    outcome_probabilities,
    stationary_distribution,
)


def test_finite_ladder_basics():
    ladder = FiniteLadder([1, 2, 0], [1, 2, Fraction(7, 2)])
    assert ladder.n == 3
    assert ladder.weights == (Fraction(1), Fraction(2), Fraction(7, 2))
    assert ladder.inverse == (2, 0, 1)
    s = np.array([0, 1, 2])
    np.testing.assert_array_equal(ladder.forward(s), [1, 2, 0])
    np.testing.assert_array_equal(ladder.backward(s), [2, 0, 1])
    np.testing.assert_allclose(ladder.log_density(s), np.log([1, 2, 3.5]))
    assert not ladder.has_flip
    np.testing.assert_array_equal(ladder.move(s, np.array([1, -1, 1])), [1, 0, 0])


def test_from_involutions_builds_l_equals_f_after_g_with_flip():
    f, g = [1, 0, 3, 2], [0, 2, 1, 3]
    ladder = FiniteLadder.from_involutions(f, g, [4, 4, 1, 1])
    assert ladder.permutation == tuple(f[g[i]] for i in range(4))
    assert ladder.has_flip and ladder.flip_permutation == tuple(f)
    s = np.arange(4)
    np.testing.assert_array_equal(ladder.backward(ladder.forward(s)), s)  # F L F = L⁻¹
    np.testing.assert_array_equal(ladder.backward(s), ladder.inverse)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (([0, 0, 1], [1, 1, 1]), "permutation"),
        (([0, 1, 3], [1, 1, 1]), "permutation"),
        (([], []), "permutation"),
        (([0.0, 1.0], [1, 1]), "permutation"),
        (([1, 0], [1, 0]), "weights must be positive"),
        (([1, 0], [1, -2]), "weights must be positive"),
        (([1, 0], [1]), "weights must have one entry per state"),
        (([1, 0], [1.5, 1]), "weights must be positive ints or Fractions"),
    ],
)
def test_finite_ladder_rejects_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        FiniteLadder(*args)


@pytest.mark.parametrize(
    ("f", "g", "w", "name"),
    [
        ([1, 2, 0], [0, 1, 2], [1, 1, 1], "F must be an involution"),
        ([0, 1, 2], [1, 2, 0], [1, 1, 1], "G must be an involution"),
        ([1, 0, 2], [0, 2, 1], [1, 2, 3], "weights must be constant on F-orbits"),
        ([1, 0, 2], [1, 0], [1, 1, 1], "same states"),
        ([1, 0, 1], [0, 2, 1], [1, 1, 1], "F must be a permutation"),
    ],
)
def test_from_involutions_rejects_bad_input(f, g, w, name):
    with pytest.raises(ValueError, match=name):
        FiniteLadder.from_involutions(f, g, w)


def test_prepare_validates_initial_states():
    ladder = FiniteLadder([1, 0], [1, 1])
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(ladder.prepare(np.array([1, 0]), rng), [1, 0])
    for bad in (np.array([0, 2]), np.array([-1]), np.array([0.0]), np.zeros((2, 1), int)):
        with pytest.raises(ValueError, match="init"):
            ladder.prepare(bad, rng)


def test_indexing_and_stationary_distribution():
    assert extended_index(2, 1, 5) == 2 and extended_index(2, -1, 5) == 7
    np.testing.assert_array_equal(
        extended_index(np.array([0, 1]), np.array([-1, 1]), 3), np.array([3, 1])
    )
    p = stationary_distribution(FiniteLadder([1, 2, 0], [1, 2, 3]))
    assert list(p) == [Fraction(k, 12) for k in (1, 2, 3, 1, 2, 3)]
    assert sum(p) == 1


def test_exact_matrix_by_hand():
    # 3-cycle, weights 1, 2, 3, K = 2. From (2, +1): rungs are states 0 (ratio 1/3)
    # and 1 (ratio 2/3): C_1 = 1/3, C_2 = 2/3 -> L1 1/3, L2 1/3, flip 1/3.
    ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    matrix = exact_transition_matrix(LookAhead(ladder, 2))
    assert matrix.shape == (6, 6) and matrix.dtype == object
    assert all(isinstance(v, Fraction) for v in matrix.ravel())
    row = {j: matrix[2, j] for j in range(6) if matrix[2, j]}
    assert row == {0: Fraction(1, 3), 1: Fraction(1, 3), 5: Fraction(1, 3)}
    probs, rungs = outcome_probabilities(LookAheadRule(2), ladder)
    assert list(probs[2]) == [Fraction(1, 3)] * 3
    assert rungs[2].tolist() == [0, 1]
    assert rungs[5].tolist() == [1, 0]  # from (2, -1): L⁻¹ 2 = 1, then 0


def test_exact_matrix_with_refreshes():
    ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    move = exact_transition_matrix(LookAhead(ladder, 2))
    for refresh, rho in [
        (DirectionRefresh(Fraction(1, 3)), Fraction(1, 3)),
        (DirectionRefresh(0.25), Fraction(1, 4)),
        # two resamplings: the direction is kept w.p. (1 − ρ1/2)(1 − ρ2/2) + ρ1ρ2/4
        (DirectionRefresh(Fraction(1, 2)) + DirectionRefresh(Fraction(1, 2)), Fraction(3, 4)),
    ]:
        r = np.full((6, 6), Fraction(0), dtype=object)
        for k in range(6):
            r[k, k] = 1 - rho / 2
            r[k, (k + 3) % 6] = rho / 2
        full = exact_transition_matrix(LookAhead(ladder, 2, refresh))
        assert (full == move.dot(r)).all()
        kernel = Ladder(ladder, LookAheadRule(2), refresh)
        assert (exact_transition_matrix(kernel, include_refresh=False) == move).all()
    assert isinstance(DirectionRefresh(0.5) + DirectionRefresh(0.5), ComposedRefresh)


def test_exact_matrix_refuses_what_it_cannot_represent():
    ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    with pytest.raises(TypeError, match="MomentumRefresh has no exact finite transition matrix"):
        exact_transition_matrix(Ladder(ladder, LookAheadRule(2), MomentumRefresh(0.5)))
    exact_transition_matrix(
        Ladder(ladder, LookAheadRule(2), MomentumRefresh(0.5)), include_refresh=False
    )

    class Carried(LookAheadRule):
        def init_carry(self, n_chains, rng):
            return rng.random(n_chains)

    with pytest.raises(TypeError, match="carries its uniform"):
        exact_transition_matrix(Carried(2), ladder)

    class Floating(LookAheadRule):
        def update(self, memory, stage, ratio):
            return memory, np.minimum(1.0, ratio.astype(float))

    with pytest.raises(TypeError, match="non-rational cumulative"):
        exact_transition_matrix(Floating(2), ladder)

    from ladder_mcmc import Leapfrog
    from ladder_mcmc.models import IllConditionedGaussian

    with pytest.raises(TypeError, match="need a FiniteLadder"):
        exact_transition_matrix(LookAhead(Leapfrog(IllConditionedGaussian(2), 0.5, 2)))
    with pytest.raises(TypeError, match="kernel must be a Ladder or a Rule"):
        exact_transition_matrix("lookahead", ladder)


def test_the_kernel_samples_on_a_finite_ladder():
    from ladder_mcmc import sample

    ladder = FiniteLadder.from_involutions([1, 0, 2], [0, 2, 1], [5, 5, 2])
    trace = sample(
        LookAhead(ladder, 2, DirectionRefresh(0.5)), np.array([0, 1, 2]), 20, seed=1, warmup=0
    )
    assert trace.states.shape == (20, 3)
    assert set(np.unique(trace.states)) <= {0, 1, 2}


@settings(max_examples=200, database=None)
@given(ladder=finite_ladders(max_states=7), max_rungs=st.integers(1, 4))
def test_integer_path_equals_fraction_path(ladder, max_rungs):
    # exact_transition_matrix goes through integers over a common denominator;
    # rebuild it here from the per-stage Fractions of outcome_probabilities
    n = ladder.n
    probs, rungs = outcome_probabilities(LookAheadRule(max_rungs), ladder)
    want = np.full((2 * n, 2 * n), Fraction(0), dtype=object)
    for k in range(2 * n):
        i, d = k % n, (1 if k < n else -1)
        for s in range(max_rungs):
            want[k, extended_index(int(rungs[k, s]), d, n)] += probs[k, s]
        want[k, extended_index(i, -d, n)] += probs[k, max_rungs]  # the flip
    assert (exact_transition_matrix(LookAheadRule(max_rungs), ladder) == want).all()
