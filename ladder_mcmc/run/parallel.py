"""Chains spread over a ``concurrent.futures.Executor`` (a process pool, or Dask's).

The chains are split into contiguous groups; group ``g`` runs
:func:`~ladder_mcmc.run.sampling.sample` on its chains, each chain with its own
random stream keyed by the run's seed and the chain's index in the whole run
(:mod:`ladder_mcmc.engine.streams`). Without warm-up a run's draws are therefore
those of the same run without an executor, whatever the number of groups,
the executor, or the order in which the groups finish. Warm-up adapts on each
group's chains.

A process pool or a cluster receives the kernel pickled: a kernel that does not pickle
is refused with what works (a thread pool); a JAX model (``from_jax``) pickles as its
function, but a process pool that forks its workers deadlocks on JAX's threads, and is
refused before any work is sent.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from ladder_mcmc.diagnostics.gradient import targets_of
from ladder_mcmc.engine.backend import is_jax_target
from ladder_mcmc.engine.streams import ChainStreams, root_seed
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import LadderState
from ladder_mcmc.run.settings import Parallel
from ladder_mcmc.run.trace import Trace


def group_bounds(n_chains: int, n_groups: int) -> np.ndarray:
    """Where each of ``n_groups`` contiguous groups of chains starts, and the end."""
    if n_groups > n_chains:
        raise ValueError(f"groups={n_groups} exceeds the number of chains ({n_chains})")
    return np.linspace(0, n_chains, n_groups + 1).astype(int)


def split_chains(init: Any, n_groups: int) -> list[Any]:
    """Contiguous groups of chains (sizes differ by at most one)."""
    n = batch.n_chains(init.state if isinstance(init, LadderState) else init)
    bounds = group_bounds(n, n_groups)
    groups = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        idx = np.arange(lo, hi)
        if isinstance(init, LadderState):
            carry = None if init.carry is None else batch.take(init.carry, idx)
            groups.append(
                LadderState(
                    batch.take(init.state, idx), init.direction[idx], init.log_density[idx], carry
                )
            )
        else:
            groups.append(batch.take(init, idx))
    return groups


def grouped_description(descriptions: list[dict]) -> dict:
    """One description for groups' kernels: theirs if all equal, else the entries all
    share and, under ``"groups"``, each group's description."""
    first = descriptions[0]
    if all(d == first for d in descriptions[1:]):
        return first
    shared = {k: v for k, v in first.items() if all(k in d and d[k] == v for d in descriptions)}
    return {**shared, "groups": list(descriptions)}


def concatenate_traces(traces: list[Trace]) -> Trace:
    """One trace from traces of disjoint groups of chains (chain axis = 1).

    ``warmup``: the group's :class:`~ladder_mcmc.hamiltonian.warmup.result.WarmupResult` for one
    group, a :class:`~ladder_mcmc.hamiltonian.warmup.result.GroupedWarmup` for several (None
    unless every group finished its warm-up); ``kernel``: :func:`grouped_description`;
    ``cost`` per chain if the groups' differ (warm-up with a ``trajectory_length``).
    """
    first = traces[0]

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(t, name) for t in traces], axis=1)

    states = batch.tree_map(lambda *xs: np.concatenate(xs, axis=1), *[t.states for t in traces])
    finals = [t.final for t in traces]
    final = None
    if all(f is not None for f in finals):
        carry = None
        if finals[0].carry is not None:
            carry = batch.tree_map(lambda *xs: np.concatenate(xs), *[f.carry for f in finals])
        final = LadderState(
            batch.tree_map(lambda *xs: np.concatenate(xs), *[f.state for f in finals]),
            np.concatenate([f.direction for f in finals]),
            np.concatenate([f.log_density for f in finals]),
            carry,
        )
    cost: Any = first.cost  # per chain if the groups adapted different step counts
    if any(t.cost != first.cost for t in traces):
        cost = np.concatenate([np.full(t.n_chains, t.cost, dtype=np.int64) for t in traces])
    step_cost = None  # per step (maps with cost_of): every group has it, being one kernel
    if all(t.step_cost is not None for t in traces):
        step_cost = cat("step_cost")
    step_overhead = None  # likewise (a refresh or refreshed density that costs gradients)
    if all(t.step_overhead is not None for t in traces):
        step_overhead = cat("step_overhead")
    warm = [t.warmup for t in traces]
    warmup = None
    if not any(w is None for w in warm):
        warmup = warm[0] if len(warm) == 1 else warm[0].grouped(tuple(warm[1:]))
    return Trace(
        states=states,
        rungs=cat("rungs"),
        n_moves=cat("n_moves"),
        non_finite_rungs=cat("non_finite_rungs"),
        cost=cost,
        max_rung=first.max_rung,
        thin=first.thin,
        final=final,
        interrupted=any(t.interrupted for t in traces),
        wall_time=max(t.wall_time for t in traces),
        kernel=grouped_description([t.kernel for t in traces]),
        warmup=warmup,
        step_cost=step_cost,
        parameters=first.parameters,
        step_overhead=step_overhead,
        backend=first.backend,
        step_stats={
            name: np.concatenate([t.step_stats[name] for t in traces], axis=1)
            for name in first.step_stats
            if all(name in t.step_stats for t in traces)
        },
    )


def sample_on_executor(
    parallel: Parallel,
    run_group: Callable[..., Trace],
    kernel: Any,
    init: Any,
    n_steps: int,
    seed: int | np.random.SeedSequence | None,
    **options: Any,
) -> Trace:
    """Run ``run_group`` (:func:`~ladder_mcmc.run.sampling.sample`, a module-level function)
    on each of ``parallel.groups`` groups of chains through ``parallel.executor``; one
    trace of all the chains.

    The kernel and the initial values must pickle for a process pool or a cluster
    (module-level target classes or functions, not lambdas; a ``from_jax`` model
    pickles as its function).

    Raises
    ------
    ValueError
        A kernel or initial values that cannot be pickled for the executor's workers;
        a JAX model on a process pool that forks its workers (they would deadlock).
    """
    refuse_forking_pool(parallel.executor, kernel)
    root = root_seed(seed)
    n_chains = batch.n_chains(init.state if isinstance(init, LadderState) else init)
    groups = split_chains(init, parallel.groups)
    bounds = group_bounds(n_chains, parallel.groups)
    options = {**options, "progress": False}
    try:
        futures = [
            parallel.executor.submit(
                run_group, kernel, g, n_steps, ChainStreams(root, np.arange(lo, hi)), **options
            )
            for g, lo, hi in zip(groups, bounds[:-1], bounds[1:], strict=True)
        ]
        traces = [f.result() for f in futures]
    except (pickle.PicklingError, AttributeError, TypeError) as err:
        if not isinstance(err, pickle.PicklingError) and "pickle" not in str(err).lower():
            raise  # the run's own error, raised by a worker
        lines = str(err).strip().splitlines()
        raise ValueError(
            f"executor={type(parallel.executor).__name__}: the kernel or the initial values "
            f"could not be sent to its workers ({type(err).__name__}: "
            f"{lines[0] if lines else ''}); a thread pool (ThreadPoolExecutor) runs any "
            "kernel, a Dask cluster one that cloudpickle sends (lambdas too), a process "
            "pool one that pickles (module-level targets and functions, a from_jax model)"
        ) from err
    return concatenate_traces(traces)


def refuse_forking_pool(executor: Any, kernel: Any) -> None:
    """A ``ValueError`` for a JAX model on a process pool that starts its workers by
    forking: a forked copy of a process running JAX's threads deadlocks."""
    # the pool's start method: no public attribute holds it (None for other executors)
    context = getattr(executor, "_mp_context", None)
    method = getattr(context, "get_start_method", lambda: None)()
    if method == "fork" and any(is_jax_target(t) for t in targets_of(kernel)):
        raise ValueError(
            f"executor={type(executor).__name__} forks its workers (start method 'fork'), "
            "and a forked JAX model deadlocks: start it with mp_context="
            "multiprocessing.get_context('spawn') (or 'forkserver'), or use a thread pool "
            "or a Dask cluster"
        )
