"""``ladder_mcmc.sample`` given a target runs the default kernel, ``lahmc(target)``."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import ladder_mcmc
from ladder_mcmc import lahmc, sample
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.run import resume as run_resume
from ladder_mcmc.run import sample as run_sample

TARGET = IllConditionedGaussian(2, log_condition=1)
X0 = TARGET.sample(4, np.random.default_rng(0))


def test_a_target_runs_lahmc_of_it_with_the_same_draws():
    by_target = sample(TARGET, X0, 30, seed=1, warmup=100, checks=False)
    by_kernel = sample(lahmc(TARGET), X0, 30, seed=1, warmup=100, checks=False)
    np.testing.assert_array_equal(by_target.positions, by_kernel.positions)
    assert by_target.kernel == by_kernel.kernel


@pytest.mark.parametrize(
    ("public", "run"), [(ladder_mcmc.sample, run_sample), (ladder_mcmc.resume, run_resume)]
)
def test_the_top_level_has_runs_signature_with_a_target_allowed_and_its_docs(public, run):
    ours, theirs = inspect.signature(public), inspect.signature(run, eval_str=True)
    assert list(ours.parameters) == list(theirs.parameters)
    assert ours.parameters["kernel"].annotation == ladder_mcmc.Ladder | ladder_mcmc.Target
    assert ours.return_annotation is theirs.return_annotation
    assert public.__doc__ == run.__doc__ and "lahmc(target)" in public.__doc__


def test_the_top_level_sample_pickles_for_process_pools():
    assert pickle.loads(pickle.dumps(ladder_mcmc.sample)) is ladder_mcmc.sample
    assert pickle.loads(pickle.dumps(ladder_mcmc.resume)) is ladder_mcmc.resume


def test_a_run_started_from_a_target_resumes_from_the_target(tmp_path):
    path = tmp_path / "run.npz"
    first = sample(TARGET, X0, 30, seed=1, warmup=100, checks=False, checkpoint=path)
    went_on = ladder_mcmc.resume(path, TARGET, 50, checks=False)
    np.testing.assert_array_equal(went_on.positions[:30], first.positions)
    assert went_on.positions.shape[0] == 80  # 50 more steps


@pytest.mark.parametrize("bad", [None, 3, lambda x: x])
def test_neither_kernel_nor_target_is_refused_naming_both(bad):
    with pytest.raises(ValueError, match="kernel must be a Ladder kernel .* or a target"):
        sample(bad, X0, 10, seed=1)
    with pytest.raises(ValueError, match="kernel must be a Ladder kernel"):
        run_sample(TARGET, X0, 10, seed=1)
