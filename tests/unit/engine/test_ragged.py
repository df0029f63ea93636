"""The ragged step and its two loops: reproducible, honest in what it records, exact laws.

* the numpy loop: the same seed gives the same run (both schedules); every gradient is
  counted; an interrupted run keeps a prefix of the uninterrupted one; checkpoint blocks
  stop every chain at the block's end; each step records ``C_0``, its first stage's
  probability, computed from the step's origin (``StepRecord.first_prob``);
* the rules' one-step laws through both schedules (20 000 chains against the exact
  rows), and what they report;
* the JAX loop: chains that have taken different numbers of steps (each its own blocks,
  its own numbers; chains idle while others finish) and short blocks cut by checkpoints
  give the numpy loop's records; a kernel with other numbers (step size, mass, β) reuses
  the compilation.

(Agreement in law of the schedules: tests/statistical/test_drivers.py; bit for bit:
``test_composition.py`` and ``test_exact_schedules.py``.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from driver_equivalence import assert_close_trace, assert_first_stage_probabilities

from ladder_mcmc import Checkpoint, Ladder, Leapfrog, LookAhead, MomentumRefresh, hmc, lahmc, sample
from ladder_mcmc.diagnostics import GradientCounter
from ladder_mcmc.engine.numpy_loop import run_numpy
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.hamiltonian import Yoshida4
from ladder_mcmc.ladder import (
    LookAheadRule,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
)
from ladder_mcmc.models import FunctionTarget, RoughWell
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.verify import FiniteLadder, exact_transition_matrix, extended_index

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

    Besides the rungs, the only gradients are the ones of the initial positions (and,
    unless ``checks=False``, those of the gradient check before sampling).
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
    trace = sample(kernel, X0, 50, seed=3, checkpoint=Checkpoint(every=7), warmup=0)
    assert trace.positions.shape == (50, 12, 2)
    assert trace.rung_counts.sum() == 50 * 12
    expected_moves = np.where(trace.rungs == 0, 4, trace.rungs)
    np.testing.assert_array_equal(trace.n_moves, expected_moves)
    np.testing.assert_array_equal(trace.final.state.x, trace.positions[-1])


@pytest.mark.parametrize(
    "rule", [LookAheadRule(4), ReducedFlipLookAheadRule(3)], ids=["LA4", "RFLA3"]
)
def test_each_step_records_its_first_stage_probability(rule):
    """``StepRecord.first_prob`` is ``C_0`` of the step, computed from the step's origin,
    whatever stage the chain decided at (40 chains, 200 map calls of the numpy loop)."""
    kernel = Ladder(Leapfrog(WELL, 1.4, 10), rule, MomentumRefresh(0.5))
    assert_first_stage_probabilities(kernel, WELL.sample(40, np.random.default_rng(1)))


# ---------------------------------------------------------------- the rules' laws
LADDER = FiniteLadder([3, 0, 4, 1, 2], [2, 5, 1, 4, 3])
CHAINS = 20_000


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize(
    ("rule", "exact_rule"),
    [
        (ReducedFlipRule(), ReducedFlipRule()),
        (ReducedFlipLookAheadRule(3), ReducedFlipLookAheadRule(3)),
        # averaged over its uniform (drawn uniformly by init), one step is LAHMC's
        (PersistentUniformRule(3), LookAheadRule(3)),
    ],
    ids=["RF", "RFLA3", "PU3"],
)
@pytest.mark.parametrize("start", [(1, 1), (4, -1)])
def test_one_step_frequencies_match_the_exact_row(schedule, rule, exact_rule, start):
    """20 000 chains from one extended state: destination frequencies vs the exact row.

    Tolerance: 5 binomial standard errors per destination (about 1e-6 per cell
    of being exceeded by chance for a correct loop).
    """
    i, d = start
    kernel = Ladder(LADDER, rule)
    rng = np.random.default_rng(7)
    ks = kernel.init(np.full(CHAINS, i), rng, direction=np.full(CHAINS, d))
    trace = sample(kernel, ks, 1, seed=rng, schedule=schedule, warmup=0, checks=False)
    final = trace.final
    dest = extended_index(final.state, final.direction, LADDER.n)
    freq = np.bincount(dest, minlength=2 * LADDER.n) / CHAINS
    row = exact_transition_matrix(exact_rule, LADDER)[extended_index(i, d, LADDER.n)]
    p = row.astype(float)
    se = np.sqrt(p * (1 - p) / CHAINS)
    assert np.all(np.abs(freq - p) <= 5 * se + 1e-12), (freq, p)


def test_reduced_flip_trace_reports_stays_and_backward_rungs():
    target = RoughWell()
    rng = np.random.default_rng(0)
    kernel = Ladder(Yoshida4(target, 1.0, 4), ReducedFlipRule())
    trace = sample(kernel, target.sample(50, rng), 200, seed=1, warmup=0)
    fr = trace.transition_fractions()
    assert set(fr) == {"F", "L1", "stay"}
    assert sum(fr.values()) == pytest.approx(1.0)
    # a chain that rejected L computed the backward rung too: 2 map applications
    rejected = trace.rungs != 1
    assert np.all(trace.n_moves[rejected] == 2)
    assert np.all(trace.n_moves[~rejected] == 1)
    # flips are rarer than Metropolis' on the same target and map (measured, not exact)
    mh = sample(LookAhead(kernel.map, 1), target.sample(50, rng), 200, seed=1, warmup=0)
    assert fr["F"] < mh.transition_fractions()["F"]


def test_persistent_uniform_carry_survives_the_ragged_loop():
    from fractions import Fraction

    rng = np.random.default_rng(3)
    kernel = Ladder(LADDER, PersistentUniformRule(2, delta=Fraction(1, 4)))
    trace = sample(kernel, rng.integers(0, 5, 30), 40, seed=4, warmup=0)
    carry = trace.final.carry
    assert carry.shape == (30,) and np.all((-1 <= carry) & (carry < 1))


def test_rules_describe_themselves():
    assert PersistentUniformRule(2, 0.05).describe() == {
        "rule": "PersistentUniformRule",
        "max_rungs": 2,
        "delta": "0.05",
    }
    assert ReducedFlipRule().describe() == {"rule": "ReducedFlipRule", "max_rungs": 1}
    with pytest.raises(TypeError):
        ReducedFlipRule(2)  # K is fixed to 1


# ---------------------------------------------------------------- the JAX loop
jax = pytest.importorskip("jax")
jnp = jax.numpy

from ladder_mcmc.engine import jax_loop  # noqa: E402
from ladder_mcmc.models import from_jax  # noqa: E402

DIM = 4
_COV = np.array(
    [[1.0, 0.5, 0.0, 0.1], [0.5, 2.0, 0.3, 0.0], [0.0, 0.3, 0.5, 0.0], [0.1, 0.0, 0.0, 1.5]]
)
_PREC = np.linalg.inv(_COV)


def _gauss(x):
    return -0.5 * x @ (jnp.asarray(_PREC) @ x)


GAUSS = from_jax(_gauss, DIM)
JAX_KERNEL = lahmc(GAUSS, 0.3, 6, 0.2, 4, length_jitter=0.8)


def _different_steps(run, block: int):
    """The recorder and final state of ``run`` on 16 chains that have taken different
    numbers of steps before (up to step 60)."""
    x0 = np.random.default_rng(4).normal(size=(16, DIM)) * 0.5
    done_before = np.array([0, 3, 17, 40, 0, 59, 58, 57, 10, 20, 30, 45, 50, 55, 59, 1])
    streams = ChainStreams.for_chains(5, x0.shape[0])
    ks = JAX_KERNEL.init(x0, streams.view())
    recorder = Recorder(80, x0.shape[0], max_rung=4)
    recorder.steps_done[:] = done_before
    saved = jax_loop.BLOCK
    jax_loop.BLOCK = block
    try:
        with np.errstate(all="ignore"):
            final = run(JAX_KERNEL, ks, recorder, streams, until=60)
    finally:
        jax_loop.BLOCK = saved
    return recorder, final


def assert_same_records(a, b) -> None:
    (rec_a, final_a), (rec_b, final_b) = a, b
    np.testing.assert_array_equal(rec_b.steps_done, np.full(rec_b.n_chains, 60))
    np.testing.assert_array_equal(rec_a.steps_done, rec_b.steps_done)
    for name in ("rungs", "n_moves", "non_finite", "step_cost"):
        np.testing.assert_array_equal(getattr(rec_a, name), getattr(rec_b, name))
    draws_a, draws_b = np.asarray(rec_a.draws), np.asarray(rec_b.draws)
    np.testing.assert_allclose(draws_a, draws_b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(final_a.state.x, final_b.state.x, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(final_a.state.n_leapfrog, final_b.state.n_leapfrog)
    np.testing.assert_array_equal(final_a.direction, final_b.direction)


def test_chains_at_different_steps_on_jax_are_the_numpy_loop():
    """A recorder whose 16 chains have taken 0 … 59 steps: in blocks of 16, each chain its
    own steps and numbers, idle while the others finish; the numpy loop's records."""
    reference = _different_steps(run_numpy, 16)
    assert_same_records(reference, _different_steps(jax_loop.run_jax, 16))


def test_short_blocks_cut_by_checkpoints_on_jax_are_the_numpy_loop(monkeypatch):
    """Compiled blocks of 17 steps within checkpoint blocks of 40 (``until``)."""
    monkeypatch.setattr(jax_loop, "BLOCK", 17)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = {"seed": 3, "warmup": 0, "checks": False, "checkpoint": Checkpoint(every=40)}
        x0 = np.random.default_rng(1).normal(size=(6, DIM)) * 0.5
        numpy_run = sample(JAX_KERNEL, x0, 100, backend="numpy", **options)
        jax_run = sample(JAX_KERNEL, x0, 100, backend="jax", **options)
    assert_close_trace(numpy_run, jax_run)
    assert len(np.unique(numpy_run.rungs)) > 2


def test_other_numbers_reuse_the_compilation():
    """Step size, inverse mass, β and the length's centre are traced leaves of the
    kernel: a kernel that differs only in them runs on the same compiled loop."""
    x0 = np.random.default_rng(1).normal(size=(6, DIM)) * 0.5
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step, mass, beta, length in ((0.3, None, 0.2, 6), (0.25, np.full(DIM, 2.0), 0.5, 9)):
            kernel = lahmc(GAUSS, step, length, beta, 3, inverse_mass=mass, length_jitter=0.5)
            sample(kernel, x0, 20, seed=1, warmup=0, checks=False, backend="jax")  # compiled
            before = jax_loop.compilations()
            runs.append(sample(kernel, x0, 20, seed=1, warmup=0, checks=False, backend="jax"))
            assert jax_loop.compilations() == before
        kernel = lahmc(
            GAUSS, 0.2, 4, 0.3, 3, inverse_mass=np.linspace(1, 2, DIM), length_jitter=0.5
        )
        before = jax_loop.compilations()
        sample(kernel, x0, 20, seed=1, warmup=0, checks=False, backend="jax")
    assert jax_loop.compilations() == before  # no new compilation for other numbers
    assert not np.allclose(runs[0].positions, runs[1].positions)
