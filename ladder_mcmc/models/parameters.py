"""Parameter names: how a target's flat unconstrained vector maps to named, shaped values.

A sampler moves a flat vector ``x`` of length ``dim`` on the real line. A model has
named variables of their own shapes, often constrained (a scale is positive), and
sometimes derived quantities (PyMC's deterministics). A :class:`ParameterSpace` says
both: the variables, in order, with their shapes, and ``transform``, the map from
unconstrained ``x`` to the variables' values, flattened and concatenated in that order.

A target that has a ``parameters`` attribute (a :class:`ParameterSpace`) gets its
names into :func:`~ladder_mcmc.diagnostics.summary`,
:func:`~ladder_mcmc.diagnostics.to_inference_data` and
:meth:`~ladder_mcmc.run.trace.Trace.named_draws`.

Examples
--------
>>> import numpy as np
>>> space = ParameterSpace.from_names(["a", "b"])
>>> space.labels
('a', 'b')
>>> space = ParameterSpace(3, [("beta", (2,)), ("sigma", ())],
...                        lambda x: np.column_stack([x[:, :2], np.exp(x[:, 2])]))
>>> space.labels
('beta[0]', 'beta[1]', 'sigma')
>>> draws = space.split(space.constrain(np.zeros((4, 3))))
>>> draws["beta"].shape, draws["sigma"]
((4, 2), array([1., 1., 1., 1.]))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.validation import positive_int

Transform = Callable[[np.ndarray], np.ndarray]
"""``x (n, dim) -> values (n, size)``: unconstrained points to the variables' values."""


def _shape(name: str, shape: Any) -> tuple[int, ...]:
    ok = isinstance(shape, (tuple, list)) and all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape
    )
    if not ok:
        raise ValueError(f"variable {name!r}: shape must be a tuple of ints, got {shape!r}")
    if any(s < 1 for s in shape):
        raise ValueError(f"variable {name!r}: shape must be positive ints, got {shape!r}")
    return tuple(int(s) for s in shape)


def _variables(value: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    out = []
    for item in items:
        if isinstance(item, str) or len(item) != 2:
            raise ValueError(f"variables must be (name, shape) pairs, got {item!r}")
        name, shape = item
        if not isinstance(name, str) or not name:
            raise ValueError(f"variable names must be non-empty strings, got {name!r}")
        out.append((name, _shape(name, shape)))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"variable names must be distinct, got {names}")
    if not out:
        raise ValueError("variables must name at least one variable")
    return tuple(out)


def _labels_of(variables: Sequence[tuple[str, tuple[int, ...]]]) -> tuple[str, ...]:
    """``name`` for a scalar, ``name[i]`` / ``name[i,j]`` (0-based, C order) otherwise."""
    out: list[str] = []
    for name, shape in variables:
        if shape == ():
            out.append(name)
        else:
            out.extend(f"{name}[{','.join(map(str, i))}]" for i in np.ndindex(*shape))
    return tuple(out)


@attrs.frozen(eq=False)
class ParameterSpace:
    """Named, shaped variables of a target, and how unconstrained positions give them.

    Parameters
    ----------
    dim : int
        Length of the unconstrained vector the sampler moves.
    variables : sequence of (name, shape), or a mapping name → shape
        The variables, in the order ``transform`` lays out their values (each
        flattened in C order). Shape ``()`` is a scalar.
    transform : callable, optional
        ``x (n, dim) -> values (n, size)`` with ``size`` the variables' total size;
        ``None`` (default) is the identity (then ``size`` must equal ``dim``).
        Checked once, at a point of zeros.
    labels : sequence of str, optional
        One label per value (default ``name``, ``name[i]``, 0-based, as ArviZ
        prints them; posteriordb's targets pass Stan's 1-based labels).

    Raises
    ------
    ValueError
        If the shapes, labels or the transform's output do not fit together.
    """

    dim: int = attrs.field(converter=lambda v: positive_int("dim", v))
    variables: tuple[tuple[str, tuple[int, ...]], ...] = attrs.field(converter=_variables)
    transform: Transform | None = None
    labels: tuple[str, ...] = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        size = sum(math.prod(shape) for _, shape in self.variables)
        if self.transform is None:
            if size != self.dim:
                raise ValueError(
                    f"without a transform the variables must have dim = {self.dim} values "
                    f"in all, got {size} for {list(self.variables)}"
                )
        else:
            if not callable(self.transform):
                raise ValueError(
                    f"transform must be a function of x (n, dim), got {self.transform!r}"
                )
            out = np.asarray(self.transform(np.zeros((1, self.dim))))
            if out.shape != (1, size):
                raise ValueError(
                    f"transform must give {size} values per point for variables "
                    f"{list(self.variables)}; it gave shape {out.shape} for 1 point"
                )
        labels = _labels_of(self.variables) if self.labels is None else tuple(self.labels)
        if len(labels) != size or not all(isinstance(s, str) for s in labels):
            raise ValueError(f"labels must be {size} strings, got {labels!r}")
        object.__setattr__(self, "labels", labels)

    @classmethod
    def from_names(cls, names: Iterable[str]) -> ParameterSpace:
        """One scalar variable per coordinate of ``x``, no transform."""
        names = tuple(names)
        return cls(len(names), [(n, ()) for n in names])

    @property
    def size(self) -> int:
        """The number of values the variables hold (``dim`` without a transform)."""
        return len(self.labels)

    def constrain(self, x: Any) -> np.ndarray:
        """The variables' values, shape ``(..., size)``, for positions ``(..., dim)``."""
        x = np.asarray(x, dtype=float)
        if x.ndim < 1 or x.shape[-1] != self.dim:
            raise ValueError(f"positions must have last axis {self.dim}, got shape {x.shape}")
        if self.transform is None:
            return x
        flat = x.reshape(-1, self.dim)
        out = np.asarray(self.transform(flat), dtype=float)
        return out.reshape(x.shape[:-1] + (self.size,))

    def split(self, values: Any) -> dict[str, np.ndarray]:
        """``values (..., size)`` as ``{name: array (..., *shape)}``."""
        values = np.asarray(values)
        if values.ndim < 1 or values.shape[-1] != self.size:
            raise ValueError(f"values must have last axis {self.size}, got shape {values.shape}")
        lead = values.shape[:-1]
        out, start = {}, 0
        for name, shape in self.variables:
            n = math.prod(shape)
            out[name] = values[..., start : start + n].reshape(lead + shape)
            start += n
        return out


def as_parameter_space(value: Any, dim: int | None) -> ParameterSpace | None:
    """``None``, a :class:`ParameterSpace`, or names (one per coordinate) as a space."""
    if value is None or isinstance(value, ParameterSpace):
        space = value
    elif isinstance(value, str):
        raise ValueError(f"parameters must be a ParameterSpace or a list of names, got {value!r}")
    else:
        space = ParameterSpace.from_names(value)
    if space is not None and dim is not None and space.dim != dim:
        raise ValueError(f"parameters describe dim = {space.dim}, the target has dim = {dim}")
    return space


def parameters_of(target: Any) -> ParameterSpace | None:
    """The target's :class:`ParameterSpace` (its ``parameters`` attribute), or None."""
    space = getattr(target, "parameters", None)
    return space if isinstance(space, ParameterSpace) else None
