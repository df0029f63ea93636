"""Compile time left out by a warm cache (``compile_out="warm"``): the three runs, which
one each figure comes from, the persistent cache's settings, and a run that draws the
same each time it is made."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc.bench import SamplerRun, SuiteSettings, run_kernel, run_suite
from ladder_mcmc.bench import suite as suite_module
from ladder_mcmc.bench.warm_cache import cold_and_warm, persistent_cache
from ladder_mcmc.hamiltonian.samplers import lahmc
from ladder_mcmc.models import IllConditionedGaussian

jax = pytest.importorskip("jax")


def _scripted(*runs: SamplerRun):
    """A ``run`` that returns ``runs`` in turn, and counts its calls."""
    calls: list[int] = []

    def run() -> SamplerRun:
        calls.append(len(calls))
        return runs[len(calls) - 1]

    return run, calls


def _run(wall: float, compile_s: float, x: float = 0.0, interrupted: bool = False) -> SamplerRun:
    positions = np.full((4, 2, 1), x)
    return SamplerRun(positions, 10.0, 5.0, wall, compile_s, interrupted=interrupted)


def test_the_cold_run_draws_and_the_warm_run_times():
    run, calls = _scripted(_run(2.0, 3.0), _run(1.5, 2.5), _run(0.5, 0.25))
    out = cold_and_warm(run)
    assert len(calls) == 3
    assert out.wall_time == 0.5  # the warm run's seconds less its compile events
    assert out.compile_time == pytest.approx(2.0 + 3.0 - 0.5)  # the rest of the cold run
    assert out.grad_evals == 10.0 and out.notes == () and not out.interrupted


def test_a_warm_run_that_drew_differently_is_said():
    run, _ = _scripted(_run(2.0, 3.0), _run(1.5, 2.5), _run(0.5, 0.25, x=1.0))
    out = cold_and_warm(run)
    assert out.notes == ("the warm run (timed compile out) drew differently from the cold run",)
    assert np.all(out.positions == 0.0)  # the cold run's draws are judged


def test_a_run_cut_short_stops_the_protocol_and_is_marked():
    run, calls = _scripted(_run(2.0, 3.0, interrupted=True))
    assert cold_and_warm(run).interrupted and len(calls) == 1
    run, calls = _scripted(_run(2.0, 3.0), _run(1.5, 2.5, interrupted=True))
    out = cold_and_warm(run)
    assert out.interrupted and len(calls) == 2 and out.wall_time == 2.0  # cold, cut short


def test_the_persistent_cache_is_filled_inside_and_restored_after(tmp_path):
    names = ("jax_enable_compilation_cache", "jax_compilation_cache_dir")
    before = [getattr(jax.config, n) for n in names]
    with persistent_cache(str(tmp_path)):
        assert jax.config.jax_compilation_cache_dir == str(tmp_path)
        jax.jit(lambda x: x * 3.0 + 0.125)(np.arange(3.0)).block_until_ready()
    assert any(tmp_path.iterdir())  # one compilation, however short, was written
    assert [getattr(jax.config, n) for n in names] == before
    with persistent_cache(None):
        assert jax.config.jax_enable_compilation_cache is False
    assert [getattr(jax.config, n) for n in names] == before


def test_a_run_draws_the_same_each_time_it_is_made():
    """The protocol repeats a run with the same arguments: its seed must not advance."""
    target = IllConditionedGaussian(2)
    init = np.random.default_rng(1).standard_normal((2, 2))
    seed = np.random.SeedSequence(7)
    first, second = (
        run_kernel(lahmc(target), init, warmup=20, draws=10, seed=seed) for _ in range(2)
    )
    np.testing.assert_array_equal(first.positions, second.positions)


@pytest.mark.parametrize(
    ("backend", "protocols"), [("numpy", 0), pytest.param("jax", 1, marks=pytest.mark.slow)]
)
def test_warm_times_by_the_protocol_the_runs_that_compile(monkeypatch, backend, protocols):
    """The package's runs compile on the JAX backend only (NUTS's always do)."""
    calls: list[str] = []

    def counted(job):
        calls.append("protocol")
        return job()

    monkeypatch.setattr(suite_module, "cold_and_warm", counted)
    result = run_suite(models=["gauss2"], seeds=0, chains=2, warmup=20, draws=10,
                       backend=backend, compile_out="warm")  # fmt: skip
    assert len(calls) == protocols and result.runs[0].backend == backend
    assert result.settings.compile_out == "warm"


def test_compile_out_must_be_known():
    with pytest.raises(ValueError, match="compile_out must be 'subtract' or 'warm', got 'cold'"):
        SuiteSettings(models=("gauss2",), seeds=0, compile_out="cold")
