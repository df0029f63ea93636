"""JAX models: a log density of one point, vmapped and jitted over the chains.

:func:`from_jax` takes ``log_density(x) -> scalar`` for one point ``x`` (a 1-d ``jnp``
array) and builds ``jit(vmap(value_and_grad(-log_density)))``: one dispatch per
batched call of the ladder, in float64 whatever JAX's global setting (the function is
traced and run under ``jax.enable_x64(True)``). Needs ``pip install 'ladder_mcmc[jax]'``.

Such a target pickles (for a process pool or a Dask cluster): it is sent as the user's
function, by cloudpickle (lambdas and local functions too), and compiled again where it
is unpickled.
"""

from __future__ import annotations

import pickle
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
    potential = JaxPotential(fn, sign, promote=out.dtype != jnp.float64)

    return CompiledTarget(
        dim, JaxEvaluate(potential), space, "jax", jax_potential=potential, precision=precision
    )


class JaxPotential:
    """The energy of one point, ``sign * fn(x)`` (promoted to float64 if ``promote``).

    It pickles as ``fn`` itself, by cloudpickle: a lambda or a local function reaches
    another process too (the module of a function defined in one must be importable
    there).
    """

    def __init__(self, fn: Callable, sign: float, promote: bool = False) -> None:
        self.fn, self.sign, self.promote = fn, sign, promote

    def __call__(self, x: Any) -> Any:
        if self.promote:
            import jax.numpy as jnp

            return self.sign * jnp.asarray(self.fn(x), dtype=jnp.float64)
        return self.sign * self.fn(x)

    def __reduce__(self) -> tuple:
        return _unpickle_potential, (_shipped(self.fn), self.sign, self.promote)


def _unpickle_potential(blob: bytes, sign: float, promote: bool) -> JaxPotential:
    return JaxPotential(pickle.loads(blob), sign, promote)


def _shipped(fn: Callable) -> bytes:
    """``fn`` pickled by cloudpickle, or a ``PicklingError`` that says what works."""
    what = f"the JAX model's function {getattr(fn, '__qualname__', repr(fn))}"
    try:
        import cloudpickle
    except ImportError as err:
        raise pickle.PicklingError(
            f"{what} is sent to another process by cloudpickle: pip install 'ladder_mcmc[jax]'"
        ) from err
    try:
        return cloudpickle.dumps(fn)
    except Exception as err:  # noqa: BLE001 - whatever the function holds that cannot pickle
        lines = str(err).strip().splitlines()
        raise pickle.PicklingError(
            f"{what} cannot be sent to another process, even by cloudpickle "
            f"({type(err).__name__}: {lines[0] if lines else ''}): run it on a thread pool "
            "(ThreadPoolExecutor) or without an executor"
        ) from err


class JaxEvaluate:
    """``x (n, dim) -> (E, ∂E/∂x)`` as numpy arrays: ``potential`` differentiated,
    batched over the rows and jitted (compiled at the first call of each batch size).

    It pickles as its :class:`JaxPotential`; the compiled function is built again where
    it is unpickled.
    """

    def __init__(self, potential: JaxPotential) -> None:
        import jax

        self.potential = potential
        with jax.enable_x64(True):
            self.batched = jax.jit(jax.vmap(jax.value_and_grad(potential)))
        self.config = jax.config
        # JAX arrays to numpy: np.asarray copies through a path whose cost grows with
        # the batch, np.from_dlpack shares the CPU buffer at a constant cost; measured,
        # the second is cheaper from 32 rows on (read-only views either way)
        self.shared = np.from_dlpack if jax.default_backend() == "cpu" else np.asarray

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.config.jax_enable_x64:  # set globally: no context to enter
            e, g = self.batched(x)
        else:
            import jax

            with jax.enable_x64(True):
                e, g = self.batched(x)
        if x.shape[0] >= _SHARE_FROM_ROWS:
            return self.shared(e), self.shared(g)
        return np.asarray(e), np.asarray(g)

    def __reduce__(self) -> tuple:
        return JaxEvaluate, (self.potential,)
