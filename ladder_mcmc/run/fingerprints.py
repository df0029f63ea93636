"""Kernel fingerprints: a SHA-256 of what a kernel's description leaves out.

``Ladder.describe()`` names the kernel's parts and its scalar settings, but not, e.g., a
mass matrix's values, a target's data, or the code of its log density.
:func:`fingerprint` hashes those; a checkpoint stores it and
:func:`~ladder_mcmc.run.resume.resume` refuses a kernel whose fingerprint differs.
"""

from __future__ import annotations

import dataclasses
import dis
import functools
import hashlib
import numbers
import sys
import sysconfig
import types
import warnings
from pathlib import Path
from typing import Any

import attrs
import numpy as np

#: how deep the hash descends before it marks a value ``<deep>`` (and reports it)
MAX_DEPTH = 40
#: gaps named in the warning (the rest counted)
NAMED_GAPS = 5
_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"})
_MUTABLE = (dict, list, set, bytearray)


def fingerprint(obj: Any, *, warn: bool = True) -> str:
    """A SHA-256 of an object's parameters and code.

    Parameters are what immutable objects hold: the fields of frozen attrs classes and
    frozen dataclasses, tuples, frozensets, arrays (numpy, JAX and torch arrays by
    dtype, shape and bytes), real numbers (as floats), strings, modules (by name).
    Functions are hashed by their qualified name and their code: the bytecode, its
    constants and names (nested functions' code too), default arguments, the values
    their closures capture, and the globals the code reads, each recursively (a function
    it calls is hashed by its code in turn). Functions, classes and C functions of the
    standard library and installed packages (numpy, JAX, …) are named by module and
    qualified name, not hashed. ``functools.partial``, bound methods and wrappers that
    expose ``__wrapped__`` (``jax.jit``) are followed to what they call. An ordinary
    object (not frozen; e.g. the one a bound method is bound to) is named by its class,
    with its class's ``__call__`` and its
    attributes that hold code, floats, booleans, strings, tuples or arrays; its other
    attributes (counters, caches) may change during a run and are left out. A dict,
    list or set is named by its type only.

    A function of values only: an object reached twice hashes as two equal copies
    would; an object reached again inside itself (a cycle) is a mark. Deterministic
    across processes and machines, for one Python version (bytecode differs between
    versions). Line numbers and file names are not hashed: the same source rebuilt
    elsewhere gives the same fingerprint.

    ``warn``: if parts could not be hashed by value (a mutable container or object held
    by a frozen field or read by code, a value that could not be read), say so in one
    ``UserWarning`` naming them.
    """
    feeder = _Feeder()
    feeder.feed(obj, "kernel", frozenset(), 0)
    if warn and feeder.gaps:
        named = "; ".join(feeder.gaps[:NAMED_GAPS])
        more = len(feeder.gaps) - NAMED_GAPS
        warnings.warn(
            "the checkpoint's kernel fingerprint cannot tell whether these change, so a "
            f"resume with other values there is not refused: {named}"
            + (f"; and {more} more" if more > 0 else ""),
            UserWarning,
            stacklevel=4,
        )
    return feeder.hash.hexdigest()


def frozen(obj: Any) -> bool:
    """Whether ``obj`` is an instance of a frozen attrs class or frozen dataclass."""
    cls = type(obj)
    if attrs.has(cls):
        return getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs"
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return bool(obj.__dataclass_params__.frozen)
    return False


@functools.cache
def _library_roots() -> tuple[Path, ...]:
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    paths = sysconfig.get_paths()
    return tuple(Path(paths[k]).resolve() for k in keys if k in paths)


@functools.lru_cache(maxsize=4096)
def _library_module(name: str | None) -> bool:
    """Whether module ``name`` is built in, of the standard library or installed. This
    package never is, wherever it is installed: its wrappers (``from_jax``'s) hold the
    user's functions, which must be reached."""
    if not name:
        return False
    top = name.partition(".")[0]
    if top == __name__.partition(".")[0]:
        return False
    if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
        return True
    module = sys.modules.get(name) or sys.modules.get(top)
    file = getattr(module, "__file__", None)
    if module is None or file is None:
        return False  # not imported, or without a file (``__main__`` of a notebook or -c)
    path = Path(file).resolve()
    return any(path.is_relative_to(root) for root in _library_roots())


def _array_of(obj: Any) -> np.ndarray | None:
    """A JAX array or torch tensor as a numpy array (None: not one)."""
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(obj, jax.Array):
        return np.asarray(obj)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return obj.detach().cpu().numpy()
    return None


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not yet filled (a name assigned later)
        return None


def _globals_read(code: types.CodeType) -> set[str]:
    """The global names ``code`` and the code nested in it read or write."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _globals_read(const)
    return names


def _library_callable(obj: Any) -> bool:
    """A callable of the standard library or an installed package (after ``__wrapped__``)."""
    while not isinstance(obj, types.FunctionType) and hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        return _library_module(getattr(obj, "__module__", None))
    return not isinstance(obj, type) and _library_module(type(obj).__module__)


def _kept_attribute(value: Any) -> bool:
    """Whether an ordinary object's attribute is hashed (see :func:`fingerprint`)."""
    if isinstance(value, (bool, float, complex, str, tuple, np.ndarray)) or frozen(value):
        return True
    if _array_of(value) is not None:
        return True
    return callable(value) and not isinstance(value, type) and not _library_callable(value)


class _Feeder:
    """A SHA-256 being fed, and the paths of the parts it could not hash by value."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.gaps: list[str] = []

    def put(self, text: str) -> None:
        self.hash.update(text.encode())

    def gap(self, path: str, why: str, reported: bool) -> None:
        if reported:
            self.gaps.append(f"{path} ({why})")

    def feed(self, obj: Any, path: str, seen: frozenset, depth: int, code: bool = True) -> None:
        """Feed ``obj``; ``seen``: the ids of its ancestors; ``code``: whether a gap here is
        reported (a value read by code or held by a frozen field, not an object's cache)."""
        cls = type(obj)
        if depth > MAX_DEPTH:
            self.put("<deep>;")
            self.gap(path, f"deeper than {MAX_DEPTH} levels", code)
            return
        if obj is None or isinstance(obj, (bool, np.bool_, str, bytes)):
            self.put(f"{cls.__name__}:{obj!r};")
            return
        if isinstance(obj, numbers.Real):
            self.put(f"r:{float(obj)!r};")
            return
        if isinstance(obj, numbers.Complex):
            self.put(f"c:{complex(obj)!r};")
            return
        if isinstance(obj, types.ModuleType):
            self.put(f"module:{obj.__name__};")
            return
        if not isinstance(obj, np.ndarray):
            try:
                array = _array_of(obj)
            except Exception as err:  # noqa: BLE001 - e.g. a traced value: not readable
                self.put(f"{cls.__qualname__}:unreadable;")
                self.gap(path, f"a {cls.__name__} whose values could not be read: {err}", True)
                return
            if array is not None:
                obj = array
        if isinstance(obj, np.ndarray):
            a = np.ascontiguousarray(obj)
            self.put(f"nd:{a.dtype.str}:{a.shape};")
            if a.dtype == object:
                for i, element in enumerate(a.flat):
                    self.feed(element, f"{path}[{i}]", seen, depth + 1, code)
            else:
                self.hash.update(a.tobytes())
            return
        if id(obj) in seen:
            self.put("<cycle>;")
            return
        seen = seen | {id(obj)}
        self.put(cls.__qualname__)
        self.compound(obj, path, seen, depth, code)

    def compound(self, obj: Any, path: str, seen: frozenset, depth: int, code: bool) -> None:
        cls, down = type(obj), depth + 1
        if isinstance(obj, tuple):
            self.put(f"[{len(obj)}];")
            for i, element in enumerate(obj):
                self.feed(element, f"{path}[{i}]", seen, down, code)
        elif isinstance(obj, frozenset):
            digests = []
            for element in obj:  # in an order of their own hashes: sets have none
                sub = _Feeder()
                sub.feed(element, path, seen, down, code)
                digests.append(sub.hash.hexdigest())
                self.gaps.extend(sub.gaps)
            self.put(f"{{{','.join(sorted(digests))}}};")
        elif frozen(obj):
            fields = attrs.fields(cls) if attrs.has(cls) else dataclasses.fields(obj)
            for field in fields:
                if not field.metadata.get("fingerprint", True):
                    continue  # not a parameter of the transitions (Ladder.adapt)
                self.put(f".{field.name}=")
                self.feed(getattr(obj, field.name), f"{path}.{field.name}", seen, down, True)
        elif isinstance(obj, types.CodeType):
            self.code(obj, path, seen, down)
        elif isinstance(obj, functools.partial):
            self.feed(obj.func, f"{path}.func", seen, down, code)
            self.feed(obj.args, f"{path}.args", seen, down, code)
            self.feed(tuple(sorted(obj.keywords.items())), f"{path}.keywords", seen, down, code)
        elif isinstance(obj, types.MethodType):
            self.feed(obj.__func__, f"{path}.__func__", seen, down, code)
            self.feed(obj.__self__, f"{path}.__self__", seen, down, code)
        elif callable(obj) and (isinstance(obj, type) or _library_callable(obj)):
            module = "" if isinstance(obj, type) else getattr(obj, "__module__", None) or ""
            name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "")
            self.put(f"fn:{module}:{name};")
            wrapped = getattr(obj, "__wrapped__", None)
            if wrapped is not None and not isinstance(obj, type):
                self.feed(wrapped, f"{path}.__wrapped__", seen, down, code)
        elif isinstance(obj, types.FunctionType):
            self.function(obj, path, seen, down)
        elif hasattr(obj, "__wrapped__") and not isinstance(obj, _MUTABLE):
            self.feed(obj.__wrapped__, f"{path}.__wrapped__", seen, down, code)
        elif not isinstance(obj, _MUTABLE) and hasattr(obj, "__dict__"):
            self.instance(obj, path, seen, down)
        else:
            self.put(";")
            self.gap(path, f"a {cls.__name__}, by its type only", code)

    def function(self, fn: types.FunctionType, path: str, seen: frozenset, depth: int) -> None:
        """A function's name, code, defaults, closure and the globals its code reads."""
        self.put(f"fn:{fn.__qualname__};")
        self.feed(fn.__code__, f"{path}.__code__", seen, depth, True)
        self.feed(fn.__defaults__, f"{path}.__defaults__", seen, depth, True)
        kwdefaults = tuple(sorted((fn.__kwdefaults__ or {}).items()))
        self.feed(kwdefaults, f"{path}.__kwdefaults__", seen, depth, True)
        cells = tuple(_cell(c) for c in fn.__closure__ or ())
        names = fn.__code__.co_freevars
        for name, value in zip(names, cells, strict=True):
            self.put(f"cell:{name}=")
            self.feed(value, f"{path}.<{name}>", seen, depth, True)
        for name in sorted(_globals_read(fn.__code__)):
            if name in fn.__globals__:
                self.put(f"global:{name}=")
                self.feed(fn.__globals__[name], f"{path}.<global {name}>", seen, depth, True)

    def code(self, code: types.CodeType, path: str, seen: frozenset, depth: int) -> None:
        """Bytecode, names and constants (nested code recursively); no line numbers."""
        self.put(
            f"code:{code.co_argcount}:{code.co_posonlyargcount}:{code.co_kwonlyargcount}:"
            f"{code.co_flags}:{code.co_names!r}:{code.co_freevars!r};"
        )
        self.hash.update(code.co_code)
        self.put(f"consts[{len(code.co_consts)}];")
        for i, const in enumerate(code.co_consts):
            self.feed(const, f"{path}.co_consts[{i}]", seen, depth, True)

    def instance(self, obj: Any, path: str, seen: frozenset, depth: int) -> None:
        """An ordinary object: its class's ``__call__`` and the attributes kept."""
        call = next((vars(k)["__call__"] for k in type(obj).__mro__ if "__call__" in vars(k)), None)
        if isinstance(call, types.FunctionType):
            self.feed(call, f"{path}.__call__", seen, depth, True)
        for name, value in sorted(getattr(obj, "__dict__", {}).items()):
            if _kept_attribute(value):
                self.put(f".{name}=")
                self.feed(value, f"{path}.{name}", seen, depth, False)
        self.put(";")


__all__ = ["MAX_DEPTH", "fingerprint", "frozen"]
