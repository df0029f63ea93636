"""NUTS peers for ``benchmarks/tuning_free.py`` and ``benchmarks/funnel.py``: JAX
targets and NumPyro runners (fixed draws: :func:`run_nuts`; a gradient budget:
:func:`run_nuts_budget`).

The JAX potentials are written term for term after the package's energies
(``ladder_mcmc/models/targets.py``; both eight schools through the package's own
``posteriors.jax_log_density``):
NumPyro's ``potential_fn`` is ``E(x) = -log p(x)``, so the JAX log density is minus the
package energy; :func:`check_potentials` verifies it at random points before any run.

:func:`run_nuts` runs NumPyro's NUTS with its defaults (target acceptance 0.8, diagonal
mass matrix, 1000 warm-up steps by Stan's windows) in float64. Gradient evaluations are
the trajectories' leapfrog steps (``num_steps`` of the extra fields), warm-up and sampling
apart; the few of NumPyro's ``find_reasonable_step_size`` at window starts are not
counted. NumPyro 0.22 recompiles its sampling loop at every ``warmup`` and ``run`` call
(and, with ``chain_method="sequential"``, for every chain): the jitted loop takes the body
as a static argument, wrapped anew each call. So compile time is not left out by reusing
a compiled function but measured with JAX's monitoring events (tracing, lowering and XLA
compilation, or loading from JAX's persistent compilation cache, which :func:`versions`
switches on in ``$LADDER_MCMC_JAX_CACHE`` or ``ladder_mcmc_jax_cache`` in the system's
temporary directory, so that the same loop is compiled once) and subtracted from the wall
time.

Needs ``pip install -e ".[peers]"`` (NumPyro and JAX at the measured versions; not a
dependency of the package or of its tests).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ladder_mcmc.models import IllConditionedGaussian, NealsFunnel, RoughWell
from ladder_mcmc.models.posteriors import (
    EightSchoolsCentered,
    EightSchoolsNoncentered,
    jax_log_density,
)

_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
_compile_seconds = [0.0]
_compilations = [0]  # XLA compilations (or loads from the persistent cache)
_listening = [False]
_runs = [0]
CLEAR_EVERY = 6  # runs between clearings of JAX's in-memory caches


def versions() -> str | None:
    """``"NumPyro x, JAX y"`` if both import, else None; switches on float64, the
    persistent compilation cache and the listener that sums compile seconds."""
    try:
        import jax
        import numpyro
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    cache = (
        os.environ.get("LADDER_MCMC_JAX_CACHE")
        or Path(tempfile.gettempdir()) / "ladder_mcmc_jax_cache"
    )
    jax.config.update("jax_compilation_cache_dir", str(cache))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    if not _listening[0]:

        def listener(event: str, duration: float, **_kwargs) -> None:
            if event in _COMPILE_EVENTS:
                _compile_seconds[0] += duration
            if event == _COMPILE_EVENTS[-1]:
                _compilations[0] += 1

        jax.monitoring.register_event_duration_secs_listener(listener)
        _listening[0] = True
    return f"NumPyro {numpyro.__version__}, JAX {jax.__version__}"


def compile_totals() -> tuple[float, int]:
    """Seconds spent compiling and the number of XLA compilations, since :func:`versions`
    started listening (take differences around a run)."""
    return _compile_seconds[0], _compilations[0]


def _count_run(jax) -> None:
    """Count a finished run, and clear JAX's in-memory caches every :data:`CLEAR_EVERY`
    runs: every run leaves new compiled loops there; kept, their code sections exhaust the
    process's memory maps after some tens of runs (LLVM "Cannot allocate memory"), and
    clearing after each run would re-trace everything."""
    _runs[0] += 1
    if _runs[0] % CLEAR_EVERY == 0:
        jax.clear_caches()


def potential(target):
    """The JAX potential ``x (dim,) -> E(x)`` of a package target (the NUTS peers)."""
    import jax.numpy as jnp

    if isinstance(target, IllConditionedGaussian):
        prec = jnp.asarray(target.precisions)
        return lambda x: 0.5 * jnp.sum(x * (x * prec))
    if isinstance(target, RoughWell):
        k, s1 = np.pi / target.sigma2, target.sigma1
        return lambda x: jnp.sum(x * x) / (2 * s1**2) + jnp.sum(jnp.cos(k * x))
    if isinstance(target, (EightSchoolsNoncentered, EightSchoolsCentered)):
        log_p = jax_log_density(target)  # term for term after the numpy energy
        return lambda x: -log_p(x)
    if isinstance(target, NealsFunnel):
        n, s2 = target.dim - 1, target.scale**2
        return lambda x: (
            x[0] ** 2 / (2 * s2) + 0.5 * n * x[0] + 0.5 * jnp.exp(-x[0]) * jnp.sum(x[1:] ** 2)
        )
    raise ValueError(f"no JAX peer for target {target!r}")


def check_potentials(targets: dict, seed: int = 0, n: int = 6) -> dict[str, float]:
    """Max relative |log p_JAX(x) + E(x)| over ``n`` random points per target, which must
    be below 1e-12 (``ValueError`` otherwise). Points: the initial box (-2, 2) scaled by
    the target's standard deviations where it has them, so every term is exercised."""
    import jax

    rng = np.random.default_rng(seed)
    out = {}
    for name, target in targets.items():
        scale = np.sqrt(getattr(target, "variances", np.ones(target.dim)))
        if isinstance(target, RoughWell):
            scale = np.full(target.dim, target.sigma1)
        x = rng.uniform(-2, 2, size=(n, target.dim)) * scale
        log_p = -np.asarray(jax.vmap(potential(target))(x))
        e = np.asarray(target.energy(x))
        err = float(np.max(np.abs(log_p + e) / np.maximum(1.0, np.abs(e))))
        if not err < 1e-12:
            raise ValueError(f"{name}: JAX log density is not -energy (rel. error {err:.3g})")
        out[name] = err
    return out


def run_nuts(
    target,
    init: np.ndarray,
    seed: int,
    *,
    n_warmup: int,
    n_draws: int,
    chain_method: str,
    potential_fn=None,
) -> dict:
    """One NumPyro NUTS run (defaults, float64) from ``init`` (chains, dim).

    The potential is :func:`potential` of ``target``, or ``potential_fn`` (``x (dim,) ->
    E(x)`` in ``jax.numpy``; ``target`` is then not used).

    Returns the draws ``positions`` (draws, chains, dim), gradient evaluations summed
    over chains (``grads`` in sampling, ``warmup_grads``), ``wall`` = warm-up + sampling
    seconds with compile time subtracted (``compile`` = the seconds subtracted), the
    adapted step size (median over chains), the mean number of leapfrog steps per
    sampling iteration and ``compilations``, the XLA compilations during the run.
    """
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(
        NUTS(potential_fn=potential(target) if potential_fn is None else potential_fn),
        num_warmup=n_warmup,
        num_samples=n_draws,
        num_chains=init.shape[0],
        chain_method=chain_method,
        progress_bar=False,
    )
    k_warm, k_draw = jax.random.split(jax.random.PRNGKey(seed))
    compiled, compilations = _compile_seconds[0], _compilations[0]
    start = time.perf_counter()
    mcmc.warmup(
        k_warm, init_params=jnp.asarray(init), extra_fields=("num_steps",), collect_warmup=True
    )
    warm_steps = np.asarray(mcmc.get_extra_fields()["num_steps"])
    mcmc.run(k_draw, extra_fields=("num_steps",))
    draws = np.asarray(mcmc.get_samples(group_by_chain=True))
    steps = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["num_steps"])
    wall = time.perf_counter() - start
    compile_s = _compile_seconds[0] - compiled
    step_size = np.asarray(mcmc.last_state.adapt_state.step_size)
    _count_run(jax)
    return {
        "positions": np.swapaxes(draws, 0, 1),
        "grads": float(steps.sum()),
        "warmup_grads": float(warm_steps.sum()),
        "wall": wall - compile_s,
        "compile": compile_s,
        "step_size": float(np.median(step_size)),
        "mean_steps": float(steps.mean()),
        "compilations": _compilations[0] - compilations,
    }


def run_nuts_budget(
    potential_fn, init: np.ndarray, seed: int, *, budget: float, n_warmup: int = 1000
) -> dict:
    """NumPyro NUTS (defaults, float64, ``chain_method="vectorized"``) from ``init``
    (chains, dim) until about ``budget`` gradient evaluations, warm-up included.

    After the warm-up, draws come in chunks that continue the chain from its last state
    (NumPyro's ``post_warmup_state``): a first chunk of a tenth of what the warm-up's
    last 50 iterations' cost per draw leaves room for, then most of the rest at the cost
    per draw measured so far, then a little more than the rest (:func:`draws_for`),
    and the draws are cut where the budget ends (:func:`within_budget`). Returns the draws
    ``positions`` (draws, chains, dim), ``grads`` (sampling) and ``warmup_grads`` summed
    over chains, ``divergences`` (sampling iterations whose trajectory diverged, summed
    over chains), ``wall`` (warm-up + sampling, compile time subtracted), ``compile``,
    the adapted ``step_size`` (median over chains) and ``mean_steps`` per draw.
    """
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    chains = init.shape[0]
    mcmc = MCMC(
        NUTS(potential_fn=potential_fn),
        num_warmup=n_warmup,
        num_samples=1,
        num_chains=chains,
        chain_method="vectorized",
        progress_bar=False,
    )
    keys = jax.random.split(jax.random.PRNGKey(seed), 1 + CHUNKS)
    compiled = _compile_seconds[0]
    start = time.perf_counter()
    mcmc.warmup(
        keys[0], init_params=jnp.asarray(init), extra_fields=("num_steps",), collect_warmup=True
    )
    warm_steps = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["num_steps"])
    warm = float(warm_steps.sum())
    draws, steps, diverging = [], [], []
    for chunk, key in enumerate(keys[1:]):
        done = float(sum(s.sum() for s in steps))
        n_done = sum(s.shape[1] for s in steps)
        rate = done / n_done if n_done else float(warm_steps[:, -50:].sum()) / min(50, n_warmup)
        n = draws_for(budget - warm - done, rate, chunk=chunk)
        if n == 0:
            break
        mcmc.num_samples = n
        mcmc.post_warmup_state = mcmc.last_state
        mcmc.run(key, extra_fields=("num_steps", "diverging"))
        draws.append(np.asarray(mcmc.get_samples(group_by_chain=True)))
        extra = mcmc.get_extra_fields(group_by_chain=True)
        steps.append(np.asarray(extra["num_steps"]))
        diverging.append(np.asarray(extra["diverging"]))
    wall = time.perf_counter() - start
    compile_s = _compile_seconds[0] - compiled
    step_size = np.asarray(mcmc.last_state.adapt_state.step_size)
    _count_run(jax)
    steps_all = np.concatenate(steps, axis=1)
    keep = within_budget(steps_all.sum(axis=0), budget - warm)
    steps_all = steps_all[:, :keep]
    return {
        "positions": np.swapaxes(np.concatenate(draws, axis=1), 0, 1)[:keep],
        "grads": float(steps_all.sum()),
        "warmup_grads": warm,
        "divergences": int(np.concatenate(diverging, axis=1)[:, :keep].sum()),
        "wall": wall - compile_s,
        "compile": compile_s,
        "step_size": float(np.median(step_size)),
        "mean_steps": float(steps_all.mean()),
    }


#: chunks of draws after the warm-up in a budgeted run
CHUNKS = 3


def draws_for(left: float, rate: float, *, chunk: int, min_draws: int = 10) -> int:
    """Draws (per chain) of chunk ``chunk`` (0, 1, …, ``CHUNKS − 1``) of a budgeted run:
    ``left`` gradients at ``rate`` per draw (all chains). The first takes a tenth (the
    rate is a guess), at least ``min_draws``; the middle ones nine tenths of what is
    left; the last 10 % more than is left, cut back by :func:`within_budget`; none
    once less than one draw is left."""
    if rate <= 0 or not np.isfinite(rate):
        raise ValueError(f"cost per draw must be positive, got {rate!r}")
    n = left / rate
    if chunk == 0:
        return max(min_draws, int(0.1 * n))
    if n < 1:
        return 0
    return int(0.9 * n) if chunk < CHUNKS - 1 else int(1.1 * n) + 1


def within_budget(per_draw: np.ndarray, left: float) -> int:
    """How many of the first draws fit in ``left`` gradients, ``per_draw`` (draws,) the
    gradients of each (all chains): the chains stopped there, at least one draw."""
    return max(1, int(np.searchsorted(np.cumsum(per_draw), left, side="right")))
