"""Chains through an executor: reproducible with the same seed and number of groups."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from ladder_mcmc import Parallel, Warmup, lahmc, sample
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.run.parallel import split_chains

TARGET = IllConditionedGaussian(2)
X0 = TARGET.sample(10, np.random.default_rng(0))
KERNEL = lahmc(TARGET, 1.0, 10, 0.1)


def test_process_pool_is_reproducible_and_equals_a_thread_pool():
    # workers forked from a fresh server: other tests may have started JAX's threads in
    # this process, and forking a multithreaded process can deadlock
    forkserver = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(2, mp_context=forkserver) as ex:
        a = sample(KERNEL, X0, 50, seed=5, executor=Parallel(ex, groups=3), warmup=0)
        b = sample(KERNEL, X0, 50, seed=5, executor=Parallel(ex, groups=3), warmup=0)
    with ThreadPoolExecutor(2) as ex:
        c = sample(KERNEL, X0, 50, seed=5, executor=Parallel(ex, groups=3), warmup=0)
    assert a.positions.shape == (50, 10, 2)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.positions, c.positions)
    np.testing.assert_array_equal(a.final.state.x, a.positions[-1])
    # each chain keeps its own stream: the groups change nothing
    assert [len(g) for g in split_chains(X0, 3)] == [3, 3, 4]
    alone = sample(KERNEL, X0, 50, seed=5, warmup=0)
    np.testing.assert_array_equal(a.positions, alone.positions)
    np.testing.assert_array_equal(a.rungs, alone.rungs)
    with ThreadPoolExecutor(2) as ex:
        d = sample(KERNEL, X0, 50, seed=5, executor=Parallel(ex, groups=2), warmup=0)
    np.testing.assert_array_equal(a.positions, d.positions)
    # group g alone: its chains' streams, keyed by their index in the whole run
    group = ChainStreams(np.random.SeedSequence(5), np.arange(3, 6))
    np.testing.assert_array_equal(
        a.positions[:, 3:6], sample(KERNEL, X0[3:6], 50, seed=group, warmup=0).positions
    )


def test_executor_argument_errors():
    with ThreadPoolExecutor(1) as ex:
        with pytest.raises(ValueError, match="groups=11"):
            sample(KERNEL, X0, 5, seed=1, executor=Parallel(ex, groups=11), warmup=0)
        with pytest.raises(ValueError, match="seed"):
            sample(KERNEL, X0, 5, seed=-1, executor=ex, warmup=0)
        with pytest.raises(ValueError, match="seed"):
            sample(KERNEL, X0, 5, seed="abc", executor=ex, warmup=0)


@pytest.mark.slow  # a cluster's start-up (6 s); the process pool above stays in the default run
def test_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            a = sample(
                KERNEL, X0, 30, seed=5, executor=Parallel(client.get_executor(), groups=2), warmup=0
            )
    with ThreadPoolExecutor(2) as ex:
        b = sample(KERNEL, X0, 30, seed=5, executor=Parallel(ex, groups=2), warmup=0)
    np.testing.assert_array_equal(a.positions, b.positions)


def test_warmup_in_groups_is_one_grouped_warmup():
    """Each group adapts its own kernel; the trace says so, per group, and summary works."""
    from ladder_mcmc.diagnostics import summary
    from ladder_mcmc.hamiltonian.warmup.result import GroupedWarmup, WarmupResult

    kernel = lahmc(TARGET, beta=0.1, length_jitter=0)  # each group adapts its own step
    options = dict(
        warmup=Warmup(40, trajectory_length=100.0)
    )  # so the groups' leapfrog counts differ
    with ThreadPoolExecutor(2) as ex:
        trace = sample(kernel, X0, 30, seed=5, executor=Parallel(ex, groups=2), **options)
        one = sample(kernel, X0, 30, seed=5, executor=Parallel(ex, groups=1), **options)
    # each group alone: its chains' streams, keyed by their index in the whole run
    groups = [np.arange(0, 5), np.arange(5, 10)]
    alone = [
        sample(kernel, x, 30, seed=ChainStreams(np.random.SeedSequence(5), ids), **options)
        for x, ids in zip(split_chains(X0, 2), groups, strict=True)
    ]
    assert isinstance(one.warmup, WarmupResult) and "groups" not in one.kernel
    warm = trace.warmup
    assert isinstance(warm, GroupedWarmup)
    assert [g.step_size for g in warm.groups] == [a.warmup.step_size for a in alone]
    np.testing.assert_array_equal(warm.step_size, [a.warmup.step_size for a in alone])
    np.testing.assert_array_equal(warm.n_leapfrog, [a.warmup.n_leapfrog for a in alone])
    assert warm.n_leapfrog[0] != warm.n_leapfrog[1]
    assert warm.inverse_mass.shape == (2, 2)
    np.testing.assert_array_equal(warm.first_stage_prob, [a.warmup.first_stage_prob for a in alone])
    assert warm.n_steps == 40
    np.testing.assert_array_equal(
        warm.grad_evals, np.concatenate([a.warmup.grad_evals for a in alone])
    )
    np.testing.assert_array_equal(warm.group_of_chain, [0] * 5 + [1] * 5)
    # the kernel: what the groups share, and each group's adapted description
    assert trace.kernel["groups"] == [a.kernel for a in alone]
    assert trace.kernel["map"] == "Leapfrog" and "step_size" not in trace.kernel
    # gradients counted with each group's own leapfrog count
    np.testing.assert_array_equal(trace.grad_evals, np.concatenate([a.grad_evals for a in alone]))
    s = summary(trace)
    assert s.warmup_grad_evals == np.mean(warm.grad_evals)
    assert s.grad_evals == np.mean(trace.grad_evals)
