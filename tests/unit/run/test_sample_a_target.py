"""``ladder_mcmc.sample`` given a target runs the default kernel, ``lahmc(target)``."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import ladder_mcmc
from ladder_mcmc import lahmc, sample
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.run import sample as run_sample

TARGET = IllConditionedGaussian(2, log_condition=1)
X0 = TARGET.sample(4, np.random.default_rng(0))


def test_a_target_runs_lahmc_of_it_with_the_same_draws():
    by_target = sample(TARGET, X0, 30, seed=1, warmup=100, checks=False)
    by_kernel = sample(lahmc(TARGET), X0, 30, seed=1, warmup=100, checks=False)
    np.testing.assert_array_equal(by_target.positions, by_kernel.positions)
    assert by_target.kernel == by_kernel.kernel


def test_the_top_level_sample_has_run_samples_signature_and_documents_the_target():
    assert inspect.signature(ladder_mcmc.sample) == inspect.signature(run_sample)
    assert "runs the\n        default kernel on it" in ladder_mcmc.sample.__doc__


@pytest.mark.parametrize("bad", [None, 3, lambda x: x])
def test_neither_kernel_nor_target_is_refused_naming_both(bad):
    with pytest.raises(ValueError, match="kernel must be a Ladder kernel .* or a target"):
        sample(bad, X0, 10, seed=1)
    with pytest.raises(ValueError, match="kernel must be a Ladder kernel"):
        run_sample(TARGET, X0, 10, seed=1)
