"""The ragged driver: reproducibility, honest cost accounting, partial runs.

(Agreement in law with the synchronous driver: tests/statistical/test_drivers.py;
one-step exact laws of both drivers: tests/exact/ and tests/unit/drivers/test_rules_drivers.py.)
Time: about 3 s.
"""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import Ladder, Leapfrog, MomentumRefresh, hmc, lahmc, sample
from ladder_mcmc.diagnostics import GradientCounter
from ladder_mcmc.ladder import PersistentUniformRule, ReducedFlipLookAheadRule
from ladder_mcmc.models import FunctionTarget, RoughWell

WELL = RoughWell()
X0 = WELL.sample(12, np.random.default_rng(0))


def _kernels():
    leapfrog, refresh = Leapfrog(WELL, 1.0, 10), MomentumRefresh(0.1)
    return {
        "hmc": hmc(WELL, 1.0, 10, 0.1),
        "lahmc": lahmc(WELL, 1.0, 10, 0.1),
        "reduced-flip": Ladder(leapfrog, ReducedFlipLookAheadRule(3), refresh),
        "persistent-uniform": Ladder(leapfrog, PersistentUniformRule(3), refresh),
    }


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize("name", list(_kernels()))
def test_same_seed_gives_a_bit_identical_run(name, schedule):
    kernel = _kernels()[name]
    a = sample(kernel, X0, 60, seed=4, schedule=schedule, warmup=0)
    b = sample(kernel, X0, 60, seed=4, schedule=schedule, warmup=0)
    c = sample(kernel, X0, 60, seed=5, schedule=schedule, warmup=0)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_array_equal(a.n_moves, b.n_moves)
    np.testing.assert_array_equal(a.final.state.v, b.final.state.v)
    np.testing.assert_array_equal(a.final.direction, b.final.direction)
    if a.final.carry is not None:
        np.testing.assert_array_equal(a.final.carry, b.final.carry)
    assert not np.array_equal(a.positions, c.positions)
    # the final state is the state after the last step
    np.testing.assert_array_equal(a.final.state.x, a.positions[-1])


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize("look_ahead", [1, 4])
def test_grad_evals_count_every_gradient_computed(look_ahead, schedule):
    """``trace.grad_evals`` is the true cost: no rung is computed and left unrecorded.

    (The overhead benchmark divides wall time by it.) Besides the rungs, the
    only gradients are the ones of the initial positions (and, unless ``checks=False``,
    those of the gradient check before sampling).
    """
    target = GradientCounter(WELL)  # chain-gradients: rows of every grad call
    kernel = lahmc(FunctionTarget(target.energy, target.grad, dim=2), 1.0, 10, 0.1, look_ahead)
    trace = sample(kernel, X0, 80, seed=2, schedule=schedule, checks=False, warmup=0)
    assert target.rows == trace.grad_evals.sum() + len(X0)


@pytest.mark.parametrize("thin", [1, 3])
def test_an_interrupted_ragged_run_is_a_prefix_of_the_full_run(thin):
    """Chains finish steps at different times; only steps every chain completed are kept.

    The kept prefix equals the uninterrupted run (same seed), and no draw of a
    step still in progress (the recorder's placeholders) shows.
    """
    kernel = lahmc(WELL, 1.0, 10, 0.1)
    full = sample(kernel, X0, 200, seed=9, thin=thin, warmup=0)
    calls = {"n": 0}

    def grad(x):
        calls["n"] += 1
        if calls["n"] == 2_000:  # about halfway
            raise KeyboardInterrupt
        return WELL.grad(x)

    stopping = FunctionTarget(WELL.energy, grad, dim=2)
    part = sample(lahmc(stopping, 1.0, 10, 0.1), X0, 200, seed=9, thin=thin, warmup=0)
    assert part.interrupted and 0 < part.n_steps < 200
    kept = part.n_steps // thin
    assert part.positions.shape == (kept, 12, 2)
    np.testing.assert_array_equal(part.positions, full.positions[:kept])
    np.testing.assert_array_equal(part.rungs, full.rungs[: part.n_steps])
    np.testing.assert_array_equal(part.n_moves, full.n_moves[: part.n_steps])


def test_checkpoint_blocks_do_not_change_the_law_of_the_bookkeeping():
    """``until`` (used by checkpointing) stops every chain exactly at the block end."""
    kernel = lahmc(WELL, 1.0, 10, 0.1)
    trace = sample(kernel, X0, 50, seed=3, checkpoint_every=7, warmup=0)
    assert trace.positions.shape == (50, 12, 2)
    assert trace.rung_counts.sum() == 50 * 12
    expected_moves = np.where(trace.rungs == 0, 4, trace.rungs)
    np.testing.assert_array_equal(trace.n_moves, expected_moves)
    np.testing.assert_array_equal(trace.final.state.x, trace.positions[-1])
