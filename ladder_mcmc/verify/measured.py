"""Measured ladders: finite ladders whose map changes "volume" (docs/design.md §13).

A :class:`MeasuredLadder` is a permutation ``L`` of the states ``0 .. n-1`` with a
positive rational *base measure* ``m`` and a density ``p = w`` with respect to it:
the stationary mass of state ``i`` is ``w_i m_i``. The analogue of ``|det ∂Lζ/∂ζ|``
is ``m(L i)/m(i)``, so the ladder is the discrete model of a map that changes
volume. For sampling it declares ``log_det_jacobian = log(m(L i)/m(i))`` (floats);
the exact matrices (:mod:`ladder_mcmc.verify.transitions`) use the exact ratio,
accumulated one map application at a time as the drivers do, and the exact checks
(:mod:`ladder_mcmc.verify.exact`) hold them to the masses ``w·m``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.verify.finite import FiniteLadder, _as_permutation, _as_weights

__all__ = ["MeasuredLadder"]


def _logs(values: tuple[Fraction, ...]) -> np.ndarray:
    return np.array([math.log(x.numerator) - math.log(x.denominator) for x in values])


@attrs.frozen(eq=False, init=False)
class MeasuredLadder(FiniteLadder):
    """A finite ladder on states with a base measure ``m``: a map that changes volume.

    Parameters
    ----------
    permutation : sequence of int
        ``L``: state ``i`` moves to ``permutation[i]``.
    weights : sequence of positive int or Fraction
        The density ``w_i`` of state ``i`` with respect to ``m`` (``log_density``).
    measure : sequence of positive int or Fraction
        The base measure ``m_i``; ``|det ∂L/∂ζ|`` at ``i`` is ``m(L i)/m(i)``.
    flip : sequence of int, optional
        An involution ``F`` with ``F L F = L⁻¹`` that keeps both ``w`` and ``m``
        (``p(F i) = p(i)`` and ``F`` preserves volume); the inverse is then derived
        from it. Without it the inverse permutation is used directly.

    Attributes
    ----------
    measure : tuple of Fraction
        The exact base measure.
    masses : tuple of Fraction
        ``w_i m_i``, the stationary masses.

    Raises
    ------
    ValueError
        Naming the argument, if one is not a permutation, not positive, or the flip
        is not an involution, does not keep ``w`` or ``m``, or does not invert ``L``.

    Examples
    --------
    >>> import numpy as np
    >>> ladder = MeasuredLadder([1, 2, 0], [1, 2, 3], [1, 4, 2])
    >>> ladder.masses
    (Fraction(1, 1), Fraction(8, 1), Fraction(6, 1))
    >>> ladder.jacobian(np.array([0, 1])).tolist()  # m(L i)/m(i)
    [Fraction(4, 1), Fraction(1, 2)]
    >>> bool(np.allclose(ladder.log_det_jacobian(np.array([0])), np.log(4)))
    True
    """

    measure: tuple[Fraction, ...]
    flip_permutation: tuple[int, ...] | None
    _m: np.ndarray = attrs.field(repr=False)
    _log_jac: np.ndarray = attrs.field(repr=False)
    _flip: np.ndarray | None = attrs.field(repr=False)

    def __init__(
        self,
        permutation: Sequence[int],
        weights: Sequence[int | Fraction],
        measure: Sequence[int | Fraction],
        flip: Sequence[int] | None = None,
    ) -> None:
        base = FiniteLadder(permutation, weights)
        n = base.n
        m = _as_weights(measure, n, "measure")
        f = None
        if flip is not None:
            f = _as_permutation("flip", flip)
            _check_flip(f, base, m)
        m_arr = np.array(m, dtype=object)
        log_m = _logs(m)
        self.__attrs_init__(
            *base.ladder_fields(),
            m,
            f,
            m_arr,
            log_m[base._perm] - log_m,
            None if f is None else np.array(f, dtype=np.int64),
        )

    @property
    def masses(self) -> tuple[Fraction, ...]:
        """``w_i m_i``: the stationary mass of each state."""
        return tuple(w * m for w, m in zip(self.weights, self.measure, strict=True))

    @property
    def has_flip(self) -> bool:
        """Whether a flip was given."""
        return self._flip is not None

    def flip(self, state: np.ndarray) -> np.ndarray:
        """``F i`` for every chain."""
        if self._flip is None:
            raise NotImplementedError("this MeasuredLadder was built without a flip")
        return self._flip[np.asarray(state)]

    def backward(self, state: np.ndarray) -> np.ndarray:
        """``L⁻¹ i``: ``F L F i`` with a flip, the inverse permutation without."""
        if self._flip is None:
            return FiniteLadder.backward(self, state)
        return ReversibleMap.backward(self, state)

    def log_det_jacobian(self, state: np.ndarray) -> np.ndarray:
        """``log(m(L i)/m(i))`` (floats) for every chain."""
        return self._log_jac[np.asarray(state)]

    def jacobian(self, state: np.ndarray) -> np.ndarray:
        """``m(L i)/m(i)``, exact: object array of Fractions."""
        i = np.asarray(state)
        return self._m[self._perm[i]] / self._m[i]

    def move_jacobian(self, state: np.ndarray, moved: np.ndarray, direction: Any) -> np.ndarray:
        """Exact ``|det ∂(L^d ζ)/∂ζ|`` for ``moved = move(state, direction)``.

        :meth:`jacobian` of ``state`` where ``d = +1``, one over :meth:`jacobian` of
        ``moved`` where ``d = −1``: the exact twin of
        :meth:`~ladder_mcmc.ladder.maps.ReversibleMap.move_log_det_jacobian`.
        """
        d = np.broadcast_to(np.asarray(direction), np.shape(state))
        forward = self.jacobian(state)
        backward = 1 / self.jacobian(moved)
        return np.where(d > 0, forward, backward)

    def describe(self) -> dict:
        out = {**super().describe(), "measure": [str(m) for m in self.measure]}
        if self.flip_permutation is not None:
            out["flip"] = list(self.flip_permutation)
        return out


def _check_flip(f: tuple[int, ...], base: FiniteLadder, m: tuple[Fraction, ...]) -> None:
    n = base.n
    if len(f) != n:
        raise ValueError(f"flip must act on the {n} states, got length {len(f)}: {f!r}")
    for i in range(n):
        if f[f[i]] != i:
            raise ValueError(f"flip must be an involution (flip[flip[i]] == i); fails at i={i}")
        if base.weights[f[i]] != base.weights[i] or m[f[i]] != m[i]:
            raise ValueError(
                f"flip must keep the weights and the measure (p(F ζ) = p(ζ), F preserves "
                f"volume); state {i} and flip[{i}] = {f[i]} differ"
            )
        if f[base.permutation[f[i]]] != base.inverse[i]:
            raise ValueError(f"flip must invert the map (F L F = L⁻¹); fails at i={i}")
