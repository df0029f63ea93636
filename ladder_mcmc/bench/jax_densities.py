"""JAX log densities of the suite's targets, for NumPyro's NUTS and for ``from_jax``.

:func:`jax_log_density` gives ``log p(x) = −E(x)`` of one point ``x`` (dim,) in
``jax.numpy``, written term for term after the package's numpy energy (same constants
dropped): the paper's targets (:class:`~ladder_mcmc.models.IllConditionedGaussian`,
:class:`~ladder_mcmc.models.RoughWell`), Neal's funnel
(:class:`~ladder_mcmc.models.NealsFunnel`), and every posteriordb posterior through
:func:`ladder_mcmc.models.posteriors.jax_log_density`. :func:`density_error` checks one
against the energy. JAX is imported when a density is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ladder_mcmc.models.exact_targets import IllConditionedGaussian, NealsFunnel, RoughWell
from ladder_mcmc.models.posteriors import Posterior
from ladder_mcmc.models.posteriors import jax_log_density as posterior_log_density

JAX_HINT = "the suite's JAX densities need JAX: pip install 'ladder_mcmc[jax]'"


def _import_jax() -> Any:
    try:
        import jax
    except ImportError as err:
        raise ImportError(JAX_HINT) from err
    return jax


def jax_log_density(target: Any) -> Callable[[Any], Any]:
    """``log p`` of ``target`` at one point ``x`` (dim,), a pure ``jax.numpy`` function.

    Evaluate it in float64 (``with jax.enable_x64(True):``); the constants are turned
    into JAX arrays when it is called.

    Parameters
    ----------
    target : IllConditionedGaussian, RoughWell, NealsFunnel or Posterior
        A target of the suite.

    Raises
    ------
    ValueError
        For a target with no JAX version.
    ImportError
        Without JAX.

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ladder_mcmc.models import NealsFunnel
    >>> t = NealsFunnel(3)
    >>> log_p = jax_log_density(t)
    >>> with jax.enable_x64(True):
    ...     value = float(log_p(np.array([0.5, 1.0, -1.0])))
    >>> bool(np.isclose(value, -t.energy(np.array([[0.5, 1.0, -1.0]]))[0]))
    True
    """
    if isinstance(target, Posterior):
        return posterior_log_density(target)
    jnp = _import_jax().numpy
    if isinstance(target, IllConditionedGaussian):
        precisions = np.array(target.precisions)

        def gaussian(x: Any) -> Any:
            return -0.5 * jnp.sum(x * (x * jnp.asarray(precisions)))

        return gaussian
    if isinstance(target, RoughWell):
        k, s1 = np.pi / target.sigma2, target.sigma1

        def rough_well(x: Any) -> Any:
            return -(jnp.sum(x * x) / (2 * s1**2) + jnp.sum(jnp.cos(k * x)))

        return rough_well
    if isinstance(target, NealsFunnel):
        n, s2 = target.dim - 1, target.scale**2

        def funnel(x: Any) -> Any:
            v, rest = x[0], x[1:]
            return -(v * v / (2 * s2) + 0.5 * n * v + 0.5 * jnp.exp(-v) * jnp.sum(rest * rest))

        return funnel
    raise ValueError(f"no JAX log density for {type(target).__name__}")


def density_error(target: Any, log_p: Callable[[Any], Any], points: np.ndarray) -> float:
    """Largest relative ``|log p(x) + E(x)| / max(1, |E(x)|)`` over ``points`` (n, dim):
    how far the JAX density is from the package's energy (rounding: ~1e-15)."""
    jax = _import_jax()
    points = np.asarray(points, dtype=float)
    with jax.enable_x64(True):
        values = np.asarray(jax.vmap(log_p)(points), dtype=float)
    energy = np.asarray(target.energy(points), dtype=float)
    return float(np.max(np.abs(values + energy) / np.maximum(1.0, np.abs(energy))))


__all__ = ["JAX_HINT", "density_error", "jax_log_density"]
