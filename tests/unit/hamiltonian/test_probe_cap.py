"""``refined_lahmc``'s warm-up cap (``hamiltonian/warmup/probe_cap.py``): the largest
step on its grid at which every level-0 probe is accurate, and a warm-up that stays
below it."""

from __future__ import annotations

import math

import attrs
import numpy as np

from ladder_mcmc import sample
from ladder_mcmc.hamiltonian import Leapfrog, Metric, refined_lahmc
from ladder_mcmc.hamiltonian.refined_step import RefinementLaw
from ladder_mcmc.hamiltonian.warmup.probe_cap import GRID, PROBES, accurate_step
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.auxiliary import AuxiliaryLaw
from ladder_mcmc.models import IllConditionedGaussian

TARGET = IllConditionedGaussian(3, log_condition=1)


def _probes(law, inner, seed):
    """The states ``accurate_step`` probes when given ``np.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    n = batch.n_chains(inner)
    copies = math.ceil(PROBES / n)
    state = batch.take(inner, np.tile(np.arange(n), copies))
    shape = (n, inner.v.shape[-1])
    momenta = [law.metric.sample_momentum(rng, shape) for _ in range(copies)]
    return attrs.evolve(state, v=np.concatenate(momenta)), copies


def _all_accurate(law, state, eps):
    return bool(np.all(attrs.evolve(law, step_size=eps).probe_error(state, 0) <= law.threshold))


def test_the_cap_is_the_largest_accurate_step_of_its_grid():
    law = RefinementLaw(TARGET, 1.0, metric=Metric(np.ones(3)))
    x = TARGET.sample(4, np.random.default_rng(0))
    inner = Leapfrog(TARGET, 1.0, 1, Metric(np.ones(3))).prepare(x, np.random.default_rng(1))
    caps = set()
    for start in (0.01, 0.3, 5.0):
        cap, spent = accurate_step(law, inner, start, np.random.default_rng(2))
        state, copies = _probes(law, inner, 2)
        k = math.log(cap / start) / math.log(GRID)
        assert abs(k - round(k)) < 1e-9  # on the grid through ``start``
        assert _all_accurate(law, state, cap) and not _all_accurate(law, state, cap * GRID)
        assert spent.shape == (4,) and spent[0] > 0 and spent[0] % (2 * copies) == 0
        caps.add(round(math.log(cap), 6))
    # grids through different starts: the caps agree within one grid step
    assert max(caps) - min(caps) < math.log(GRID)


def test_the_refined_warm_up_ends_below_the_cap():
    x0 = TARGET.sample(4, np.random.default_rng(1))
    trace = sample(refined_lahmc(TARGET), x0, 20, seed=3, warmup=100, checks=False)
    eps = trace.warmup.step_size
    kernel = refined_lahmc(TARGET, eps, inverse_mass=trace.warmup.inverse_mass)
    inner = trace.final.state.inner
    cap, _ = accurate_step(kernel.map.law, inner, eps, np.random.default_rng(4))
    assert eps <= cap * GRID  # at most one grid step above a fresh cap at its end
    assert trace.non_finite == 0


class _TwoLevels(AuxiliaryLaw):
    """A law of one's own on the refined family: level 0 or 1, each with probability ½,
    whatever the state (flip-invariant)."""

    def log_prob(self, alpha, state):
        return np.full(np.shape(alpha), np.log(0.5))

    def sample(self, state, rng):
        return (rng.random(np.shape(state.x)[0]) < 0.5).astype(np.int64)


def test_a_law_of_ones_own_on_the_refined_family_warms_up_as_the_leapfrog_family():
    """The probe cap reads ``RefinementLaw``'s probes; another law gets the leapfrog
    family's warm-up instead of failing on a missing ``probe_error``."""
    from ladder_mcmc import Warmup
    from ladder_mcmc.hamiltonian.leapfrog_family import auxiliary_lahmc, leapfrog_start
    from ladder_mcmc.hamiltonian.refined_step import RefinedLeapfrog
    from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation
    from ladder_mcmc.hamiltonian.warmup.probe_cap import ProbeCappedAdaptation

    step_size, metric, adapt = leapfrog_start(None, None)
    family = RefinedLeapfrog(TARGET, step_size, metric, 4)
    kernel = auxiliary_lahmc(family, _TwoLevels(), 1.0, 4, adapt)
    x = TARGET.sample(4, np.random.default_rng(0))
    settings = Warmup(60)
    assert type(family.adaptation(kernel, settings, x)) is HMCAdaptation
    capped = family.adaptation(refined_lahmc(TARGET), settings, x)
    assert type(capped) is ProbeCappedAdaptation
    trace = sample(kernel, x, 20, seed=1, warmup=60)
    assert trace.warmup.step_size > 0 and np.isfinite(trace.positions).all()
