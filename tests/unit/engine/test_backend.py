"""The backend choice and the driver contract: one place chooses, and says why.

* ``choose_backend`` (through ``sample``): a JAX target whose parts all trace runs on
  JAX; a numpy target on numpy, with the reason; ``backend="jax"`` with a part that does
  not trace is refused naming the part; the automatic choice falls back to numpy with a
  ``BackendWarning`` naming it. ``trace.backend`` records the choice.
* ``driver_for`` is the one function that picks a loop from the schedule and backend,
  ``sample`` calls it, and every loop has the ``Driver`` signature.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

import attrs
import numpy as np
import pytest

from ladder_mcmc import (
    Checkpoint,
    DirectionRefresh,
    FunctionTarget,
    Ladder,
    Leapfrog,
    LookAhead,
    LookAheadRule,
    MomentumRefresh,
    Parallel,
    Refresh,
    hmc,
    lahmc,
    sample,
)
from ladder_mcmc.engine import SCHEDULES, Driver, StepRecorder, driver_for
from ladder_mcmc.engine.backend import BackendWarning, choose_backend, untraceable_part
from ladder_mcmc.engine.contract import run_synchronous
from ladder_mcmc.engine.numpy_loop import run_numpy
from ladder_mcmc.hamiltonian import Yoshida4
from ladder_mcmc.ladder import CycleShift
from ladder_mcmc.models import IllConditionedGaussian, RoughWell
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.verify import FiniteLadder

jax = pytest.importorskip("jax")
jnp = jax.numpy

from ladder_mcmc.engine import jax_loop  # noqa: E402
from ladder_mcmc.models import from_jax  # noqa: E402

VARIANCES = np.array([1.0, 10.0])


def _log_density(x):
    return -0.5 * jnp.sum(x**2 / jnp.asarray(VARIANCES))


JAX_TARGET = from_jax(_log_density, dim=2)
NUMPY_TARGET = IllConditionedGaussian(2, log_condition=1)
#: a numpy target written with numpy's functions: its energy does not trace
HOST_TARGET = FunctionTarget(
    lambda x: 0.5 * np.sum(np.asarray(x) ** 2 / VARIANCES, axis=1),
    lambda x: np.asarray(x) / VARIANCES,
    dim=2,
)
X0 = NUMPY_TARGET.sample(4, np.random.default_rng(0))


class HostRefresh(Refresh):
    """A direction refresh that reads a value of its input on the host
    (``np.asarray(float(...))``): correct on numpy arrays, untraceable under JAX."""

    changes_state = False

    def __call__(self, state, direction, rng):
        flip = rng.random(direction.shape[0]) < 0.5
        first = np.asarray(float(direction[0]))  # a host read: no tracer survives it
        assert first in (-1.0, 1.0)
        return state, np.where(flip, -direction, direction).astype(np.int8)


def _run(kernel, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # short runs: R-hat, ESS
        warnings.simplefilter("error", BackendWarning)  # but no fall-back unasked
        return sample(kernel, X0, 10, seed=1, checks=False, warmup=0, **options)


# ---------------------------------------------------------------- choose_backend
def test_a_jax_target_whose_parts_trace_runs_on_jax():
    kernel = Ladder(Leapfrog(JAX_TARGET, 0.5, 3), LookAheadRule(3), MomentumRefresh(0.5))
    before = jax_loop.compilations()
    trace = _run(kernel)
    recorded = {k: trace.backend[k] for k in ("name", "reason")}
    assert recorded == {
        "name": "jax",
        "reason": "a JAX target, and every part of the kernel traces",
    }
    assert jax_loop.compilations() == before + 1  # the compiled loop ran it
    assert _run(kernel, backend="numpy").backend == {
        "name": "numpy",
        "reason": "asked for (backend='numpy')",
    }


def test_a_numpy_target_runs_on_numpy_with_the_reason():
    kernel = Ladder(Leapfrog(NUMPY_TARGET, 0.5, 3), LookAheadRule(3), MomentumRefresh(0.5))
    before = jax_loop.compilations()
    trace = _run(kernel)
    assert trace.backend == {
        "name": "numpy",
        "reason": "IllConditionedGaussian is not a JAX target (no jax_potential)",
    }
    assert jax_loop.compilations() == before
    # a map without a target
    cycle = Ladder(CycleShift(5), LookAheadRule(2), DirectionRefresh(0.5))
    cycle_trace = sample(cycle, np.arange(4), 5, seed=1, checks=False)
    assert (
        cycle_trace.backend["reason"] == "the kernel's map is not a JAX target (no jax_potential)"
    )
    # a numpy target written with xp may be asked to run on JAX
    assert _run(kernel, backend="jax", executor=Parallel(chains="vectorized")).backend == {
        "name": "jax",
        "reason": "asked for (backend='jax')",
        "chains": "vectorized",
        "chains_reason": "asked for (chains='vectorized')",
        "threads": 1,
    }


@pytest.mark.parametrize("composed", [False, True], ids=["alone", "in a composition"])
def test_backend_jax_with_a_part_that_does_not_trace_is_refused_naming_it(composed):
    refresh = MomentumRefresh(0.5) + HostRefresh() if composed else HostRefresh()
    kernel = Ladder(Leapfrog(JAX_TARGET, 0.5, 3), LookAheadRule(3), refresh)
    with pytest.raises(ValueError, match="backend='jax': the refresh HostRefresh does not trace"):
        _run(kernel, backend="jax")
    ks = kernel.init(X0, np.random.default_rng(0))
    message = untraceable_part(kernel, ks)
    assert "HostRefresh" in message and "MomentumRefresh" not in message
    assert "ConcretizationTypeError" in message or "TracerArrayConversionError" in message


def test_backend_jax_names_a_map_that_does_not_trace():
    kernel = Ladder(Leapfrog(HOST_TARGET, 0.5, 3), LookAheadRule(3), MomentumRefresh(0.5))
    with pytest.raises(
        ValueError,
        match="backend='jax': the energy of the target FunctionTarget .* does not trace .*, so "
        "the map Leapfrog does not either",
    ):
        _run(kernel, backend="jax")
    assert _run(kernel).backend["name"] == "numpy"  # not a JAX target: no warning


def test_the_automatic_choice_falls_back_to_numpy_with_a_warning_naming_the_part():
    kernel = Ladder(Leapfrog(JAX_TARGET, 0.5, 3), LookAheadRule(3), HostRefresh())
    with pytest.warns(BackendWarning, match="HostRefresh does not trace") as seen:
        trace = sample(kernel, X0, 10, seed=1, checks=False, warmup=0)
    assert len([w for w in seen if w.category is BackendWarning]) == 1
    assert "backend='numpy'" in str(seen[0].message)  # how to silence it
    assert trace.backend["name"] == "numpy"
    assert "the refresh HostRefresh does not trace under JAX" in trace.backend["reason"]
    # the numpy backend's draws, as asked for directly
    asked = _run(kernel, backend="numpy")
    np.testing.assert_array_equal(trace.positions, asked.positions)


def test_the_backend_argument_is_checked():
    kernel = lahmc(NUMPY_TARGET, 0.5, 3, 0.5)
    with pytest.raises(ValueError, match="backend must be 'numpy', 'jax' or None, got 'cuda'"):
        _run(kernel, backend="cuda")
    with pytest.raises(ValueError, match="schedule='synchronous' runs on numpy only"):
        _run(kernel, backend="jax", schedule="synchronous")
    assert _run(kernel, schedule="synchronous").backend["name"] == "numpy"
    ks = kernel.init(X0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="backend must be"):
        choose_backend(kernel, ks, "JAX")


def test_a_checkpoint_keeps_an_asked_backend(tmp_path):
    from ladder_mcmc import resume

    kernel = Ladder(Leapfrog(JAX_TARGET, 0.5, 3), LookAheadRule(3), MomentumRefresh(0.5))
    for asked, expected in ((None, "jax"), ("numpy", "numpy")):
        path = tmp_path / f"{asked}.npz"
        first = _run(kernel, backend=asked, checkpoint=Checkpoint(path, every=5))
        assert first.backend["name"] == expected
        assert resume(path, kernel, 5, checks=False).backend["name"] == expected


# ---------------------------------------------------------------- driver_for
WELL = RoughWell()
KERNELS = [
    lahmc(WELL, 1.0, 10, 0.1, 4),
    hmc(WELL, 1.0, 10, 0.1),
    Ladder(Yoshida4(WELL, 0.5, 3), LookAheadRule(4), MomentumRefresh(0.1)),
    Ladder(Leapfrog(WELL, 1.0, 10), LookAheadRule(3), MomentumRefresh(0.1) + DirectionRefresh(0.5)),
    LookAhead(FiniteLadder([1, 2, 0], [1, 2, 3]), max_rungs=2),
]


@pytest.mark.parametrize("kernel", KERNELS)
def test_driver_for_picks_by_schedule_and_backend_alone(kernel):
    assert driver_for(kernel, "synchronous") is run_synchronous
    assert driver_for(kernel, "ragged") is run_numpy
    assert driver_for(kernel, "ragged", "numpy") is run_numpy
    assert driver_for(kernel, "ragged", "jax") is jax_loop.run_jax
    with pytest.raises(ValueError, match="synchronous.*numpy backend only"):
        driver_for(kernel, "synchronous", "jax")


def test_an_unknown_schedule_or_backend_is_refused():
    assert SCHEDULES == ("ragged", "synchronous")
    with pytest.raises(ValueError, match="schedule must be 'ragged' or 'synchronous'"):
        driver_for(KERNELS[0], "parallel")
    with pytest.raises(ValueError, match="backend must be 'numpy' or 'jax'"):
        driver_for(KERNELS[0], "ragged", "numba")
    with pytest.raises(ValueError, match="schedule must be"):
        sample(KERNELS[0], np.zeros((2, 2)), 5, schedule="parallel", warmup=0)


@pytest.mark.parametrize("driver", [run_synchronous, run_numpy, jax_loop.run_jax])
def test_every_driver_has_the_contract_signature(driver):
    expected = inspect.signature(Driver.__call__).parameters
    got = inspect.signature(driver).parameters
    assert list(got) == [name for name in expected if name != "self"]
    assert got["on_progress"].default is None and got["until"].default is None


def test_sample_runs_the_driver_driver_for_picks(monkeypatch):
    """``sample`` calls ``driver_for`` and nothing else to choose."""
    chosen = []

    def spy(kernel, schedule, backend="numpy", chains="vectorized", threads=1):
        driver = driver_for(kernel, schedule, backend, chains, threads)
        chosen.append(driver)
        return driver

    execution = importlib.import_module("ladder_mcmc.run.execution")
    monkeypatch.setattr(execution, "driver_for", spy)
    jax_kernel = Ladder(Leapfrog(JAX_TARGET, 0.5, 3), LookAheadRule(3), MomentumRefresh(0.5))
    for kernel, options in [
        (KERNELS[0], {}),
        (KERNELS[2], {"schedule": "synchronous"}),
        (jax_kernel, {}),
    ]:
        sample(kernel, X0, 4, seed=1, checks=False, warmup=0, **options)
    assert chosen == [run_numpy, run_synchronous, jax_loop.run_jax]


def test_the_recorder_implements_the_interface_drivers_write_to():
    assert isinstance(Recorder(10, 3, 2), StepRecorder)
    assert not isinstance(object(), StepRecorder)


def test_a_part_is_traced_once_per_structure(monkeypatch):
    """``untraceable_part`` is remembered per kernel structure and state shape (the
    numbers in the kernel may change: warm-up's step sizes)."""
    from ladder_mcmc.engine import backend

    calls = []
    original = backend._first_untraceable
    monkeypatch.setattr(
        backend, "_first_untraceable", lambda k, ks: calls.append(1) or original(k, ks)
    )
    target = from_jax(_log_density, dim=2)  # a new target: a new structure
    for step in (0.5, 0.25):
        kernel = Ladder(Leapfrog(target, step, 3), LookAheadRule(2), MomentumRefresh(0.5))
        assert untraceable_part(kernel, kernel.init(X0, np.random.default_rng(0))) is None
    assert len(calls) == 1
    other = attrs.evolve(kernel, rule=LookAheadRule(3))
    untraceable_part(other, other.init(X0, np.random.default_rng(0)))
    assert len(calls) == 2
