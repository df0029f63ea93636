"""Exact check of PersistentUniformRule (Neal 2020 + look-ahead): slice maps are bijections.

The rule carries its uniform, so it has no transition matrix on ``(i, d)``
(``exact_transition_matrix`` refuses it). Instead (docs/design.md §5.2): with the slice
level ``s = u·p(ζ)`` held fixed, one ladder move is a deterministic map ``T_s`` of
the slice ``{p > s}``. The joint target of ``(ζ, v)`` — ``p(ζ)`` times uniform
``v ∈ [-1, 1)`` — is kept iff ``T_s`` is a bijection of the slice for every ``s``
and ``u' = s/p(ζ')``: then each ``(ζ, u)``-interval is carried linearly onto a
``(ζ', u')``-interval with density ``p(ζ)·du = p(ζ')·du'``, the images tile
every ``{ζ'} × [0, 1)`` exactly once, and the rotation ``v ← v + δ`` keeps the
uniform law. On a finite ladder ``T_s`` only changes at the weights, so one
representative ``s`` per interval ``[w_(k), w_(k+1))`` checks every ``s``. The
arithmetic run here is the rule's own (``update``, ``uniform``, ``next_carry`` on
Fractions).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladder_mcmc.ladder import FLIP, LookAheadRule, PersistentUniformRule
from ladder_mcmc.ladder.persistent_uniform import wrap
from ladder_mcmc.ladder.rules import base_for
from ladder_mcmc.verify import FiniteLadder, extended_index, finite_ladders

ladders = finite_ladders(1, 6, 6, construction="both")


def slice_move(rule, ladder: FiniteLadder, s: Fraction):
    """``T_s`` on the slice ``{w > s}`` with the rule's own arithmetic.

    Returns ``(states, dest, code, ratio)``: extended indices in the slice,
    where each goes, the outcome code and ``p(ζ')/p(ζ)`` of the move taken.
    """
    n = ladder.n
    w = np.array(ladder.weights, dtype=object)
    ks = np.array([k for k in range(2 * n) if w[k % n] > s], dtype=np.int64)
    i, d = ks % n, np.where(ks < n, 1, -1)
    w0 = w[i]
    # the rule's uniform from its carry: v = ±u, u = s/p(ζ)
    u = rule.uniform(np.array([s / x for x in w0], dtype=object), None, len(ks))
    code = np.full(len(ks), rule.fallthrough, dtype=np.int64)
    dest_state = i.copy()
    decided = np.zeros(len(ks), dtype=bool)
    memory = np.full(len(ks), Fraction(0), dtype=object)
    current = i
    positions = tuple(rule.positions)
    for stage in range(len(positions)):
        from_origin, sign = base_for(positions, stage)
        rung = ladder.move(i if from_origin else current, sign * d)
        memory, cum = rule.update(memory, np.full(len(ks), stage), w[rung] / w0)
        stop = ~decided & np.array([a < b for a, b in zip(u, cum, strict=True)], dtype=bool)
        code[stop] = rule.outcomes[stage]
        if rule.outcomes[stage] > 0:
            dest_state[stop] = rung[stop]
        decided |= stop
        current = rung
    new_d = np.where(code == FLIP, -d, d)
    dest = extended_index(dest_state, new_d, n)
    ratio = w[dest_state] / w0
    return ks, dest, code, ratio, u


def levels(ladder: FiniteLadder) -> list[Fraction]:
    """One slice level per interval on which T_s is constant: 0 and every weight but the max."""
    ws = sorted(set(ladder.weights))
    return [Fraction(0), *ws[:-1]]


@pytest.mark.parametrize("k", [1, 2, 3])
@settings(max_examples=80)
@given(ladder=ladders, delta=st.sampled_from([Fraction(0), Fraction(1, 7), Fraction(3, 2)]))
def test_slice_moves_are_bijections_and_rescale_exactly(k, ladder, delta):
    rule = PersistentUniformRule(k, delta=delta)
    w = ladder.weights
    n = ladder.n
    for s in levels(ladder):
        ks, dest, code, ratio, u = slice_move(rule, ladder, s)
        # T_s maps the slice into itself, one to one: a bijection of a finite set
        assert all(w[j % n] > s for j in dest)
        assert len(set(dest.tolist())) == len(ks)
        # the carried uniform: u' = s/p(ζ') (rescaled on acceptance), then rotated by δ
        for sign in (1, -1):
            v = np.array([sign * x for x in u], dtype=object)
            got = rule.next_carry(v, u, code, np.where(code > 0, ratio, Fraction(1)))
            want = [wrap(sign * (s / w[j % n]) + delta) for j in dest]
            assert list(got) == want
            assert all(-1 <= g < 1 for g in got)


@settings(max_examples=40)
@given(ladder=ladders)
def test_persistent_uniform_with_fresh_u_is_look_ahead(ladder):
    """Averaged over u ~ U[0, 1), the move is LAHMC's: stop probabilities agree with C_a."""
    from ladder_mcmc.verify import outcome_probabilities

    rule = PersistentUniformRule(3)
    probs, _ = outcome_probabilities(LookAheadRule(3), ladder)
    # the interval of u on which each state takes each outcome, from the slice maps
    n = ladder.n
    w = ladder.weights
    length = np.full((2 * n, 4), Fraction(0), dtype=object)
    for k in range(2 * n):
        # breakpoints of u for state k: u = w_j / w_k
        cuts = sorted({Fraction(0), Fraction(1)} | {x / w[k % n] for x in w if x < w[k % n]})
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            ks, _, code, _, _ = slice_move(rule, ladder, lo * w[k % n])
            c = int(code[list(ks).index(k)])
            length[k, c - 1 if c > 0 else 3] += hi - lo
    assert (length == probs).all()


def test_the_bijection_check_catches_a_wrong_rule():
    """Mutation: accepting with min(1, 2·ratio) breaks bijectivity on a 3-cycle."""

    class Greedy(PersistentUniformRule):
        def update(self, memory, stage, ratio):
            running = np.maximum(memory, ratio)
            return running, np.minimum(1, 2 * running)

    ladder = FiniteLadder([1, 2, 0], [1, 2, 4])
    broken = False
    for s in levels(ladder) + [Fraction(3, 2)]:
        ks, dest, *_ = slice_move(Greedy(1), ladder, s)
        n = ladder.n
        broken |= len(set(dest.tolist())) < len(ks) or any(ladder.weights[j % n] <= s for j in dest)
    assert broken


def test_exact_matrix_refuses_the_carried_uniform():
    from ladder_mcmc.verify import exact_transition_matrix

    with pytest.raises(TypeError, match="carries its uniform"):
        exact_transition_matrix(PersistentUniformRule(2), FiniteLadder([1, 0], [1, 2]))


def test_delta_is_validated():
    with pytest.raises(ValueError, match="delta"):
        PersistentUniformRule(2, delta=2.5)
    with pytest.raises(ValueError, match="max_rungs"):
        PersistentUniformRule(0)
