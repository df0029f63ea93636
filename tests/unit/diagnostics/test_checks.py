"""Runs that go bad say so (SamplingWarning), healthy runs stay quiet; the gradient check.

The project's pytest settings ignore SamplingWarning (short test runs would warn);
the tests here see it through ``pytest.warns`` and ``warnings.simplefilter("always")``.
"""

from __future__ import annotations

import importlib
import os
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from check_properties import (
    assert_rhat_flags_different_scales,
    assert_wrong_gradients_refused,
    wrong_gradients,
)

from ladder_mcmc import (
    Checkpoint,
    DirectionRefresh,
    LookAhead,
    Parallel,
    SamplingWarning,
    check_gradient,
    hmc,
    lahmc,
    lifted_lahmc,
    resume,
    sample,
)
from ladder_mcmc.diagnostics import check_trace, rank_rhat, trace_problems
from ladder_mcmc.diagnostics.gradient import check_kernel_gradient
from ladder_mcmc.ladder import CycleShift
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian, RoughWell
from ladder_mcmc.models import posteriors as pdb
from ladder_mcmc.run import Trace

GAUSS = IllConditionedGaussian(2, log_condition=1)
X0 = GAUSS.sample(4, np.random.default_rng(0))


def recorded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and the SamplingWarnings it emitted (every one, even repeats)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [w for w in seen if issubclass(w.category, SamplingWarning)]


# ---------------------------------------------------------------------- warnings
def test_healthy_run_is_quiet():
    trace, seen = recorded(sample, lahmc(GAUSS, 0.3, 10, 0.5), X0, 2000, seed=1, warmup=0)
    assert seen == [], [str(w.message) for w in seen]
    assert trace_problems(trace) == []


def test_huge_step_size_warns_of_flips_and_chains_that_never_moved():
    with pytest.warns(SamplingWarning) as seen:
        sample(lahmc(GAUSS, 30.0, 10, 0.5), X0, 300, seed=1, warmup=0)
    text = [str(w.message) for w in seen]
    flips = [t for t in text if "ended in a flip" in t]
    assert len(flips) == 1 and flips[0].startswith("100% of the 1200 steps (300 steps × 4 chains)")
    assert "step size is too large, or the gradient is wrong" in flips[0]
    stuck = [t for t in text if "never moved" in t]
    assert len(stuck) == 1 and stuck[0].startswith("4 of 4 chains never moved in 300 steps")
    assert all(w.filename == __file__ for w in seen)  # points at the call of sample


def test_chains_stuck_in_two_modes_warn_of_r_hat():
    def energy(x):
        return -np.logaddexp(-0.5 * ((x - 10) ** 2).sum(1), -0.5 * ((x + 10) ** 2).sum(1))

    def grad(x):
        a, b = -0.5 * ((x - 10) ** 2).sum(1), -0.5 * ((x + 10) ** 2).sum(1)
        w = 1 / (1 + np.exp(b - a))
        return w[:, None] * (x - 10) + (1 - w)[:, None] * (x + 10)

    target = FunctionTarget(energy, grad, dim=2)
    x0 = np.array([[10.0, 10.0], [10.0, 10.0], [-10.0, -10.0], [-10.0, -10.0]])
    with pytest.warns(SamplingWarning, match=r"R-hat above 1\.01 for 2 of 2 parameters") as seen:
        sample(lahmc(target, 0.5, 5, 0.5), x0, 1000, seed=1, warmup=0)
    message = next(str(w.message) for w in seen if "R-hat" in str(w.message))
    assert "(worst: x" in message and "1.73" in message and "several modes" in message
    assert not any("flip" in str(w.message) for w in seen)


def test_a_region_of_nan_energy_warns_of_non_finite_energies():
    def energy(x):
        return np.where(x[:, 0] > 1.5, np.nan, 0.5 * (x * x).sum(1))

    target = FunctionTarget(energy, lambda x: x, dim=2)
    trace, seen = recorded(
        sample, lahmc(target, 0.5, 5, 0.5), np.zeros((4, 2)), 1000, seed=1, warmup=0
    )
    text = [str(w.message) for w in seen]
    hit = [t for t in text if "non-finite energy" in t]
    assert len(hit) == 1, text
    assert hit[0].startswith(f"{trace.non_finite} rungs in ")
    assert "check the energy's domain" in hit[0]


def test_short_run_warns_of_too_few_effective_draws():
    with pytest.warns(SamplingWarning, match=r"below 100 per chain \(400 for 4 chains\)") as seen:
        sample(lahmc(GAUSS, 0.3, 10, 0.5), X0, 40, seed=1, warmup=0)
    message = next(str(w.message) for w in seen if "effective sample size" in str(w.message))
    assert "bulk" in message and "tail" in message and "Run more steps" in message


def test_checks_false_turns_off_the_warnings_and_the_gradient_check():
    _, seen = recorded(sample, lahmc(GAUSS, 30.0, 10, 0.5), X0, 300, seed=1, checks=False)
    assert seen == []
    target, x = wrong_gradients()["wrong sign"]
    with pytest.raises(ValueError, match="disagrees with finite differences"):
        sample(lahmc(target, 0.1, 5, 0.5), x, 10, seed=1, warmup=0)
    sample(lahmc(target, 0.1, 5, 0.5), x, 10, seed=1, checks=False, warmup=0)  # runs, however wrong


def test_resume_warns_and_honours_checks():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "run.npz")
        kernel = lahmc(GAUSS, 30.0, 10, 0.5)
        sample(
            kernel, X0, 100, seed=1, checkpoint=Checkpoint(path, every=50), checks=False, warmup=0
        )
        with pytest.warns(SamplingWarning, match="ended in a flip") as seen:
            resume(path, kernel, 100)
        assert all(w.filename == __file__ for w in seen)
        _, quiet = recorded(resume, path, kernel, 50, checks=False)
        assert quiet == []


def test_executor_run_is_checked_once_on_all_chains():
    x0 = GAUSS.sample(6, np.random.default_rng(1))
    with ThreadPoolExecutor(2) as ex:
        _, seen = recorded(
            sample, lahmc(GAUSS, 30.0, 10, 0.5), x0, 100, seed=3, executor=Parallel(ex, groups=3)
        )
    flips = [str(w.message) for w in seen if "ended in a flip" in str(w.message)]
    assert len(flips) == 1 and "(100 steps × 6 chains)" in flips[0]


def test_checks_are_not_counted_in_wall_time(monkeypatch):
    def slow_check(trace, stacklevel=2):
        time.sleep(0.3)
        return []

    # the module, not the function ladder_mcmc.run.sampling that shadows it
    sampling = importlib.import_module("ladder_mcmc.run.sampling")
    monkeypatch.setattr(sampling, "check_trace", slow_check)
    start = time.perf_counter()
    trace = sample(lahmc(GAUSS, 0.3, 10, 0.5), X0, 20, seed=1, warmup=0)
    assert time.perf_counter() - start >= 0.3 > trace.wall_time


def test_trace_without_steps_is_not_checked():
    empty = Trace(
        states=None,
        rungs=np.zeros((0, 4), dtype=np.int8),
        n_moves=np.zeros((0, 4), dtype=np.int16),
        non_finite_rungs=np.zeros((0, 4), dtype=np.int16),
        cost=1,
        max_rung=1,
        interrupted=True,
    )
    _, seen = recorded(check_trace, empty)
    assert seen == []


def test_never_moved_is_seen_from_positions_too():
    """A chain whose rungs say it moved but whose positions never changed (a map that is
    the identity on it) is reported; the other chains are not."""
    trace = sample(lahmc(GAUSS, 0.3, 10, 0.5), X0, 50, seed=1, checks=False, warmup=0)
    states = np.array(trace.states)
    states[:, 2] = states[0, 2]
    frozen = Trace(
        states=states,
        rungs=trace.rungs,
        n_moves=trace.n_moves,
        non_finite_rungs=trace.non_finite_rungs,
        cost=trace.cost,
        max_rung=trace.max_rung,
    )
    stuck = [m for m in trace_problems(frozen) if "never moved" in m]
    assert len(stuck) == 1 and stuck[0].startswith(
        "1 of 4 chains never moved in 50 steps (chains 2)"
    )


def test_long_runs_are_checked_on_every_t_th_step_and_draws_files_in_blocks(monkeypatch):
    """Above CHECKED_DRAWS positions, one kept step in t is read (at least
    MIN_CHECKED_STEPS per chain), a draws file a block of rows at a time; the
    messages say so, and a draws file gives the same messages as memory."""
    import ladder_mcmc.diagnostics.checks as checks

    gauss = IllConditionedGaussian(3, log_condition=2)
    x0 = gauss.sample(4, np.random.default_rng(2))
    kernel = lahmc(gauss, 0.3, 10, 0.5)
    with tempfile.TemporaryDirectory() as folder:
        on_disk = sample(
            kernel, x0, 400, seed=1, checks=False, draws_file=f"{folder}/x.npy", warmup=0
        )
        in_memory = sample(kernel, x0, 400, seed=1, checks=False, warmup=0)
        assert isinstance(on_disk.states, np.memmap)
        assert trace_problems(on_disk) == trace_problems(in_memory)
        monkeypatch.setattr(checks, "CHECKED_DRAWS", 400 * 4 * 3 // 4)
        monkeypatch.setattr(checks, "MIN_CHECKED_STEPS", 50)
        thinned = checks._checked_positions(on_disk.states)
        np.testing.assert_array_equal(thinned[0], in_memory.positions[::4])
        assert thinned[1] == 4
        messages = trace_problems(on_disk)
        assert messages == trace_problems(in_memory)
        assert any("computed on one kept step in 4" in m for m in messages)
        monkeypatch.setattr(checks, "MIN_CHECKED_STEPS", 200)  # never fewer steps than that
        assert checks._checked_positions(in_memory.states)[1] == 2


def test_rank_rhat_flags_different_scales():
    assert_rhat_flags_different_scales(rank_rhat)


# ---------------------------------------------------------------- gradient check
PAPER_TARGETS = [
    IllConditionedGaussian(2, log_condition=6),
    IllConditionedGaussian(100, log_condition=6),
    IllConditionedGaussian(2, log_condition=5),
    RoughWell(),
]


@pytest.mark.parametrize("target", PAPER_TARGETS, ids=lambda t: f"{type(t).__name__}{t.dim}")
def test_correct_gradients_of_the_paper_targets_pass(target):
    rng = np.random.default_rng(0)
    for x in (
        target.sample(4, rng),  # typical points, on scales from 1 to 1000
        rng.uniform(-2, 2, size=(4, target.dim)),  # Stan's inits
        np.full((2, target.dim), 1e3),  # far out: large energy, tiny steep directions
    ):
        check_gradient(target, x)


def test_correct_gradients_of_the_posteriors_pass_at_their_inits():
    try:
        targets = [pdb.load(name) for name in pdb.names()]
    except FileNotFoundError:  # pragma: no cover - depends on the checkout
        pytest.skip("posteriordb reference file not found")
    for target in targets:
        for seed in range(5):
            check_gradient(target, target.initial_points(4, np.random.default_rng(seed)))


def test_wrong_gradients_are_refused():
    assert_wrong_gradients_refused(check_gradient)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("wrong sign", "the sign looks flipped"),
        ("factor 2", "off by a factor of 2"),
        ("coordinates swapped", "another coordinate order"),
        ("missing term", "ratio"),
    ],
)
def test_refusal_shows_both_values_at_the_worst_coordinate(name, hint):
    target, x = wrong_gradients()[name]
    with pytest.raises(ValueError) as err:
        check_gradient(target, x)
    message = str(err.value)
    assert "Worst: point " in message and "target.grad gives " in message
    assert "the central difference (E(x + h e_" in message and hint in message
    # the two values quoted are the analytic and the finite-difference ones
    point = int(message.split("Worst: point ")[1].split(",")[0])
    coord = int(message.split("coordinate ")[1].split(" ")[0])
    analytic = float(message.split("target.grad gives ")[1].split(",")[0])
    assert analytic == pytest.approx(target.grad(x)[point, coord], rel=1e-5)


def test_a_missing_term_of_a_posterior_is_refused():
    """Eight schools without the Jacobian of τ = exp(u): the gradient in u misses −1."""
    try:
        target = pdb.load("eight_schools-eight_schools_noncentered")
    except (FileNotFoundError, ValueError):  # pragma: no cover - depends on the checkout
        pytest.skip("posteriordb reference file not found")
    j = target.dim - 1

    def grad(x):
        g = target.grad(x).copy()
        g[:, j] += 1.0
        return g

    x = target.initial_points(4, np.random.default_rng(0))
    with pytest.raises(ValueError, match=f"coordinate {j} "):
        check_gradient(FunctionTarget(target.energy, grad, dim=target.dim), x)


def test_energy_and_grad_is_checked_besides_grad():
    gauss = IllConditionedGaussian(3, log_condition=2)

    class Inconsistent:
        dim = 3
        energy = gauss.energy
        grad = gauss.grad

        def energy_and_grad(self, x):
            return gauss.energy(x), -gauss.grad(x)

    with pytest.raises(ValueError, match="target.energy_and_grad gives"):
        check_gradient(Inconsistent(), np.ones((2, 3)))


def test_gradient_check_refuses_bad_input():
    with pytest.raises(ValueError, match=r"shape \(chains, dim\)"):
        check_gradient(GAUSS, np.ones(3))
    with pytest.raises(ValueError, match="must be finite"):
        check_gradient(GAUSS, np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="neither grad nor energy_and_grad"):
        check_gradient(type("EnergyOnly", (), {"energy": GAUSS.energy})(), np.ones((2, 2)))
    nan_grad = FunctionTarget(GAUSS.energy, lambda x: x * np.nan, dim=2)
    with pytest.raises(ValueError, match="target.grad is not finite at points"):
        check_gradient(nan_grad, np.ones((2, 2)))


def test_sample_checks_at_most_four_initial_points():
    rows_seen = []

    def energy(x):
        rows_seen.append(x.shape[0])
        return GAUSS.energy(x)

    target = FunctionTarget(energy, GAUSS.grad, dim=2)
    check_kernel_gradient(lahmc(target, 0.3, 5, 0.5), GAUSS.sample(100, np.random.default_rng(0)))
    assert rows_seen[0] == 4 and max(rows_seen) <= 4 * 2 * 2  # 4 points, ± h on 2 coordinates


def test_gradient_check_in_sample_for_every_leapfrog_family_and_initial_state():
    target, x = wrong_gradients()["factor 2"]
    for kernel in (hmc(target, 0.1, 5, 1.0), lifted_lahmc(target, 0.1, 5)):
        with pytest.raises(ValueError, match="off by a factor of 2"):
            sample(kernel, x, 10, seed=1, warmup=0)
    good = lahmc(GAUSS, 0.3, 5, 0.5)
    trace = sample(good, X0, 10, seed=1, warmup=0)
    sample(
        good, trace.final, 10, seed=2, warmup=0
    )  # a LadderState: checked at its positions, passes


def test_maps_without_a_gradient_are_not_checked():
    kernel = LookAhead(CycleShift(5), max_rungs=2, refresh=DirectionRefresh(0.2))
    trace = sample(kernel, np.zeros(4, dtype=np.int64), 50, seed=0, warmup=0)
    assert trace.n_steps == 50


def test_a_correct_float32_target_passes_and_a_wrong_one_is_refused():
    """A float32 energy rounds far more coarsely: the steps and the floor follow its epsilon."""
    x0 = np.random.default_rng(0).normal(size=(4, 3))
    energy = lambda x: 0.5 * (x.astype(np.float32) ** 2).sum(1)  # noqa: E731
    good = FunctionTarget(energy, lambda x: x.astype(np.float32), dim=3)
    check_gradient(good, x0)
    sample(lahmc(good, 0.5, 5, 1.0), x0, 20, seed=0, warmup=0)
    wrong = FunctionTarget(energy, lambda x: 2 * x.astype(np.float32), dim=3)
    with pytest.raises(ValueError, match="disagrees"):
        check_gradient(wrong, x0)
