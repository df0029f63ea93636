"""The suite fails a sampler of the wrong law, on the standard deviations' z, at the quick
suite's sizes: a tempered target, a biased refresh, a wrong flip, a map that is not
volume-preserving. The correct kernel passes the same runs (same model, sizes, seed)."""

from __future__ import annotations

import functools

import attrs
import numpy as np
import pytest

from ladder_mcmc import MomentumRefresh, ReversibleMap, lahmc
from ladder_mcmc.bench import SUITE, Moments, SamplerRun, figures_of, judge, run_suite
from ladder_mcmc.bench.figures import reference_mcse_sd
from ladder_mcmc.hamiltonian.jittered_length import JitteredLengthLeapfrog
from ladder_mcmc.paper import cli
from ladder_mcmc.paper.bench_command import QUICK

GAUSS = SUITE["gauss2"]


def _quick(factory, model):
    """The quick suite's run of ``factory`` on ``model`` (its one seed)."""
    sizes = {k: QUICK[k] for k in ("chains", "warmup", "draws")}
    (run,) = run_suite(factory, models=[model], seeds=0, **sizes).runs
    return run


@functools.cache
def _correct(model, beta=None):
    return _quick(lambda t: lahmc(t, beta=beta), model)


def _fails_on_the_sd(broken, model, beta=None):
    """``broken`` fails on the sds' z (its means may pass); the correct kernel passes."""
    correct = _correct(model, beta)
    assert correct.passed, correct.verdict.reasons
    assert not broken.passed
    assert "sd" in broken.verdict.rules, broken.verdict.reasons
    assert broken.figures.max_abs_z_sd > 5 and correct.figures.max_abs_z_sd <= 5


# ---- the check itself, on exact draws -------------------------------------------------


def _exact(n=1000, chains=4, seed=0):
    target = GAUSS.target()
    return target.sample(n * chains, np.random.default_rng(seed)).reshape(n, chains, 2)


def _verdict(x):
    target = GAUSS.target()
    run = SamplerRun(x, grad_evals=1e4, warmup_grad_evals=1e4, wall_time=1.0)
    figures = figures_of(run, GAUSS.quantities(target, x), GAUSS.moments(target))
    return figures, judge(figures)


def test_exact_draws_pass_and_draws_a_tenth_too_wide_fail_on_the_sd_alone():
    figures, verdict = _verdict(_exact())
    assert verdict.passed and figures.max_abs_z_sd < 5
    figures, verdict = _verdict(1.1 * _exact())  # means unchanged (0), sds 10 % too wide
    assert figures.max_abs_z < 5 and figures.max_rhat < 1.01
    assert verdict.rules == ("sd",) and "sd |z|" in verdict.reasons[0]


def test_the_reference_sds_mcse_is_zero_when_exact_and_the_normal_ones_from_its_ess():
    x = np.random.default_rng(1).standard_normal((4000, 4, 2))
    exact = Moments.exact(["a", "b"], [0, 0], [1, 1])
    assert np.all(reference_mcse_sd(x, exact) == 0)
    run_of = Moments(["a", "b"], [0, 0], [1, 1], [0.01, 0.01], ess=[1e4, 100.0])
    # normal draws: the MCSE of an sd is sd / √(2 ESS)
    expected = 1 / np.sqrt(2 * np.array([1e4, 100.0]))
    np.testing.assert_allclose(reference_mcse_sd(x, run_of), expected, rtol=0.05)
    with pytest.raises(ValueError, match="Moments.ess"):
        Moments(["a"], [0], [1], [0], ess=[0.0])


# ---- the broken variants ----------------------------------------------------------------


class Tempered:
    """The target at temperature ``t``: ``E / t`` (sds × √t)."""

    def __init__(self, target, t):
        self.target, self.dim, self.t = target, target.dim, t

    def energy(self, x):
        return self.target.energy(x) / self.t

    def grad(self, x):
        return self.target.grad(x) / self.t


@pytest.mark.parametrize("temperature", [4.0, 0.25])
def test_a_tempered_target_fails(temperature):
    broken = _quick(lambda t: lahmc(Tempered(t, temperature)), "gauss2")
    _fails_on_the_sd(broken, "gauss2")
    assert broken.figures.max_abs_z < 5  # the means alone would pass it


@attrs.frozen
class LinearRefresh(MomentumRefresh):
    """Partial refresh without the square roots, ``v' = (1 − β) v + β n``
    (docs/mutation.md's ``LinearRefresh``): too little momentum."""

    def __call__(self, state, direction, rng):
        noise = self.metric.sample_momentum(rng, state.v.shape)
        v_new = (1.0 - self.beta) * state.v + self.beta * (direction[:, None] * noise)
        return attrs.evolve(state, v=v_new), direction


def _with_linear_refresh(target, beta):
    kernel = lahmc(target, beta=beta)
    parts = tuple(
        LinearRefresh(p.beta, p.metric) if type(p) is MomentumRefresh else p
        for p in kernel.refresh.parts
    )
    assert any(isinstance(p, LinearRefresh) for p in parts)
    return attrs.evolve(kernel, refresh=attrs.evolve(kernel.refresh, parts=parts))


def test_a_biased_refresh_fails():
    # β given (0.5, the mutation table's): the warm-up's β on gauss2 is near 1, where the
    # linear refresh is nearly the right one
    broken = _quick(lambda t: _with_linear_refresh(t, 0.5), "gauss2")
    _fails_on_the_sd(broken, "gauss2", beta=0.5)


def _with_map(cls, target):
    kernel = lahmc(target)
    return attrs.evolve(kernel, map=cls(**attrs.asdict(kernel.map, recurse=False)))


@attrs.frozen(eq=False)
class ShrinkingFlip(JitteredLengthLeapfrog):
    """A wrong flip, ``F (x, v) = (x, −0.7 v)``: no involution, ``p(F ζ) ≠ p(ζ)``; the
    backward rungs ``F L F`` go through it."""

    def flip(self, state):
        return attrs.evolve(state, v=-0.7 * state.v)

    def move(self, state, direction):
        return ReversibleMap.move(self, state, direction)  # L⁻¹ = F L F


def test_a_wrong_flip_fails():
    _fails_on_the_sd(_quick(functools.partial(_with_map, ShrinkingFlip), "gauss2"), "gauss2")


@attrs.frozen(eq=False)
class FrictionLeapfrog(JitteredLengthLeapfrog):
    """Leapfrog with friction, ``v ← v / 2`` after each rung: it shrinks the volume
    (``|det| = 2^−dim``) and the ladder takes it for volume-preserving."""

    def advance(self, state, v):
        out = super().advance(state, v)
        return attrs.evolve(out, v=0.5 * out.v)


@pytest.mark.slow
def test_a_map_that_is_not_volume_preserving_fails():
    # on gauss2 the rungs that lose momentum are few enough to pass; kidiq's are not
    broken = _quick(functools.partial(_with_map, FrictionLeapfrog), "kidiq")
    _fails_on_the_sd(broken, "kidiq")


HOT = """
from ladder_mcmc import lahmc


class Hot:
    def __init__(self, target):
        self.target, self.dim = target, target.dim

    def energy(self, x):
        return self.target.energy(x) / 4

    def grad(self, x):
        return self.target.grad(x) / 4


def hot(target):
    return lahmc(Hot(target))
"""


def test_bench_exits_1_for_a_kernel_of_the_wrong_law(tmp_path):
    (tmp_path / "k.py").write_text(HOT)
    argv = ["bench", "--quick", "--models", "gauss2", "--quiet", "--out", str(tmp_path)]
    assert cli.main([*argv, "--kernel", f"{tmp_path / 'k.py'}:hot"]) == 1
    assert cli.main(argv) == 0  # lahmc itself, the same run
