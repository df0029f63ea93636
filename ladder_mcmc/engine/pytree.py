"""Kernels and states as JAX pytrees: what a compiled loop takes as arguments.

A compiled function (``jax.jit``) takes pytrees of arrays; its compilation is keyed by
their structure. :func:`register` makes every ``attrs`` class reachable from a kernel or
a state a pytree node, so that a :class:`~ladder_mcmc.ladder.kernel.Ladder` and its
states are passed to the compiled loop whole:

* the *leaves* are the fields holding arrays or numpy scalars (numpy or JAX), and the
  number fields a class marks ``metadata=TRACED`` (:data:`ladder_mcmc.arrays.TRACED`: a step size, a
  number of leapfrog steps): their values are arguments, so that new values (a warm-up's)
  reuse the compilation;
* every other field (an int such as the look-ahead ``K``, a string, a function, a
  target that is not an ``attrs`` class) is *static*: part of the structure, compared
  by value (by identity where it cannot be hashed), a constant of the compiled code;
* nested ``attrs`` instances, and tuples and lists holding any, are nodes in turn.

Rebuilding a node sets its fields directly, without ``__init__``: JAX rebuilds nodes
from placeholder leaves, which no validator would accept. A part built *inside* a
compiled function (a warm-up's new metric) goes through its constructor, whose
validators let traced values through (:func:`ladder_mcmc.arrays.is_traced`).

:class:`Packing` lays a tree of per-chain arrays out as a few ``(chains, width)`` arrays,
so that the compiled loop carries and records whole rows: one ``where`` or one scatter
per packed array per iteration, not one per field. :class:`Carried` packs the loop's carry
(the ragged state and the draws' offsets) so.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import is_jax

_REGISTERED: set[type] = set()


class _ByIdentity:
    """A static value that cannot be hashed, compared by identity."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByIdentity) and other.value is self.value


def _is_child(value: Any, traced: bool) -> bool:
    """Whether a field's value is part of the tree (a leaf or a node), not static."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind in "biufc"  # numbers; an array of strings is static
    if is_jax(value) or type(value) is object:  # JAX's placeholders for leaves too
        return True
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # an abstract array
        return True
    if attrs.has(type(value)):
        return True
    if isinstance(value, (tuple, list)):
        # a node only if every item is: an item JAX cannot take as a leaf (a refresh that is
        # not an attrs class) makes the whole sequence static
        return bool(value) and all(_is_child(v, False) or v is None for v in value)
    if traced and isinstance(value, (int, float, np.integer, np.floating)):
        return not isinstance(value, bool)
    return False


def _static(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return _ByIdentity(value)
    return value


def _unstatic(value: Any) -> Any:
    return value.value if isinstance(value, _ByIdentity) else value


def _flatten(obj: Any) -> tuple[tuple, tuple]:
    children, names, statics = [], [], []
    for field in attrs.fields(type(obj)):
        value = getattr(obj, field.name)
        if _is_child(value, bool(field.metadata.get("traced"))):
            names.append(field.name)
            children.append(value)
        else:
            statics.append((field.name, _static(value)))
    return tuple(children), (tuple(names), tuple(statics))


def _unflattener(cls: type):
    def unflatten(aux: tuple, children: Any) -> Any:
        names, statics = aux
        obj = object.__new__(cls)
        for name, value in zip(names, children, strict=True):
            object.__setattr__(obj, name, value)
        for name, value in statics:
            object.__setattr__(obj, name, _unstatic(value))
        return obj

    return unflatten


def register(*objects: Any) -> None:
    """Register the ``attrs`` classes of ``objects`` (and of everything they hold) as JAX
    pytree nodes; an ``attrs`` class among ``objects`` is registered itself. A class is
    registered once per process."""
    import jax

    seen: set[int] = set()

    def node(cls: type) -> None:
        if cls not in _REGISTERED:
            jax.tree_util.register_pytree_node(cls, _flatten, _unflattener(cls))
            _REGISTERED.add(cls)

    def walk(value: Any) -> None:
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, type):
            if attrs.has(value):
                node(value)
            return
        cls = type(value)
        if attrs.has(cls):
            node(cls)
            for field in attrs.fields(cls):
                walk(getattr(value, field.name))
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    for obj in objects:
        walk(obj)


def structure_key(*trees: Any) -> Any:
    """A hashable key of the trees' structure and their leaves' shapes and dtypes: what a
    compilation depends on (for caching work done once per kernel structure)."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(trees)
    shapes = tuple((np.shape(leaf), str(getattr(leaf, "dtype", type(leaf)))) for leaf in leaves)
    return treedef, shapes


#: operands per concatenate when packing: XLA on CPU fuses a concatenate of at most 8
#: operands with the values it gathers (with more, each stays a separate operation); more
#: leaves are concatenated in chunks, then the chunks
PACK_CHUNK = 8


class Packing:
    """A pytree of per-chain arrays (chains on axis 0) as few ``(chains, width)`` arrays:
    its float leaves as one float64 array, its integer and boolean leaves as one int64 array
    (both exact); any other leaf as it is. Built from an example tree (values or shapes);
    :meth:`pack` and :meth:`unpack` are inverse."""

    def __init__(self, example: Any, largest: int | None = None) -> None:
        import jax

        leaves, self.treedef = jax.tree_util.tree_flatten(example)
        # per leaf: (array index, start column, end column, shape, dtype)
        self.layout: list[tuple[int, int, int, tuple[int, ...], Any]] = []
        self.arrays: list[tuple[Any, list[int]]] = []  # (dtype, leaf indices)
        open_: dict[str, int] = {}
        widths: list[int] = []
        for i, leaf in enumerate(leaves):
            dtype = np.dtype(leaf.dtype)
            shape = tuple(leaf.shape[1:])
            size = int(np.prod(shape, dtype=np.int64))
            group = _group(dtype) if largest is None or size <= largest else None
            if group is None:
                self.layout.append((len(self.arrays), 0, 0, shape, dtype))
                self.arrays.append((None, [i]))
                widths.append(0)
                continue
            a = open_.get(group)
            if a is None:
                a = open_[group] = len(self.arrays)
                self.arrays.append((np.float64 if group == "f" else np.int64, []))
                widths.append(0)
            self.layout.append((a, widths[a], widths[a] + size, shape, dtype))
            self.arrays[a][1].append(i)
            widths[a] += size
        self.widths = tuple(widths)

    def pack(self, tree: Any) -> tuple:
        """The leaves as a tuple of arrays: (chains, width) float64 or int64 ones, and the
        leaves kept as they are."""
        import jax
        import jax.numpy as jnp

        leaves, treedef = jax.tree_util.tree_flatten(tree)
        if treedef != self.treedef:
            raise ValueError(f"packing a tree {treedef} laid out for {self.treedef}")
        out = []
        for dtype, members in self.arrays:
            if dtype is None:
                out.append(leaves[members[0]])
                continue
            parts = [jnp.reshape(leaves[i], (leaves[i].shape[0], -1)) for i in members]
            out.append(_concatenate([p.astype(dtype) for p in parts]))
        return tuple(out)

    def zeros(self, rows: int) -> tuple:
        """Packed arrays of zeros with ``rows`` rows (buffers to write packed rows into)."""
        import jax.numpy as jnp

        return tuple(
            jnp.zeros((rows, width), dtype)
            if dtype is not None
            else jnp.zeros((rows, *self.layout[members[0]][3]), self.layout[members[0]][4])
            for (dtype, members), width in zip(self.arrays, self.widths, strict=True)
        )

    def write(self, buffers: tuple, at: Any, tree: Any) -> tuple:
        """``buffers`` (of :meth:`zeros`) with the packed rows of ``tree`` set at rows ``at``:
        one scatter per packed array."""
        return tuple(
            buf.at[at].set(value) for buf, value in zip(buffers, self.pack(tree), strict=True)
        )

    def unpack(self, packed: tuple) -> Any:
        """The tree of :meth:`pack`'s arrays (their leading axis the chains, or any)."""
        import jax

        leaves = []
        for a, lo, hi, shape, dtype in self.layout:
            if self.arrays[a][0] is None:
                leaves.append(packed[a])
                continue
            block = packed[a][..., lo:hi]
            leaves.append(block.reshape(block.shape[:-1] + shape).astype(dtype))
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


#: the carried fields of at most this many numbers per chain are packed (a chain's rung
#: counters, its uniform, …); larger ones (the state's leaves) are carried as they are
_PACKED = 16

#: the ragged state's integer fields, carried as floats (exact)
_COUNTERS = ("direction", "stage", "n_moves", "non_finite", "step")


class Carried:
    """A compiled loop's carry ``(RaggedState, offsets)`` packed (:class:`Packing`): the
    state's counters and direction and the offsets as floats (exact below 2^53), so that
    with the other small fields they make one array; the large leaves as they are."""

    def __init__(self, example: tuple[Any, Any]) -> None:
        rs, offsets = example
        self.dtypes = {name: getattr(rs, name).dtype for name in _COUNTERS}
        self.offsets_dtype = offsets.dtype
        self.packing = Packing(self._floats(example), largest=_PACKED)

    @staticmethod
    def _floats(carry: tuple[Any, Any]) -> tuple[Any, Any]:
        import jax.numpy as jnp

        rs, offsets = carry
        floats = {name: getattr(rs, name).astype(jnp.float64) for name in _COUNTERS}
        return attrs.evolve(rs, **floats), offsets.astype(jnp.float64)

    def pack(self, carry: tuple[Any, Any]) -> tuple:
        return self.packing.pack(self._floats(carry))

    def unpack(self, packed: tuple) -> tuple[Any, Any]:
        rs, offsets = self.packing.unpack(packed)
        ints = {name: getattr(rs, name).astype(dtype) for name, dtype in self.dtypes.items()}
        return attrs.evolve(rs, **ints), offsets.astype(self.offsets_dtype)


def _concatenate(parts: list[Any]) -> Any:
    """``parts`` (chains, ·) side by side, :data:`PACK_CHUNK` at a time: the chunks are
    joined along a new axis, which XLA does not merge with the chunks' concatenates."""
    import jax.numpy as jnp

    chunk = max(PACK_CHUNK, 2)
    if len(parts) <= chunk:
        return jnp.concatenate(parts, axis=1)
    chunks = [_concatenate(parts[i : i + chunk])[:, :, None] for i in range(0, len(parts), chunk)]
    return _concatenate(chunks)[:, :, 0]


def _group(dtype: np.dtype) -> str | None:
    """``f`` for a float that float64 holds exactly, ``i`` for an int or bool that int64 does."""
    if dtype.kind == "f" and dtype.itemsize <= 8:
        return "f"
    if dtype.kind in "bi" or (dtype.kind == "u" and dtype.itemsize < 8):
        return "i"
    return None


__all__ = ["PACK_CHUNK", "Carried", "Packing", "register", "structure_key"]
