"""Finite ladders on product sets ``{ζ} × {α}``: a map parameter with a state-dependent law.

The finite model of :mod:`ladder_mcmc.ladder.auxiliary` (docs/design.md §14): integer
states ``ζ ∈ 0 .. n-1`` with rational weights ``p(ζ)``, one permutation ``π_α`` of them
per value ``α ∈ 0 .. m-1`` (:class:`PermutationFamily`, with a common flip ``F`` if
given) and a rational table ``p(α | ζ)`` (:class:`TableLaw`, rows summing to 1,
invariant under ``F``). :class:`AuxiliaryLadder` is all of it at once:

* a :class:`~ladder_mcmc.verify.finite.FiniteLadder` on the ``n·m`` pairs, indexed
  ``α·n + ζ``, with the permutation ``(ζ, α) → (π_α ζ, α)`` computed by the
  :class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap` and weights ``p(ζ) p(α | ζ)``, so
  every exact check of :mod:`ladder_mcmc.verify.exact` runs on it unchanged;
* the exact matrices of its refreshes: the redraw of ``α`` (``AuxiliaryRefresh``, a
  Gibbs kernel) and a refresh of ``ζ`` that keeps ``p(ζ)`` but not ``p(ζ) p(α | ζ)``
  (``InnerRefresh(InnerResample(...))``, the finite "momentum refresh");
* :attr:`AuxiliaryLadder.map`, the ``AuxiliaryMap`` itself, for sampling (``encode``
  and ``decode`` translate its states), so sampled transitions meet the exact matrix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.ladder.auxiliary import AuxiliaryLaw, AuxiliaryMap, AuxiliaryState, MapFamily
from ladder_mcmc.ladder.auxiliary_refresh import AuxiliaryRefresh, InnerRefresh
from ladder_mcmc.ladder.refresh import Refresh, same_kinetic_energy
from ladder_mcmc.verify.finite import FiniteLadder, _as_permutation, _as_weights
from ladder_mcmc.verify.transitions import IntegerKernel

__all__ = ["AuxiliaryLadder", "InnerResample", "PermutationFamily", "TableLaw"]


def _logs(values: Sequence[Fraction]) -> np.ndarray:
    return np.array([math.log(x.numerator) - math.log(x.denominator) for x in values])


@attrs.frozen(eq=False, init=False)
class PermutationFamily(MapFamily):
    """``L_α = π_α``: one permutation of the integer states ``0 .. n-1`` per ``α``.

    Parameters
    ----------
    permutations : sequence of sequences of int
        ``permutations[α][i]`` is ``π_α i``; ``m ≥ 1`` permutations of ``n`` states.
    weights : sequence of positive int or Fraction
        ``p(ζ)``, kept exact (``log_density`` returns floats).
    flip : sequence of int, optional
        An involution ``F`` (the same for every ``α``) with ``F π_α F = π_α⁻¹`` and
        weights constant on its orbits; the inverse is then derived from it. Without it
        the inverse permutations are used.

    Raises
    ------
    ValueError
        Naming the argument, if a permutation is not one, the weights are not positive,
        or the flip is not an involution, does not keep the weights or does not invert
        some ``π_α``.
    """

    permutations: tuple[tuple[int, ...], ...]
    weights: tuple[Fraction, ...]
    flip_permutation: tuple[int, ...] | None
    _perm: np.ndarray = attrs.field(repr=False)
    _inv: np.ndarray = attrs.field(repr=False)
    _log_w: np.ndarray = attrs.field(repr=False)
    _flip: np.ndarray | None = attrs.field(repr=False)

    def __init__(
        self,
        permutations: Sequence[Sequence[int]],
        weights: Sequence[int | Fraction],
        flip: Sequence[int] | None = None,
    ) -> None:
        perms = tuple(_as_permutation(f"permutations[{a}]", p) for a, p in enumerate(permutations))
        if not perms or len({len(p) for p in perms}) != 1:
            raise ValueError(
                "permutations must be m >= 1 permutations of the same n states, got "
                f"{permutations!r}"
            )
        n = len(perms[0])
        w = _as_weights(weights, n)
        inv = np.empty((len(perms), n), dtype=np.int64)
        for a, p in enumerate(perms):
            inv[a, list(p)] = np.arange(n)
        f = None
        if flip is not None:
            f = _as_permutation("flip", flip)
            _check_flip(f, perms, inv, w)
        self.__attrs_init__(
            perms,
            w,
            f,
            np.array(perms, dtype=np.int64),
            inv,
            _logs(w),
            None if f is None else np.array(f, dtype=np.int64),
        )

    @property
    def n(self) -> int:
        """Number of states ``ζ``."""
        return len(self.weights)

    @property
    def n_alpha(self) -> int:
        """Number of values of ``α``."""
        return len(self.permutations)

    @property
    def has_flip(self) -> bool:
        """Whether a flip was given."""
        return self._flip is not None

    def forward(self, state: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """``π_α ζ`` for every chain."""
        return self._perm[np.asarray(alpha), np.asarray(state)]

    def backward(self, state: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """``π_α⁻¹ ζ``: ``F π_α F ζ`` with a flip, the inverse permutation without."""
        if self._flip is not None:
            return MapFamily.backward(self, state, alpha)
        return self._inv[np.asarray(alpha), np.asarray(state)]

    def flip(self, state: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """``F ζ`` for every chain (``α`` is not read)."""
        if self._flip is None:
            raise NotImplementedError("this PermutationFamily was built without a flip")
        return self._flip[np.asarray(state)]

    def log_density(self, state: np.ndarray) -> np.ndarray:
        """``log p(ζ)`` (floats)."""
        return self._log_w[np.asarray(state)]

    def prepare(self, init: Any, rng: np.random.Generator) -> np.ndarray:
        """Validate initial states: integers in ``0 .. n-1``, shape (chains,)."""
        return FiniteLadder.prepare(self, init, rng)  # (reads only ``self.n``)

    def describe(self) -> dict:
        out = {
            "family": "PermutationFamily",
            "permutations": [list(p) for p in self.permutations],
            "weights": [str(w) for w in self.weights],
        }
        if self.flip_permutation is not None:
            out["flip"] = list(self.flip_permutation)
        return out


def _check_flip(
    f: tuple[int, ...], perms: tuple[tuple[int, ...], ...], inv: np.ndarray, w: tuple
) -> None:
    n = len(perms[0])
    if len(f) != n:
        raise ValueError(f"flip must act on the {n} states, got length {len(f)}: {f!r}")
    for i in range(n):
        if f[f[i]] != i:
            raise ValueError(f"flip must be an involution (flip[flip[i]] == i); fails at i={i}")
        if w[f[i]] != w[i]:
            raise ValueError(
                f"flip must keep the weights (p(F ζ) = p(ζ)); weights[{i}] = {w[i]} but "
                f"weights[flip[{i}]] = {w[f[i]]}"
            )
        for a, p in enumerate(perms):
            if f[p[f[i]]] != inv[a, i]:
                raise ValueError(
                    f"flip must invert every map (F π_α F = π_α⁻¹); fails at α={a}, i={i}"
                )


def _as_table(table: Any) -> tuple[tuple[Fraction, ...], ...]:
    try:
        rows = [list(row) for row in table]
    except TypeError:
        raise ValueError(f"table must be a sequence of rows, got {table!r}") from None
    if not rows or len({len(r) for r in rows}) != 1 or not rows[0]:
        raise ValueError(f"table must have n >= 1 rows of the same length m >= 1, got {table!r}")
    out = []
    for i, row in enumerate(rows):
        values = _as_weights(row, len(row), f"table[{i}]")
        if sum(values) != 1:
            raise ValueError(
                f"table[{i}] must sum to 1 (a law of α given ζ = {i}), sums to {sum(values)}"
            )
        out.append(values)
    return tuple(out)


@attrs.frozen(eq=False, init=False)
class TableLaw(AuxiliaryLaw):
    """``p(α | ζ) = table[ζ][α]`` for integer states ``ζ`` and ``α ∈ 0 .. m-1``.

    Parameters
    ----------
    table : sequence of sequences of positive int or Fraction
        One row per state ``ζ``, each summing to exactly 1 (kept exact; ``log_prob``
        returns floats). Invariant under the family's flip where there is one
        (:class:`AuxiliaryLadder` checks it; ``check_map`` checks any law).

    Raises
    ------
    ValueError
        If a row is not positive rationals summing to 1, or the rows differ in length.

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction
    >>> law = TableLaw([[Fraction(1, 4), Fraction(3, 4)], [Fraction(1, 2), Fraction(1, 2)]])
    >>> law.log_prob(np.array([1, 0]), np.array([0, 1])).round(4).tolist()  # log 3/4, log 1/2
    [-0.2877, -0.6931]
    >>> law.sample(np.array([0, 0, 1]), np.random.default_rng(0)).tolist()
    [1, 1, 0]
    """

    table: tuple[tuple[Fraction, ...], ...]
    _log: np.ndarray = attrs.field(repr=False)
    _cdf: np.ndarray = attrs.field(repr=False)

    def __init__(self, table: Sequence[Sequence[int | Fraction]]) -> None:
        rows = _as_table(table)
        cdf = np.cumsum(np.array(rows, dtype=float), axis=1)
        cdf[:, -1] = 1.0  # the last value takes whatever rounding leaves
        self.__attrs_init__(rows, np.array([_logs(r) for r in rows]), cdf)

    @property
    def n_alpha(self) -> int:
        """Number of values of ``α``."""
        return len(self.table[0])

    def log_prob(self, alpha: np.ndarray, state: np.ndarray) -> np.ndarray:
        """``log table[ζ][α]`` per chain."""
        return self._log[np.asarray(state), np.asarray(alpha)]

    def sample(self, state: np.ndarray, rng: Any) -> np.ndarray:
        """``α`` by inversion of the row of ``ζ``: one uniform per chain."""
        state = np.asarray(state)
        u = rng.random(state.shape[0])
        return np.minimum((u[:, None] >= self._cdf[state]).sum(axis=1), self.n_alpha - 1)

    def describe(self) -> dict:
        return {"law": "TableLaw", "table": [[str(q) for q in row] for row in self.table]}


@attrs.frozen(eq=False, init=False)
class InnerResample(Refresh):
    """Redraw ``ζ`` within its block, with probability proportional to ``p``: a refresh
    of integer states that keeps ``p(ζ)/2`` on ``(ζ, d)``.

    The finite stand-in of a momentum refresh: on a product ladder (wrapped in
    :class:`~ladder_mcmc.ladder.auxiliary_refresh.InnerRefresh`) it keeps ``p(ζ)`` but
    not ``p(ζ) p(α | ζ)``, so the redraw of ``α`` must come after it.

    Parameters
    ----------
    weights : sequence of positive int or Fraction
        ``p(ζ)``.
    blocks : sequence of int, optional
        A block label per state; default one block (a fresh draw from ``p``).
    """

    weights: tuple[Fraction, ...]
    blocks: tuple[int, ...]
    _cum: np.ndarray = attrs.field(repr=False)
    changes_state = True

    def __init__(self, weights: Sequence[int | Fraction], blocks: Sequence[int] | None = None):
        n = len(list(weights))
        w = _as_weights(weights, n)
        labels = tuple(int(b) for b in ([0] * n if blocks is None else blocks))
        if len(labels) != n:
            raise ValueError(f"blocks must have one label per state ({n}), got {blocks!r}")
        cum = np.zeros((n, n))
        for i in range(n):
            same = [j for j in range(n) if labels[j] == labels[i]]
            total = sum(w[j] for j in same)
            running = Fraction(0)
            for j in range(n):
                if labels[j] == labels[i]:
                    running += w[j]
                cum[i, j] = 1.0 if j >= same[-1] else float(running / total)
        self.__attrs_init__(w, labels, cum)

    def __call__(self, state, direction, rng):
        state = np.asarray(state)
        u = rng.random(state.shape[0])
        return (u[:, None] >= self._cum[state]).sum(axis=1), direction

    def inner_rows(self) -> list[dict[int, Fraction]]:
        """Exact rows ``{ζ': probability}`` of the refresh, one per state ``ζ``."""
        n = len(self.weights)
        out = []
        for i in range(n):
            same = [j for j in range(n) if self.blocks[j] == self.blocks[i]]
            total = sum(self.weights[j] for j in same)
            out.append({j: self.weights[j] / total for j in same})
        return out

    def describe(self) -> dict:
        return {"refresh": "InnerResample", "blocks": list(self.blocks)}


@attrs.frozen(eq=False, init=False)
class AuxiliaryLadder(FiniteLadder):
    """The finite ladder of ``(ζ, α) → (π_α ζ, α)`` with density ``p(ζ) p(α | ζ)``.

    A :class:`~ladder_mcmc.verify.finite.FiniteLadder` on the ``n·m`` pairs ``(ζ, α)``,
    pair ``(ζ, α)`` at index ``α·n + ζ``: its permutation is what :attr:`map` (the
    :class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap` of the family and the law) does,
    its weights are ``p(ζ) p(α | ζ)``. Hand it as ``ladder=`` to the exact checks with a
    kernel built on :attr:`map`: the refresh's matrix then includes the Gibbs redraw of
    ``α`` (``AuxiliaryRefresh(ladder.law)``) and ``InnerRefresh(InnerResample(...))``.

    Parameters
    ----------
    permutations : sequence of sequences of int
        ``π_α`` for ``α = 0 .. m-1`` (:class:`PermutationFamily`).
    weights : sequence of positive int or Fraction
        ``p(ζ)``.
    table : sequence of sequences of positive int or Fraction
        ``p(α | ζ)``, ``n`` rows of ``m`` entries summing to 1 (:class:`TableLaw`).
    flip : sequence of int, optional
        A common flip ``F``; the weights and the rows of the table must be constant on
        its orbits.

    Attributes
    ----------
    family : PermutationFamily
    law : TableLaw
    map : AuxiliaryMap
        ``AuxiliaryMap(family, law)``, for sampling.

    Raises
    ------
    ValueError
        As :class:`PermutationFamily` and :class:`TableLaw`; if the table has not one
        row per state or ``m`` columns; or if ``p(α | F ζ) ≠ p(α | ζ)`` (naming ``ζ``,
        ``α`` and both values).

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction
    >>> from ladder_mcmc.ladder import AuxiliaryRefresh, Ladder, LookAheadRule
    >>> from ladder_mcmc.verify import assert_exact
    >>> half = Fraction(1, 2)
    >>> ladder = AuxiliaryLadder([[1, 2, 0], [2, 0, 1]], [1, 2, 3],
    ...                          [[half, half], [Fraction(1, 3), Fraction(2, 3)], [1 - half, half]])
    >>> ladder.permutation  # (ζ, α) at α·3 + ζ
    (1, 2, 0, 5, 3, 4)
    >>> ladder.masses[4]  # p(ζ = 1) p(α = 1 | ζ = 1)
    Fraction(4, 3)
    >>> kernel = Ladder(ladder.map, LookAheadRule(2), AuxiliaryRefresh(ladder.law))
    >>> assert_exact(kernel, ladder)
    """

    family: PermutationFamily
    law: TableLaw
    map: AuxiliaryMap

    def __init__(
        self,
        permutations: Sequence[Sequence[int]],
        weights: Sequence[int | Fraction],
        table: Sequence[Sequence[int | Fraction]],
        flip: Sequence[int] | None = None,
    ) -> None:
        family = PermutationFamily(permutations, weights, flip)
        law = TableLaw(table)
        n, m = family.n, family.n_alpha
        if len(law.table) != n or law.n_alpha != m:
            raise ValueError(
                f"table must have one row per state ({n}) and one column per α ({m}), got "
                f"{len(law.table)} rows of {law.n_alpha}"
            )
        if family.flip_permutation is not None:
            self.check_law_flip_invariance(law.table, family.flip_permutation)
        aux = AuxiliaryMap(family, law)
        index = np.arange(n * m)
        encoded = AuxiliaryState(index % n, index // n)
        forward = aux.forward(encoded)
        flat = (forward.alpha * n + forward.inner).tolist()
        masses = [family.weights[k % n] * law.table[k % n][k // n] for k in range(n * m)]
        base = FiniteLadder(flat, masses)
        backward = aux.backward(encoded)
        if (backward.alpha * n + backward.inner).tolist() != list(base.inverse):
            raise ValueError("the family's backward does not invert its forward")  # (guarded)
        self.__attrs_init__(
            *base.ladder_fields(),
            family,
            law,
            aux,
        )

    @staticmethod
    def check_law_flip_invariance(table: tuple, flip: tuple[int, ...]) -> None:
        """``ValueError`` unless ``table[F ζ] == table[ζ]`` for every ``ζ`` (design §14)."""
        for i, f in enumerate(flip):
            for a, (q, qf) in enumerate(zip(table[i], table[f], strict=True)):
                if q != qf:
                    raise ValueError(
                        f"table must be invariant under the flip (p(α | F ζ) = p(α | ζ)): at "
                        f"ζ = {i}, α = {a}: p(α | ζ) = {q} but p(α | F ζ = {f}) = {qf}"
                    )

    @property
    def n_inner(self) -> int:
        """Number of states ``ζ``."""
        return self.family.n

    @property
    def n_alpha(self) -> int:
        """Number of values of ``α``."""
        return self.family.n_alpha

    def encode(self, index: np.ndarray) -> AuxiliaryState:
        """The :class:`AuxiliaryState` ``(ζ, α)`` of pair indices ``α·n + ζ``."""
        index = np.asarray(index, dtype=np.int64)
        return AuxiliaryState(index % self.n_inner, index // self.n_inner)

    def decode(self, state: AuxiliaryState) -> np.ndarray:
        """The pair index ``α·n + ζ`` of each chain's :class:`AuxiliaryState`."""
        return np.asarray(state.alpha, dtype=np.int64) * self.n_inner + np.asarray(state.inner)

    def law_for(self, direction: int) -> tuple[tuple[Fraction, ...], ...]:
        """The table ``p(α | ζ)`` chains of direction ``d`` read: the law's, whatever ``d``
        (the law may not read ``d``; a mutant, in tests, does)."""
        return self.law.table

    def _flat(self, direction: int) -> np.ndarray:
        table, w, n = self.law_for(direction), self.family.weights, self.n_inner
        return np.array([w[k % n] * table[k % n][k // n] for k in range(self.n)], dtype=object)

    @property
    def extended_masses(self) -> tuple[Fraction, ...]:
        """``p(ζ) p(α | ζ)`` for ``d = +1`` then ``d = −1`` (the table of :meth:`law_for`)."""
        return tuple(self._flat(1)) + tuple(self._flat(-1))

    def rung_weights(self, states: np.ndarray, direction: np.ndarray) -> np.ndarray:
        """``p(ζ) p(α | ζ)`` of pair indices, the law read as chains of ``direction`` do."""
        states = np.asarray(states)
        d = np.broadcast_to(np.asarray(direction), states.shape)
        return np.where(d > 0, self._flat(1)[states], self._flat(-1)[states])

    def exact_refresh(self, refresh: Any) -> IntegerKernel | None:
        """The exact matrix of ``AuxiliaryRefresh(law)`` (redraw ``α`` from row ``ζ`` of
        :meth:`law_for` ``(d)``) or of ``InnerRefresh`` of a refresh with ``inner_rows``
        (:class:`InnerResample`); ``None`` for any other refresh.

        Raises
        ------
        TypeError
            For an ``AuxiliaryRefresh`` of another law than this ladder's.
        """
        n, m, size = self.n_inner, self.n_alpha, self.n
        if isinstance(refresh, AuxiliaryRefresh):
            if not same_kinetic_energy(refresh.law, self.law):
                raise TypeError(
                    f"AuxiliaryRefresh redraws from {refresh.law!r}, not this ladder's law"
                )
            tables = {1: self.law_for(1), -1: self.law_for(-1)}
            den = math.lcm(*(q.denominator for t in tables.values() for r in t for q in r))
            rows = []
            for e in range(2 * size):
                d, k = (1, e) if e < size else (-1, e - size)
                zeta, offset = k % n, e - k
                row = tables[d][zeta]
                rows.append({offset + a * n + zeta: int(row[a] * den) for a in range(m)})
            return IntegerKernel(rows, den)
        inner = getattr(refresh, "refresh", None) if isinstance(refresh, InnerRefresh) else None
        if inner is not None and callable(getattr(inner, "inner_rows", None)):
            inner_rows = inner.inner_rows()
            den = math.lcm(*(q.denominator for r in inner_rows for q in r.values()))
            rows = []
            for e in range(2 * size):
                k = e % size
                zeta = k % n
                base = e - zeta
                rows.append({base + j: int(q * den) for j, q in inner_rows[zeta].items()})
            return IntegerKernel(rows, den)
        return None

    def describe(self) -> dict:
        return {"map": "AuxiliaryLadder", **self.family.describe(), **self.law.describe()}
