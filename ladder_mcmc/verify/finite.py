"""Finite ladders and exact transition matrices in rational arithmetic.

A *finite ladder* is a reversible map on the integer states ``0 .. n-1``: a
permutation ``L`` with positive weights ``w`` (the unnormalised density). With
the direction ``d ∈ {±1}`` the extended space has ``2n`` states ``(i, d)`` and
density ``p(i, d) = w_i / (2 Σ w)`` (docs/design.md §1, §7.1). Every quantity a ladder
rule computes on it is rational, so the transition matrix of any ladder kernel
can be built with :class:`fractions.Fraction` and checked with ``==``
(``ladder_mcmc.testing`` does the checking).

The matrix is built from the kernel's own pieces — ``rule.positions``,
``rule.outcomes``, ``rule.fallthrough``, :meth:`Rule.update` (called on numpy
object arrays of fractions, memory starting at ``Fraction(0)``),
:func:`ladder_mcmc.ladder.base_for` and the map's :meth:`move` — so the exact
checks test the arithmetic that samples, not a second copy of it.

Extended states are indexed ``i`` for ``(i, +1)`` and ``n + i`` for ``(i, -1)``
(:func:`extended_index`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.ladder import Ladder, base_for, check_rule
from ladder_mcmc.maps import ReversibleMap
from ladder_mcmc.refresh import ComposedRefresh, DirectionRefresh, Refresh
from ladder_mcmc.rules import FLIP, Rule

Row = dict[int, Fraction]
"""A sparse row of a transition matrix: destination index -> probability."""


# ---------------------------------------------------------------- validation
def _as_permutation(name: str, value: Any) -> tuple[int, ...]:
    try:
        perm = tuple(operator_index(v) for v in value)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of integers, got {value!r}") from None
    n = len(perm)
    if n == 0 or sorted(perm) != list(range(n)):
        raise ValueError(f"{name} must be a permutation of 0..n-1 (n >= 1), got {value!r}")
    return perm


def operator_index(v: Any) -> int:
    """``int(v)`` for Python or numpy integers (not bools, not floats)."""
    if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
        raise TypeError(v)
    return int(v)


def _as_weights(value: Any, n: int) -> tuple[Fraction, ...]:
    try:
        items = list(value)
    except TypeError:
        raise ValueError(f"weights must be a sequence, got {value!r}") from None
    if len(items) != n:
        raise ValueError(
            f"weights must have one entry per state ({n}), got {len(items)}: {value!r}"
        )
    out = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (numbers.Rational, np.integer)):
            raise ValueError(
                f"weights must be positive ints or Fractions (kept exact), got {w!r} in {value!r}"
            )
        f = Fraction(int(w)) if isinstance(w, np.integer) else Fraction(w)
        if f <= 0:
            raise ValueError(f"weights must be positive, got {w!r} in {value!r}")
        out.append(f)
    return tuple(out)


# ---------------------------------------------------------------- the maps
@attrs.frozen(eq=False, init=False)
class FiniteLadder(ReversibleMap):
    """A permutation ``L`` of the states ``0 .. n-1`` with positive weights.

    Construction (a) of docs/design.md §7.1: any permutation, any positive weights; the
    inverse is given directly (``backward`` = the inverse permutation).
    States are integer arrays, chains first.

    Parameters
    ----------
    permutation : sequence of int
        ``L``: state ``i`` moves to ``permutation[i]``.
    weights : sequence of positive int or Fraction
        Unnormalised density ``w_i`` of state ``i``; kept exact
        (``log_density`` returns ``log w`` as floats for sampling).

    Attributes
    ----------
    n : int
        Number of states.
    permutation, inverse : tuple of int
        ``L`` and ``L^-1``.
    weights : tuple of Fraction
        The exact weights.

    Raises
    ------
    ValueError
        If ``permutation`` is not a permutation of ``0 .. n-1`` or the weights
        are not ``n`` positive ints or Fractions.

    Examples
    --------
    >>> import numpy as np
    >>> ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    >>> ladder.move(np.array([0, 0]), np.array([1, -1]))
    array([1, 2])
    >>> ladder.weights[2]
    Fraction(3, 1)
    """

    permutation: tuple[int, ...]
    weights: tuple[Fraction, ...]
    inverse: tuple[int, ...]
    _perm: np.ndarray = attrs.field(repr=False)
    _inv: np.ndarray = attrs.field(repr=False)
    _log_w: np.ndarray = attrs.field(repr=False)

    def __init__(self, permutation: Sequence[int], weights: Sequence[int | Fraction]) -> None:
        perm = _as_permutation("permutation", permutation)
        w = _as_weights(weights, len(perm))
        inv = [0] * len(perm)
        for i, j in enumerate(perm):
            inv[j] = i
        self.__attrs_init__(
            perm,
            w,
            tuple(inv),
            np.array(perm, dtype=np.int64),
            np.array(inv, dtype=np.int64),
            np.array([math.log(x.numerator) - math.log(x.denominator) for x in w]),
        )

    @classmethod
    def from_involutions(
        cls,
        F: Sequence[int],  # noqa: N803 - the paper's letters
        G: Sequence[int],  # noqa: N803
        weights: Sequence[int | Fraction],
    ) -> InvolutionLadder:
        """Construction (b) of docs/design.md §7.1: ``L = F ∘ G`` for two involutions, flip ``F``.

        ``L(i) = F[G[i]]``; the returned map defines ``flip = F`` and derives
        ``L^-1 = F L F`` from it (``= G ∘ F``), like leapfrog does.

        Parameters
        ----------
        F, G : sequence of int
            Involutions of ``0 .. n-1`` (``F[F[i]] == i``).
        weights : sequence of positive int or Fraction
            Constant on the orbits of ``F`` (``weights[F[i]] == weights[i]``), so
            that ``p(F ζ) = p(ζ)``.

        Raises
        ------
        ValueError
            Naming ``F``, ``G`` or ``weights`` if one is not a permutation, not an
            involution, or the weights are not positive or not constant on
            ``F``-orbits.

        Examples
        --------
        >>> ladder = FiniteLadder.from_involutions([1, 0, 2], [0, 2, 1], [5, 5, 2])
        >>> ladder.permutation, ladder.has_flip
        ((1, 2, 0), True)
        """
        f = _as_permutation("F", F)
        g = _as_permutation("G", G)
        if len(f) != len(g):
            raise ValueError(f"F and G must act on the same states, got lengths {len(f)}, {len(g)}")
        for name, inv in (("F", f), ("G", g)):
            bad = [i for i in range(len(inv)) if inv[inv[i]] != i]
            if bad:
                raise ValueError(
                    f"{name} must be an involution ({name}[{name}[i]] == i); "
                    f"fails at i={bad[0]}: {inv!r}"
                )
        w = _as_weights(weights, len(f))
        bad = [i for i in range(len(f)) if w[f[i]] != w[i]]
        if bad:
            i = bad[0]
            raise ValueError(
                f"weights must be constant on F-orbits (p(F ζ) = p(ζ)); weights[{i}] = {w[i]} "
                f"but weights[F[{i}]] = weights[{f[i]}] = {w[f[i]]}"
            )
        return InvolutionLadder([f[g[i]] for i in range(len(f))], w, f)

    @property
    def n(self) -> int:
        """Number of states."""
        return len(self.permutation)

    def forward(self, state: np.ndarray) -> np.ndarray:
        """``L i`` for every chain."""
        return self._perm[np.asarray(state)]

    def backward(self, state: np.ndarray) -> np.ndarray:
        """``L^-1 i`` for every chain."""
        return self._inv[np.asarray(state)]

    def log_density(self, state: np.ndarray) -> np.ndarray:
        """``log w_i`` (floats) for every chain."""
        return self._log_w[np.asarray(state)]

    def prepare(self, init: Any, rng: np.random.Generator) -> np.ndarray:
        """Validate initial states: integers in ``0 .. n-1``, shape (chains,)."""
        arr = np.asarray(init)
        if arr.ndim != 1 or arr.size < 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"init must be a 1-d integer array of states, got {init!r}")
        if arr.min() < 0 or arr.max() >= self.n:
            raise ValueError(f"init states must lie in 0..{self.n - 1}, got {init!r}")
        return arr.astype(np.int64)

    def extended_index(self, i: Any, d: Any) -> Any:
        """Index of the extended state ``(i, d)``: see :func:`extended_index`."""
        return extended_index(i, d, self.n)

    def describe(self) -> dict:
        return {
            "map": type(self).__name__,
            "permutation": list(self.permutation),
            "weights": [str(w) for w in self.weights],
        }


@attrs.frozen(eq=False, init=False)
class InvolutionLadder(FiniteLadder):
    """``L = F ∘ G`` with the flip ``F`` (build it with :meth:`FiniteLadder.from_involutions`).

    ``backward`` is derived from the flip (``F L F``), so samplers on this map
    exercise the flip path of :meth:`ReversibleMap.move`.

    Attributes
    ----------
    flip_permutation : tuple of int
        ``F``.
    """

    flip_permutation: tuple[int, ...] = ()
    _flip: np.ndarray = attrs.field(repr=False, default=None)

    def __init__(
        self,
        permutation: Sequence[int],
        weights: Sequence[int | Fraction],
        flip_permutation: Sequence[int],
    ) -> None:
        base = FiniteLadder(permutation, weights)
        f = _as_permutation("flip_permutation", flip_permutation)
        self.__attrs_init__(
            base.permutation,
            base.weights,
            base.inverse,
            base._perm,
            base._inv,
            base._log_w,
            f,
            np.array(f, dtype=np.int64),
        )

    def flip(self, state: np.ndarray) -> np.ndarray:
        """``F i`` for every chain."""
        return self._flip[np.asarray(state)]

    backward = ReversibleMap.backward

    def describe(self) -> dict:
        return {**super().describe(), "flip": list(self.flip_permutation)}


# ---------------------------------------------------------------- indexing
def extended_index(i: Any, d: Any, n: int) -> Any:
    """Index of the extended state ``(i, d)``: ``i`` if ``d = +1``, ``n + i`` if ``d = -1``.

    Works on ints and on integer arrays.

    Examples
    --------
    >>> extended_index(2, -1, 5)
    7
    """
    if np.ndim(i) == 0 and np.ndim(d) == 0:
        return int(i) if d > 0 else n + int(i)
    return np.where(np.asarray(d) > 0, np.asarray(i), n + np.asarray(i))


def stationary_distribution(ladder: FiniteLadder) -> np.ndarray:
    """Exact ``p(i, d) = w_i / (2 Σ w)``, object array (2n,) of Fractions.

    Examples
    --------
    >>> stationary_distribution(FiniteLadder([1, 0], [1, 3])).tolist()
    [Fraction(1, 8), Fraction(3, 8), Fraction(1, 8), Fraction(3, 8)]
    """
    total = 2 * sum(ladder.weights)
    p = [w / total for w in ladder.weights]
    return np.array(p + p, dtype=object)


# ---------------------------------------------------------------- exact kernels
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


def _cumulative(rule: Rule, ladder: FiniteLadder) -> tuple[list[list], np.ndarray]:
    """Run the rule on all ``2n`` extended states at once: ``C_s`` per stage, and the rungs."""
    n = ladder.n
    origin = np.concatenate([np.arange(n), np.arange(n)])
    direction = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
    w = np.array(ladder.weights, dtype=object)
    w0 = w[origin]
    positions = tuple(rule.positions)
    rungs = np.empty((2 * n, len(positions)), dtype=np.int64)
    memory = np.full(2 * n, Fraction(0), dtype=object)
    cums = []
    current = origin
    for s in range(len(positions)):
        from_origin, sign = base_for(positions, s)
        base = origin if from_origin else current
        rung = np.asarray(ladder.move(base, sign * direction), dtype=np.int64)
        ratio = w[rung] / w0
        memory, cum = rule.update(memory, np.full(2 * n, s), ratio)
        memory = np.array(_exact(memory, "memory", rule, 2 * n), dtype=object)
        cums.append(_exact(cum, "cumulative", rule, 2 * n))
        rungs[:, s] = rung
        current = rung
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
    negative probability (:func:`ladder_mcmc.testing.assert_stochastic`).

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
    >>> from ladder_mcmc.rules import LookAheadRule
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


def refresh_kernel(refresh: Refresh, n: int) -> IntegerKernel:
    """The exact refresh on ``2n`` extended states, for finite refreshes.

    Raises
    ------
    TypeError
        For a refresh with no finite matrix (e.g. ``MomentumRefresh``).
    """
    if isinstance(refresh, ComposedRefresh):
        out = IntegerKernel([{k: 1} for k in range(2 * n)], 1)
        for part in refresh.parts:
            out = out.then(refresh_kernel(part, n))
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
        "supported: None, DirectionRefresh (prob a Fraction or binary float) and "
        "ComposedRefresh of those (or pass include_refresh=False)"
    )


def exact_kernel(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> IntegerKernel:
    """The exact transition matrix as an :class:`IntegerKernel` (the fast representation)."""
    rule, refresh, ladder = _kernel_parts(kernel, ladder)
    out = ladder_kernel(rule, ladder)
    if include_refresh and refresh is not None:
        out = out.then(refresh_kernel(refresh, ladder.n))
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
    "FiniteLadder",
    "InvolutionLadder",
    "IntegerKernel",
    "exact_kernel",
    "exact_transition_matrix",
    "exact_transition_rows",
    "extended_index",
    "ladder_kernel",
    "outcome_probabilities",
    "refresh_kernel",
    "stationary_distribution",
]
