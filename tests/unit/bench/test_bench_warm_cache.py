"""Compile time left out by a warm cache (``compile_out="warm"``): the three runs, which
one each figure comes from, the persistent cache's settings, and a run that draws the
same each time it is made."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ladder_mcmc.bench import SamplerRun, SuiteSettings, run_kernel, run_suite
from ladder_mcmc.bench import suite as suite_module
from ladder_mcmc.bench.warm_cache import cold_and_warm, persistent_cache
from ladder_mcmc.hamiltonian.samplers import lahmc
from ladder_mcmc.models import IllConditionedGaussian

jax = pytest.importorskip("jax")
compilation_cache = pytest.importorskip("jax.experimental.compilation_cache.compilation_cache")


def _scripted(*runs: SamplerRun | None):
    """A ``run`` that returns ``runs`` in turn (``None``: Ctrl-C), and records at each call
    whether JAX's persistent cache was on, and in which folder."""
    calls: list[tuple[bool, str | None]] = []

    def run() -> SamplerRun:
        calls.append(
            (jax.config.jax_enable_compilation_cache, jax.config.jax_compilation_cache_dir)
        )
        if runs[len(calls) - 1] is None:
            raise KeyboardInterrupt
        return runs[len(calls) - 1]

    return run, calls


@pytest.fixture
def clearings(monkeypatch):
    """How many times JAX's in-memory caches were cleared."""
    count: list[int] = []
    clear = jax.clear_caches
    monkeypatch.setattr(jax, "clear_caches", lambda: (count.append(1), clear())[1])
    return count


def _run(wall: float, compile_s: float, x: float = 0.0, interrupted: bool = False) -> SamplerRun:
    positions = np.full((4, 2, 1), x)
    return SamplerRun(positions, 10.0, 5.0, wall, compile_s, interrupted=interrupted)


def test_the_cold_run_draws_and_the_warm_run_times(clearings):
    run, calls = _scripted(_run(2.0, 3.0), _run(1.5, 2.5), _run(0.5, 0.25))
    out = cold_and_warm(run)
    (cold_on, _), (fill_on, folder), (warm_on, warm_folder) = calls
    assert not cold_on and fill_on and warm_on  # cold without the cache, then with it
    assert folder is not None and warm_folder == folder  # the warm run reads what was filled
    assert len(clearings) == 3  # nothing compiled stays in memory from one run to the next
    assert out.wall_time == 0.5  # the warm run's seconds less its compile events
    assert out.compile_time == pytest.approx(2.0 + 3.0 - 0.5)  # the rest of the cold run
    assert out.grad_evals == 10.0 and out.notes == () and not out.interrupted
    assert not os.path.exists(folder)  # the cache removed


def test_a_warm_run_slower_than_the_cold_one_left_out_nothing():
    run, _ = _scripted(_run(1.0, 0.5), _run(1.5, 0.5), _run(2.0, 0.25))
    out = cold_and_warm(run)
    assert out.wall_time == 2.0 and out.compile_time == 0.0


def test_a_warm_run_that_drew_differently_is_said():
    run, _ = _scripted(_run(2.0, 3.0), _run(1.5, 2.5), _run(0.5, 0.25, x=1.0))
    out = cold_and_warm(run)
    assert out.notes == ("the warm run (timed compile out) drew differently from the cold run",)
    assert np.all(out.positions == 0.0)  # the cold run's draws are judged


@pytest.mark.parametrize("cut", [2, 3])
def test_ctrl_c_in_a_warm_run_keeps_the_cold_run_marked(cut):
    names = ("jax_enable_compilation_cache", "jax_compilation_cache_dir")
    before = [getattr(jax.config, n) for n in names]
    runs = [_run(2.0, 3.0), _run(1.5, 2.5), _run(0.5, 0.25)]
    runs[cut - 1] = None
    run, calls = _scripted(*runs)
    out = cold_and_warm(run)
    assert out.interrupted and out.wall_time == 2.0 and len(calls) == cut
    assert not os.path.exists(calls[1][1])  # the cache removed
    assert [getattr(jax.config, n) for n in names] == before


def test_a_run_cut_short_stops_the_protocol_and_is_marked():
    run, calls = _scripted(_run(2.0, 3.0, interrupted=True))
    assert cold_and_warm(run).interrupted and len(calls) == 1
    run, calls = _scripted(_run(2.0, 3.0), _run(1.5, 2.5, interrupted=True))
    out = cold_and_warm(run)
    assert out.interrupted and len(calls) == 2 and out.wall_time == 2.0  # cold, cut short


def test_the_persistent_cache_is_filled_inside_and_restored_after(tmp_path):
    names = (
        "jax_enable_compilation_cache",
        "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs",
    )
    saved = [getattr(jax.config, n) for n in names]
    mine = tmp_path / "mine"  # a user's own cache, used before the block (too short to write)
    for name, value in zip(names, (True, str(mine), 60.0), strict=True):
        jax.config.update(name, value)
    try:
        jax.jit(lambda x: x * 5.0 - 0.25)(np.arange(3.0)).block_until_ready()
        before = [getattr(jax.config, n) for n in names]
        ours = tmp_path / "ours"
        with persistent_cache(ours):
            assert jax.config.jax_compilation_cache_dir == str(ours)
            jax.jit(lambda x: x * 3.0 + 0.125)(np.arange(3.0)).block_until_ready()
        assert any(ours.iterdir())  # one compilation, however short, written there
        assert [getattr(jax.config, n) for n in names] == before
        with persistent_cache(None):
            assert jax.config.jax_enable_compilation_cache is False
        assert [getattr(jax.config, n) for n in names] == before
    finally:
        for name, value in zip(names, saved, strict=True):
            jax.config.update(name, value)
        compilation_cache.reset_cache()


def test_the_cache_folder_must_be_a_path_or_none():
    with pytest.raises(ValueError, match="directory must be a folder's path or None, got 123"):
        with persistent_cache(123):
            pass


def test_a_run_draws_the_same_each_time_it_is_made():
    """The protocol repeats a run with the same arguments: its seed must not advance."""
    target = IllConditionedGaussian(2)
    init = np.random.default_rng(1).standard_normal((2, 2))
    seed = np.random.SeedSequence(7)
    first, second = (
        run_kernel(lahmc(target), init, warmup=20, draws=10, seed=seed) for _ in range(2)
    )
    np.testing.assert_array_equal(first.positions, second.positions)


def _fake_nuts(log_density, init, *, warmup, draws, seed, settings):
    """NUTS's stand-in: exact draws, no compilation."""
    x = np.random.default_rng(3).standard_normal((draws,) + init.shape)
    return SamplerRun(x, 1e4, 1e4, 0.1, 1.0, backend="jax")


def _fake_kernel_run(kernel, init, *, warmup, draws, seed, backend=None, switch=None):
    """The package's run, a stand-in: exact draws, no compilation."""
    x = np.random.default_rng(4).standard_normal((draws,) + init.shape)
    return SamplerRun(x, 1e4, 1e4, 0.1, 1.0, sampling_time=0.1, backend=str(backend))


@pytest.mark.parametrize(
    ("backend", "compile_out", "protocols"),
    [
        ("numpy", "warm", ["NUTS (NumPyro)"]),  # NUTS's runs compile, not the numpy loop
        ("numpy", "subtract", []),
        ("jax", "warm", ["lahmc", "NUTS (NumPyro)"]),
        ("jax", "subtract", []),
    ],
)
def test_warm_times_by_the_protocol_the_runs_that_compile(
    monkeypatch, backend, compile_out, protocols
):
    calls: list[str] = []

    def counted(job):
        out = job()
        calls.append("NUTS (NumPyro)" if out.sampling_time is None else "lahmc")
        return out

    monkeypatch.setattr(suite_module, "cold_and_warm", counted)
    monkeypatch.setattr(suite_module, "nuts_version", lambda: "NumPyro (a stand-in)")
    monkeypatch.setattr(suite_module, "run_nuts", _fake_nuts)
    monkeypatch.setattr(suite_module, "run_kernel", _fake_kernel_run)
    result = run_suite(models=["gauss2"], seeds=0, chains=2, warmup=20, draws=10, nuts=True,
                       backend=backend, compile_out=compile_out)  # fmt: skip
    assert calls == protocols and result.runs[0].backend == backend
    assert result.settings.compile_out == compile_out


def test_compile_out_must_be_known():
    with pytest.raises(ValueError, match="compile_out must be 'subtract' or 'warm', got 'cold'"):
        SuiteSettings(models=("gauss2",), seeds=0, compile_out="cold")
