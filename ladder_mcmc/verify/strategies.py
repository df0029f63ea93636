"""Hypothesis strategies for random finite ladders and phase states.

* :func:`finite_ladders` — random :class:`~ladder_mcmc.verify.finite.FiniteLadder`
  maps, for the exact checks (:mod:`ladder_mcmc.verify.exact`; docs/design.md §7.1);
* :func:`measured_ladders` — random :class:`~ladder_mcmc.verify.measured.MeasuredLadder`
  maps, which change volume (docs/design.md §13);
* :func:`auxiliary_ladders` — random
  :class:`~ladder_mcmc.verify.auxiliary_finite.AuxiliaryLadder` maps on product sets
  ``{ζ} × {α}``, a parameter with a state-dependent law (docs/design.md §14);
* :func:`phase_states` — random :class:`~ladder_mcmc.hamiltonian.leapfrog.PhaseState`
  batches, for the map contracts of leapfrog-like maps
  (:mod:`ladder_mcmc.verify.map_contract`).

``hypothesis`` (the ``test`` extra) is imported when a strategy is built, not before.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ladder_mcmc.verify.auxiliary_finite import AuxiliaryLadder
from ladder_mcmc.verify.finite import FiniteLadder
from ladder_mcmc.verify.measured import MeasuredLadder

__all__ = ["auxiliary_ladders", "finite_ladders", "measured_ladders", "phase_states"]


def finite_ladders(
    min_states: int = 1,
    max_states: int = 12,
    max_weight: int = 10,
    construction: Literal["both", "permutation", "involutions"] = "both",
):
    """Hypothesis strategy for random finite ladders (docs/design.md §7.1).

    Parameters
    ----------
    min_states, max_states : int
        Range of the number of base states ``n`` (the extended space has ``2n``).
    max_weight : int
        Weights are integers in ``1 .. max_weight``; small values make ties
        (``p(ζ_a) = p(ζ)``), the edge cases of ``min``/``max`` rules, common.
    construction : {"both", "permutation", "involutions"}
        ``"permutation"``: construction (a), any permutation, any weights
        (:class:`~ladder_mcmc.verify.finite.FiniteLadder`). ``"involutions"``:
        construction (b), ``L = F ∘ G`` with weights constant on ``F``-orbits
        (:meth:`~ladder_mcmc.verify.finite.FiniteLadder.from_involutions`; the map has
        a flip). ``"both"``: either.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of FiniteLadder

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(finite_ladders(max_states=4))
    ... def test(ladder):
    ...     assert 1 <= ladder.n <= 4
    >>> test()
    """
    from hypothesis import strategies as st

    _check_sizes(min_states, max_states, max_weight, construction)

    @st.composite
    def by_permutation(draw):
        n = draw(st.integers(min_states, max_states))
        return FiniteLadder(_permutation(draw, n), _digits(draw, n, max_weight))

    @st.composite
    def by_involutions(draw):
        n = draw(st.integers(min_states, max_states))
        f, g = _involution(draw, n), _involution(draw, n)
        return FiniteLadder.from_involutions(f, g, _orbit_constant(draw, f, max_weight))

    return _either(construction, by_permutation(), by_involutions())


def measured_ladders(
    min_states: int = 1,
    max_states: int = 12,
    max_weight: int = 10,
    max_measure: int = 10,
    construction: Literal["both", "permutation", "involutions"] = "both",
):
    """Hypothesis strategy for random measured ladders: maps that change volume (§13).

    Like :func:`finite_ladders`, with a base measure of integers in
    ``1 .. max_measure`` (only its ratios matter, so integers cover every rational
    measure up to scale). ``"involutions"``: ``L = F ∘ G`` with the flip ``F``, the
    weights and the measure constant on ``F``-orbits (``F`` keeps ``p`` and volume).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of MeasuredLadder

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(measured_ladders(max_states=4))
    ... def test(ladder):
    ...     assert len(ladder.masses) == ladder.n
    >>> test()
    """
    from hypothesis import strategies as st

    _check_sizes(min_states, max_states, max_weight, construction)
    if max_measure < 1:
        raise ValueError(f"max_measure must be >= 1, got {max_measure!r}")

    @st.composite
    def by_permutation(draw):
        n = draw(st.integers(min_states, max_states))
        weights, measure = _digits(draw, n, max_weight), _digits(draw, n, max_measure)
        return MeasuredLadder(_permutation(draw, n), weights, measure)

    @st.composite
    def by_involutions(draw):
        n = draw(st.integers(min_states, max_states))
        f, g = _involution(draw, n), _involution(draw, n)
        weights = _orbit_constant(draw, f, max_weight)
        measure = _orbit_constant(draw, f, max_measure)
        return MeasuredLadder([f[g[i]] for i in range(n)], weights, measure, flip=f)

    return _either(construction, by_permutation(), by_involutions())


def auxiliary_ladders(
    min_states: int = 1,
    max_states: int = 6,
    max_alphas: int = 3,
    max_weight: int = 6,
    max_law: int = 4,
    construction: Literal["both", "permutation", "involutions"] = "both",
):
    """Hypothesis strategy for random product ladders ``{ζ} × {α}`` (docs/design.md §14).

    ``n`` states ``ζ`` with integer weights ``p(ζ)`` in ``1 .. max_weight``; ``m`` values
    of ``α`` (``1 .. max_alphas``), one permutation ``π_α`` each; a table ``p(α | ζ)``
    whose row ``ζ`` is ``m`` integers in ``1 .. max_law``, normalised (exact Fractions).
    ``"permutation"``: any permutations. ``"involutions"``: ``π_α = F ∘ G_α`` for
    involutions ``F`` (common, the flip) and ``G_α``, the weights and the rows of the
    table constant on ``F``-orbits. ``"both"``: either.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of AuxiliaryLadder

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(auxiliary_ladders(max_states=3, max_alphas=2))
    ... def test(ladder):
    ...     assert ladder.n == ladder.n_inner * ladder.n_alpha
    >>> test()
    """
    from hypothesis import strategies as st

    _check_sizes(min_states, max_states, max_weight, construction)
    if max_alphas < 1 or max_law < 1:
        raise ValueError(f"need max_alphas, max_law >= 1, got {max_alphas}, {max_law}")

    def row(draw: Any, m: int) -> list[Fraction]:
        digits = _digits(draw, m, max_law)
        return [Fraction(x, sum(digits)) for x in digits]

    @st.composite
    def by_permutation(draw):
        n, m = draw(st.integers(min_states, max_states)), draw(st.integers(1, max_alphas))
        perms = [_permutation(draw, n) for _ in range(m)]
        weights = _digits(draw, n, max_weight)
        return AuxiliaryLadder(perms, weights, [row(draw, m) for _ in range(n)])

    @st.composite
    def by_involutions(draw):
        n, m = draw(st.integers(min_states, max_states)), draw(st.integers(1, max_alphas))
        f = _involution(draw, n)
        perms = []
        for _ in range(m):
            g = _involution(draw, n)
            perms.append([f[g[i]] for i in range(n)])
        weights = _orbit_constant(draw, f, max_weight)
        rows = {r: row(draw, m) for r in sorted({min(i, f[i]) for i in range(n)})}
        return AuxiliaryLadder(perms, weights, [rows[min(i, f[i])] for i in range(n)], flip=f)

    return _either(construction, by_permutation(), by_involutions())


# Each structure is drawn as ONE integer and decoded (a permutation by its Lehmer
# rank, weights as base-``max_weight`` digits): a few draws per example keep
# Hypothesis's overhead low, and shrinking an integer towards 0 shrinks towards the
# identity permutation and all-ones weights.
def _check_sizes(min_states: int, max_states: int, max_weight: int, construction: str) -> None:
    if not 1 <= min_states <= max_states:
        raise ValueError(f"need 1 <= min_states <= max_states, got {min_states}, {max_states}")
    if max_weight < 1:
        raise ValueError(f"max_weight must be >= 1, got {max_weight!r}")
    if construction not in ("both", "permutation", "involutions"):
        raise ValueError(
            f"construction must be 'both', 'permutation' or 'involutions', got {construction!r}"
        )


def _either(construction: str, by_permutation: Any, by_involutions: Any) -> Any:
    from hypothesis import strategies as st

    if construction == "permutation":
        return by_permutation
    if construction == "involutions":
        return by_involutions
    return st.one_of(by_permutation, by_involutions)


def _permutation(draw: Any, n: int) -> list[int]:
    from hypothesis import strategies as st

    return _unrank(draw(st.integers(0, math.factorial(n) - 1)), n)


def _digits(draw: Any, count: int, top: int) -> list[int]:
    """``count`` integers in ``1 .. top``."""
    from hypothesis import strategies as st

    code = draw(st.integers(0, top**count - 1))
    out = []
    for _ in range(count):
        code, r = divmod(code, top)
        out.append(r + 1)
    return out


def _involution(draw: Any, n: int) -> list[int]:
    from hypothesis import strategies as st

    order = _permutation(draw, n)
    pairs = draw(st.integers(0, n // 2))
    inv = list(range(n))
    for k in range(pairs):
        a, b = order[2 * k], order[2 * k + 1]
        inv[a], inv[b] = b, a
    return inv


def _orbit_constant(draw: Any, f: list[int], top: int) -> list[int]:
    """Integers in ``1 .. top``, one per state, equal on the orbits of the involution ``f``."""
    reps = sorted({min(i, f[i]) for i in range(len(f))})
    value = dict(zip(reps, _digits(draw, len(reps), top), strict=True))
    return [value[min(i, f[i])] for i in range(len(f))]


def _unrank(index: int, n: int) -> list[int]:
    """The permutation of ``0 .. n-1`` with Lehmer rank ``index`` (0 = identity)."""
    items, out = list(range(n)), []
    for k in range(n, 0, -1):
        q, index = divmod(index, math.factorial(k - 1))
        out.append(items.pop(q))
    return out


def phase_states(dim: int, n_chains: int = 4, target: Any = None, max_abs: float = 5.0):
    """Hypothesis strategy for random :class:`~ladder_mcmc.hamiltonian.leapfrog.PhaseState` batches.

    Parameters
    ----------
    dim : int
        Dimension of ``x`` and ``v``.
    n_chains : int
        Chains per example.
    target : Target, optional
        If given, ``energy`` and ``grad`` are computed from it (a state ready
        for :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog`). Otherwise they are NaN: fill
        them with ``Leapfrog.prepare(state, rng)``.
    max_abs : float
        ``x`` and ``v`` entries lie in ``[-max_abs, max_abs]``.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of PhaseState
    """
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    from ladder_mcmc.hamiltonian.leapfrog import PhaseState

    coords = arrays(
        np.float64,
        (n_chains, dim),
        elements=st.floats(-max_abs, max_abs, allow_nan=False, allow_infinity=False, width=64),
    )

    @st.composite
    def build(draw):
        x, v = draw(coords), draw(coords)
        if target is None:
            return PhaseState(
                x=x, v=v, energy=np.full(n_chains, np.nan), grad=np.full_like(x, np.nan)
            )
        e = np.asarray(target.energy(x), dtype=float)
        g = np.asarray(target.grad(x), dtype=float)
        return PhaseState(x=x, v=v, energy=e, grad=g)

    return build()
