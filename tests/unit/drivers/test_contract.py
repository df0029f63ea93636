"""The driver contract: one function picks the driver, and every driver has its signature."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

from ladder_mcmc import (
    DirectionRefresh,
    Ladder,
    Leapfrog,
    LookAhead,
    LookAheadRule,
    MomentumRefresh,
    Yoshida4,
    drivers,
    hmc,
    lahmc,
    sample,
)
from ladder_mcmc.drivers import (
    SCHEDULES,
    Driver,
    _leapfrog,
    contract,
    driver_for,
    run_ragged,
    run_synchronous,
)
from ladder_mcmc.models import RoughWell
from ladder_mcmc.verify import FiniteLadder

WELL = RoughWell()
FAST = [lahmc(WELL, 1.0, 10, 0.1, 4), hmc(WELL, 1.0, 10, 0.1)]
GENERIC = [
    Ladder(Yoshida4(WELL, 0.5, 3), LookAheadRule(4), MomentumRefresh(0.1)),
    Ladder(Leapfrog(WELL, 1.0, 10), LookAheadRule(3), MomentumRefresh(0.1) + DirectionRefresh(0.5)),
    LookAhead(FiniteLadder([1, 2, 0], [1, 2, 3]), max_rungs=2),
]


@pytest.mark.parametrize("kernel", FAST + GENERIC)
def test_the_synchronous_schedule_is_the_synchronous_driver(kernel):
    assert driver_for(kernel, "synchronous") is run_synchronous


@pytest.mark.parametrize("kernel", FAST)
def test_leapfrog_look_ahead_kernels_take_the_fast_path(kernel, monkeypatch):
    assert driver_for(kernel, "ragged") is _leapfrog.run
    monkeypatch.setattr(drivers, "FAST_PATH", False)
    assert driver_for(kernel, "ragged") is run_ragged


@pytest.mark.parametrize("kernel", GENERIC)
def test_other_kernels_take_the_generic_ragged_loop(kernel):
    assert driver_for(kernel, "ragged") is run_ragged


def test_an_unknown_schedule_is_refused():
    assert SCHEDULES == ("ragged", "synchronous")
    with pytest.raises(ValueError, match="schedule must be 'ragged' or 'synchronous'"):
        driver_for(FAST[0], "parallel")
    with pytest.raises(ValueError, match="schedule must be"):
        sample(FAST[0], np.zeros((2, 2)), 5, schedule="parallel", warmup=0)


@pytest.mark.parametrize("driver", [run_synchronous, run_ragged, _leapfrog.run])
def test_every_driver_has_the_contract_signature(driver):
    expected = inspect.signature(Driver.__call__).parameters
    got = inspect.signature(driver).parameters
    assert list(got) == [name for name in expected if name != "self"]
    assert got["on_progress"].default is None and got["until"].default is None


def test_sample_runs_the_driver_driver_for_picks(monkeypatch):
    """``sample`` calls ``driver_for`` and nothing else to choose."""
    chosen = []

    def spy(kernel, schedule):
        driver = driver_for(kernel, schedule)
        chosen.append(driver)
        return driver

    sample_module = importlib.import_module("ladder_mcmc.run.sample")
    monkeypatch.setattr(sample_module, "driver_for", spy)
    sample(FAST[0], WELL.sample(3, np.random.default_rng(0)), 10, seed=1, checks=False, warmup=0)
    sample(GENERIC[0], WELL.sample(3, np.random.default_rng(0)), 10, seed=1, checks=False, warmup=0)
    assert chosen == [_leapfrog.run, run_ragged]
    assert contract.driver_for is driver_for


def test_the_recorder_implements_the_interface_drivers_write_to():
    from ladder_mcmc.drivers import StepRecorder
    from ladder_mcmc.run.recorder import Recorder

    assert isinstance(Recorder(10, 3, 2), StepRecorder)
    assert not isinstance(object(), StepRecorder)
