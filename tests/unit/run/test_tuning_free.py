"""Tuning-free sampling: ``lahmc(target)`` + ``sample``'s default warm-up recover known values.

The criteria of ``ladder_mcmc.hamiltonian.warmup.trajectory`` are checked against closed forms; the
whole warm-up against a Gaussian whose best settings are known; the refusals and
warnings of bad settings; and a broken variant of each adaptation is shown to fail
the check that guards it.
"""

import math
import warnings

import attrs
import numpy as np
import pytest

from ladder_mcmc import (
    Checkpoint,
    FunctionTarget,
    SamplingWarning,
    Warmup,
    apply_warmup,
    hmc,
    lahmc,
    lifted_lahmc,
    sample,
)
from ladder_mcmc.hamiltonian.warmup import adaptation
from ladder_mcmc.hamiltonian.warmup.adaptation import DEFAULT_WARMUP, MIN_WINDOWED_WARMUP
from ladder_mcmc.hamiltonian.warmup.dual_averaging import dual_averaging_gain
from ladder_mcmc.hamiltonian.warmup.trajectory import (
    chees_n_leapfrog,
    jittered_lengths,
    meads_beta,
    whitened_eigenvalues,
)
from ladder_mcmc.models import IllConditionedGaussian, RoughWell

GAUSS = IllConditionedGaussian(3, log_condition=4)  # variances 1, 100, 10⁴


def _unit_optimum(jittered: bool) -> float:
    """``argmax_T E_u[sin²(uT)]/T`` on a fine grid: ``u`` uniform on (0, 2), or ``u = 1``."""
    t = np.linspace(0.01, 4, 400_000)
    mean = 0.5 - np.sin(4 * t) / (8 * t) if jittered else np.sin(t) ** 2
    return float(t[np.argmax(mean / t)])


# ---- the criteria against closed forms -------------------------------------------------


@pytest.mark.parametrize("jitter", [0.0, 1.0])
def test_chees_recovers_the_unit_gaussian_optimum(jitter):
    # small ε: the leapfrog's angle per step is ε to O(ε³), the lengths nearly continuous
    eps = 0.002
    m = chees_n_leapfrog(np.ones(1), eps, jitter, max_n_leapfrog=4000)
    assert eps * m == pytest.approx(_unit_optimum(jitter > 0), abs=2 * eps)


def test_chees_scales_with_the_widest_direction_and_ignores_unstable_ones():
    eps = 0.01
    m1 = chees_n_leapfrog(np.ones(1), eps, 1.0, max_n_leapfrog=4000)
    m4 = chees_n_leapfrog(np.array([4.0]), eps, 1.0, max_n_leapfrog=4000)
    assert m4 == pytest.approx(2 * m1, abs=2)  # time scales with √λ
    # a direction the leapfrog cannot integrate (ε ≥ 2√λ) adds nothing
    assert chees_n_leapfrog(np.array([1.0, 1e-6]), eps, 1.0, 4000) == m1


def _brute_force_centre(lam, eps, jitter, top):
    """The criterion written out directly: for each centre, every length of its
    jittered set, every direction's rotation (an independent implementation)."""
    best, best_value = None, -1.0
    for m in range(1, top + 1):
        w = int(np.floor(jitter * (m - 1)))
        total = 0.0
        for n in range(m - w, m + w + 1):
            for li in lam:
                c = 1 - eps**2 / (2 * li)
                if c > -1:
                    total += li**2 * np.sin(n * np.arccos(c)) ** 2
        value = total / (2 * w + 1) / m
        if value > best_value:
            best, best_value = m, value
    return best


@pytest.mark.parametrize("seed", range(6))
def test_chees_equals_the_criterion_written_out(seed):
    """Random spectra (up to 100× apart, so the λ² weights decide), steps and jitters:
    a criterion without its weights, its jitter or its leapfrog angle picks another M."""
    rng = np.random.default_rng(seed)
    lam = np.exp(rng.uniform(-2.3, 2.3, size=rng.integers(1, 6)))
    eps = float(rng.uniform(0.05, 0.6))
    jitter = float(rng.choice([0.0, 0.5, 1.0]))
    top = 80
    assert chees_n_leapfrog(lam, eps, jitter, top) == _brute_force_centre(lam, eps, jitter, top)


def test_the_weights_decide_between_two_scales():
    """Two directions of variances 1 and 16: the widest one's optimum wins (weight 256
    against 1), where an unweighted criterion would sit between the two."""
    eps = 0.01
    both = chees_n_leapfrog(np.array([16.0, 1.0]), eps, 1.0, 4000)
    wide = chees_n_leapfrog(np.array([16.0]), eps, 1.0, 4000)
    assert both == pytest.approx(wide, rel=0.05)
    assert eps * wide == pytest.approx(4 * _unit_optimum(True), abs=4 * eps)


def test_jittered_lengths_have_mean_m():
    assert jittered_lengths(1, 1.0) == (1, 1)
    assert jittered_lengths(10, 1.0) == (1, 19)
    assert jittered_lengths(10, 0.5) == (6, 14)
    assert jittered_lengths(10, 0.0) == (10, 10)


def test_meads_beta_is_critical_damping_over_one_rung():
    assert meads_beta(4.0, 0.1, 10) == pytest.approx(1 - math.exp(-2 * 1.0 / 2.0))
    assert meads_beta(1.0, 1e-9, 1) == 1e-3  # floored: a refresh that never refreshes
    assert meads_beta(0.0, 0.1, 10) == 1.0


def test_whitened_eigenvalues_of_a_fitted_and_a_misfitted_mass():
    cov = np.array([[4.0, 1.0], [1.0, 1.0]])
    # the dense mass equal to the covariance whitens it exactly
    np.testing.assert_allclose(whitened_eigenvalues(cov, cov), [1.0, 1.0], atol=1e-12)
    # a diagonal mass leaves the correlation matrix, eigenvalues 1 ± ρ
    np.testing.assert_allclose(whitened_eigenvalues(cov, np.diag(cov)), [1.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(whitened_eigenvalues(cov, None), np.linalg.eigvalsh(cov)[::-1])


# ---- the whole warm-up on a Gaussian of known scales -----------------------------------


def _warmed(kernel, seed=0, chains=8, warmup=1000, **options):
    x0 = np.random.default_rng(seed).uniform(-2, 2, (chains, GAUSS.dim))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        return sample(kernel, x0, 200, seed=seed, warmup=warmup, **options)


def test_lahmc_of_a_target_alone_adapts_everything_and_recovers_the_known_values():
    kernel = lahmc(GAUSS)
    assert kernel.adapt == {"step_size", "inverse_mass", "n_leapfrog", "beta"}
    trace = _warmed(kernel)
    w = trace.warmup
    assert w.adapted == ("step_size", "inverse_mass", "n_leapfrog", "beta")
    # the variances: the last window holds 500 steps x 8 chains; at an ESS of a tenth of
    # its draws each variance's relative sd is √(2/400) = 0.07, so 5 sd = 0.35
    np.testing.assert_allclose(w.inverse_mass / GAUSS.variances, 1.0, atol=0.35)
    # the first-rung probability: near 0.8 (dual averaging's noise leaves it a little below)
    assert 0.7 < w.first_stage_prob < 0.85
    # the fitted mass whitens a diagonal Gaussian: λ ≈ 1 up to the estimates' spread
    assert 0.8 < w.largest_eigenvalue < 1.5
    # the length: the jittered unit optimum 0.786 scaled by √λ for λ in (0.8, 1.5), within
    # half a step either way (M is an integer)
    low, high = 0.786 * np.sqrt(0.8), 0.786 * np.sqrt(1.5)
    assert low - w.step_size / 2 < w.trajectory_length < high + w.step_size / 2
    # β: MEADS's critical damping over that length, 1 − exp(−2εM/√λ₁), known in closed form
    assert w.beta == pytest.approx(
        1 - np.exp(-2 * w.trajectory_length / np.sqrt(w.largest_eigenvalue))
    )
    # what was adapted runs the sampling phase
    assert trace.kernel["step_size"] == w.step_size and trace.kernel["n_steps"] == w.n_leapfrog
    assert trace.kernel["map"] == "JitteredLengthLeapfrog"
    assert "adapt" not in trace.kernel  # nothing left to adapt


def test_what_is_given_is_kept_and_only_the_rest_adapted():
    kernel = lahmc(GAUSS, beta=0.3, inverse_mass=GAUSS.variances)
    assert kernel.adapt == {"step_size", "n_leapfrog"}
    w = _warmed(kernel, warmup=300).warmup
    assert w.beta == 0.3 and np.array_equal(w.inverse_mass, GAUSS.variances)
    assert w.adapted == ("step_size", "n_leapfrog")
    # a given step size was chosen for a mass: it keeps the mass (the identity) too
    kept = lahmc(GAUSS, step_size=0.05, beta=0.3)
    assert kept.adapt == {"n_leapfrog"}
    w = _warmed(kept, warmup=300).warmup
    assert w.step_size == 0.05 and w.beta == 0.3 and w.inverse_mass is None
    assert w.adapted == ("n_leapfrog",)
    given = lahmc(GAUSS, 0.05, 7, 0.3, inverse_mass=GAUSS.variances)
    assert given.adapt == frozenset() and given.describe()["map"] == "Leapfrog"  # exact M
    assert hmc(GAUSS).max_rung == 1
    assert hmc(GAUSS).adapt == {"step_size", "inverse_mass", "n_leapfrog", "beta"}


def test_sample_warms_up_by_default_only_what_has_something_to_adapt():
    x0 = GAUSS.sample(4, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        trace = sample(lahmc(GAUSS), x0, 20, seed=1)
    assert trace.warmup.n_steps == DEFAULT_WARMUP == 1000
    fixed = lahmc(GAUSS, 0.5, 3, 1.0, inverse_mass=GAUSS.variances)
    assert sample(fixed, x0, 20, seed=1, checks=False).warmup is None
    # a kernel with values left to adapt and warmup=0 runs its starting values, and says so
    with pytest.warns(SamplingWarning, match="leaves beta, n_leapfrog, step_size to adapt") as seen:
        sample(lahmc(GAUSS), x0, 20, seed=1, warmup=0)
    assert {w.filename for w in seen} == {__file__}  # the user's call, not the package


def test_a_warmup_that_adapts_only_the_step_ends_near_its_target():
    """Twenty steps of dual averaging (the minimum) on a whitened Gaussian: the sampling
    phase then flips on few steps (a step ten times too large flips on nearly all)."""
    kernel = lahmc(GAUSS, n_leapfrog=3, beta=1.0, inverse_mass=GAUSS.variances)
    trace = _warmed(kernel, warmup=20)
    assert trace.warmup.adapted == ("step_size",)
    assert (trace.rungs == 0).mean() < 0.3


def test_nothing_to_adapt_means_no_default_warmup():
    x0 = GAUSS.sample(4, np.random.default_rng(0))
    kernel = lahmc(GAUSS, 0.5, 3, 1.0)  # only the mass left to adapt
    assert (
        sample(kernel, x0, 10, seed=1, warmup=Warmup(adapt_mass=False), checks=False).warmup is None
    )


def test_a_length_law_centre_apart_from_the_map_survives_resume(tmp_path):
    """A hand-built kernel whose LengthJitter centre (10) differs from its map's n_steps
    (5): warm-up leaves both, and so do apply_warmup and resume (bit for bit)."""
    from ladder_mcmc import Ladder, LookAheadRule, MomentumRefresh, resume
    from ladder_mcmc.hamiltonian import JitteredLengthLeapfrog, LengthJitter

    def kernel():
        return Ladder(
            JitteredLengthLeapfrog(GAUSS, 0.3, 5),
            LookAheadRule(4),
            MomentumRefresh(0.5) + LengthJitter(10),
        )

    x0 = GAUSS.sample(4, np.random.default_rng(0))
    options = {"seed": 2, "warmup": 100, "checks": False}
    whole = sample(kernel(), x0, 40, **options)
    assert not whole.warmup.length_set
    adapted = apply_warmup(kernel(), whole.warmup)
    assert adapted.refresh.parts[1].n_leapfrog == 10 and adapted.map.n_steps == 5
    path = tmp_path / "run.npz"
    sample(kernel(), x0, 20, checkpoint=Checkpoint(path, every=10), **options)
    resumed = resume(path, kernel(), 20, checks=False)
    np.testing.assert_array_equal(resumed.positions, whole.positions)
    np.testing.assert_array_equal(resumed.step_cost, whole.step_cost)


def test_the_warmed_up_kernel_continues_without_warming_up_again():
    trace = _warmed(lahmc(GAUSS), warmup=200)
    kernel = apply_warmup(lahmc(GAUSS), trace.warmup)
    assert kernel.adapt == frozenset()
    assert kernel.map.step_size == trace.warmup.step_size
    assert kernel.refresh.parts[0].beta == trace.warmup.beta
    assert kernel.refresh.parts[1].n_leapfrog == trace.warmup.n_leapfrog  # the length's law
    more = sample(kernel, trace.final, 30, seed=3, checks=False)
    assert more.warmup is None and more.kernel == trace.kernel


def test_four_chains_and_one_chain_adapt_too():
    for chains in (4, 1):
        w = _warmed(lahmc(GAUSS), chains=chains).warmup
        assert 0.6 < w.first_stage_prob < 0.9, chains
        assert np.all(np.abs(np.log(w.inverse_mass / GAUSS.variances)) < 1.0), chains


def test_lifted_lahmc_of_a_target_alone_adapts_its_step_and_mass():
    kernel = lifted_lahmc(RoughWell())
    assert kernel.adapt == {"step_size", "inverse_mass"}
    x0 = np.zeros((4, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        w = sample(kernel, x0, 20, seed=0, warmup=Warmup(150, target_prob=0.7)).warmup
    assert w.adapted == ("step_size", "inverse_mass") and w.n_leapfrog == 30


# ---- bad settings ------------------------------------------------------------------------


def test_bad_settings_are_refused_before_any_work():
    x0 = GAUSS.sample(4, np.random.default_rng(0))
    with pytest.raises(
        ValueError, match=rf"warmup=10 is too short.*at least {MIN_WINDOWED_WARMUP}"
    ):
        sample(lahmc(GAUSS), x0, 20, seed=1, warmup=10)
    # the step size alone needs as many steps
    only_step = lahmc(GAUSS, n_leapfrog=3, beta=1.0, inverse_mass=GAUSS.variances)
    with pytest.raises(ValueError, match=r"warmup=10 is too short to adapt step_size"):
        sample(only_step, x0, 20, seed=1, warmup=10)
    with pytest.raises(ValueError, match="trajectory_length=2.0.*n_leapfrog was given"):
        sample(only_step, x0, 20, seed=1, warmup=Warmup(100, trajectory_length=2.0))
    with pytest.raises(ValueError, match="trajectory_length=2.0.*none"):
        sample(lahmc(GAUSS), x0, 20, seed=1, warmup=Warmup(0, trajectory_length=2.0))
    with pytest.raises(ValueError, match="dense_mass=True.*adapts no mass"):
        sample(only_step, x0, 20, seed=1, warmup=Warmup(100, dense_mass=True))
    with pytest.raises(ValueError, match=r"kernel.adapt names \['stepsize'\]"):
        sample(attrs.evolve(only_step, adapt={"stepsize"}), x0, 20, seed=1)
    with pytest.raises(ValueError, match="length_jitter must be.*True"):
        lahmc(GAUSS, length_jitter=True)
    with pytest.raises(ValueError, match="trajectory_length.*-1"):
        sample(lahmc(GAUSS), x0, 20, seed=1, warmup=Warmup(trajectory_length=-1.0))
    with pytest.raises(ValueError, match="beta.*1.5"):
        lahmc(GAUSS, beta=1.5)
    with pytest.raises(ValueError, match="beta.*0"):
        lahmc(GAUSS, beta=0.0)
    with pytest.raises(ValueError, match="step_size.*-0.1"):
        lahmc(GAUSS, step_size=-0.1)
    with pytest.raises(ValueError, match="n_leapfrog.*0"):
        lahmc(GAUSS, n_leapfrog=0)
    with pytest.raises(ValueError, match="length_jitter.*2"):
        lahmc(GAUSS, length_jitter=2)
    with pytest.raises(ValueError, match="jitter.*do not combine"):
        lahmc(GAUSS, jitter=0.2, length_jitter=1.0)
    with pytest.raises(ValueError, match="warmup.*-3"):
        sample(lahmc(GAUSS), x0, 20, warmup=-3)


def _warmup_warnings(kernel, x0, checks=True):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sample(kernel, x0, 10, seed=0, warmup=100, checks=checks)
    ended = [w for w in seen if "warm-up ended" in str(w.message)]
    assert all(w.filename == __file__ for w in ended)  # each points at the call of sample
    return [str(w.message) for w in ended]


def test_a_warmup_that_ends_in_flips_warns():
    """A given step far too large for the target: nearly every step flips."""
    kernel = lahmc(IllConditionedGaussian(2, log_condition=0), step_size=30.0)
    x0 = np.ones((4, 2))
    text = _warmup_warnings(kernel, x0)
    assert len(text) == 1 and "of its last steps flipping" in text[0], text
    assert _warmup_warnings(kernel, x0, checks=False) == []


def test_a_warmup_that_ends_with_a_vanishing_step_warns():
    """A target of scale 10⁻¹² with the unit mass kept: the step it needs is below 10⁻¹⁰."""
    target = IllConditionedGaussian(2, log_condition=0)
    tiny = FunctionTarget(lambda x: 1e24 * target.energy(x), lambda x: 1e24 * x, dim=2)
    kernel = lahmc(tiny, inverse_mass=np.ones(2))
    text = _warmup_warnings(kernel, np.full((4, 2), 1e-12))
    assert any("step size" in t and "< 1e-10" in t for t in text), text


# ---- broken variants fail the checks above ----------------------------------------------


def test_stans_gain_with_four_chains_misses_the_step_size(monkeypatch):
    """With γ = 0.05 (Stan's, for NUTS's low-noise statistic) the iterate jumps by factors
    of e⁴ on four chains' indicators and dual averaging settles far below its target:
    the recovery test's first-rung probability bound catches it."""
    good = _warmed(lahmc(GAUSS), chains=4).warmup
    monkeypatch.setattr(adaptation, "dual_averaging_gain", lambda n: 0.05)
    bad = _warmed(lahmc(GAUSS), chains=4).warmup
    assert 0.7 < good.first_stage_prob < 0.85 and dual_averaging_gain(4) == 0.4
    assert not 0.7 < bad.first_stage_prob < 0.85 or bad.step_size < good.step_size / 3
