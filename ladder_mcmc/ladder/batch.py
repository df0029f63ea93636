"""Generic operations on a batch of chains.

A *state* in ``ladder_mcmc`` is either an array whose leading axis indexes
chains, or a frozen ``attrs`` class whose fields are such arrays (or nested
states). The functions here select, merge and stack chains without knowing
which kind of state they hold, so that the ladder machinery stays generic in
the state (docs/design.md §8). The arrays are numpy's or JAX's
(:mod:`ladder_mcmc.arrays`); the functions use the namespace of the leaves.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np

from ladder_mcmc.arrays import is_jax, namespace, set_rows

State = Any
"""An ndarray with chains on axis 0, or a frozen attrs class of such arrays."""

S = TypeVar("S")


_FIELDS: dict[type, tuple[tuple[str, str], ...] | None] = {}


def _init_fields(cls: type) -> tuple[tuple[str, str], ...] | None:
    """``(attribute, init argument)`` of the init fields of an attrs class; None for a leaf.

    Cached per class: :func:`tree_map` runs several times per sampler
    iteration, and :func:`attrs.fields` / :func:`attrs.evolve` cost microseconds
    each (see ``benchmarks/results/overhead.md``).
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


def _spec(cls: type) -> tuple[Callable[[Any], tuple], tuple[str, ...]] | None:
    """``(get, aliases)`` for an attrs class: ``get(state)`` is the tuple of its
    init-field values (one C call), ``aliases`` their init argument names."""
    try:
        return _SPECS[cls]
    except KeyError:
        pass
    fields = _init_fields(cls)
    spec = None
    if fields is not None:
        names = [name for name, _ in fields]
        if len(names) > 1:
            get = operator.attrgetter(*names)
        elif names:
            one = operator.attrgetter(names[0])

            def get(state: Any, one=one) -> tuple:
                return (one(state),)
        else:

            def get(state: Any) -> tuple:
                return ()

        spec = (get, tuple(alias for _, alias in fields))
    _SPECS[cls] = spec
    return spec


_SPECS: dict[type, tuple[Callable[[Any], tuple], tuple[str, ...]] | None] = {}
_add = np.add.reduce  # ndarray.sum without its Python wrapper
#: ``Σ a²`` over every entry (one BLAS call, faster than a sum): not finite if an entry is
#: not, or (rarely, then the callers check entry by entry) if it overflows
_squares = np.vdot


def tree_map(fn: Callable[..., np.ndarray], state: S, *others: S) -> S:
    """Apply ``fn`` leafwise to ``state`` (and matching ``others``).

    Leaves are numpy arrays (or anything that is not an attrs instance);
    attrs instances are rebuilt from their init fields (what
    :func:`attrs.evolve` does), so frozen classes stay frozen.
    """
    cls = type(state)
    spec = None if cls is np.ndarray else _spec(cls)
    if spec is None:
        return None if state is None else fn(state, *others)
    get, aliases = spec
    values = zip(get(state), *[get(o) for o in others], strict=True)
    return cls(**{alias: tree_map(fn, *vs) for alias, vs in zip(aliases, values, strict=True)})


def replace(state: S, **changes: Any) -> S:
    """``attrs.evolve(state, **changes)`` (by init argument names) without its per-call
    field introspection: the class is rebuilt from its cached init fields."""
    get, aliases = _SPECS[type(state)] if type(state) in _SPECS else _spec(type(state))
    values = dict(zip(aliases, get(state), strict=True))
    values.update(changes)
    return type(state)(**values)


def leaves(state: State) -> list[np.ndarray]:
    """The arrays of ``state`` in field order."""
    cls = type(state)
    spec = None if cls is np.ndarray else _spec(cls)
    if spec is None:
        return [state]
    out: list[np.ndarray] = []
    for leaf in spec[0](state):
        if type(leaf) is np.ndarray:
            out.append(leaf)
        else:
            out.extend(leaves(leaf))
    return out


def n_chains(state: State) -> int:
    """Number of chains in ``state`` (length of the leading axis)."""
    first = leaves(state)[0]
    return int(np.shape(first)[0])


def take(state: S, index: np.ndarray) -> S:
    """The chains of ``state`` at ``index`` (an integer or boolean array)."""
    return tree_map(lambda leaf: (leaf if is_jax(leaf) else np.asarray(leaf))[index], state)


def where(mask: np.ndarray, a: S, b: S) -> S:
    """Chainwise choice: chain ``i`` of the result is ``a[i]`` if ``mask[i]`` else ``b[i]``.

    A leaf that ``a`` and ``b`` share (the same array object, e.g. one a
    refresh left alone) is returned as is, without a copy.
    """
    if is_jax(mask):
        return _where(mask, {}, a, b)
    return _where(np.asarray(mask, dtype=bool), {}, a, b)


def _where(mask: np.ndarray, shaped: dict[int, np.ndarray], a: Any, b: Any) -> Any:
    # written out rather than through tree_map: it runs several times per
    # sampler iteration (see benchmarks/results/overhead.md)
    if a is b:
        return a
    cls = type(a)
    spec = None if cls is np.ndarray else _spec(cls)
    if spec is None:
        return _pick(mask, shaped, a if is_jax(a) else np.asarray(a), b)
    get, aliases = spec
    out = {}
    for alias, x, y in zip(aliases, get(a), get(b), strict=True):
        if x is y:
            out[alias] = x
        elif type(x) is np.ndarray:
            out[alias] = _pick(mask, shaped, x, y)
        else:
            out[alias] = _where(mask, shaped, x, y)
    return cls(**out)


def _pick(mask: np.ndarray, shaped: dict[int, np.ndarray], x: np.ndarray, y: Any) -> np.ndarray:
    where = np.where if type(x) is np.ndarray and type(mask) is np.ndarray else None
    if where is None:
        where = namespace(mask, x, y).where
    nd = x.ndim
    if nd == 1:
        return where(mask, x, y)
    if (
        x.size >= _ROWS_FROM
        and where is np.where
        and type(y) is np.ndarray
        and y.shape == x.shape
        and y.dtype == x.dtype
    ):
        # on the host, a large leaf: a copy of one side with the other's rows put in
        # (the same values as `where`, in about half its time)
        rows = shaped.get(0)
        if rows is None:
            rows = shaped[0] = _rows(mask)
        from_x, index = rows
        out = (y if from_x else x).copy()
        out[index] = (x if from_x else y)[index]
        return out
    m = shaped.get(nd)
    if m is None:
        m = shaped[nd] = mask.reshape(mask.shape + (1,) * (nd - 1))
    return where(m, x, y)


#: leaves of at least this many entries are chosen by rows on the host (:func:`_pick`)
_ROWS_FROM = 2048


def _rows(mask: np.ndarray) -> tuple[bool, np.ndarray]:
    """``(True, rows where mask)`` or, where most rows are chosen, ``(False, the others)``."""
    index = np.flatnonzero(mask)
    if 2 * index.size <= mask.size:
        return True, index
    return False, np.flatnonzero(~mask)


_CONSTANT_MASKS: dict[tuple, np.ndarray] = {}


def constant_mask(shape: tuple, value: bool) -> np.ndarray:
    """A read-only boolean mask of ``shape``, all ``value``, made once per shape and value
    (host): a hot loop's "every chain" or "no chain" without allocating, recognisable by
    identity."""
    key = (shape, value)
    mask = _CONSTANT_MASKS.get(key)
    if mask is None:
        mask = _CONSTANT_MASKS[key] = np.full(shape, value, dtype=bool)
        mask.flags.writeable = False
    return mask


def put(state: S, index: np.ndarray, values: S) -> S:
    """A copy of ``state`` whose chains at ``index`` are replaced by ``values``."""

    return tree_map(lambda x, y: set_rows(x, index, y), state, values)


def stack(states: Sequence[S]) -> S:
    """Stack states along a new leading (step) axis: leaves become (steps, chains, ...)."""
    return tree_map(lambda *xs: namespace(*xs).stack(xs), *states)


def surely_finite(state: State, known: State | None = None) -> bool:
    """True only if every floating entry of ``state`` is finite (checked by leaf sums of squares).

    Cheap (one reduction per leaf). ``False`` means "not proven": a NaN or an
    infinity, or merely a sum that overflowed; use :func:`all_finite` then.
    Leaves of ``state`` that are the very arrays of the same leaves of
    ``known`` (a state already known to be finite) are not checked again.
    """
    if known is not None and type(known) is not type(state):
        seen = leaves(known)
        return _surely_finite(leaves(state), lambda i, leaf: leaf is seen[i])
    total = _finite_total(state, known)
    return total is not None and math.isfinite(total)


def _finite_total(state: Any, known: Any) -> Any:
    """The sum of the floating leaves of ``state`` not shared with ``known`` (same
    structure), walked field by field; None for a non-finite complex leaf."""
    cls = type(state)
    spec = None if cls is np.ndarray else _spec(cls)
    if spec is None:
        if state is known:
            return 0.0
        arr = state if cls is np.ndarray else np.asarray(state)
        kind = arr.dtype.kind
        if kind == "f":
            return _squares(arr, arr)  # one non-finite entry makes the total non-finite
        if kind == "c" and not np.isfinite(arr.sum()):
            return None
        return 0.0
    get = spec[0]
    total = 0.0
    same = known is not None and type(known) is cls
    for leaf, old in zip(get(state), get(known) if same else _nones(state), strict=True):
        if leaf is old:
            continue
        if type(leaf) is np.ndarray and leaf.dtype.kind == "f":  # the common leaf, inline
            total += _squares(leaf, leaf)
            continue
        part = _finite_total(leaf, old)
        if part is None:
            return None
        total += part
    return total


def _nones(state: Any) -> Any:
    """As many ``None`` as ``state`` has init fields (no leaf is known finite)."""
    return (None,) * len(_spec(type(state))[1])


def _surely_finite(found: list, shared: Callable[[int, Any], bool]) -> bool:
    total = 0.0
    for i, leaf in enumerate(found):
        if shared(i, leaf):
            continue
        arr = leaf if type(leaf) is np.ndarray else np.asarray(leaf)
        kind = arr.dtype.kind
        if kind == "f":
            total += _add(arr, None)
        elif kind == "c" and not np.isfinite(arr.sum()):
            return False
    return math.isfinite(total)


def all_finite(state: State) -> np.ndarray:
    """Boolean (chains,): every floating entry of every leaf of the chain is finite."""
    n = n_chains(state)
    found = leaves(state)
    if any(is_jax(leaf) for leaf in found):
        xp = namespace(*found)
        ok = xp.ones(n, dtype=bool)
        for leaf in found:
            if xp.issubdtype(leaf.dtype, xp.inexact):
                ok = ok & xp.isfinite(leaf.reshape(leaf.shape[0], -1)).all(axis=1)
        return ok
    if surely_finite(state):
        return np.ones(n, dtype=bool)
    ok = np.ones(n, dtype=bool)
    for leaf in leaves(state):
        arr = np.asarray(leaf)
        if arr.dtype.kind in "fc":  # floating or complex
            ok &= np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1)
    return ok
