"""NumPyro's NUTS on a suite model, beside the package's kernel.

:func:`run_nuts` runs ``numpyro.infer.NUTS`` on the model's JAX log density
(:mod:`ladder_mcmc.bench.jax_densities`) with NumPyro's defaults — target acceptance
0.8, a diagonal mass matrix adapted in Stan's windows — in float64, the same warm-up and
draws as the package's run, from the same initial points, chains vectorised. Gradient
evaluations are the trajectories' leapfrog steps (``num_steps``), warm-up apart (the few
of NumPyro's ``find_reasonable_step_size`` are not counted); the wall time of warm-up and
sampling leaves out compile time, measured by JAX's monitoring events
(:mod:`ladder_mcmc.bench.compile_time`): NumPyro 0.22 recompiles its loop at every call.
NumPyro is optional (``pip install 'ladder_mcmc[peers]'``): :func:`nuts_version` says
whether it imports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.bench.compile_time import CompileClock, listen
from ladder_mcmc.bench.runs import SamplerRun

NUTS_LABEL = "NUTS (NumPyro)"
"""The sampler's name in results."""

CLEAR_EVERY = 6
"""Runs between clearings of JAX's in-memory caches: each run leaves new compiled loops
there, and some tens of them exhaust the process's memory maps (LLVM "Cannot allocate
memory"; ``benchmarks/nuts_peers.py``)."""
_runs = [0]


@attrs.frozen
class NutsSettings:
    """NumPyro NUTS's settings in the suite.

    Attributes
    ----------
    target_accept : float in (0, 1)
        Target mean acceptance probability of the step-size adaptation (0.8, NumPyro's).
    dense_mass : bool
        A dense mass matrix (False: diagonal, NumPyro's default).
    chain_method : str
        NumPyro's ``chain_method`` (``"vectorized"``: all chains in one compiled loop).
    """

    target_accept: float = 0.8
    dense_mass: bool = False
    chain_method: str = "vectorized"


DEFAULT_NUTS = NutsSettings()
"""NumPyro's defaults."""


def nuts_version() -> str | None:
    """``"NumPyro x, JAX y"`` if both import, else None."""
    try:
        import jax
        import numpyro
    except ImportError:
        return None
    return f"NumPyro {numpyro.__version__}, JAX {jax.__version__}"


def run_nuts(
    log_density: Callable[[Any], Any],
    init: np.ndarray,
    *,
    warmup: int,
    draws: int,
    seed: np.random.SeedSequence,
    settings: NutsSettings = DEFAULT_NUTS,
) -> SamplerRun:
    """One NumPyro NUTS run on ``log_density`` (one point ``x (dim,) -> log p``) from
    ``init`` (chains, dim): ``warmup`` warm-up and ``draws`` kept iterations per chain,
    float64.

    Raises
    ------
    ImportError
        Without NumPyro or JAX.
    """
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    listen()
    key = int(seed.generate_state(1)[0])
    init = np.asarray(init, dtype=float)
    with jax.enable_x64(True):
        kernel = NUTS(
            potential_fn=lambda x: -log_density(x),
            target_accept_prob=settings.target_accept,
            dense_mass=settings.dense_mass,
        )
        mcmc = MCMC(
            kernel,
            num_warmup=warmup,
            num_samples=draws,
            num_chains=init.shape[0],
            chain_method=settings.chain_method,
            progress_bar=False,
        )
        k_warm, k_draw = jax.random.split(jax.random.PRNGKey(key))
        with CompileClock() as clock:
            warm_steps = 0.0
            if warmup:
                mcmc.warmup(
                    k_warm,
                    init_params=jnp.asarray(init),
                    extra_fields=("num_steps",),
                    collect_warmup=True,
                )
                warm_steps = float(np.sum(np.asarray(mcmc.get_extra_fields()["num_steps"])))
                mcmc.run(k_draw, extra_fields=("num_steps",))
            else:
                mcmc.run(k_draw, init_params=jnp.asarray(init), extra_fields=("num_steps",))
            positions = np.asarray(mcmc.get_samples(group_by_chain=True), dtype=float)
            steps = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["num_steps"])
        step_size = np.asarray(mcmc.last_state.adapt_state.step_size, dtype=float)
    _runs[0] += 1
    if _runs[0] % CLEAR_EVERY == 0:
        jax.clear_caches()
    return SamplerRun(
        positions=np.swapaxes(positions, 0, 1),
        grad_evals=float(np.sum(steps)),
        warmup_grad_evals=warm_steps,
        wall_time=clock.net,
        compile_time=clock.compile,
        step_size=float(np.median(step_size)),
        backend="jax",
    )


__all__ = ["DEFAULT_NUTS", "NUTS_LABEL", "NutsSettings", "nuts_version", "run_nuts"]
