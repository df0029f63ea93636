"""``Trace.grad_evals`` of the multiscale kernels is every gradient the steps evaluate.

``refined_lahmc`` and ``state_length_lahmc`` (the scale from the gradient, and a hint) on
both schedules: a counting target's rows equal ``trace.grad_evals`` exactly — the map
applications and the law at every rung, and, once per step, the redraw's probes and the
law at the refreshed origin (``Trace.step_overhead``). The ragged schedule refreshes
only the chains that decided, so it spends what the synchronous one does. Per chain: a
chain run alone (its own streams) counts what the batch recorded for it. The draws do not
depend on it: ragged and synchronous runs agree bit for bit. Time: about 1 s.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from multiscale_funnel import Funnel, neck_scale

from ladder_mcmc import Parallel, sample
from ladder_mcmc.diagnostics import GradientCounter
from ladder_mcmc.engine import ChainStreams, driver_for
from ladder_mcmc.engine.contract import run_synchronous
from ladder_mcmc.engine.numpy_loop import run_numpy
from ladder_mcmc.engine.streams import root_seed
from ladder_mcmc.hamiltonian.refined_step import refined_lahmc
from ladder_mcmc.hamiltonian.state_length import state_length_lahmc
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import LadderState
from ladder_mcmc.run.recorder import Recorder

FUNNEL = Funnel(3)
N_CHAINS, N_STEPS, SEED = 6, 12, 3
KERNELS = {
    # levels 0 … 3 over the funnel: probes at every level, some chains at the top
    "refined": lambda t: refined_lahmc(t, 0.8, n_steps=2, threshold=0.3, max_level=3),
    "length, gradient scale": lambda t: state_length_lahmc(t, 0.1, max_steps=20),
    "length, hint": lambda t: state_length_lahmc(t, 0.1, max_steps=20, scale=neck_scale),
}


def prepared(name, n=N_CHAINS):
    """A kernel on a counting target, its initial kernel state, and the target (reset)."""
    counting = GradientCounter(FUNNEL)
    kernel = KERNELS[name](counting)
    rng = ChainStreams.for_chains(0, n).view()
    ks = kernel.init(FUNNEL.sample(n, np.random.default_rng(0)), rng)
    # the initial state's preparation (Ladder.init) is outside the trace, and so is the one
    # `sample` makes again of a kernel state (nothing another kernel cached is reused)
    counting.rows = 0
    kernel.init(ks.state, rng, direction=ks.direction)
    counting.rows = -counting.rows
    return kernel, ks, counting


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_the_trace_counts_every_gradient_of_the_steps(name, schedule):
    kernel, ks, counting = prepared(name)
    trace = sample(kernel, ks, N_STEPS, seed=SEED, schedule=schedule, warmup=0, checks=False)
    assert counting.rows == int(trace.grad_evals.sum())
    assert len(np.unique(trace.step_cost)) > 2  # chains at different levels or lengths
    if name == "refined":
        # the redraw and the law at the refreshed origin: without them the count is short
        assert trace.step_overhead is not None and np.all(trace.step_overhead > 0)
        applications = int((trace.n_moves.astype(np.int64) * trace.step_cost).sum())
        assert counting.rows == applications + int(trace.step_overhead.sum())
    else:
        assert trace.step_overhead is None  # the length law costs no gradient


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_each_chain_costs_what_the_trace_records_for_it(schedule):
    """Chains 0 and 4, each run alone on its own streams, against the batch's record."""
    kernel, ks, _ = prepared("refined")
    whole = sample(kernel, ks, N_STEPS, seed=SEED, schedule=schedule, warmup=0, checks=False)
    for i in (0, 4):
        one, counting = KERNELS["refined"], GradientCounter(FUNNEL)
        rows = np.array([i])
        alone = LadderState(
            batch.take(ks.state, rows), ks.direction[rows], ks.log_density[rows], None
        )
        streams = ChainStreams(root_seed(SEED), rows)
        kernel_alone = one(counting)
        kernel_alone.init(alone.state, streams.view(), direction=alone.direction)
        counting.rows = -counting.rows  # sample's preparation of the kernel state, again
        trace = sample(kernel_alone, alone, N_STEPS, seed=streams, schedule=schedule, warmup=0)
        np.testing.assert_array_equal(trace.positions[:, 0], whole.positions[:, i])
        assert counting.rows == int(whole.grad_evals[i]) == int(trace.grad_evals[0])


def test_both_schedules_agree():
    for name in KERNELS:
        kernel, ks, _ = prepared(name)
        assert driver_for(kernel, "ragged") is run_numpy
        assert driver_for(kernel, "synchronous") is run_synchronous
        a, b = (
            sample(kernel, ks, N_STEPS, seed=SEED, schedule=s, warmup=0, checks=False)
            for s in ("ragged", "synchronous")
        )
        np.testing.assert_array_equal(a.positions, b.positions)
        np.testing.assert_array_equal(a.rungs, b.rungs)
        np.testing.assert_array_equal(a.grad_evals_per_step, b.grad_evals_per_step)


def test_groups_over_an_executor_keep_the_overhead():
    kernel, ks, _ = prepared("refined")
    whole = sample(kernel, ks, N_STEPS, seed=SEED, warmup=0, checks=False)
    with ThreadPoolExecutor(2) as pool:
        split = sample(
            kernel,
            ks,
            N_STEPS,
            seed=SEED,
            warmup=0,
            executor=Parallel(pool, groups=2),
            checks=False,
        )
    np.testing.assert_array_equal(split.step_overhead, whole.step_overhead)
    np.testing.assert_array_equal(split.grad_evals, whole.grad_evals)


def test_the_recorder_adds_the_overhead_to_every_step():
    rec, ones, chains = Recorder(3, 2), np.ones(2, dtype=np.int64), np.arange(2)
    rec.record_row(0, np.zeros((2, 1)), ones, [2, 3], 0 * ones, [5, 7], [10, 20])
    rec.record_masked(None, chains, ones, np.zeros((2, 1)), ones, ones, 0 * ones, 4 * ones, ones)
    rec.record(chains, 2 * ones, None, ones, ones, 0 * ones, ones)
    rec.flush()
    np.testing.assert_array_equal(
        rec.grad_evals_per_step(1), [[2 * 5 + 10, 3 * 7 + 20], [4 + 1, 4 + 1], [1, 1]]
    )
