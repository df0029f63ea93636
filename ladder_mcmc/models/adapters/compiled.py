"""A target computed by one compiled, batched value-and-gradient function.

The adapters (:func:`~ladder_mcmc.models.from_jax`, :func:`~ladder_mcmc.models.from_pymc`,
:func:`~ladder_mcmc.models.from_torch`) compile ``x (n, dim) -> (E (n,), ∂E/∂x (n, dim))``
once and wrap it here. A compiled function is specialised to its batch size, and
the host loop calls the target with as many rows as chains are still moving (fewer, for
jittered trajectory lengths or groups of chains), so every call is padded to the next
power of two: at most ``log2(chains) + 1`` compilations, at most twice the rows.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import is_jax
from ladder_mcmc.models.parameters import ParameterSpace
from ladder_mcmc.validation import positive_finite, positive_int

_FLOAT = np.dtype(float)

Evaluate = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``x (n, dim) -> (E (n,), ∂E/∂x (n, dim))`` on a float64 batch."""


def import_optional(module: str, extra: str) -> Any:
    """``module`` imported, or an ``ImportError`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"this needs {module}: pip install 'ladder_mcmc[{extra}]'") from err


def padded_size(n: int) -> int:
    """The batch size a call with ``n`` rows is padded to: the next power of two."""
    return 1 << max(0, (n - 1).bit_length())


@attrs.frozen(eq=False)
class CompiledTarget:
    """Energy and gradient from one compiled function of a batch of points.

    Attributes
    ----------
    dim : int
        Length of the unconstrained vector.
    evaluate : callable
        ``x (n, dim) -> (E (n,), ∂E/∂x (n, dim))``, the energy ``E = -log p``, as
        float64 numpy arrays.
    parameters : ParameterSpace or None
        Names, shapes and the constraining transform of the model's variables.
    backend : str
        What compiled ``evaluate`` (``"jax"``, ``"pymc"``, ``"torch"``).
    centre : array (dim,) or None
        Where :meth:`initial_points` centres its draws (the model's own initial
        point, e.g. PyMC's); ``None`` is the origin.
    jax_potential : callable or None
        The energy of one point, ``x (dim,) -> E``, as a JAX function (``from_jax``,
        ``from_pymc``), for the loop JAX compiles (:mod:`ladder_mcmc.engine.jax_loop`);
        None for other backends.
    precision : float
        The machine epsilon of the arithmetic the energy is computed in (float64's, or
        float32's for a model that computes in float32): the gradient check's noise.
    """

    dim: int
    evaluate: Evaluate = attrs.field(repr=False)
    parameters: ParameterSpace | None = attrs.field(default=None, repr=False)
    backend: str = ""
    centre: np.ndarray | None = attrs.field(default=None, repr=False)
    jax_potential: Callable | None = attrs.field(default=None, repr=False)
    precision: float = float(np.finfo(float).eps)

    def initial_points(self, n: int, rng: np.random.Generator, radius: float = 2.0) -> np.ndarray:
        """``n`` starting points (n, dim): uniform on ``centre ± radius`` in every
        coordinate of the unconstrained space (Stan's initialisation about the origin)."""
        n = positive_int("n", n)
        radius = positive_finite("radius", radius)
        centre = np.zeros(self.dim) if self.centre is None else self.centre
        return centre + rng.uniform(-radius, radius, size=(n, self.dim))

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(E(x), ∂E/∂x)`` for positions (chains, dim), as float64 numpy arrays; on JAX
        values (inside the compiled loop) the JAX function itself, batched over the chains
        (a target of another backend refuses them)."""
        if is_jax(x):
            if self.jax_potential is None:
                raise ValueError(
                    f"a {self.backend or 'compiled'} target takes numpy positions; it cannot be "
                    "evaluated inside a JAX-compiled loop (use backend='numpy')"
                )
            return _batched(self.jax_potential)(x)
        if type(x) is not np.ndarray or x.dtype != _FLOAT:
            x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"positions must have shape (chains, {self.dim}), got {x.shape}")
        n = x.shape[0]
        size = padded_size(n)
        if size == n:
            return self.evaluate(x)
        e, g = self.evaluate(np.concatenate([x, np.broadcast_to(x[-1:], (size - n, self.dim))]))
        return e[:n], g[:n]

    def energy(self, x: np.ndarray) -> np.ndarray:
        """``-log p(x)``, shape (chains,)."""
        return self.energy_and_grad(x)[0]

    def grad(self, x: np.ndarray) -> np.ndarray:
        """``∂E/∂x``, shape (chains, dim)."""
        return self.energy_and_grad(x)[1]


@functools.lru_cache(maxsize=64)
def _batched(potential: Callable) -> Callable:
    """``potential`` (one point) differentiated and batched over the chains by JAX."""
    import jax

    return jax.vmap(jax.value_and_grad(potential))


def one_function(log_density, energy, adapter: str):
    """The function given, and the sign that makes it an energy: ``(f, -1)`` for a log
    density, ``(f, +1)`` for an energy; a ``ValueError`` unless exactly one is given."""
    if (log_density is None) == (energy is None):
        raise ValueError(
            f"{adapter} takes exactly one of log_density (log p, as emcee, BlackJAX and "
            "PyMC write it) or energy= (-log p, NumPyro's potential_fn); got "
            f"log_density={log_density!r}, energy={energy!r}"
        )
    fn = energy if log_density is None else log_density
    name = "energy" if log_density is None else "log_density"
    if not callable(fn):
        raise ValueError(f"{name} must be a function of one point x (dim,), got {fn!r}")
    return fn, (1.0 if log_density is None else -1.0)
