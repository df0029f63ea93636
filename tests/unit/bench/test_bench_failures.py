"""Each failure rule is caught by a run broken on purpose, whatever its z says."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import lahmc
from ladder_mcmc.bench import SUITE, Figures, SamplerRun, figures_of, judge, run_suite
from ladder_mcmc.bench.figures import frozen_chains
from ladder_mcmc.bench.runs import run_kernel
from ladder_mcmc.bench.verdict import median_step_sizes

GAUSS = SUITE["gauss2"]


def _judged(positions: np.ndarray, **kw) -> tuple[Figures, object]:
    """The figures and verdict of draws of ``gauss2`` (costs made up)."""
    target = GAUSS.target()
    run = SamplerRun(positions, grad_evals=1e4, warmup_grad_evals=1e4, wall_time=1.0)
    figures = figures_of(run, GAUSS.quantities(target, positions), GAUSS.moments(target))
    return figures, judge(figures, **kw)


def _exact(n: int = 1000, chains: int = 4, seed: int = 0) -> np.ndarray:
    target = GAUSS.target()
    return target.sample(n * chains, np.random.default_rng(seed)).reshape(n, chains, 2)


def test_exact_draws_pass():
    figures, verdict = _judged(_exact())
    assert verdict.passed, verdict.reasons
    assert figures.max_rhat < 1.01 and figures.max_abs_z < 5 and figures.min_ess > 1000


def test_a_frozen_chain_fails_although_its_z_is_small():
    x = _exact()
    x[:, 2] = x[0, 2]  # chain 2 never moves, from a typical point
    figures, verdict = _judged(x)
    assert figures.frozen_chains == (2,)
    assert "frozen" in verdict.rules and not verdict.passed
    x = _exact()
    x[:, 1, 0] = x[0, 1, 0]  # one coordinate of chain 1 never changes
    assert frozen_chains(x) == (1,)


def test_a_kernel_whose_steps_do_not_move_the_chains_is_frozen():
    result = run_suite(
        lambda t: lahmc(t, step_size=1e-300, n_leapfrog=1, beta=1.0),
        models=["gauss2"],
        seeds=0,
        chains=2,
        warmup=0,
        draws=20,
    )
    (run,) = result.runs
    assert run.figures.frozen_chains == (0, 1)
    assert "frozen" in run.verdict.rules and not result.passed


def test_chains_started_apart_without_warmup_fail_on_rhat():
    target = GAUSS.target()
    init = np.array([[0.0, -3000.0], [0.0, 3000.0], [0.0, -3000.0], [0.0, 3000.0]])
    kernel = lahmc(target, step_size=0.5, n_leapfrog=2, beta=1.0, inverse_mass=target.variances)
    run = run_kernel(kernel, init, warmup=0, draws=30, seed=np.random.SeedSequence(0))
    figures = figures_of(run, run.positions, GAUSS.moments(target))
    verdict = judge(figures)
    assert figures.max_rhat > 1.01 and not figures.frozen_chains
    assert verdict.rules[0] == "rhat"


def test_a_tiny_fixed_step_size_fails_on_the_warmups_warning_and_the_median():
    def factory(target):
        if target.dim == 10:  # the funnel: a step the warm-up may not change
            return lahmc(target, step_size=1e-12)
        return lahmc(target)

    result = run_suite(factory, models=["gauss2", "funnel"], seeds=0, chains=2, warmup=30, draws=8)
    by_model = {r.model: r for r in result.runs}
    funnel = by_model["funnel"]
    assert funnel.step_size == 1e-12
    assert {"step_size", "warmup"} <= set(funnel.verdict.rules)
    assert "step_size" not in by_model["gauss2"].verdict.rules


def test_the_step_size_rule_compares_with_the_median_over_models():
    assert median_step_sizes({"a": [1.0, 3.0], "b": [0.5], "c": [None]}) == pytest.approx(1.25)
    ok = Figures(max_rhat=1.0, max_abs_z=0.0, max_abs_z_sd=0.0)
    assert judge(ok, step_size=1e-3, median_step_size=1.0).passed
    assert judge(ok, step_size=1e-7, median_step_size=1.0).rules == ("step_size",)


def test_non_finite_draws_fail():
    x = _exact()
    x[5, 0, 1] = np.nan
    figures, verdict = _judged(x)
    assert figures.non_finite_draws == 1
    assert verdict.rules == ("non_finite",)


def test_a_biased_mean_fails_on_z_alone():
    x = _exact()
    x[..., 0] += 0.2  # a fifth of an sd: far outside the MCSE of 4000 draws
    figures, verdict = _judged(x)
    assert figures.max_rhat < 1.01
    assert verdict.rules == ("z",) and "x[0]" in verdict.reasons[0]


def test_a_kernel_that_raises_is_reported_and_the_suite_goes_on():
    def factory(target):
        if target.dim == 2:
            raise RuntimeError("not for two dimensions")
        return lahmc(target)

    result = run_suite(factory, models=["gauss2", "funnel"], seeds=0, chains=2, warmup=30, draws=8)
    first, second = result.runs
    assert (
        first.verdict.rules == ("error",) and "not for two dimensions" in first.verdict.reasons[0]
    )
    assert np.isfinite(second.figures.ess_per_1000_grads)
