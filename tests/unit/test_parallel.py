"""Chains through an executor: reproducible with the same seed and number of groups."""

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from ladder_mcmc import lahmc, sample
from ladder_mcmc.parallel import split_chains
from ladder_mcmc.targets import IllConditionedGaussian

TARGET = IllConditionedGaussian(2)
X0 = TARGET.sample(10, np.random.default_rng(0))
KERNEL = lahmc(TARGET, 1.0, 10, 0.1)


def test_process_pool_is_reproducible_and_equals_a_thread_pool():
    with ProcessPoolExecutor(2) as ex:
        a = sample(KERNEL, X0, 50, seed=5, executor=ex, n_groups=3)
        b = sample(KERNEL, X0, 50, seed=5, executor=ex, n_groups=3)
    with ThreadPoolExecutor(2) as ex:
        c = sample(KERNEL, X0, 50, seed=5, executor=ex, n_groups=3)
    assert a.positions.shape == (50, 10, 2)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.positions, c.positions)
    np.testing.assert_array_equal(a.final.state.x, a.positions[-1])
    # group g equals a plain run of its chains with the g-th spawned seed
    assert [len(g) for g in split_chains(X0, 3)] == [3, 3, 4]
    child = np.random.SeedSequence(5).spawn(3)[1]
    alone = sample(KERNEL, X0[3:6], 50, seed=child)
    np.testing.assert_array_equal(a.positions[:, 3:6], alone.positions)


def test_executor_argument_errors():
    with ThreadPoolExecutor(1) as ex:
        with pytest.raises(ValueError, match="n_groups=11"):
            sample(KERNEL, X0, 5, seed=1, executor=ex, n_groups=11)
        with pytest.raises(ValueError, match="Generator"):
            sample(KERNEL, X0, 5, seed=np.random.default_rng(1), executor=ex)


def test_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            a = sample(KERNEL, X0, 30, seed=5, executor=client.get_executor(), n_groups=2)
    with ThreadPoolExecutor(2) as ex:
        b = sample(KERNEL, X0, 30, seed=5, executor=ex, n_groups=2)
    np.testing.assert_array_equal(a.positions, b.positions)
