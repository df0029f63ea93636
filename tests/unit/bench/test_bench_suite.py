"""The suite at small sizes: every model runs and gives finite figures; the report; NUTS and
the JAX backend (slow)."""

from __future__ import annotations

import json

import attrs
import numpy as np
import pytest

from ladder_mcmc import LookAhead, MomentumRefresh, ReversibleMap
from ladder_mcmc.arrays import namespace
from ladder_mcmc.bench import markdown, model_names, run_suite, summary_rows, to_json

EFFICIENCY = ("ess_per_1000_grads", "ess_per_1000_grads_with_warmup", "ess_per_second")


def test_every_model_runs_at_small_size_with_finite_figures():
    result = run_suite(models=model_names(), seeds=0, chains=2, warmup=20, draws=10)
    assert [r.model for r in result.runs] == list(model_names())
    for run in result.runs:
        f = run.figures
        assert run.verdict.rules != ("error",), (run.model, run.verdict.reasons)
        for name in EFFICIENCY:
            assert np.isfinite(getattr(f, name)) and getattr(f, name) > 0, (run.model, name)
        assert np.isfinite(f.max_mean_error) and np.isfinite(f.max_abs_z), run.model
        assert run.grad_evals > 0 and run.warmup_grad_evals > 0 and run.wall_time > 0
        assert run.step_size is not None and run.step_size > 0
        assert run.backend == "numpy"


@attrs.frozen(eq=False)
class XV:
    x: np.ndarray
    v: np.ndarray


@attrs.frozen(eq=False)
class FreeFlight(ReversibleMap):
    """docs/tutorials/custom-map.md's map: a map that brings no warm-up of its own."""

    target: object
    step_size: float

    def forward(self, state):
        return XV(state.x + self.step_size * state.v, state.v)

    def flip(self, state):
        return XV(state.x, -state.v)

    def log_density(self, state):
        xp = namespace(state.v)
        return -self.target.energy(state.x) - 0.5 * xp.sum(state.v**2, axis=1)

    def prepare(self, init, rng):
        if isinstance(init, XV):  # a state to continue from (after the burn-in)
            return init
        x = np.asarray(init, dtype=float)
        return XV(x, rng.standard_normal(x.shape))

    def draw(self, state):
        return state.x


def free_flight(target):
    return LookAhead(FreeFlight(target, 0.5), max_rungs=3, refresh=MomentumRefresh(0.5))


def test_a_kernel_without_warmup_burns_in_instead():
    result = run_suite(free_flight, models=["gauss2"], seeds=(0, 1), chains=2, warmup=40, draws=30)
    assert result.settings.kernel == "free_flight"
    for run in result.runs:
        assert run.warmup_grad_evals > 0  # the burn-in's map applications (cost 1 each)
        assert run.step_size == 0.5
        assert np.isfinite(run.figures.max_rhat)


def test_the_report_has_one_row_per_model_and_sampler_and_valid_json():
    result = run_suite(models=["gauss2", "funnel"], seeds=(0, 1), chains=2, warmup=30, draws=12)
    rows = summary_rows(result)
    assert [(r["model"], r["sampler"], r["runs"]) for r in rows] == [
        ("gauss2", "lahmc", 2),
        ("funnel", "lahmc", 2),
    ]
    for row, model in zip(rows, ("gauss2", "funnel"), strict=True):
        runs = [r for r in result.runs if r.model == model]
        assert row["passed"] == sum(r.passed for r in runs)
        values = [r.figures.ess_per_1000_grads for r in runs]
        assert row["ess_per_1000_grads"] == pytest.approx(np.median(values))
    text = markdown(result)
    assert text.count("| lahmc |") == 2
    assert f"{len(result.runs) - len(result.failed)} of 4 runs passed." in text
    for failed in result.failed:
        assert f"* {failed.model}, lahmc, seed {failed.seed}: " in text
    data = json.loads(json.dumps(to_json(result), allow_nan=False))
    assert data["total_runs"] == 4 and data["passed"] == result.passed
    assert data["settings"]["models"] == ["gauss2", "funnel"]
    assert {r["verdict"]["passed"] for r in data["runs"]} <= {True, False}


@pytest.mark.slow
def test_nuts_runs_beside_the_kernel():
    pytest.importorskip("numpyro")
    result = run_suite(models=["gauss2"], seeds=0, chains=2, warmup=100, draws=100, nuts=True)
    assert result.samplers == ("lahmc", "NUTS (NumPyro)")
    nuts = result.runs[1]
    assert nuts.compile_time > 0 and nuts.backend == "jax"
    for name in EFFICIENCY:
        assert np.isfinite(getattr(nuts.figures, name))
    assert nuts.grad_evals > 0 and nuts.warmup_grad_evals > 0 and nuts.step_size > 0
    assert "NumPyro" in result.meta["nuts"]


@pytest.mark.slow
def test_the_jax_backend_runs_the_models_jax_targets():
    pytest.importorskip("jax")
    result = run_suite(models=["funnel"], seeds=0, chains=2, warmup=30, draws=20, backend="jax")
    (run,) = result.runs
    assert run.backend == "jax" and run.compile_time > 0
    assert np.isfinite(run.figures.ess_per_second)
