"""The exact properties of the look-ahead ladder, as reusable Hypothesis properties.

Each ``*_property(make_rule, max_examples, **settings)`` returns a Hypothesis
test function; ``tests/exact/test_lookahead_exact.py`` runs them on
``LookAheadRule`` and ``tests/mutation/test_mutants.py`` runs the very same
properties on deliberately broken rules and asserts that they fail. The
``measured_*`` properties take a measured-ladder class instead (docs/design.md §13):
``tests/exact/test_measured_exact.py`` runs them on ``MeasuredLadder``,
``tests/mutation/test_jacobian_mutants.py`` on ladders with a broken Jacobian. The
``auxiliary_*`` properties take a product-ladder class and the refreshes to run
(docs/design.md §14): ``tests/exact/test_auxiliary_exact.py`` runs them on
``AuxiliaryLadder`` with the redraw of ``α`` last, ``tests/mutation/test_auxiliary_mutants.py``
on ladders whose law is dropped or reads ``d``, and with the redraw first.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import attrs
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ladder_mcmc import ComposedRefresh, DirectionRefresh, Ladder
from ladder_mcmc.arrays import namespace
from ladder_mcmc.ladder import (
    FLIP,
    AuxiliaryRefresh,
    InnerRefresh,
    LookAheadRule,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
    Rule,
)
from ladder_mcmc.ladder.persistent_uniform import wrap
from ladder_mcmc.verify import (
    AuxiliaryLadder,
    FiniteLadder,
    InnerResample,
    MeasuredLadder,
    assert_exact,
    auxiliary_ladders,
    exact_rungs,
    exact_transition_rows,
    extended_index,
    finite_ladders,
    measured_ladders,
    outcome_probabilities,
    refresh_kernel,
    stationary_distribution,
)

MAX_K = 6
# per property; each example checks every K = 1..6 (cost: benchmarks/results/verification.md)
N_EXAMPLES = 1000

REFRESHES = st.sampled_from(
    [
        None,
        DirectionRefresh(Fraction(1, 3)),
        DirectionRefresh(0.25),  # an exact binary float
        DirectionRefresh(1.0),
        ComposedRefresh((DirectionRefresh(Fraction(1, 5)), DirectionRefresh(Fraction(1, 2)))),
    ]
)


# ------------------------------------------------------------------ properties
def lookahead_exact_property(make_rule=LookAheadRule, max_examples: int = N_EXAMPLES, **kw):
    """Rows sum to 1, πT = π (move and full step), GDB (move), for every K."""

    @settings(max_examples=max_examples, **kw)
    @given(ladder=finite_ladders(max_states=12), refresh=REFRESHES)
    def prop(ladder, refresh):
        for k in range(1, MAX_K + 1):
            assert_exact(Ladder(ladder, make_rule(k), refresh), ladder)

    return prop


def paper_recursion(ladder: FiniteLadder, max_rungs: int):
    """``π_{L^a}(i, d)`` for ``a = 1..K``, straight from the paper (section 4.3).

    ``π_a(ζ) = min[1 − Σ_{b<a} π_b(ζ), p(F L^a ζ)/p(ζ) · (1 − Σ_{b<a} π_b(F L^a ζ))]``
    on the extended space, where ``F L^a (i, d) = (L^{a d} i, −d)`` and
    ``p(i, d) = w_i / 2``. Returns a function ``pi(i, d, a)``.
    """
    perm, inv, w = ladder.permutation, ladder.inverse, ladder.weights

    def power(i: int, m: int) -> int:
        for _ in range(abs(m)):
            i = perm[i] if m > 0 else inv[i]
        return i

    @functools.cache
    def pi(i: int, d: int, a: int) -> Fraction:
        j = power(i, a * d)  # F L^a (i, d) = (j, -d)
        forward_left = 1 - sum((pi(i, d, b) for b in range(1, a)), Fraction(0))
        reverse_left = 1 - sum((pi(j, -d, b) for b in range(1, a)), Fraction(0))
        return min(forward_left, w[j] / w[i] * reverse_left)

    return pi


def closed_form_property(make_rule=LookAheadRule, max_examples: int = N_EXAMPLES, **kw):
    """The rule's stage probabilities equal the paper's recursion, for every state and rung."""

    @settings(max_examples=max_examples, **kw)
    @given(ladder=finite_ladders(max_states=12), max_rungs=st.integers(1, MAX_K))
    def prop(ladder, max_rungs):
        probs, _ = outcome_probabilities(make_rule(max_rungs), ladder)
        pi = paper_recursion(ladder, max_rungs)
        n = ladder.n
        for i in range(n):
            for d in (1, -1):
                k = extended_index(i, d, n)
                expected = [pi(i, d, a) for a in range(1, max_rungs + 1)]
                expected.append(1 - sum(expected, Fraction(0)))  # π_F
                assert list(probs[k]) == expected, (
                    f"state (i={i}, d={d:+d}), K={max_rungs}: rule gives {list(probs[k])}, "
                    f"the paper's recursion {expected}"
                )

    return prop


def metropolis_hastings_rows(ladder: FiniteLadder) -> list[dict[int, Fraction]]:
    """Textbook MH on the extended space with the involutive proposal ``F L``, then ``F``.

    ``F L (i, d) = (L^d i, −d)``; accept with ``min(1, w'/w)``, else stay;
    afterwards the deterministic flip ``(i, d) → (i, −d)`` (paper, section 3.4:
    HMC = MH on ``F L``, then a momentum flip). Sparse rows ``{index: prob}``.
    """
    n = ladder.n
    rows = []
    for k in range(2 * n):
        i, d = k % n, (1 if k < n else -1)
        j = ladder.permutation[i] if d > 0 else ladder.inverse[i]
        accept = min(Fraction(1), ladder.weights[j] / ladder.weights[i])
        mh = {extended_index(j, -d, n): accept}  # proposal F L accepted
        if accept < 1:
            mh[k] = 1 - accept  # rejected: stay
        rows.append({extended_index(y % n, -1 if y < n else 1, n): p for y, p in mh.items()})
    return rows


def metropolis_property(make_rule=LookAheadRule, max_examples: int = N_EXAMPLES, **kw):
    """``K = 1`` equals Metropolis–Hastings on the ladder, entry for entry."""

    @settings(max_examples=max_examples, **kw)
    @given(ladder=finite_ladders(max_states=12))
    def prop(ladder):
        got = exact_transition_rows(make_rule(1), ladder)
        want = metropolis_hastings_rows(ladder)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g == w, f"K=1 differs from MH in row {k}: {g} vs {w}"

    return prop


# ------------------------------------------------------------------ fall-through rungs
@attrs.frozen
class FallThroughMetropolisRule(Rule):
    """HMC written with a fall-through rung: stage 0 computes ``L ζ``; stop = flip with
    probability ``1 − min(1, r)``, else fall through to ``L ζ`` (code 1).

    The same kernel as ``LookAheadRule(1)``, reached through ``fallthrough > 0``. Written
    with the namespace of its input, as the shipped rules are: it runs in the compiled loop.
    """

    positions = (1,)
    outcomes = (FLIP,)
    fallthrough = 1

    def update(self, memory, stage, ratio):
        return memory, 1 - namespace(ratio).minimum(1, ratio)


def fallthrough_property(make_rule=FallThroughMetropolisRule, max_examples: int = 300, **kw):
    """The fall-through rule's exact matrix equals ``LookAheadRule(1)``'s, entry for entry
    (ladder move alone and with a direction refresh)."""

    @settings(max_examples=max_examples, **kw)
    @given(ladder=finite_ladders(max_states=12), refresh=REFRESHES)
    def prop(ladder, refresh):
        got = exact_transition_rows(Ladder(ladder, make_rule(), refresh), ladder)
        want = exact_transition_rows(Ladder(ladder, LookAheadRule(1), refresh), ladder)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g == w, f"row {k}: fall-through rule {g}, LookAheadRule(1) {w}"

    return prop


# ------------------------------------------------------------------ measured ladders (§13)
#: every shipped rule with a transition matrix, on measured ladders
MEASURED_RULES = [
    LookAheadRule(1),
    LookAheadRule(2),
    LookAheadRule(4),
    ReducedFlipRule(),
    ReducedFlipLookAheadRule(2),
    ReducedFlipLookAheadRule(3),
    FallThroughMetropolisRule(),
]
MEASURED = measured_ladders(1, 7, 6, 6)


def rebuilt(ladder: MeasuredLadder, ladder_class=MeasuredLadder) -> MeasuredLadder:
    """The same measured ladder as an instance of ``ladder_class`` (a mutant, in tests)."""
    if ladder_class is type(ladder):
        return ladder
    return ladder_class(
        ladder.permutation, ladder.weights, ladder.measure, flip=ladder.flip_permutation
    )


def measured_exact_property(ladder_class=MeasuredLadder, max_examples: int = 150, **kw):
    """Every rule of :data:`MEASURED_RULES`: rows sum to 1, ``πT = π`` for the masses
    ``p·m`` (move and full step) and their generalized detailed balance (move)."""

    @settings(max_examples=max_examples, **kw)
    @given(ladder=MEASURED, refresh=REFRESHES)
    def prop(ladder, refresh):
        ladder = rebuilt(ladder, ladder_class)
        for rule in MEASURED_RULES:
            assert_exact(Ladder(ladder, rule, refresh), ladder)

    return prop


def measured_slice_move(rule, ladder: MeasuredLadder, s: Fraction):
    """The persistent-uniform move ``T_s`` on the slice ``{p·m > s}`` of a measured ladder,
    with the rule's own arithmetic and the exact Jacobian ratios (``exact_rungs``).

    Returns ``(states, dest, code, ratio, u)``: the extended indices in the slice, where
    each goes, its outcome code, the ratio ``r`` of the move taken (1 if none) and its
    uniform ``u = s / (p·m)``.
    """
    n = ladder.n
    mass = np.array(ladder.masses, dtype=object)
    ks = np.array([k for k in range(2 * n) if mass[k % n] > s], dtype=np.int64)
    i, d = ks % n, np.where(ks < n, 1, -1)
    u = rule.uniform(np.array([s / x for x in mass[i]], dtype=object), None, len(ks))
    code = np.full(len(ks), rule.fallthrough, dtype=np.int64)
    dest_state, taken = i.copy(), np.full(len(ks), Fraction(1), dtype=object)
    decided = np.zeros(len(ks), dtype=bool)
    memory = np.full(len(ks), Fraction(0), dtype=object)
    for stage, (rung, ratio) in enumerate(exact_rungs(ladder, tuple(rule.positions), i, d)):
        memory, cum = rule.update(memory, np.full(len(ks), stage), ratio)
        stop = ~decided & np.array([a < b for a, b in zip(u, cum, strict=True)], dtype=bool)
        code[stop] = rule.outcomes[stage]
        if rule.outcomes[stage] > 0:
            dest_state[stop] = rung[stop]
            taken[stop] = ratio[stop]
        decided |= stop
    dest = extended_index(dest_state, np.where(code == FLIP, -d, d), n)
    return ks, dest, code, taken, u


def measured_persistent_uniform_property(ladder_class=MeasuredLadder, max_examples: int = 60, **kw):
    """``PersistentUniformRule``: for one level ``s`` per interval between masses, ``T_s`` is
    a bijection of the slice ``{p·m > s}`` and the carried uniform becomes ``s / (p·m)(ζ')``
    (rescaled by the Jacobian-weighted ratio), then rotated by ``δ`` (docs/design.md §5.2, §13).
    """

    @settings(max_examples=max_examples, **kw)
    @given(ladder=MEASURED, k=st.integers(1, 3))
    def prop(ladder, k):
        ladder = rebuilt(ladder, ladder_class)
        rule = PersistentUniformRule(k, delta=Fraction(1, 7))
        mass = ladder.masses
        n = ladder.n
        for s in [Fraction(0), *sorted(set(mass))[:-1]]:
            ks, dest, code, ratio, u = measured_slice_move(rule, ladder, s)
            assert all(mass[j % n] > s for j in dest), f"T_s leaves the slice s = {s}"
            assert len(set(dest.tolist())) == len(ks), f"T_s is not one to one at s = {s}"
            got = rule.next_carry(u, u, code, ratio)  # v = +u
            want = [wrap(s / mass[j % n] + rule.delta) for j in dest]
            assert list(got) == want, f"carried uniform at s = {s}: {list(got)} vs {want}"

    return prop


# ------------------------------------------------------------------ product ladders (§14)
AUXILIARY = auxiliary_ladders(1, 5, 3, 6, 4)


def correct_refreshes(ladder: AuxiliaryLadder) -> list:
    """Refreshes that keep ``p(ζ) p(α | ζ)``: the redraw of ``α`` last among the parts that
    change the state, after refreshes of ``ζ`` (a fresh draw from ``p``, or within pairs)
    and with direction refreshes anywhere."""
    w, n = ladder.family.weights, ladder.n_inner
    fresh = InnerRefresh(InnerResample(w))
    pairs = InnerRefresh(InnerResample(w, [i // 2 for i in range(n)]))
    redraw = AuxiliaryRefresh(ladder.law)
    return [
        redraw,
        fresh + redraw,
        pairs + DirectionRefresh(Fraction(1, 3)) + redraw,
        DirectionRefresh(Fraction(1, 4)) + redraw + DirectionRefresh(Fraction(1, 2)),
        ComposedRefresh((pairs + fresh, redraw)),
    ]


def rebuilt_auxiliary(ladder: AuxiliaryLadder, ladder_class=AuxiliaryLadder) -> AuxiliaryLadder:
    """The same product ladder as an instance of ``ladder_class`` (a mutant, in tests)."""
    if ladder_class is type(ladder):
        return ladder
    family = ladder.family
    return ladder_class(
        family.permutations, family.weights, ladder.law.table, flip=family.flip_permutation
    )


def auxiliary_exact_property(
    ladder_class=AuxiliaryLadder,
    refreshes=correct_refreshes,
    ladders=AUXILIARY,
    max_examples: int = 60,
    **kw,
):
    """Every rule of :data:`MEASURED_RULES` on the map ``(ζ, α) → (π_α ζ, α)``: rows sum to 1,
    ``πT = π`` for ``p(ζ) p(α | ζ)`` (the move, and the whole step: move, refresh, redraw
    of ``α``) and generalized detailed balance of the move, exactly."""

    @settings(max_examples=max_examples, **kw)
    @given(ladder=ladders, choice=st.integers(0, 15))
    def prop(ladder, choice):
        ladder = rebuilt_auxiliary(ladder, ladder_class)
        options = refreshes(ladder)
        refresh = options[choice % len(options)]
        for rule in MEASURED_RULES:
            assert_exact(Ladder(ladder.map, rule, refresh), ladder)

    return prop


def assert_refresh_keeps(ladder: FiniteLadder, refresh) -> None:
    """Exact: ``π R = π`` for the refresh alone (``π`` the ladder's extended masses)."""
    rows = refresh_kernel(refresh, ladder.n, ladder).fractions()
    p = stationary_distribution(ladder)
    inflow = [Fraction(0)] * len(p)
    for k, row in enumerate(rows):
        for j, q in row.items():
            inflow[j] += p[k] * q
    assert inflow == list(p), f"the refresh changes the target: {inflow} vs {list(p)}"


def auxiliary_persistent_uniform_property(
    ladder_class=AuxiliaryLadder, refreshes=correct_refreshes, max_examples: int = 40, **kw
):
    """``PersistentUniformRule`` on product ladders: for one level ``s`` per interval between
    the masses ``p(ζ) p(α | ζ)``, ``T_s`` is a bijection of the slice and carries the uniform
    to ``s / p(ζ') p(α | ζ')``; and every refresh (which does not look at ``u``) keeps the
    masses (docs/design.md §5.2, §14)."""

    @settings(max_examples=max_examples, **kw)
    @given(ladder=AUXILIARY, k=st.integers(1, 3))
    def prop(ladder, k):
        ladder = rebuilt_auxiliary(ladder, ladder_class)
        rule = PersistentUniformRule(k, delta=Fraction(1, 7))
        mass, n = ladder.masses, ladder.n
        for s in [Fraction(0), *sorted(set(mass))[:-1]]:
            ks, dest, code, ratio, u = measured_slice_move(rule, ladder, s)
            assert all(mass[j % n] > s for j in dest), f"T_s leaves the slice s = {s}"
            assert len(set(dest.tolist())) == len(ks), f"T_s is not one to one at s = {s}"
            got = rule.next_carry(u, u, code, ratio)
            want = [wrap(s / mass[j % n] + rule.delta) for j in dest]
            assert list(got) == want, f"carried uniform at s = {s}: {list(got)} vs {want}"
        for refresh in refreshes(ladder):
            assert_refresh_keeps(ladder, refresh)

    return prop
