"""Targets: energy functions ``E(x) = -log p(x) + const`` with gradients.

A target is any object with

* ``energy(x)`` → array (chains,), for positions ``x`` of shape (chains, dim);
* ``grad(x)`` → array (chains, dim), the gradient of the energy;

optionally ``energy_and_grad(x)`` (both at once, when cheaper), ``dim``
(checked against the initial positions) and ``parameters`` (names and shapes,
:class:`~ladder_mcmc.models.parameters.ParameterSpace`); :func:`energy_and_grad`
evaluates both for any target, :func:`energy_of` the energy alone.

Models written with other libraries come in through the adapters of
:mod:`ladder_mcmc.models.adapters`, importable from here too
(``ladder_mcmc.models.targets.from_jax``).

Two conventions, each with its own name, never a sign flag: plain functions of the
*energy* (NumPyro's ``potential_fn``, Stan's negative log density) are wrapped by
:class:`FunctionTarget`; functions of the *log density* (emcee, BlackJAX, PyMC) by
:class:`LogDensityTarget`, which negates them once. The paper's targets (section 5)
and Neal's funnel, targets with exact draws and moments, are in
:mod:`ladder_mcmc.models.exact_targets`.

The function targets pass the user's functions the positions as they come: numpy's on the
host loop, JAX's inside the compiled one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from ladder_mcmc.arrays import is_jax, namespace
from ladder_mcmc.models.adapters import CompiledTarget, from_jax, from_pymc, from_torch
from ladder_mcmc.models.parameters import ParameterSpace, as_parameter_space
from ladder_mcmc.validation import positive_int

__all__ = [
    "CompiledTarget",
    "FunctionTarget",
    "LogDensityTarget",
    "ParameterSpace",
    "Target",
    "check_target",
    "energy_and_grad",
    "energy_of",
    "from_jax",
    "from_pymc",
    "from_torch",
]


@runtime_checkable
class Target(Protocol):
    """What a leapfrog map needs of a target density."""

    def energy(self, x: np.ndarray) -> np.ndarray: ...

    def grad(self, x: np.ndarray) -> np.ndarray: ...


def check_target(name: str, value: Any, *, or_else: str = "") -> Any:
    """``value``, or ``ValueError`` naming ``name`` unless it is a target: an object with a
    callable ``energy`` and a callable ``grad`` or ``energy_and_grad`` (a function alone, a
    number or None is not: wrap functions in :class:`FunctionTarget` or
    :class:`LogDensityTarget`, a JAX one with :func:`~ladder_mcmc.models.from_jax`).
    ``or_else`` names what else ``name`` may be, for the message ("a kernel or ")."""
    has = {n: callable(getattr(value, n, None)) for n in ("energy", "grad", "energy_and_grad")}
    if not (has["energy"] and (has["grad"] or has["energy_and_grad"])):
        hint = (
            " (a function: wrap it in FunctionTarget(energy, grad) or LogDensityTarget, or "
            "from_jax(log_density, dim) for a JAX function)"
            if callable(value)
            else ""
        )
        raise ValueError(
            f"{name} must be {or_else}a target with energy(x) and grad(x) methods{hint}, "
            f"got {value!r}"
        )
    return value


def energy_and_grad(target: Target, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(E(x), ∂E/∂x)`` as float arrays: the target's ``energy_and_grad`` if it has one,
    else ``energy`` and ``grad``.

    On JAX values (inside the compiled loop) a target with a ``jax_potential`` (a JAX
    function of one point: :func:`~ladder_mcmc.models.from_jax`) is differentiated by
    JAX, batched over the chains; any other target's methods are called on the JAX
    values, and must be written with the namespace of their input
    (:mod:`ladder_mcmc.arrays`).
    """
    host = type(x) is np.ndarray
    if not host and is_jax(x):
        potential = getattr(target, "jax_potential", None)
        if potential is not None:
            return _batched(potential, "value_and_grad")(x)
    both = getattr(target, "energy_and_grad", None)
    if both is not None:
        e, g = both(x)
    else:
        e, g = target.energy(x), target.grad(x)
    if not (host and _is_float_array(e) and _is_float_array(g)):  # (else: as they are)
        xp = np if host else namespace(x)
        e, g = xp.asarray(e, dtype=xp.float64), xp.asarray(g, dtype=xp.float64)
    if e.shape != x.shape[:1] or g.shape != x.shape:
        raise _shape_error(target, x, e, g)
    return e, g


def _is_float_array(a: Any) -> bool:
    """Whether ``a`` is a numpy float64 array (``np.asarray(a, dtype=float)`` is ``a``);
    the dtype's identity first, the usual case, before its comparison."""
    return type(a) is np.ndarray and (a.dtype is _FLOAT or a.dtype == _FLOAT)


def _shape_error(target: Target, x: Any, e: Any = None, g: Any = None) -> ValueError:
    """A target that returned the wrong shapes for positions ``x`` (chains, dim)."""
    got = []
    if e is not None and np.shape(e) != x.shape[:1]:
        got.append(f"energy of shape {np.shape(e)} (expected {x.shape[:1]})")
    if g is not None and np.shape(g) != x.shape:
        got.append(f"gradient of shape {np.shape(g)} (expected {x.shape})")
    return ValueError(
        f"target {type(target).__name__} returned {' and '.join(got)} for positions of shape "
        f"{x.shape}: one row per chain, even for one chain (a squeeze or a sum over the "
        "wrong axis?)"
    )


def energy_of(target: Target, x: np.ndarray) -> np.ndarray:
    """``E(x)`` as a float array (the target's ``energy``; on JAX values a target with a
    ``jax_potential`` is evaluated by JAX, batched over the chains, and any other
    target's ``energy`` is called on the JAX values)."""
    if type(x) is np.ndarray or not is_jax(x):
        return np.asarray(target.energy(x), dtype=float)
    potential = getattr(target, "jax_potential", None)
    if potential is not None:
        return _batched(potential, "value")(x)
    xp = namespace(x)
    return xp.asarray(target.energy(x), dtype=xp.float64)


def gradient(target: Target, x: np.ndarray) -> np.ndarray:
    """``∂E/∂x`` as a float array (the target's ``grad``; on JAX values as for
    :func:`energy_and_grad`)."""
    if type(x) is np.ndarray:
        g = target.grad(x)
        if type(g) is not np.ndarray or (g.dtype is not _FLOAT and g.dtype != _FLOAT):
            g = np.asarray(g, dtype=float)
    else:
        potential = getattr(target, "jax_potential", None)
        if potential is not None:
            return _batched(potential, "grad")(x)
        xp = namespace(x)
        g = xp.asarray(target.grad(x), dtype=xp.float64)
    if g.shape != x.shape:
        raise _shape_error(target, x, g=g)
    return g


_FLOAT = np.dtype(float)


@functools.lru_cache(maxsize=64)
def _batched(potential: Callable, what: str) -> Callable:
    """``potential`` (one point) differentiated and batched over the chains by JAX."""
    import jax

    if what == "value":
        return jax.vmap(potential)
    if what == "grad":
        return jax.vmap(jax.grad(potential))
    return jax.vmap(jax.value_and_grad(potential))


@attrs.frozen
class FunctionTarget:
    """Wrap plain functions as a target.

    Parameters
    ----------
    energy : callable
        ``x (chains, dim) -> (chains,)``, the negative log density up to a constant.
    grad : callable
        ``x (chains, dim) -> (chains, dim)``, its gradient.
    dim : int, optional
        The dimension, if known (used to validate initial positions).
    parameters : ParameterSpace or sequence of str, optional
        Names (and shapes, and a constraining transform) of the parameters, used by
        ``summary`` and ``to_inference_data``; a list gives one name per coordinate.

    See Also
    --------
    LogDensityTarget : the same for functions of the log density.

    Examples
    --------
    >>> import numpy as np
    >>> t = FunctionTarget(lambda x: 0.5 * (x**2).sum(1), lambda x: x, dim=3)
    >>> t.energy(np.ones((2, 3)))
    array([1.5, 1.5])
    """

    energy: Callable[[np.ndarray], np.ndarray]
    grad: Callable[[np.ndarray], np.ndarray]
    dim: int | None = None
    parameters: ParameterSpace | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        _check_functions(self, ("energy", "grad"))


def _check_functions(target: Any, names: tuple[str, ...]) -> None:
    """Validate a function target's fields: callables, ``dim``, ``parameters``."""
    for name in names:
        if not callable(getattr(target, name)):
            raise ValueError(
                f"{name} must be a function of x (chains, dim), got {getattr(target, name)!r}"
            )
    if target.dim is not None:
        object.__setattr__(target, "dim", positive_int("dim", target.dim))
    space = as_parameter_space(target.parameters, target.dim)
    object.__setattr__(target, "parameters", space)
    if target.dim is None and space is not None:
        object.__setattr__(target, "dim", space.dim)


@attrs.frozen
class LogDensityTarget:
    """Wrap a log density and its gradient as a target (energy ``E = -log p``).

    Parameters
    ----------
    log_density : callable
        ``x (chains, dim) -> (chains,)``, ``log p(x)`` up to a constant.
    grad_log_density : callable
        ``x (chains, dim) -> (chains, dim)``, its gradient ``∂ log p / ∂x``.
    dim : int, optional
        The dimension, if known (used to validate initial positions).
    parameters : ParameterSpace or sequence of str, optional
        As for :class:`FunctionTarget`.

    Examples
    --------
    >>> import numpy as np
    >>> t = LogDensityTarget(lambda x: -0.5 * (x**2).sum(1), lambda x: -x, dim=3)
    >>> t.energy(np.ones((2, 3))), t.grad(np.ones((1, 3)))
    (array([1.5, 1.5]), array([[1., 1., 1.]]))
    """

    log_density: Callable[[np.ndarray], np.ndarray]
    grad_log_density: Callable[[np.ndarray], np.ndarray]
    dim: int | None = None
    parameters: ParameterSpace | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        _check_functions(self, ("log_density", "grad_log_density"))

    def energy(self, x: np.ndarray) -> np.ndarray:
        """``-log p(x)``, shape (chains,)."""
        xp = namespace(x)
        return -xp.asarray(self.log_density(x), dtype=xp.float64)

    def grad(self, x: np.ndarray) -> np.ndarray:
        """``-∂ log p / ∂x``, shape (chains, dim)."""
        xp = namespace(x)
        return -xp.asarray(self.grad_log_density(x), dtype=xp.float64)
