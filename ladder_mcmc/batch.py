"""Generic operations on a batch of chains.

A *state* in ``ladder_mcmc`` is either a numpy array whose leading axis indexes
chains, or a frozen ``attrs`` class whose fields are such arrays (or nested
states). The functions here select, merge and stack chains without knowing
which kind of state they hold, so that the ladder machinery stays generic in
the state (DESIGN §4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np

State = Any
"""An ndarray with chains on axis 0, or a frozen attrs class of such arrays."""

S = TypeVar("S")


_FIELDS: dict[type, tuple[tuple[str, str], ...] | None] = {}


def _init_fields(cls: type) -> tuple[tuple[str, str], ...] | None:
    """``(attribute, init argument)`` of the init fields of an attrs class; None for a leaf.

    Cached per class: :func:`tree_map` runs several times per sampler
    iteration, and :func:`attrs.fields` / :func:`attrs.evolve` cost microseconds
    each (see ``docs/performance.md``).
    """
    try:
        return _FIELDS[cls]
    except KeyError:
        pass
    fields = None
    if attrs.has(cls):
        fields = tuple((f.name, f.alias or f.name) for f in attrs.fields(cls) if f.init)
    _FIELDS[cls] = fields
    return fields


def tree_map(fn: Callable[..., np.ndarray], state: S, *others: S) -> S:
    """Apply ``fn`` leafwise to ``state`` (and matching ``others``).

    Leaves are numpy arrays (or anything that is not an attrs instance);
    attrs instances are rebuilt from their init fields (what
    :func:`attrs.evolve` does), so frozen classes stay frozen.
    """
    cls = type(state)
    fields = None if cls is np.ndarray else _init_fields(cls)
    if fields is None:
        return fn(state, *others)
    return cls(
        **{
            alias: tree_map(fn, getattr(state, name), *[getattr(o, name) for o in others])
            for name, alias in fields
        }
    )


def leaves(state: State) -> list[np.ndarray]:
    """The arrays of ``state`` in field order."""
    cls = type(state)
    fields = None if cls is np.ndarray else _init_fields(cls)
    if fields is None:
        return [state]
    out: list[np.ndarray] = []
    for name, _ in fields:
        out.extend(leaves(getattr(state, name)))
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
        if x is y:  # a leaf both states share (e.g. left alone by a refresh)
            return x
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


def surely_finite(state: State) -> bool:
    """True only if every floating entry of ``state`` is finite (checked by leaf sums).

    Cheap (one reduction per leaf). ``False`` means "not proven": a NaN or an
    infinity, or merely a sum that overflowed; use :func:`all_finite` then.
    """
    for leaf in leaves(state):
        arr = np.asarray(leaf)
        kind = arr.dtype.kind
        if kind == "f":
            if not math.isfinite(arr.sum()):
                return False
        elif kind == "c" and not np.isfinite(arr.sum()):
            return False
    return True


def all_finite(state: State) -> np.ndarray:
    """Boolean (chains,): every floating entry of every leaf of the chain is finite."""
    n = n_chains(state)
    if surely_finite(state):
        return np.ones(n, dtype=bool)
    ok = np.ones(n, dtype=bool)
    for leaf in leaves(state):
        arr = np.asarray(leaf)
        if arr.dtype.kind in "fc":  # floating or complex
            ok &= np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1)
    return ok
