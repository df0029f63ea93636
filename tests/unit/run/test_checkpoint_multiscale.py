"""Checkpoints of the kernels with a state-dependent law, a volume-changing map, lifted LAHMC.

``refined_lahmc``, ``state_length_lahmc`` (the scale from the gradient, a bound method
as the hint, a lambda as the hint), ``LogScaleWalk`` (its Jacobian) and ``lifted_lahmc``,
on both schedules: a run checkpointed halfway and resumed equals the uninterrupted run
bit for bit — draws, rung codes, map applications, the recorded costs
(``step_cost``, ``step_overhead``, hence ``grad_evals``) and the final kernel state,
``α`` included. A checkpoint holds no code (the kernel, lambda and all, is passed to
``resume`` again), so nothing here needs a pickle. Time: about 1 s.
"""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import Checkpoint, LookAhead, lifted_lahmc, resume, sample
from ladder_mcmc.hamiltonian.refined_step import refined_lahmc
from ladder_mcmc.hamiltonian.state_length import state_length_lahmc
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.log_scale import LogScaleRefresh, LogScaleWalk
from ladder_mcmc.models import GammaTarget, NealsFunnel, RoughWell

FUNNEL = NealsFunnel(3)
N_CHAINS, N_STEPS, EVERY = 5, 16, 4


def _funnel_start():
    return FUNNEL.sample(N_CHAINS, np.random.default_rng(0))


CASES = {
    "refined": (
        lambda: refined_lahmc(FUNNEL, 0.8, n_steps=2, threshold=0.3, max_level=3),
        _funnel_start,
    ),
    "length, gradient scale": (
        lambda: state_length_lahmc(FUNNEL, 0.1, max_steps=16),
        _funnel_start,
    ),
    "length, method hint": (
        lambda: state_length_lahmc(FUNNEL, 0.1, max_steps=16, scale=NealsFunnel(10).local_scale),
        _funnel_start,
    ),
    "length, lambda hint": (
        lambda: state_length_lahmc(
            FUNNEL, 0.1, max_steps=16, scale=lambda x: np.exp(0.5 * x[:, 0])
        ),
        _funnel_start,
    ),
    "log-scale walk": (
        lambda: LookAhead(LogScaleWalk(GammaTarget(3.0, 2.0), 0.5), 3, LogScaleRefresh(0.5)),
        lambda: np.ones((N_CHAINS, 1)),
    ),
    "lifted": (
        lambda: lifted_lahmc(RoughWell(), 0.8, 10, inverse_mass=np.ones(2)),
        lambda: np.zeros((N_CHAINS, 2)),
    ),
}


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_resumed_run_equals_the_uninterrupted_one(tmp_path, name, schedule):
    make, start = CASES[name]
    options = {"seed": 7, "schedule": schedule, "warmup": 0}
    whole = sample(
        make(), start(), N_STEPS, checks=False, checkpoint=Checkpoint(every=EVERY), **options
    )
    path = tmp_path / "run.npz"
    saving = Checkpoint(path, every=EVERY)
    sample(make(), start(), N_STEPS // 2, checkpoint=saving, checks=False, **options)
    rest = resume(path, make(), N_STEPS // 2, checks=False)  # a new kernel: new lambda too
    for a, b in zip(batch.leaves(rest.states), batch.leaves(whole.states), strict=True):
        np.testing.assert_array_equal(a, b)
    for field in ("rungs", "n_moves", "non_finite_rungs", "grad_evals_per_step"):
        np.testing.assert_array_equal(getattr(rest, field), getattr(whole, field))
    for field in ("step_cost", "step_overhead"):
        a, b = getattr(rest, field), getattr(whole, field)
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)
    assert type(rest.final.state) is type(whole.final.state)
    final = zip(batch.leaves(rest.final.state), batch.leaves(whole.final.state), strict=True)
    for a, b in final:
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(rest.final.log_density, whole.final.log_density)
    assert len(np.unique(whole.rungs)) >= 2  # moves and flips, or several rungs
    if name == "refined":
        assert whole.step_overhead is not None and whole.step_overhead.sum() > 0
