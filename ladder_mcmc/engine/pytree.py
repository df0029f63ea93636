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


__all__ = ["register", "structure_key"]
