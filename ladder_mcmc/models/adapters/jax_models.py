"""JAX models: a log density of one point, vmapped and jitted over the chains.

:func:`from_jax` takes ``log_density(x) -> scalar`` for one point ``x`` (a 1-d ``jnp``
array) and builds ``jit(vmap(value_and_grad(-log_density)))``: one dispatch per
batched call of the ladder, in float64 whatever JAX's global setting (the function is
traced and run under ``jax.enable_x64(True)``). Needs ``pip install 'ladder_mcmc[jax]'``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ladder_mcmc.models.adapters.compiled import CompiledTarget, import_optional, one_function
from ladder_mcmc.models.parameters import as_parameter_space
from ladder_mcmc.validation import positive_int

_SHARE_FROM_ROWS = 32  # batches from which the outputs are shared, not copied (below)


def from_jax(
    log_density: Callable | None = None,
    dim: int | None = None,
    *,
    energy: Callable | None = None,
    parameters: Any = None,
) -> CompiledTarget:
    """A target from a JAX function of one point.

    Parameters
    ----------
    log_density : callable
        ``x (dim,) -> log p(x)`` up to a constant, a scalar; written with ``jax.numpy``.
    dim : int
        Length of ``x``.
    energy : callable, keyword-only
        Instead of ``log_density``: ``x (dim,) -> E(x) = -log p(x)`` (NumPyro's
        ``potential_fn``). Exactly one of the two.
    parameters : ParameterSpace or sequence of str, optional
        Names (and shapes, and a constraining transform) for ``summary`` and
        ``to_inference_data``.

    Returns
    -------
    CompiledTarget
        ``energy_and_grad(x)`` for positions (chains, dim), in float64.

    Raises
    ------
    ValueError
        Neither or both of ``log_density`` and ``energy``; ``dim`` not a positive int;
        a function that does not return one floating-point scalar for a point of
        shape (dim,) (checked by tracing it once, before any sampling).

    Warns
    -----
    UserWarning
        A function that computes in lower precision than float64 (float32): its energy is
        promoted to float64, and ``target.precision`` records its rounding, which the
        gradient check allows for.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> t = from_jax(lambda x: -0.5 * jnp.sum(x**2), dim=3, parameters=["a", "b", "c"])
    >>> e, g = t.energy_and_grad(np.ones((2, 3)))
    >>> e, g[0]
    (array([1.5, 1.5]), array([1., 1., 1.]))
    """
    fn, sign = one_function(log_density, energy, "from_jax")
    dim = positive_int("dim", dim)
    space = as_parameter_space(parameters, dim)
    jax = import_optional("jax", "jax")
    jnp = jax.numpy

    def potential(x):
        return sign * fn(x)

    with jax.enable_x64(True):
        try:
            out = jax.eval_shape(fn, jax.ShapeDtypeStruct((dim,), jnp.float64))
        except Exception as err:  # noqa: BLE001 - any tracing error is the user's function
            raise ValueError(
                f"the function could not be traced on a point of shape ({dim},): {err}"
            ) from err
        if getattr(out, "shape", None) != () or not jnp.issubdtype(out.dtype, jnp.floating):
            raise ValueError(
                "the function must return one floating-point scalar for a point of shape "
                f"({dim},); it returned {out}"
            )
        precision = float(jnp.finfo(out.dtype).eps)
        if out.dtype != jnp.float64:
            # a model that computes in lower precision (e.g. TensorFlow Probability's JAX
            # substrate, float32 even under x64): sampled in float64, its energy promoted
            warnings.warn(
                f"the function returns {out.dtype} for a float64 point: its energy is "
                f"promoted to float64 (differences below {out.dtype}'s rounding, about "
                f"{precision:.0e} relative, are its noise; the gradient check allows for it)",
                UserWarning,
                stacklevel=2,
            )

            def potential(x):
                return sign * jnp.asarray(fn(x), dtype=jnp.float64)

        batched = jax.jit(jax.vmap(jax.value_and_grad(potential)))

    config = jax.config
    # JAX arrays to numpy: np.asarray copies through a path whose cost grows with the
    # batch, np.from_dlpack shares the CPU buffer at a constant cost; measured, the
    # second is cheaper from 32 rows on (read-only views either way)
    shared = np.from_dlpack if jax.default_backend() == "cpu" else np.asarray

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if config.jax_enable_x64:  # set globally: no context to enter
            e, g = batched(x)
        else:
            with jax.enable_x64(True):
                e, g = batched(x)
        if x.shape[0] >= _SHARE_FROM_ROWS:
            return shared(e), shared(g)
        return np.asarray(e), np.asarray(g)

    return CompiledTarget(dim, evaluate, space, "jax", jax_potential=potential, precision=precision)
