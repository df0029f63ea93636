"""Exact transition matrices of ladder kernels on finite ladders, in rational arithmetic.

The matrix is built from the kernel's own pieces — ``rule.positions``,
``rule.outcomes``, ``rule.fallthrough``, :meth:`Rule.update` (called on numpy
object arrays of fractions, memory starting at ``Fraction(0)``),
:func:`ladder_mcmc.ladder.rules.base_for` and the map's :meth:`move` — so the exact
checks (:mod:`ladder_mcmc.verify.exact`) test the arithmetic that samples, not a
second copy of it. Extended states are indexed as in
:func:`~ladder_mcmc.verify.finite.extended_index`.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.ladder.refresh import ComposedRefresh, DirectionRefresh, Refresh
from ladder_mcmc.ladder.rules import FLIP, Rule, base_for, check_rule
from ladder_mcmc.verify.finite import FiniteLadder, Row, extended_index


def _kernel_parts(kernel: Ladder | Rule, ladder: FiniteLadder | None):
    if isinstance(kernel, Rule):
        check_rule(kernel)  # (a Ladder has checked its rule already)
        rule, refresh, map_ = kernel, None, None
    elif isinstance(kernel, Ladder):
        rule, refresh, map_ = kernel.rule, kernel.refresh, kernel.map
    else:
        raise TypeError(f"kernel must be a Ladder or a Rule, got {type(kernel).__name__}")
    ladder = map_ if ladder is None else ladder
    if not isinstance(ladder, FiniteLadder):
        raise TypeError(
            "exact transition matrices need a FiniteLadder (pass ladder=...), got "
            f"{type(ladder).__name__}"
        )
    if rule.init_carry(1, np.random.default_rng(0)) is not None:
        raise TypeError(
            f"rule {type(rule).__name__} carries its uniform between steps (init_carry is not "
            "None): its transitions are not a Markov kernel on (i, d) alone, so no finite "
            "transition matrix represents it"
        )
    return rule, refresh, ladder


def _exact(values: Any, what: str, rule: Rule, size: int) -> list:
    """The values as a list of ints/Fractions, or TypeError if the rule left the rationals."""
    out = list(np.broadcast_to(np.asarray(values, dtype=object), (size,)))
    for k, v in enumerate(out):
        t = type(v)
        if t is Fraction or t is int:
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Rational, np.integer)):
            raise TypeError(
                f"rule {type(rule).__name__}.update returned a non-rational {what} {v!r} "
                f"({type(v).__name__}); its arithmetic must work on Fractions to be checked exactly"
            )
        out[k] = int(v) if isinstance(v, np.integer) else Fraction(v)
    return out


def exact_rungs(
    ladder: FiniteLadder, positions: tuple[int, ...], origin: np.ndarray, direction: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The rung of every stage of a plan and its exact ratio, from extended states.

    For each stage ``s``: the state at ``positions[s]`` (relative to ``direction``),
    computed as a sampler does (:func:`~ladder_mcmc.ladder.rules.base_for`, the map's
    ``move``), and ``r_s = p(rung) |det ∂(rung)/∂ζ| / p(ζ)`` as Fractions, the densities
    read by ``ladder.rung_weights`` (the weights; a product ladder's ``p(ζ) p(α | ζ)``,
    docs/design.md §14). For a map that changes volume (a
    :class:`~ladder_mcmc.verify.measured.MeasuredLadder`) the Jacobian is its exact
    ``move_jacobian``, multiplied up one map application at a time and restarted where a
    stage starts from ``ζ`` (docs/design.md §13).

    Raises
    ------
    TypeError
        For a finite ladder that changes volume without an exact ``move_jacobian``.
    """
    w0 = ladder.rung_weights(origin, direction)
    measured = not ladder.volume_preserving
    if measured and not hasattr(ladder, "move_jacobian"):
        raise TypeError(
            f"{type(ladder).__name__} changes volume (it declares log_det_jacobian) but has "
            "no exact move_jacobian; build it as a MeasuredLadder"
        )
    out = []
    current, jac = origin, None
    for s in range(len(positions)):
        from_origin, sign = base_for(positions, s)
        base = origin if from_origin else current
        rung = np.asarray(ladder.move(base, sign * direction), dtype=np.int64)
        ratio = ladder.rung_weights(rung, direction) / w0
        if measured:
            step = ladder.move_jacobian(base, rung, sign * direction)
            jac = step if from_origin else jac * step
            ratio = ratio * jac
        out.append((rung, ratio))
        current = rung
    return out


def _cumulative(rule: Rule, ladder: FiniteLadder) -> tuple[list[list], np.ndarray]:
    """Run the rule on all ``2n`` extended states at once: ``C_s`` per stage, and the rungs."""
    n = ladder.n
    origin = np.concatenate([np.arange(n), np.arange(n)])
    direction = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
    positions = tuple(rule.positions)
    rungs = np.empty((2 * n, len(positions)), dtype=np.int64)
    memory = np.full(2 * n, Fraction(0), dtype=object)
    cums = []
    for s, (rung, ratio) in enumerate(exact_rungs(ladder, positions, origin, direction)):
        memory, cum = rule.update(memory, np.full(2 * n, s), ratio)
        memory = np.array(_exact(memory, "memory", rule, 2 * n), dtype=object)
        cums.append(_exact(cum, "cumulative", rule, 2 * n))
        rungs[:, s] = rung
    return cums, rungs


def outcome_probabilities(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact probability of each way one ladder move (refresh excluded) can end.

    The rule is run on all ``2n`` extended states at once, stage by stage, with
    the same calls a sampler makes. The probability of stopping at stage ``s``
    is ``C_s − C_{s−1}`` (``C_{−1} = 0``) and of falling through ``1 − C_last``,
    where ``C`` is what :meth:`Rule.update` returns; under the rule contract
    (``C`` non-decreasing, in ``[0, 1]``) this is exactly the law of "first
    stage with ``u < C_s``", and a rule that breaks the contract shows up as a
    negative probability (:func:`ladder_mcmc.verify.exact.assert_stochastic`).

    Parameters
    ----------
    kernel : Ladder or Rule
        The kernel (its rule is used) or a bare rule.
    ladder : FiniteLadder, optional
        The ladder; defaults to ``kernel.map``.

    Returns
    -------
    probs : object array (2n, n_stages + 1) of Fraction
        Column ``s`` = stop at stage ``s``; last column = fall through.
    rungs : int array (2n, n_stages)
        The state computed at each stage, from each extended state.

    Examples
    --------
    >>> from ladder_mcmc.ladder import LookAheadRule
    >>> probs, rungs = outcome_probabilities(LookAheadRule(2), FiniteLadder([1, 2, 0], [1, 2, 3]))
    >>> probs[2].tolist(), rungs[2].tolist()  # from (2, +1): rungs 0 and 1, weights 1 and 2
    ([Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)], [0, 1])
    """
    rule, _, ladder = _kernel_parts(kernel, ladder)
    cums, rungs = _cumulative(rule, ladder)
    size = 2 * ladder.n
    probs = np.empty((size, len(cums) + 1), dtype=object)
    previous = [Fraction(0)] * size
    for s, cum in enumerate(cums):
        probs[:, s] = [Fraction(c - p) for c, p in zip(cum, previous, strict=True)]
        previous = cum
    probs[:, len(cums)] = [Fraction(1 - p) for p in previous]
    return probs, rungs


@attrs.frozen(eq=False)
class IntegerKernel:
    """A transition matrix over a common denominator: ``T[x, y] = rows[x][y] / denominator``.

    Integer arithmetic is what makes the exact checks fast (about 20 times
    faster than :class:`~fractions.Fraction`); the values are exact.

    Attributes
    ----------
    rows : list of dict
        Sparse rows, ``{destination index: integer numerator}``; zeros omitted.
    denominator : int
        Positive common denominator.
    """

    rows: list[dict[int, int]]
    denominator: int

    def fractions(self) -> list[Row]:
        """The rows as ``{index: Fraction}``."""
        d = self.denominator
        return [{j: Fraction(v, d) for j, v in row.items()} for row in self.rows]

    def then(self, other: IntegerKernel) -> IntegerKernel:
        """Sparse matrix product: the kernel "``self`` then ``other``"."""
        out = []
        second = other.rows
        for row in self.rows:
            new: dict[int, int] = {}
            for m, p in row.items():
                for j, q in second[m].items():
                    new[j] = new.get(j, 0) + p * q
            out.append({j: v for j, v in new.items() if v})
        return IntegerKernel(out, self.denominator * other.denominator)


def _destination(code: int, i: np.ndarray, d: np.ndarray, rung: np.ndarray | None, n: int):
    """Extended index after outcome ``code`` (the semantics of ``Ladder.step``)."""
    if code > 0:
        return extended_index(rung, d, n)
    if code == FLIP:
        return extended_index(i, -d, n)
    return extended_index(i, d, n)


def ladder_kernel(rule: Rule, ladder: FiniteLadder) -> IntegerKernel:
    """The exact ladder move (no refresh) of ``rule`` on ``ladder`` as an :class:`IntegerKernel`."""
    n = ladder.n
    size = 2 * n
    cums, rungs = _cumulative(rule, ladder)
    denom = 1
    for cum in cums:
        for c in cum:
            if type(c) is Fraction:
                denom = math.lcm(denom, c.denominator)
    scaled = [
        [c * denom if type(c) is int else c.numerator * (denom // c.denominator) for c in cum]
        for cum in cums
    ]
    i = np.concatenate([np.arange(n), np.arange(n)])
    d = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
    rows: list[dict[int, int]] = [{} for _ in range(size)]
    previous = [0] * size
    codes = [*rule.outcomes, rule.fallthrough]
    for s, code in enumerate(codes):
        if s < len(scaled):
            cum = scaled[s]
            dest = _destination(code, i, d, rungs[:, s], n).tolist()
        else:  # fall through: a rung code is the last stage's rung (check_rule)
            cum = [denom] * size
            dest = _destination(code, i, d, rungs[:, -1], n).tolist()
        for k in range(size):
            p = cum[k] - previous[k]
            if p:
                row = rows[k]
                row[dest[k]] = row.get(dest[k], 0) + p
        previous = cum
    return IntegerKernel([{j: v for j, v in row.items() if v} for row in rows], denom)


def refresh_kernel(refresh: Refresh, n: int, ladder: FiniteLadder | None = None) -> IntegerKernel:
    """The exact refresh on ``2n`` extended states, for finite refreshes.

    ``ladder``, if given, is asked first (``ladder.exact_refresh``): a product ladder
    knows the redraw of its ``α`` (docs/design.md §14). Then ``DirectionRefresh`` and
    compositions (their parts in order, each asked the same way).

    Raises
    ------
    TypeError
        For a refresh with no finite matrix (e.g. ``MomentumRefresh``).
    """
    if ladder is not None:
        own = ladder.exact_refresh(refresh)
        if own is not None:
            return own
    if isinstance(refresh, ComposedRefresh):
        out = IntegerKernel([{k: 1} for k in range(2 * n)], 1)
        for part in refresh.parts:
            out = out.then(refresh_kernel(part, n, ladder))
        return out
    if isinstance(refresh, DirectionRefresh):
        half = Fraction(refresh.prob) / 2
        den = half.denominator
        flip, stay = half.numerator, den - half.numerator
        rows = []
        for k in range(2 * n):
            row = {k: stay} if stay else {}
            if flip:
                row[(k + n) % (2 * n)] = flip
            rows.append(row)
        return IntegerKernel(rows, den)
    raise TypeError(
        f"refresh {type(refresh).__name__} has no exact finite transition matrix; "
        "supported: None, DirectionRefresh (prob a Fraction or binary float), the refreshes "
        "of a product ladder (AuxiliaryRefresh, InnerRefresh(InnerResample)) and "
        "ComposedRefresh of those (or pass include_refresh=False)"
    )


def exact_kernel(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> IntegerKernel:
    """The exact transition matrix as an :class:`IntegerKernel` (the fast representation)."""
    rule, refresh, ladder = _kernel_parts(kernel, ladder)
    out = ladder_kernel(rule, ladder)
    if include_refresh and refresh is not None:
        out = out.then(refresh_kernel(refresh, ladder.n, ladder))
    return out


def exact_transition_rows(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> list[Row]:
    """The exact transition matrix as sparse rows (``list`` of ``{index: Fraction}``).

    Same as :func:`exact_transition_matrix` without the zeros (a row of the
    ladder move has at most ``n_stages + 1`` entries).
    """
    return exact_kernel(kernel, ladder, include_refresh).fractions()


def exact_transition_matrix(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> np.ndarray:
    """Exact transition matrix of one kernel step on a finite ladder, in Fractions.

    ``T[x, y]`` is the probability that one step (ladder move, then the refresh
    if ``include_refresh``) goes from extended state ``x`` to ``y``, indexed by
    :func:`extended_index`. Built from the kernel's own rule arithmetic
    (:func:`outcome_probabilities`).

    Parameters
    ----------
    kernel : Ladder or Rule
        A ladder kernel (or a bare rule: no refresh).
    ladder : FiniteLadder, optional
        The finite ladder; defaults to ``kernel.map``.
    include_refresh : bool
        Compose with the kernel's refresh (``DirectionRefresh`` or a
        ``ComposedRefresh`` of them; the probability is taken exactly, a float
        as its exact binary value).

    Returns
    -------
    object array (2n, 2n) of Fraction

    Raises
    ------
    TypeError
        If the ladder is not a FiniteLadder, the rule carries its uniform
        between steps (Neal 2020: not a kernel on ``(i, d)`` alone), the rule's
        arithmetic is not rational, or the refresh is not finite (e.g.
        ``MomentumRefresh``).

    Examples
    --------
    >>> from ladder_mcmc import LookAhead
    >>> T = exact_transition_matrix(LookAhead(FiniteLadder([1, 0], [1, 3]), max_rungs=1))
    >>> T[0].tolist()  # from (0, +1): to (1, +1) always, since w_1 > w_0
    [Fraction(0, 1), Fraction(1, 1), Fraction(0, 1), Fraction(0, 1)]
    >>> T[1].tolist()  # from (1, +1): to (0, +1) w.p. 1/3, flip to (1, -1) w.p. 2/3
    [Fraction(1, 3), Fraction(0, 1), Fraction(0, 1), Fraction(2, 3)]
    """
    rows = exact_transition_rows(kernel, ladder, include_refresh)
    size = len(rows)
    out = np.full((size, size), Fraction(0), dtype=object)
    for k, row in enumerate(rows):
        for j, p in row.items():
            out[k, j] = p
    return out


__all__ = [
    "IntegerKernel",
    "exact_kernel",
    "exact_rungs",
    "exact_transition_matrix",
    "exact_transition_rows",
    "ladder_kernel",
    "outcome_probabilities",
    "refresh_kernel",
]
