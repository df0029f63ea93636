"""``sample``: reproducibility, bookkeeping, interruption."""

import numpy as np
import pytest

from ladder_mcmc import hmc, lahmc, sample
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian

TARGET = IllConditionedGaussian(2)


def x0(n=20, seed=0):
    return TARGET.sample(n, np.random.default_rng(seed))


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_same_seed_same_trace(schedule):
    kernel = lahmc(TARGET, 1.0, 10, 0.1)
    a = sample(kernel, x0(), 100, seed=11, schedule=schedule, warmup=0)
    b = sample(kernel, x0(), 100, seed=11, schedule=schedule, warmup=0)
    c = sample(kernel, x0(), 100, seed=12, schedule=schedule, warmup=0)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.rungs, b.rungs)
    assert not np.array_equal(a.positions, c.positions)


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_bookkeeping(schedule):
    kernel = lahmc(TARGET, 1.0, 10, 0.1, look_ahead=4)
    trace = sample(kernel, x0(), 150, seed=3, schedule=schedule, warmup=0)
    assert trace.positions.shape == (150, 20, 2)
    assert trace.rungs.shape == (150, 20)
    assert len(trace.rung_counts) == 5 and trace.rung_counts.sum() == 150 * 20
    fractions = trace.transition_fractions()
    assert list(fractions) == ["F", "L1", "L2", "L3", "L4"]
    assert sum(fractions.values()) == pytest.approx(1.0)
    # Greedy: a step that takes rung a computed a rungs; a flip computed all K.
    expected_moves = np.where(trace.rungs == 0, 4, trace.rungs)
    np.testing.assert_array_equal(trace.n_moves, expected_moves)
    np.testing.assert_array_equal(trace.grad_evals, 10 * expected_moves.sum(axis=0))
    assert trace.non_finite == 0


def test_hmc_costs_one_trajectory_per_step():
    trace = sample(hmc(TARGET, 1.0, 10, 1.0), x0(), 40, seed=1, warmup=0)
    np.testing.assert_array_equal(trace.grad_evals, np.full(20, 400))
    assert list(trace.transition_fractions()) == ["F", "L1"]


def test_thin_keeps_every_kth_draw_and_all_statistics():
    kernel = lahmc(TARGET, 1.0, 10, 0.1)
    full = sample(kernel, x0(), 60, seed=5, schedule="synchronous", warmup=0)
    thin = sample(kernel, x0(), 60, seed=5, schedule="synchronous", thin=4, warmup=0)
    assert thin.positions.shape == (15, 20, 2)
    np.testing.assert_array_equal(thin.positions, full.positions[3::4])
    np.testing.assert_array_equal(thin.rungs, full.rungs)


def test_continue_from_final_state():
    kernel = lahmc(TARGET, 1.0, 10, 0.1)
    first = sample(kernel, x0(), 30, seed=5, schedule="synchronous", warmup=0)
    more = sample(kernel, first.final, 30, seed=6, schedule="synchronous", warmup=0)
    assert more.positions.shape == (30, 20, 2)


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_keyboard_interrupt_inside_the_energy_keeps_the_draws(schedule):
    calls = {"n": 0}

    def energy(x):
        calls["n"] += 1
        if calls["n"] == 120:
            raise KeyboardInterrupt
        return 0.5 * (x**2).sum(1)

    target = FunctionTarget(energy, lambda x: x.copy(), dim=2)
    trace = sample(
        lahmc(target, 0.5, 3, 0.5), np.zeros((8, 2)), 1000, seed=0, schedule=schedule, warmup=0
    )
    assert trace.interrupted
    assert 0 < trace.n_steps < 1000
    assert trace.positions.shape == (trace.n_steps, 8, 2)
    assert np.all(np.isfinite(trace.positions))
    assert trace.rungs.shape == (trace.n_steps, 8)


def test_progress_bar_writes_to_stderr(capsys):
    sample(lahmc(TARGET, 1.0, 10, 0.1), x0(), 20, seed=0, progress=True, warmup=0)
    err = capsys.readouterr().err
    assert "20/20 steps" in err


def test_ctrl_c_during_warmup_returns_an_empty_interrupted_trace(tmp_path):
    """Nothing is kept from warm-up, so the trace is empty — but returned, not raised; its
    ``final`` is the chains' state when warm-up stopped (to go on from)."""
    from interrupting import interrupting

    from ladder_mcmc.models import RoughWell

    well = RoughWell()
    target, _ = interrupting(well, dim=2, limit=30)  # inside warm-up (100 steps)
    kernel = lahmc(target, 0.5, 5, 0.2, 3)
    x0 = well.sample(4, np.random.default_rng(0))
    path = tmp_path / "run.npz"
    trace = sample(kernel, x0, 50, seed=1, warmup=100, checkpoint=path)
    assert trace.interrupted and trace.n_steps == 0 and trace.warmup is None
    assert not path.exists()
    assert trace.final.state.x.shape == (4, 2) and np.isfinite(trace.final.log_density).all()
