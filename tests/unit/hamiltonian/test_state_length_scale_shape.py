"""``state_length_lahmc(target, scale=f)`` with an ``f`` of the wrong shape (issue 28,
item 6): one ``ValueError`` naming ``scale``, the shape it returned and the one expected,
at its first evaluation (``Ladder.init``), before any step, on both backends. Before,
a scalar failed deep in the law's draw (``IndexError: tuple index out of range``) and a
wrong length in the random streams."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import sample
from ladder_mcmc.hamiltonian import state_length_lahmc
from ladder_mcmc.models import IllConditionedGaussian

TARGET = IllConditionedGaussian(2, log_condition=0)
INIT = TARGET.sample(4, np.random.default_rng(0))
WRONG = {
    "scalar": (lambda x: 1.0, r"\(\)"),
    "short": (lambda x: np.ones(3), r"\(3,\)"),
    "column": (lambda x: np.ones((x.shape[0], 1)), r"\(4, 1\)"),
}


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize("which", list(WRONG))
def test_a_scale_of_the_wrong_shape_is_refused_before_any_step(which, backend):
    if backend == "jax":
        pytest.importorskip("jax")
    scale, returned = WRONG[which]
    calls = []

    def counted(x):
        calls.append(x.shape)
        return scale(x)

    kernel = state_length_lahmc(TARGET, scale=counted)
    expected = r"^scale must return .*shape \(4,\), for positions of shape \(4, 2\); "
    with pytest.raises(ValueError, match=expected + rf"it returned shape {returned}$"):
        sample(kernel, INIT, 10, seed=1, warmup=30, backend=backend)
    assert calls == [(4, 2)]  # one probe, at the initial positions


def test_a_scale_of_the_right_shape_samples():
    kernel = state_length_lahmc(TARGET, 0.5, scale=lambda x: np.ones(x.shape[0]))
    assert sample(kernel, INIT, 5, seed=1).positions.shape == (5, 4, 2)
