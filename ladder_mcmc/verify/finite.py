"""Finite ladders: reversible maps on a few integer states, whose kernels are exact.

A *finite ladder* is a reversible map on the integer states ``0 .. n-1``: a
permutation ``L`` with positive weights ``w`` (the unnormalised density). With
the direction ``d ∈ {±1}`` the extended space has ``2n`` states ``(i, d)`` and
density ``p(i, d) = w_i / (2 Σ w)`` (docs/design.md §1, §7.1). Every quantity a ladder
rule computes on it is rational, so the transition matrix of any ladder kernel
can be built with :class:`fractions.Fraction` (:mod:`ladder_mcmc.verify.transitions`)
and checked with ``==`` (:mod:`ladder_mcmc.verify.exact` does the checking).

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

from ladder_mcmc.ladder.maps import ReversibleMap

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


def _as_weights(value: Any, n: int, name: str = "weights") -> tuple[Fraction, ...]:
    try:
        items = list(value)
    except TypeError:
        raise ValueError(f"{name} must be a sequence, got {value!r}") from None
    if len(items) != n:
        raise ValueError(f"{name} must have one entry per state ({n}), got {len(items)}: {value!r}")
    out = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (numbers.Rational, np.integer)):
            raise ValueError(
                f"{name} must be positive ints or Fractions (kept exact), got {w!r} in {value!r}"
            )
        f = Fraction(int(w)) if isinstance(w, np.integer) else Fraction(w)
        if f <= 0:
            raise ValueError(f"{name} must be positive, got {w!r} in {value!r}")
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

    def ladder_fields(self) -> tuple:
        """The values of :class:`FiniteLadder`'s own fields, in order: what a subclass's
        ``__attrs_init__`` starts with when it extends a ladder built by this class."""
        return tuple(getattr(self, field.name) for field in attrs.fields(FiniteLadder))

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

    @property
    def masses(self) -> tuple[Fraction, ...]:
        """The stationary mass of each state: the weights here (the counting measure;
        :class:`~ladder_mcmc.verify.measured.MeasuredLadder` has another)."""
        return self.weights

    @property
    def extended_masses(self) -> tuple[Fraction, ...]:
        """The stationary mass of every extended state, indexed by :func:`extended_index`:
        :attr:`masses` twice (``d`` uniform and independent of ``i``). A ladder whose
        target reads ``d`` (a mutant, in tests) says otherwise."""
        return self.masses + self.masses

    def rung_weights(self, states: np.ndarray, direction: np.ndarray) -> np.ndarray:
        """The exact weights the rules read for ``states`` seen by chains of direction
        ``direction``: object array of Fractions. :attr:`weights` here, whatever ``d``.

        :func:`~ladder_mcmc.verify.transitions.exact_rungs` divides a rung's by the
        starting state's (both seen with the chain's own ``d``).
        """
        return np.array(self.weights, dtype=object)[np.asarray(states)]

    def exact_refresh(self, refresh: Any) -> Any:
        """The exact matrix of a refresh kind this ladder knows, or ``None`` (here).

        :func:`~ladder_mcmc.verify.transitions.refresh_kernel` asks the ladder first,
        then handles the generic kinds itself (an
        :class:`~ladder_mcmc.verify.auxiliary_finite.AuxiliaryLadder` knows the redraw of
        its ``α`` and the refreshes of its inner states).
        """
        return None

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

    def encode(self, index: np.ndarray) -> Any:
        """The sampled map's states for base indices ``0 .. n-1``: the indices here.

        A ladder that models a map on other states (a product ladder's
        :class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryState`) says which;
        :func:`~ladder_mcmc.verify.exact.assert_transition_frequencies` starts chains
        there and reads them back with :meth:`decode`.
        """
        return np.asarray(index, dtype=np.int64)

    def decode(self, state: Any) -> np.ndarray:
        """The base index of each chain's state: the inverse of :meth:`encode`."""
        return np.asarray(state, dtype=np.int64)

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
            *base.ladder_fields(),
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

    For a :class:`~ladder_mcmc.verify.measured.MeasuredLadder`, the masses ``w_i m_i``
    in place of ``w_i``; in general ``ladder.extended_masses``, normalised.

    Examples
    --------
    >>> stationary_distribution(FiniteLadder([1, 0], [1, 3])).tolist()
    [Fraction(1, 8), Fraction(3, 8), Fraction(1, 8), Fraction(3, 8)]
    """
    masses = ladder.extended_masses
    total = sum(masses)
    return np.array([w / total for w in masses], dtype=object)


__all__ = [
    "FiniteLadder",
    "InvolutionLadder",
    "extended_index",
    "stationary_distribution",
]
