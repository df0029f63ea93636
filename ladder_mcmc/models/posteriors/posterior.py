"""What every posteriordb target shares: shape checks, energy/grad from one routine.

A posterior target works on Stan's *unconstrained* scale: positions ``x`` of
shape (chains, dim), energy ``E(x) = -log p(θ(x) | data) - log |dθ/dx| + const``
(the Jacobian adjustment exactly as Stan adds it; normalising constants dropped)
and its hand-derived gradient. ``constrain`` maps positions back to the
constrained parameters, in the order of the reference summaries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ladder_mcmc.arrays import is_jax, namespace
from ladder_mcmc.models.parameters import ParameterSpace
from ladder_mcmc.validation import positive_finite


class Posterior:
    """Base of the posteriordb targets: the public, batched, validated API.

    Subclasses define ``dim``, ``param_names``, ``_energy_and_grad(x)`` and
    ``_constrain(x)``, which receive validated (chains, dim) float arrays;
    ``_energy_and_grad`` is written against their namespace (numpy or JAX,
    :mod:`ladder_mcmc.arrays`), ``_constrain`` runs on numpy draws.

    Attributes
    ----------
    name : str
        posteriordb name, ``"<data>-<model>"``.
    reference : Reference or None
        Reference summaries, when the target was built by
        :func:`ladder_mcmc.models.posteriors.load`.
    """

    name: str = ""
    dim: int
    reference: Any

    @property
    def param_names(self) -> tuple[str, ...]:  # pragma: no cover - overridden
        raise NotImplementedError

    # -- subclass hooks -------------------------------------------------------------------
    def _energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover

    def _constrain(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    # -- public, batched API --------------------------------------------------------------
    def _positions(self, x: Any) -> np.ndarray:
        xp = namespace(x)
        x = xp.asarray(x, dtype=xp.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(
                f"{self.name}: positions must have shape (chains, {self.dim}), got {x.shape}"
            )
        return x

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Energy (chains,) and its gradient (chains, dim) at unconstrained ``x``.

        Non-finite values (overflow far in the tails) are returned as they are:
        the ladder treats them as density zero. Numpy positions give numpy arrays, JAX
        values JAX ones (the JAX loop calls it on its traced positions).
        """
        x = self._positions(x)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            return self._energy_and_grad(x)

    def energy(self, x: np.ndarray) -> np.ndarray:
        """``-log p`` on the unconstrained scale, Jacobian included, shape (chains,)."""
        return self.energy_and_grad(x)[0]

    def grad(self, x: np.ndarray) -> np.ndarray:
        """``∂E/∂x``, shape (chains, dim)."""
        return self.energy_and_grad(x)[1]

    def constrain(self, x: np.ndarray) -> np.ndarray:
        """Constrained parameters (chains, n_params), columns in :attr:`param_names` order.

        Also accepts draws of shape (steps, chains, dim); the leading axes are kept.
        """
        x = np.asarray(x, dtype=float)
        if x.ndim < 1 or x.shape[-1] != self.dim:
            raise ValueError(f"{self.name}: last axis must have length {self.dim}, got {x.shape}")
        flat = x.reshape(-1, self.dim)
        with np.errstate(over="ignore", invalid="ignore"):
            out = self._constrain(flat)
        return out.reshape(x.shape[:-1] + (out.shape[-1],))

    @property
    def parameters(self) -> ParameterSpace:
        """The constrained variables (``theta[1..J]`` → ``theta`` of shape (J,)), with
        Stan's labels, and :meth:`constrain` as the transform."""
        return ParameterSpace(
            self.dim, variables_of(self.param_names), self._constrain, labels=self.param_names
        )

    def initial_points(self, n: int, rng: np.random.Generator, radius: float = 0.5) -> np.ndarray:
        """Stan's initialisation: ``n`` points (n, dim) uniform on ``(-radius, radius)`` of
        the unconstrained space; ``radius`` 0.5 is Stan's ``init=0.5`` (Stan's default, 2,
        starts about half of arma's chains where its moving-average recursion explodes)."""
        positive_finite("radius", radius)
        return rng.uniform(-radius, radius, size=(n, self.dim))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def recurrence(step: Callable[[Any, Any], Any], init: Any, inputs: Any) -> Any:
    """``s_t = step(s_{t-1}, inputs[t-1])`` from ``s_0 = init``: ``(s_0, …, s_T)`` stacked.

    A Python loop on numpy arrays, ``jax.lax.scan`` on JAX values: the same arithmetic
    (a forward-mode recursion over a time series, all chains at once).
    """
    if is_jax(init) or is_jax(inputs):
        from jax import lax  # JAX values exist: JAX is imported

        def body(prev: Any, x: Any) -> tuple[Any, Any]:
            new = step(prev, x)
            return new, new

        _, rest = lax.scan(body, init, inputs)
        xp = namespace(rest)
        return xp.concatenate([init[None], rest])
    out = np.empty((len(inputs) + 1,) + np.shape(init))
    out[0] = init
    for t in range(len(inputs)):
        out[t + 1] = step(out[t], inputs[t])
    return out


def vector(data: Mapping[str, Any], key: str, length: int | None = None) -> np.ndarray:
    """``data[key]`` as a finite float vector (of ``length``), or a clear ``ValueError``."""
    if key not in data:
        raise ValueError(f"data is missing {key!r} (has {sorted(data)})")
    arr = np.asarray(data[key], dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"data[{key!r}] must be a vector, got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"data[{key!r}] has length {arr.shape[0]}, expected {length}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"data[{key!r}] must be finite")
    return arr


def count(data: Mapping[str, Any], key: str, minimum: int = 0) -> int:
    """``data[key]`` as an int ``>= minimum``, or a clear ``ValueError``."""
    if key not in data:
        raise ValueError(f"data is missing {key!r} (has {sorted(data)})")
    value = data[key]
    if isinstance(value, Sequence) and len(value) == 1:  # R's length-1 vectors
        value = value[0]
    if isinstance(value, bool) or not float(value).is_integer() or value < minimum:
        raise ValueError(f"data[{key!r}] must be an integer >= {minimum}, got {value!r}")
    return int(value)


def variables_of(labels: Sequence[str]) -> list[tuple[str, tuple[int, ...]]]:
    """Stan's labels ``("mu", "theta[1]", "theta[2]")`` as variables
    ``[("mu", ()), ("theta", (2,))]`` (vectors with consecutive 1-based indices)."""
    out: list[tuple[str, tuple[int, ...]]] = []
    for label in labels:
        name, bracket, index = label.partition("[")
        if not bracket:
            out.append((name, ()))
        elif out and out[-1][0] == name and index == f"{out[-1][1][0] + 1}]":
            out[-1] = (name, (out[-1][1][0] + 1,))
        elif index == "1]":
            out.append((name, (1,)))
        else:
            raise ValueError(f"label {label!r} does not continue a vector")
    return out


def indexed(name: str, n: int) -> tuple[str, ...]:
    """``("name[1]", ..., "name[n]")``, Stan's 1-based names."""
    return tuple(f"{name}[{i}]" for i in range(1, n + 1))
