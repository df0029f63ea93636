"""PyMC models: the joint log density on PyMC's unconstrained space, compiled once by JAX.

:func:`from_pymc` takes a ``pymc.Model`` and returns a
:class:`~ladder_mcmc.models.adapters.compiled.CompiledTarget` whose position ``x`` is
the model's value variables (``model.value_vars``: ``tau_log__`` for a positive
``tau``, ...) flattened and concatenated in the model's order. Its energy is
``-model.logp()``, priors, likelihood and potentials with the Jacobians of PyMC's
transforms, converted to JAX by PyMC's own ``pymc.sampling.jax.get_jaxified_graph``
and batched by :func:`~ladder_mcmc.models.from_jax` (``jit(vmap(value_and_grad))`` in
float64). Draws are reported constrained: the target's
:class:`~ladder_mcmc.models.ParameterSpace` holds the model's free variables and
deterministics, named and shaped as PyMC names and shapes them.
Needs ``pip install 'ladder_mcmc[pymc]'``.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.models.adapters.compiled import CompiledTarget, padded_size
from ladder_mcmc.models.adapters.jax_models import from_jax, import_optional
from ladder_mcmc.models.parameters import ParameterSpace

_CHUNK = 4096
"""Most points the constraining transform evaluates per compiled call."""


def from_pymc(model: Any) -> CompiledTarget:
    """A target from a PyMC model: its log density on the unconstrained space.

    Parameters
    ----------
    model : pymc.Model
        A model with continuous free variables (observed data, deterministics and
        potentials as you like).

    Returns
    -------
    CompiledTarget
        ``energy_and_grad(x)`` for positions (chains, dim), ``E = -model.logp()`` (with
        the Jacobians of the transforms), ``dim`` the total size of the value variables.
        Its ``parameters`` give the draws as PyMC reports them: every free variable on
        its constrained scale and every deterministic, in the order the model defines
        them, with their shapes and 0-based labels (``theta[0]``), for ``summary`` and
        ``to_inference_data``. Its ``centre`` is PyMC's initial point
        (``model.initial_point()``), so ``target.initial_points(chains, rng, radius=1)``
        draws starting points as ``pymc.sample`` does (its default jitter is
        uniform(-1, 1) on the unconstrained space about that point).

    Raises
    ------
    ValueError
        Before any sampling: ``model`` is not a ``pymc.Model``; it has no free
        variables; it has discrete free variables (named: gradient-based kernels move
        continuous variables only — marginalise them out or give them as data); or its
        graph could not be converted to JAX.
    ImportError
        Without PyMC (or JAX): ``pip install 'ladder_mcmc[pymc]'``.

    Notes
    -----
    The graph is compiled once, when ``from_pymc`` is called: data in ``pm.Data``
    containers are read then and fixed (after ``pm.set_data``, call ``from_pymc``
    again). The model is evaluated in the precision it is built in (``float64``, PyMC's
    default ``floatX``).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> with pm.Model() as model:
    ...     sigma = pm.HalfNormal("sigma", 1.0)
    ...     beta = pm.Normal("beta", 0.0, 1.0, shape=2)
    ...     scale = pm.Deterministic("scale", 2.0 * sigma)
    ...     y = pm.Normal("y", beta.sum(), sigma, observed=[0.5, 1.5])
    >>> target = from_pymc(model)
    >>> target.dim, target.parameters.labels
    (3, ('sigma', 'beta[0]', 'beta[1]', 'scale'))
    >>> x = np.zeros((2, 3))  # log sigma = 0, beta = 0
    >>> e, g = target.energy_and_grad(x)
    >>> bool(np.allclose(e, -model.compile_logp()(model.initial_point())))
    True
    >>> target.parameters.constrain(x)[0]
    array([1., 0., 0., 2.])
    """
    pm = import_optional("pymc", "pymc")
    if not isinstance(model, pm.Model):
        raise ValueError(f"from_pymc takes a pymc.Model, got {type(model).__name__}: {model!r}")
    discrete = [model.values_to_rvs[v].name for v in model.discrete_value_vars]
    if discrete:
        raise ValueError(
            f"the model has discrete free variables {discrete}: gradient-based kernels move "
            "continuous variables only (marginalise them out, or make them observed data)"
        )
    value_vars = list(model.value_vars)
    if not value_vars:
        raise ValueError("the model has no free variables: there is nothing to sample")
    jax = import_optional("jax", "pymc")
    jnp = jax.numpy
    from pymc.sampling.jax import get_jaxified_graph

    point = model.initial_point()
    inits = [np.asarray(point[v.name], dtype=float) for v in value_vars]
    shapes = [x.shape for x in inits]
    dtypes = [v.dtype for v in value_vars]
    ends = np.cumsum([x.size for x in inits]).tolist()
    dim = ends[-1]

    def unflatten(x):
        """One flat point (dim,) as the value variables, each of its shape and dtype."""
        return [
            x[end - math.prod(shape) : end].reshape(shape).astype(dtype)
            for end, shape, dtype in zip(ends, shapes, dtypes, strict=True)
        ]

    # free variables, constrained, and deterministics, in the order the model made them
    wanted = set(model.free_RVs) | set(model.deterministics)
    reported = [v for v in model.named_vars.values() if v in wanted]
    try:
        logp_graph = get_jaxified_graph(inputs=value_vars, outputs=[model.logp()])
        values_graph = get_jaxified_graph(
            inputs=value_vars, outputs=model.replace_rvs_by_values(reported)
        )
    except Exception as err:  # noqa: BLE001 - PyTensor's conversion errors vary by op
        raise ValueError(f"the model's graph could not be converted to JAX: {err}") from err

    def log_density(x):
        return logp_graph(*unflatten(x))[0]

    def constrained(x):
        values = values_graph(*unflatten(x))
        return jnp.concatenate([jnp.ravel(v).astype(jnp.float64) for v in values])

    with jax.enable_x64(True):
        out = jax.eval_shape(
            lambda x: values_graph(*unflatten(x)), jax.ShapeDtypeStruct((dim,), jnp.float64)
        )
        batched = jax.jit(jax.vmap(constrained))
    variables = [(v.name, tuple(o.shape)) for v, o in zip(reported, out, strict=True)]
    size = sum(math.prod(shape) for _, shape in variables)

    def transform(x: np.ndarray) -> np.ndarray:
        """Points (n, dim) to the reported values (n, size), in chunks of padded size."""
        x = np.asarray(x, dtype=float)
        blocks = []
        with jax.enable_x64(True):
            for start in range(0, x.shape[0], _CHUNK):
                block = x[start : start + _CHUNK]
                n = block.shape[0]
                pad = np.broadcast_to(block[-1:], (padded_size(n) - n, dim))
                blocks.append(np.asarray(batched(np.concatenate([block, pad])))[:n])
        return np.concatenate(blocks) if blocks else np.empty((0, size))

    space = ParameterSpace(dim, variables, transform)
    target = from_jax(log_density, dim, parameters=space)
    return attrs.evolve(target, backend="pymc", centre=np.concatenate([x.ravel() for x in inits]))
