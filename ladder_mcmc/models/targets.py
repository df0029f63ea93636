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
are defined here too, and Neal's funnel (:class:`NealsFunnel`), a multiscale target.

The built-in targets are written against the namespace of their input
(:mod:`ladder_mcmc.arrays`): numpy positions give numpy arrays, JAX values JAX ones, so
that ``sample(..., backend="jax")`` runs them inside the compiled loop. The function
targets pass the user's functions the positions as they come.
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
from ladder_mcmc.validation import attrs_validator, positive_finite, positive_int

__all__ = [
    "CompiledTarget",
    "FunctionTarget",
    "GammaTarget",
    "IllConditionedGaussian",
    "LogDensityTarget",
    "NealsFunnel",
    "ParameterSpace",
    "RoughWell",
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


def check_target(name: str, value: Any) -> Any:
    """``value``, or ``ValueError`` naming ``name`` unless it is a target: an object with a
    callable ``energy`` and a callable ``grad`` or ``energy_and_grad`` (a function alone, a
    number or None is not: wrap functions in :class:`FunctionTarget` or
    :class:`LogDensityTarget`, a JAX one with :func:`~ladder_mcmc.models.from_jax`)."""
    has = {n: callable(getattr(value, n, None)) for n in ("energy", "grad", "energy_and_grad")}
    if not (has["energy"] and (has["grad"] or has["energy_and_grad"])):
        hint = (
            " (a function: wrap it in FunctionTarget(energy, grad) or LogDensityTarget, or "
            "from_jax(log_density, dim) for a JAX function)"
            if callable(value)
            else ""
        )
        raise ValueError(
            f"{name} must be a target with energy(x) and grad(x) methods{hint}, got {value!r}"
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
    if is_jax(x):
        potential = getattr(target, "jax_potential", None)
        if potential is not None:
            return _batched(potential, "value_and_grad")(x)
    both = getattr(target, "energy_and_grad", None)
    if both is not None:
        e, g = both(x)
    else:
        e, g = target.energy(x), target.grad(x)
    xp = np if type(x) is np.ndarray else namespace(x)
    e, g = xp.asarray(e, dtype=xp.float64), xp.asarray(g, dtype=xp.float64)
    if e.shape != x.shape[:1] or g.shape != x.shape:
        raise _shape_error(target, x, e, g)
    return e, g


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
        if type(g) is not np.ndarray or g.dtype != _FLOAT:
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


@attrs.frozen
class IllConditionedGaussian:
    """Zero-mean Gaussian with diagonal covariance, eigenvalues log-spaced in ``[1, 10^c]``.

    The paper's first two targets (section 5): ``dim = 2`` and ``dim = 100``
    with ``c = 6``; figure 3 uses ``dim = 2``, ``c = 5``.
    ``E(x) = ½ Σ_i x_i² / σ_i²`` with ``σ_i² = 10^{c i/(dim-1)}``.

    Parameters
    ----------
    dim : int
        Dimension.
    log_condition : float
        ``c = log10`` of the condition number of the covariance.
    """

    dim: int = attrs.field(validator=attrs_validator(positive_int))
    log_condition: float = attrs.field(default=6.0)
    variances: np.ndarray = attrs.field(init=False, eq=False, repr=False)
    precisions: np.ndarray = attrs.field(init=False, eq=False, repr=False)

    @log_condition.validator
    def _check_log_condition(self, _attr, value):
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"log_condition must be finite and >= 0, got {value!r}")

    def __attrs_post_init__(self) -> None:
        var = np.logspace(0.0, self.log_condition, self.dim)
        object.__setattr__(self, "variances", var)
        object.__setattr__(self, "precisions", 1.0 / var)

    def energy(self, x: np.ndarray) -> np.ndarray:
        # row by row (einsum), never a matrix product: BLAS rounds a row differently
        # with other batch sizes, and a chain's arithmetic must not depend on its batch
        xp = namespace(x, self.precisions)
        return 0.5 * xp.einsum("ij,ij->i", x, x * self.precisions)

    def grad(self, x: np.ndarray) -> np.ndarray:
        return x * self.precisions

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xp = namespace(x, self.precisions)
        g = x * self.precisions
        return 0.5 * xp.einsum("ij,ij->i", x, g), g

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws, shape (n, dim)."""
        return rng.standard_normal((n, self.dim)) * np.sqrt(self.variances)

    @property
    def mean(self) -> np.ndarray:
        return np.zeros(self.dim)


@attrs.frozen
class RoughWell:
    """The paper's "rough well" (section 5): a wide quadratic bowl with sinusoidal ripples.

    ``E(x) = |x|² / (2 σ₁²) + Σ_i cos(π x_i / σ₂)``, with ``σ₁ = 100``, ``σ₂ = 2``
    and ``dim = 2`` in the paper.

    Parameters
    ----------
    sigma1 : float
        Width of the quadratic well.
    sigma2 : float
        Half-period of the ripples.
    dim : int
        Dimension (2 in the paper).
    """

    sigma1: float = attrs.field(default=100.0, validator=attrs_validator(positive_finite))
    sigma2: float = attrs.field(default=2.0, validator=attrs_validator(positive_finite))
    dim: int = attrs.field(default=2, validator=attrs_validator(positive_int))

    def energy(self, x: np.ndarray) -> np.ndarray:
        xp = namespace(x)
        k = np.pi / self.sigma2
        return (x * x).sum(axis=1) / (2 * self.sigma1**2) + xp.cos(k * x).sum(axis=1)

    def grad(self, x: np.ndarray) -> np.ndarray:
        xp = namespace(x)
        k = np.pi / self.sigma2
        return x / self.sigma1**2 - k * xp.sin(k * x)

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xp = namespace(x)
        k = np.pi / self.sigma2
        kx = k * x
        e = (x * x).sum(axis=1) / (2 * self.sigma1**2) + xp.cos(kx).sum(axis=1)
        return e, x / self.sigma1**2 - k * xp.sin(kx)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws by rejection, coordinate by coordinate, shape (n, dim).

        The density factorises; each coordinate is drawn from ``N(0, σ₁²)`` and
        accepted with probability ``exp(-cos(π x/σ₂) - 1) ≤ 1`` (about 47%).
        """
        out = np.empty(n * self.dim)
        filled = 0
        while filled < out.size:
            need = out.size - filled
            cand = rng.normal(0.0, self.sigma1, size=2 * need + 16)
            keep = cand[rng.random(cand.size) < np.exp(-np.cos(np.pi * cand / self.sigma2) - 1)]
            take = keep[:need]
            out[filled : filled + take.size] = take
            filled += take.size
        return out.reshape(n, self.dim)


@attrs.frozen
class GammaTarget:
    """Independent Gamma coordinates on ``x > 0``: shape ``k``, rate ``θ``.

    ``E(x) = Σ_i (θ x_i − (k − 1) log x_i)``, ``+inf`` where a coordinate is not
    positive (density zero). Mean ``k/θ``, variance ``k/θ²``. A target for maps on
    positive variables (:class:`~ladder_mcmc.ladder.log_scale.LogScaleWalk`).

    Parameters
    ----------
    shape : float
        ``k > 0``.
    rate : float
        ``θ > 0``.
    dim : int
        Number of independent coordinates.

    Examples
    --------
    >>> import numpy as np
    >>> t = GammaTarget(2.0, 0.5)
    >>> t.energy(np.array([[1.0], [-1.0]]))
    array([0.5, inf])
    >>> float(t.mean[0]), float(t.variance[0])
    (4.0, 8.0)
    """

    shape: float = attrs.field(validator=attrs_validator(positive_finite))
    rate: float = attrs.field(default=1.0, validator=attrs_validator(positive_finite))
    dim: int = attrs.field(default=1, validator=attrs_validator(positive_int))

    def energy(self, x: np.ndarray) -> np.ndarray:
        xp = namespace(x)
        x = xp.asarray(x, dtype=xp.float64)
        inside = (x > 0).all(axis=1)
        safe = xp.where(x > 0, x, 1.0)
        e = (self.rate * safe - (self.shape - 1.0) * xp.log(safe)).sum(axis=1)
        return xp.where(inside, e, xp.inf)

    def grad(self, x: np.ndarray) -> np.ndarray:
        xp = namespace(x)
        x = xp.asarray(x, dtype=xp.float64)
        with np.errstate(divide="ignore"):
            return self.rate - (self.shape - 1.0) / x

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws, shape (n, dim)."""
        return rng.gamma(self.shape, 1.0 / self.rate, size=(n, self.dim))

    @property
    def mean(self) -> np.ndarray:
        return np.full(self.dim, self.shape / self.rate)

    @property
    def variance(self) -> np.ndarray:
        return np.full(self.dim, self.shape / self.rate**2)


@attrs.frozen
class NealsFunnel:
    """Neal's funnel: ``v ~ N(0, s²)``, ``x_i | v ~ N(0, e^v)`` for ``i = 1 … dim − 1``.

    A multiscale target (Neal 2003, "Slice sampling", section 8): the scale of ``x``
    ranges over ``e^{±s}`` with ``v``, so no single step size fits the neck and the
    mouth. Coordinates ``(v, x_1, …, x_{dim−1})``; ``s = 3`` and ``dim = 10`` are
    Neal's. Energy, constants dropped, with ``n = dim − 1``::

        E = v² / (2 s²) + n v / 2 + ½ e^{−v} Σ x_i²

    Exact moments: ``E v = 0``, ``Var v = s²``, ``E x_i = 0``,
    ``Var x_i = E e^v = e^{s²/2}`` (``e^{4.5} ≈ 90`` for ``s = 3``); exact draws by
    :meth:`sample`. Far down the neck ``e^{−v}`` overflows and the energy is ``inf``
    (density zero, as the ladder treats it).

    Parameters
    ----------
    dim : int
        Dimension, at least 2 (``v`` and one ``x``).
    scale : float
        ``s``, the standard deviation of ``v``.

    Examples
    --------
    >>> import numpy as np
    >>> t = NealsFunnel(3)
    >>> t.energy(np.array([[0.0, 1.0, 1.0]]))
    array([1.])
    >>> t.variance.round(3)
    array([ 9.   , 90.017, 90.017])
    >>> t.parameters.labels
    ('v', 'x[0]', 'x[1]')
    """

    dim: int = attrs.field(default=10, validator=attrs_validator(positive_int))
    scale: float = attrs.field(default=3.0, validator=attrs_validator(positive_finite))

    @dim.validator
    def _check_dim(self, _attr, value):
        if value < 2:
            raise ValueError(f"dim must be at least 2 (v and one x), got {value!r}")

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xp = namespace(x)
        x = xp.asarray(x, dtype=xp.float64)
        v, rest = x[:, 0], x[:, 1:]
        n = self.dim - 1
        with np.errstate(over="ignore", invalid="ignore"):
            w = xp.exp(-v)  # the precision of every x_i
            half_ss = 0.5 * xp.einsum("ij,ij->i", rest, rest)
            e = v * v / (2 * self.scale**2) + 0.5 * n * v + w * half_ss
            g_v = v / self.scale**2 + 0.5 * n - w * half_ss
            g = xp.concatenate([g_v[:, None], rest * w[:, None]], axis=1)
        return e, g

    def energy(self, x: np.ndarray) -> np.ndarray:
        return self.energy_and_grad(x)[0]

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.energy_and_grad(x)[1]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws, shape (n, dim): ``v = s z₀``, ``x_i = e^{v/2} z_i``."""
        z = rng.standard_normal((n, self.dim))
        v = self.scale * z[:, 0]
        return np.column_stack([v, z[:, 1:] * np.exp(0.5 * v)[:, None]])

    def local_scale(self, x: np.ndarray) -> np.ndarray:
        """The scale of the ``x_i`` at positions ``x`` (chains, dim): ``e^{v/2}``, shape
        (chains,) (a scale hint for
        :func:`~ladder_mcmc.hamiltonian.state_length.state_length_lahmc`)."""
        xp = namespace(x)
        return xp.exp(0.5 * xp.asarray(x, dtype=xp.float64)[:, 0])

    @property
    def mean(self) -> np.ndarray:
        return np.zeros(self.dim)

    @property
    def variance(self) -> np.ndarray:
        """``(s², e^{s²/2}, …, e^{s²/2})``."""
        return np.r_[self.scale**2, np.full(self.dim - 1, np.exp(0.5 * self.scale**2))]

    @property
    def parameters(self) -> ParameterSpace:
        """``v`` (a scalar) and ``x`` (a vector of ``dim − 1``), no transform."""
        return ParameterSpace(self.dim, [("v", ()), ("x", (self.dim - 1,))])
