"""Generic operations on a batch of chains.

A *state* in ``ladder_mcmc`` is either a numpy array whose leading axis indexes
chains, or a frozen ``attrs`` class whose fields are such arrays (or nested
states). The functions here select, merge and stack chains without knowing
which kind of state they hold, so that the ladder machinery stays generic in
the state (DESIGN §4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np

State = Any
"""An ndarray with chains on axis 0, or a frozen attrs class of such arrays."""

S = TypeVar("S")


def tree_map(fn: Callable[..., np.ndarray], state: S, *others: S) -> S:
    """Apply ``fn`` leafwise to ``state`` (and matching ``others``).

    Leaves are numpy arrays (or anything that is not an attrs instance);
    attrs instances are rebuilt with :func:`attrs.evolve`, so frozen classes
    stay frozen.
    """
    if attrs.has(type(state)):
        changes = {}
        for field in attrs.fields(type(state)):
            if not field.init:
                continue
            name = field.name
            changes[field.alias or name] = tree_map(
                fn, getattr(state, name), *(getattr(o, name) for o in others)
            )
        return attrs.evolve(state, **changes)
    return fn(state, *others)


def leaves(state: State) -> list[np.ndarray]:
    """The arrays of ``state`` in field order."""
    out: list[np.ndarray] = []

    def collect(leaf: np.ndarray) -> np.ndarray:
        out.append(leaf)
        return leaf

    tree_map(collect, state)
    return out


def n_chains(state: State) -> int:
    """Number of chains in ``state`` (length of the leading axis)."""
    first = leaves(state)[0]
    return int(np.shape(first)[0])


def take(state: S, index: np.ndarray) -> S:
    """The chains of ``state`` at ``index`` (an integer or boolean array)."""
    return tree_map(lambda leaf: np.asarray(leaf)[index], state)


def where(mask: np.ndarray, a: S, b: S) -> S:
    """Chainwise choice: chain ``i`` of the result is ``a[i]`` if ``mask[i]`` else ``b[i]``."""
    mask = np.asarray(mask, dtype=bool)

    def pick(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        m = mask.reshape(mask.shape + (1,) * (x.ndim - 1))
        return np.where(m, x, y)

    return tree_map(pick, a, b)


def put(state: S, index: np.ndarray, values: S) -> S:
    """A copy of ``state`` whose chains at ``index`` are replaced by ``values``."""

    def assign(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        out = np.array(x, copy=True)
        out[index] = y
        return out

    return tree_map(assign, state, values)


def stack(states: Sequence[S]) -> S:
    """Stack states along a new leading (step) axis: leaves become (steps, chains, ...)."""
    return tree_map(lambda *xs: np.stack(xs), *states)


def all_finite(state: State) -> np.ndarray:
    """Boolean (chains,): every floating entry of every leaf of the chain is finite."""
    ok = np.ones(n_chains(state), dtype=bool)
    for leaf in leaves(state):
        arr = np.asarray(leaf)
        if np.issubdtype(arr.dtype, np.inexact):
            ok &= np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1)
    return ok
