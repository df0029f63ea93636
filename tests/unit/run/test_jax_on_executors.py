"""A JAX model (``from_jax``) through executors whose workers receive it pickled: it is
sent as its function (by cloudpickle) and compiled again there, with the in-process
run's draws; what cannot be sent is refused in one line that says what works."""

import multiprocessing
import pickle
import threading
import warnings
from concurrent.futures import Executor, Future, ProcessPoolExecutor

import numpy as np
import pytest

from ladder_mcmc import Parallel, lahmc, sample
from ladder_mcmc.models import FunctionTarget

jax = pytest.importorskip("jax")
jnp = jax.numpy
from ladder_mcmc.models import from_jax  # noqa: E402 - after the skip without JAX

SCALES = jnp.asarray([1.0, 3.0])
X0 = np.random.default_rng(0).normal(size=(4, 2))


def jax_target():
    """A target from a lambda over a closed-over array: what plain pickle cannot send."""
    return from_jax(lambda x: -0.5 * jnp.sum((x / SCALES) ** 2), dim=2, parameters=["a", "b"])


def kernel_of(target):
    return lahmc(target, step_size=0.5, n_leapfrog=5, beta=0.1, inverse_mass=np.ones(2))


def run(kernel, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # short runs: R-hat, ESS
        return sample(kernel, X0, 20, seed=3, checks=False, **options)


def assert_same_draws(a, b):
    """Equal to rounding (1e-12); in the runs recorded with this test, bit for bit."""
    assert a.backend == b.backend
    np.testing.assert_allclose(a.positions, b.positions, rtol=0, atol=1e-12)


class PicklingExecutor(Executor):
    """Runs each call here, on a pickled copy of its function and arguments: what a
    process pool's worker receives, without starting a process."""

    def submit(self, fn, /, *args, **kwargs):
        fn, args, kwargs = pickle.loads(pickle.dumps((fn, args, kwargs)))
        future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_a_jax_target_pickles_and_computes_the_same_energy_and_gradient():
    target = jax_target()
    copy = pickle.loads(pickle.dumps(target))
    assert copy is not target and copy.evaluate.batched is not target.evaluate.batched
    assert copy.jax_potential is copy.evaluate.potential  # sent once, shared again
    assert copy.parameters.labels == ("a", "b") and copy.precision == target.precision
    x = np.random.default_rng(1).normal(size=(5, 2))
    for got, want in zip(copy.energy_and_grad(x), target.energy_and_grad(x), strict=True):
        np.testing.assert_array_equal(got, want)
    # the energy convention and a float32 model (promoted) too
    by_energy = pickle.loads(pickle.dumps(from_jax(energy=lambda x: 0.5 * jnp.sum(x**2), dim=2)))
    np.testing.assert_allclose(by_energy.energy(x), 0.5 * np.sum(x**2, axis=1), rtol=1e-15)
    with pytest.warns(UserWarning, match="float32"):
        low = from_jax(lambda x: -0.5 * jnp.sum(x.astype(jnp.float32) ** 2), dim=2)
    low_copy = pickle.loads(pickle.dumps(low))
    assert low_copy.energy(x).dtype == np.float64
    np.testing.assert_array_equal(low_copy.energy(x), low.energy(x))


def test_a_function_that_cannot_be_sent_is_refused_saying_what_works():
    lock = threading.Lock()

    def log_density(x):
        assert lock is not None  # holds a lock: not even cloudpickle can send it
        return -0.5 * jnp.sum(x**2)

    target = from_jax(log_density, dim=2)
    with pytest.raises(pickle.PicklingError, match="log_density cannot be sent.*thread pool"):
        pickle.dumps(target)
    with pytest.raises(ValueError, match="executor=PicklingExecutor: .*thread pool"):
        run(kernel_of(target), executor=Parallel(PicklingExecutor(), groups=2))


def test_through_pickled_workers_a_jax_model_gives_the_in_process_draws():
    # on the host loop: each copy compiles its function alone, not the whole loop (the
    # compiled loop is run by the slow tests below)
    kernel = kernel_of(jax_target())
    alone = run(kernel, backend="numpy")
    grouped = run(kernel, backend="numpy", executor=Parallel(PicklingExecutor(), groups=2))
    assert_same_draws(grouped, alone)


def test_a_kernel_that_does_not_pickle_is_refused_in_one_line():
    target = FunctionTarget(lambda x: 0.5 * np.sum(x**2, axis=1), lambda x: x, dim=2)
    with pytest.raises(ValueError, match="could not be sent to its workers") as caught:
        run(kernel_of(target), executor=Parallel(PicklingExecutor(), groups=2))
    message = str(caught.value)
    assert "\n" not in message and "ThreadPoolExecutor" in message and "Dask" in message
    assert isinstance(caught.value.__cause__, (pickle.PicklingError, AttributeError))


def test_a_forking_process_pool_is_refused_for_a_jax_model_before_any_work():
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(2, mp_context=fork) as ex:
        with pytest.raises(ValueError, match="'fork'.*deadlocks.*spawn"):
            run(kernel_of(jax_target()), executor=Parallel(ex, groups=2))
        assert not ex._processes  # nothing was started


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_process_pool_runs_a_jax_model_with_the_in_process_draws(method):
    kernel = kernel_of(jax_target())
    alone = run(kernel)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context(method)) as ex:
        grouped = run(kernel, executor=Parallel(ex, groups=2))
    assert_same_draws(grouped, alone)


@pytest.mark.slow
def test_a_dask_cluster_of_processes_runs_a_jax_model_with_the_in_process_draws():
    distributed = pytest.importorskip("distributed")
    kernel = kernel_of(jax_target())
    alone = run(kernel)
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            grouped = run(kernel, executor=Parallel(client.get_executor(), groups=2))
    assert grouped.backend["name"] == "jax"
    assert_same_draws(grouped, alone)


@pytest.mark.slow
def test_a_pymc_model_goes_to_a_dask_cluster_and_is_refused_by_a_process_pool():
    """from_pymc builds on from_jax: cloudpickle (Dask) sends it whole; plain pickle (a
    process pool) cannot send its constraining transform, and says what works."""
    pm = pytest.importorskip("pymc")
    distributed = pytest.importorskip("distributed")
    from ladder_mcmc.models import from_pymc

    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        beta = pm.Normal("beta", 0.0, 1.0)
        pm.Normal("y", beta, sigma, observed=[0.5, 1.5])
    kernel = kernel_of(from_pymc(model))
    with pytest.raises(ValueError, match="from_pymc.<locals>.transform.*ThreadPoolExecutor"):
        run(kernel, executor=Parallel(PicklingExecutor(), groups=2))
    alone = run(kernel)
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            grouped = run(kernel, executor=Parallel(client.get_executor(), groups=2))
    assert_same_draws(grouped, alone)
