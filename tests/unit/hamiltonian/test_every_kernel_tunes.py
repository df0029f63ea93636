"""Every tuning-free kernel tunes (issue 28, item 8): on standard Gaussians of 2 and 100
dimensions, ``sample``'s warm-up of each kernel built with its defaults adapts a step
within a factor 3 of ``lahmc``'s, and its rungs are finite (fewer than 1 % of density
zero: for a kernel with a law, a rung outside the law's range at its origin).

Before the fix, ``state_length_lahmc``'s law read the raw gradient, uncapped: in 2-d it
adapted ``ε = 0.018`` (``lahmc``: 1.27) with 28 % of its rungs of density zero, in 100-d
2.3 % (4 chains, 300 + 500 steps, seed 1; the check failed on both). ``refined_lahmc``
adapted ``ε = 12.5`` in 2-d with 8 % of its rungs of density zero, and 29 % in 100-d
(``ε = 0.54``): its dual averaging of the first-rung fraction met only the law's
rejections, the refinement removing the energy's; its warm-up now caps ``ε`` where the
law's level-0 probe stays accurate (``hamiltonian/warmup/probe_cap.py``).

Still missed, marked ``xfail(strict=True)`` so that a change shows: ``lifted_lahmc`` in
100-d (``ε = 0.155``, 3.5 times below ``lahmc``'s). Its warm-up is right for its own
dynamics: at ``ε`` fixed by hand it takes the first rung at 0.78 of its steps at 0.155
and 0.53 at 0.25 (target 0.8). The power kinetic energy ``|w|^1.25 / 1.25`` is not
smooth at ``w = 0``, so its leapfrog's energy error grows faster with the dimension
than the Gaussian's; no change of units accounts for the factor (its root mean square
speed ``|w|^0.25`` is 0.93, the Gaussian's 1).
``tests/mutation/test_step_tuning_mutants.py`` shows the check catches the old law.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from ladder_mcmc import hmc, lahmc, lifted_lahmc, sample
from ladder_mcmc.hamiltonian import refined_lahmc, span_lahmc, state_length_lahmc
from ladder_mcmc.models import IllConditionedGaussian

WARMUP, STEPS, CHAINS, SEED = 300, 500, 4, 1
#: the issue's aims: the step within this factor of lahmc's, and at most this fraction of
#: the rungs of density zero
FACTOR, NON_FINITE = 3.0, 0.01

KERNELS = {
    "lahmc": lahmc,
    "hmc": hmc,
    "lifted_lahmc": lifted_lahmc,
    "state_length_lahmc": state_length_lahmc,
    "refined_lahmc": refined_lahmc,
    "span_lahmc": span_lahmc,
}
MISSED = {
    (
        "lifted_lahmc",
        100,
    ): "its power kinetic energy's leapfrog needs a step 3.5 times below lahmc's",
}
SLOW = {("lifted_lahmc", 100), ("span_lahmc", 100)}


def gaussian(dim: int) -> IllConditionedGaussian:
    return IllConditionedGaussian(dim, log_condition=0)


def tuned(kernel, dim: int) -> tuple[float, float]:
    """``(adapted ε, fraction of the sampling's rungs of density zero)`` of ``kernel``
    on the standard Gaussian of ``dim`` dimensions (numpy backend)."""
    init = gaussian(dim).sample(CHAINS, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short run's R̂ warnings: not what is checked
        trace = sample(kernel, init, STEPS, seed=SEED, warmup=WARMUP, backend="numpy")
    return float(trace.warmup.step_size), trace.non_finite / max(int(trace.n_moves.sum()), 1)


@functools.cache
def lahmc_step(dim: int) -> float:
    return tuned(lahmc(gaussian(dim)), dim)[0]


def assert_tunes(kernel, dim: int) -> None:
    """The issue's check: ``ε`` within :data:`FACTOR` of ``lahmc``'s, fewer than
    :data:`NON_FINITE` of the rungs of density zero."""
    step, non_finite = tuned(kernel, dim)
    reference = lahmc_step(dim)
    assert reference / FACTOR <= step <= reference * FACTOR, (step, reference)
    assert non_finite < NON_FINITE, non_finite


def _cases():
    for dim in (2, 100):
        for name in KERNELS:
            marks = []
            if (name, dim) in MISSED:
                marks.append(pytest.mark.xfail(reason=MISSED[name, dim], strict=True))
            if (name, dim) in SLOW:
                marks.append(pytest.mark.slow)
            yield pytest.param(name, dim, marks=marks, id=f"{name}-{dim}d")


@pytest.mark.parametrize(("name", "dim"), list(_cases()))
def test_the_default_warm_up_adapts_a_step_like_lahmcs(name, dim):
    assert_tunes(KERNELS[name](gaussian(dim)), dim)
