"""Exact checks of a ladder kernel on a finite ladder, in rational arithmetic.

:func:`assert_stochastic`, :func:`assert_fixed_point` and
:func:`assert_generalized_detailed_balance` (and :func:`assert_exact`, all three at
once) hold the exact transition matrix (:mod:`ladder_mcmc.verify.transitions`) to
the properties every ladder kernel must have (docs/design.md §7.1), fed by the
strategy :func:`~ladder_mcmc.verify.strategies.finite_ladders`;
:func:`assert_transition_frequencies` holds a sampled run to that matrix. Each
raises :class:`AssertionError` naming the state and the size of the discrepancy.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np

from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.ladder.rules import Rule
from ladder_mcmc.verify.finite import FiniteLadder
from ladder_mcmc.verify.transitions import (
    IntegerKernel,
    _kernel_parts,
    ladder_kernel,
    refresh_kernel,
)

__all__ = [
    "assert_exact",
    "assert_fixed_point",
    "assert_generalized_detailed_balance",
    "assert_stochastic",
    "assert_transition_frequencies",
]


def _name(k: int, n: int) -> str:
    return f"(i={k % n}, d={'+1' if k < n else '-1'})"


def _flip_index(k: int, n: int) -> int:
    return (k + n) % (2 * n)


def _integer_weights(weights: tuple[Fraction, ...]) -> list[int]:
    """Weights times the lcm of their denominators: exact integers, same ratios."""
    scale = math.lcm(*(w.denominator for w in weights))
    return [int(w * scale) for w in weights]


def _check_stochastic(kernel: IntegerKernel, n: int, what: str) -> None:
    den = kernel.denominator
    for k, row in enumerate(kernel.rows):
        for j, p in row.items():
            if p < 0:
                raise AssertionError(
                    f"{what}: negative transition probability T[{_name(k, n)} -> {_name(j, n)}] "
                    f"= {Fraction(p, den)} (the rule's cumulative probabilities must be "
                    "non-decreasing and within [0, 1])"
                )
        total = sum(row.values())
        if total != den:
            raise AssertionError(
                f"{what}: row of state {_name(k, n)} sums to {Fraction(total, den)}, not 1 "
                f"(off by {Fraction(total - den, den)})"
            )


def _check_fixed_point(kernel: IntegerKernel, w: list[int], what: str) -> None:
    n = len(w) // 2
    den = kernel.denominator
    inflow = [0] * (2 * n)
    for k, row in enumerate(kernel.rows):
        wk = w[k]
        for j, p in row.items():
            inflow[j] += wk * p
    for j in range(2 * n):
        if inflow[j] != w[j] * den:
            total = sum(w)
            got, want = Fraction(inflow[j], den * total), Fraction(w[j], total)
            raise AssertionError(
                f"{what}: πT ≠ π at state {_name(j, n)}: (πT) = {got}, π = {want}, "
                f"difference {got - want}"
            )


def _check_gdb(kernel: IntegerKernel, w: list[int], what: str) -> None:
    n = len(w) // 2
    rows = kernel.rows
    for k, row in enumerate(rows):
        fx = _flip_index(k, n)
        for j, p in row.items():
            fy = _flip_index(j, n)
            lhs = w[k] * p
            rhs = w[fy] * rows[fy].get(fx, 0)
            if lhs != rhs:
                scale = sum(w) * kernel.denominator
                raise AssertionError(
                    f"{what}: generalized detailed balance fails for x = {_name(k, n)}, "
                    f"y = {_name(j, n)}: p(x) T(x, y) = {Fraction(lhs, scale)} but "
                    f"p(F y) T(F y, F x) = {Fraction(rhs, scale)} "
                    f"(difference {Fraction(lhs - rhs, scale)})"
                )


def assert_stochastic(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> None:
    """Exact: every transition probability is ``≥ 0`` and every row sums to exactly 1.

    Checked on the ladder move and, if ``include_refresh`` and the kernel has a
    refresh, on the whole step. Negative entries come from a rule whose
    cumulative probabilities decrease or leave ``[0, 1]`` (the rule contract).

    Parameters
    ----------
    kernel : Ladder or Rule
        The kernel to check (a bare rule is a kernel without refresh).
    ladder : FiniteLadder, optional
        Defaults to ``kernel.map``.
    include_refresh : bool
        Also check the whole step (ladder move, then refresh).

    Raises
    ------
    AssertionError
        Naming the state (``(i, d)``) and the offending value.

    Examples
    --------
    >>> from ladder_mcmc import LookAhead
    >>> from ladder_mcmc.verify import FiniteLadder
    >>> assert_stochastic(LookAhead(FiniteLadder([1, 2, 0], [1, 2, 3]), max_rungs=3))
    """
    rule, refresh, ladder = _kernel_parts(kernel, ladder)
    move = ladder_kernel(rule, ladder)
    _check_stochastic(move, ladder.n, "ladder move")
    if include_refresh and refresh is not None:
        _check_stochastic(
            move.then(refresh_kernel(refresh, ladder.n, ladder)), ladder.n, "full step"
        )


def assert_fixed_point(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> None:
    """Exact: ``π T = π`` for ``π(i, d) = w_i / (2 Σ w)``, the extended target.

    (With the masses ``w_i m_i`` of a :class:`~ladder_mcmc.verify.measured.MeasuredLadder`
    in place of ``w_i``.)

    Checked on the ladder move alone and, if ``include_refresh`` and the kernel
    has a refresh, on the whole step.

    Raises
    ------
    AssertionError
        Naming the first state ``(i, d)`` where ``(πT)`` and ``π`` differ, with
        both values and the difference.

    Examples
    --------
    >>> from ladder_mcmc import LookAhead
    >>> from ladder_mcmc.verify import FiniteLadder
    >>> assert_fixed_point(LookAhead(FiniteLadder([1, 2, 0], [1, 2, 3]), max_rungs=3))
    """
    rule, refresh, ladder = _kernel_parts(kernel, ladder)
    weights = _integer_weights(ladder.extended_masses)
    move = ladder_kernel(rule, ladder)
    _check_fixed_point(move, weights, "ladder move")
    if include_refresh and refresh is not None:
        full = move.then(refresh_kernel(refresh, ladder.n, ladder))
        _check_fixed_point(full, weights, "full step")


def assert_generalized_detailed_balance(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None
) -> None:
    """Exact: ``p(x) T(x, y) = p(F y) T(F y, F x)`` for the ladder move, ``F(i, d) = (i, −d)``.

    The paper's generalized detailed balance (section 4.3: ``p(ζ) π_a(ζ) =
    p(F L^a ζ) π_a(F L^a ζ)``), summed over the rungs that reach the same state.
    Summed over ``x`` it gives ``πT = π`` (because ``p(F y) = p(y)`` and rows
    sum to 1), so it is the stronger, more local check.

    It is checked on the ladder move only, **refresh excluded**: the property is
    not preserved by composition (if ``A`` and ``B`` each satisfy it, ``A B``
    satisfies ``p(x)(AB)(x, y) = p(F y)(AB)(F y, F x)`` only if
    ``p(x)(AB)(x, y) = p(x)(BA)(x, y)``, i.e. when they commute), so a correct
    kernel "ladder move then refresh" generally fails it. The refresh is
    covered by :func:`assert_fixed_point`.

    Raises
    ------
    AssertionError
        Naming ``x`` and ``y`` and both sides.

    Examples
    --------
    >>> from ladder_mcmc.verify import FiniteLadder
    >>> from ladder_mcmc.ladder import LookAheadRule
    >>> assert_generalized_detailed_balance(LookAheadRule(4), FiniteLadder([1, 2, 0], [1, 2, 3]))
    """
    rule, _, ladder = _kernel_parts(kernel, ladder)
    _check_gdb(ladder_kernel(rule, ladder), _integer_weights(ladder.extended_masses), "ladder move")


def assert_exact(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> None:
    """All three exact checks, sharing one computation of the matrix (the fast path).

    :func:`assert_stochastic` and :func:`assert_fixed_point` on the ladder move
    and on the full step, :func:`assert_generalized_detailed_balance` on the
    ladder move.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from ladder_mcmc import DirectionRefresh, LookAhead
    >>> from ladder_mcmc.verify import FiniteLadder
    >>> ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    >>> assert_exact(LookAhead(ladder, max_rungs=2, refresh=DirectionRefresh(Fraction(1, 3))))
    """
    rule, refresh, ladder = _kernel_parts(kernel, ladder)
    weights = _integer_weights(ladder.extended_masses)
    move = ladder_kernel(rule, ladder)
    _check_stochastic(move, ladder.n, "ladder move")
    _check_gdb(move, weights, "ladder move")
    _check_fixed_point(move, weights, "ladder move")
    if include_refresh and refresh is not None:
        full = move.then(refresh_kernel(refresh, ladder.n, ladder))
        _check_stochastic(full, ladder.n, "full step")
        _check_fixed_point(full, weights, "full step")


def assert_transition_frequencies(
    kernel: Ladder,
    reference: Ladder | np.ndarray | None = None,
    n_per_state: int = 2000,
    n_steps: int = 1,
    schedule: Literal["ragged", "synchronous"] = "ragged",
    seed: int = 0,
    false_alarm: float = 1e-6,
    ladder: FiniteLadder | None = None,
) -> np.ndarray:
    """Statistical: sampled transitions on a finite ladder agree with the exact matrix.

    Starts ``n_per_state`` chains at every extended state ``(i, d)``, runs
    ``n_steps`` steps with :func:`ladder_mcmc.sample` (either driver), and
    compares the counts of final extended states with the exact
    ``T^{n_steps}``: a transition of exact probability 0 must never be seen,
    and every other count must pass an exact two-sided binomial test at level
    ``false_alarm / m`` (Bonferroni over the ``m`` non-zero entries), so a
    correct sampler fails with probability at most ``false_alarm``.

    Parameters
    ----------
    kernel : Ladder
        A kernel on a :class:`~ladder_mcmc.verify.finite.FiniteLadder`, sampled.
    reference : Ladder or array (2n, 2n), optional
        Where the exact matrix comes from: another kernel (e.g. the correct one,
        when ``kernel`` is a suspect variant) or a matrix of Fractions;
        default ``kernel`` itself.
    n_per_state : int
        Chains started at each extended state.
    n_steps : int
        Steps per chain.
    schedule : {"ragged", "synchronous"}
        The driver.
    seed : int
        Seeds the run.
    false_alarm : float
        Total probability that a correct sampler fails.
    ladder : FiniteLadder, optional
        The finite model of ``kernel.map`` when the map is not itself a finite ladder
        (an :class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap` and its
        :class:`~ladder_mcmc.verify.auxiliary_finite.AuxiliaryLadder`): chains start at
        ``ladder.encode(i)`` and are read back with ``ladder.decode``, and the exact
        matrix is the kernel's on ``ladder``. Default ``kernel.map``.

    Returns
    -------
    counts : int array (2n, 2n)

    Raises
    ------
    AssertionError
        Naming the transition, its count, its expected count and p-value.
    """
    from scipy.stats import binomtest

    from ladder_mcmc.run.sampling import sample
    from ladder_mcmc.verify.finite import extended_index
    from ladder_mcmc.verify.transitions import exact_transition_matrix

    ladder = kernel.map if ladder is None else ladder
    if not isinstance(ladder, FiniteLadder):
        raise TypeError(
            f"kernel.map must be a FiniteLadder (or pass ladder=...), got {type(ladder).__name__}"
        )
    n = ladder.n
    if reference is None or isinstance(reference, Ladder):
        exact = exact_transition_matrix(kernel if reference is None else reference, ladder)
    else:
        exact = np.asarray(reference, dtype=object)
    power = exact
    for _ in range(n_steps - 1):
        power = power.dot(exact)
    start = np.repeat(np.arange(2 * n), n_per_state)
    rng = np.random.default_rng([seed, 7])
    ks = kernel.init(ladder.encode(start % n), rng, direction=np.where(start < n, 1, -1))
    trace = sample(kernel, ks, n_steps, seed=seed, schedule=schedule)
    end = extended_index(ladder.decode(trace.final.state), trace.final.direction, n)
    counts = np.zeros((2 * n, 2 * n), dtype=np.int64)
    np.add.at(counts, (start, end), 1)
    for x, y in np.argwhere((power == 0) & (counts > 0)):
        raise AssertionError(
            f"{counts[x, y]} of {n_per_state} chains went {_name(x, n)} -> {_name(y, n)} "
            f"in {n_steps} step(s), a transition of exact probability 0"
        )
    nonzero = np.argwhere(power != 0)
    level = false_alarm / max(1, len(nonzero))
    worst = (1.0, None)
    for x, y in nonzero:
        p = float(power[x, y])
        # p = 1: any shortfall lands on a probability-0 entry, caught above
        pval = binomtest(int(counts[x, y]), n_per_state, p).pvalue if p < 1 else 1.0
        if pval < worst[0]:
            worst = (pval, (x, y, p))
    if worst[0] < level:
        x, y, p = worst[1]
        raise AssertionError(
            f"{_name(x, n)} -> {_name(y, n)} in {n_steps} step(s) ({schedule}): "
            f"{counts[x, y]} of {n_per_state} chains, expected {p * n_per_state:.1f} "
            f"(exact probability {power[x, y]}); binomial p-value {worst[0]:.3g} < "
            f"{level:.3g} (= false_alarm {false_alarm:g} / {len(nonzero)} entries)"
        )
    return counts
