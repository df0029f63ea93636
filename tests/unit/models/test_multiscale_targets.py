"""Neal's funnel and the centred eight schools: energies, gradients, exact moments.

The funnel's energy against ``scipy.stats`` log densities, its gradient against finite
differences, its exact draws against its exact moments. The centred eight schools: its
gradient, its energy against the non-centred one under the change of variables
``theta = theta_trans · tau + mu`` (so both are the same posterior), its borrowed
reference, and the quadrature of ``exact_moments`` against that reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ladder_mcmc import check_gradient
from ladder_mcmc.models import NealsFunnel
from ladder_mcmc.models import posteriors as pdb
from ladder_mcmc.models.posteriors.eight_schools import exact_moments

NONCENTRED = "eight_schools-eight_schools_noncentered"


@pytest.mark.parametrize("dim", [2, 10])
def test_funnel_gradient_agrees_with_finite_differences(dim):
    target = NealsFunnel(dim)
    rng = np.random.default_rng(dim)
    check_gradient(target, target.sample(16, rng))
    check_gradient(target, rng.uniform(-2, 2, size=(8, dim)))
    e, g = target.energy_and_grad(target.sample(5, rng))
    assert e.shape == (5,) and g.shape == (5, dim)


def test_funnel_energy_is_neals_log_density_up_to_a_constant():
    target = NealsFunnel(5, scale=2.0)
    x = np.random.default_rng(1).uniform(-3, 3, size=(7, 5))
    log_p = stats.norm.logpdf(x[:, 0], 0, 2.0) + stats.norm.logpdf(
        x[:, 1:], 0, np.exp(0.5 * x[:, :1])
    ).sum(axis=1)
    diff = target.energy(x) + log_p
    np.testing.assert_allclose(diff, diff[0], rtol=0, atol=1e-10)


def test_funnel_far_down_the_neck_has_density_zero_without_warnings():
    target = NealsFunnel(3)
    with np.errstate(all="raise"):
        e, g = target.energy_and_grad(np.array([[-800.0, 1.0, 0.5], [0.0, 0.0, 0.0]]))
    assert e[0] == np.inf and np.isfinite(e[1]) and np.isfinite(g[1]).all()


@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_funnel_exact_draws_have_the_exact_moments(scale):
    """Means and variances within 5 standard errors; the variance of ``x_i`` (heavy
    tailed: its square has variance ``3 e^{2s²} − e^{s²}``) only at ``s = 1``; at
    ``s = 3`` ``x_i e^{−v/2}`` must be standard normal instead."""
    target = NealsFunnel(4, scale=scale)
    n = 400_000
    x = target.sample(n, np.random.default_rng(7))
    assert x.shape == (n, 4)
    var = target.variance
    np.testing.assert_array_equal(target.mean, 0.0)
    assert var[0] == scale**2 and np.allclose(var[1:], np.exp(scale**2 / 2))
    assert np.all(np.abs(x.mean(axis=0)) < 5 * np.sqrt(var / n))
    assert abs(x[:, 0].var() - scale**2) < 5 * scale**2 * np.sqrt(2 / n)
    z = x[:, 1:] * np.exp(-0.5 * x[:, :1])
    assert np.all(np.abs(z.var(axis=0) - 1) < 5 * np.sqrt(2 / n))
    if scale == 1.0:
        sd_var = np.sqrt((3 * np.exp(2 * scale**2) - np.exp(scale**2)) / n)
        assert np.all(np.abs((x[:, 1:] ** 2).mean(axis=0) - var[1:]) < 5 * sd_var)


def test_funnel_parameters_and_bad_dim():
    assert NealsFunnel().dim == 10
    assert NealsFunnel(4).parameters.labels == ("v", "x[0]", "x[1]", "x[2]")
    with pytest.raises(ValueError, match="at least 2"):
        NealsFunnel(1)
    with pytest.raises(ValueError):
        NealsFunnel(3, scale=0.0)


@pytest.fixture(scope="module")
def centred():
    return pdb.EightSchoolsCentered.load()


def test_centred_gradient_agrees_with_finite_differences(centred):
    rng = np.random.default_rng(3)
    check_gradient(centred, rng.uniform(-2, 2, size=(8, centred.dim)))
    check_gradient(centred, rng.uniform(-2, 2, size=(4, centred.dim)) * [5] * 9 + [0])


def test_centred_is_the_noncentred_posterior_under_the_change_of_variables(centred):
    """``E_c(theta, mu, u) = E_nc(theta_trans, mu, u) + J u`` (``u = log tau``): the
    densities agree up to the Jacobian ``tau^J`` of ``theta_trans -> theta``."""
    noncentred = pdb.load(NONCENTRED)
    xn = np.random.default_rng(4).uniform(-3, 3, size=(12, 10))
    tau = np.exp(xn[:, 9])
    xc = xn.copy()
    xc[:, :8] = xn[:, :8] * tau[:, None] + xn[:, 8:9]
    diff = centred.energy(xc) - noncentred.energy(xn) - 8 * xn[:, 9]
    np.testing.assert_allclose(diff, 0.0, atol=1e-10)
    np.testing.assert_allclose(centred.constrain(xc), noncentred.constrain(xn), rtol=1e-12)


def test_centred_borrows_the_noncentred_reference(centred):
    noncentred = pdb.load(NONCENTRED)
    assert centred.param_names == noncentred.param_names == centred.reference.names
    np.testing.assert_array_equal(centred.reference.mean, noncentred.reference.mean)
    assert list(centred.reference.unconstrained)[-2:] == ["mu", "log_tau"]
    assert centred.name not in pdb.MODELS  # no record of its own in the reference file
    t = pdb.EightSchoolsCentered.from_data({"J": 2, "y": [1.0, 2.0], "sigma": [1.0, 2.0]})
    assert t.dim == 4 and t.reference is None
    with pytest.raises(ValueError, match="sigma"):
        pdb.EightSchoolsCentered.from_data({"J": 1, "y": [1.0], "sigma": [0.0]})


def test_exact_moments_agree_with_the_reference_runs(centred):
    """The quadrature against posteriordb's Stan runs: means within 4 MCSE, standard
    deviations within 5 % (the reference's ESS is about 10⁴)."""
    mean, var = exact_moments(centred.y, centred.sigma)
    ref = centred.reference
    assert np.all(np.abs(mean - ref.mean) < 4 * ref.mcse)
    np.testing.assert_allclose(np.sqrt(var), ref.sd, rtol=0.05)
    coarse = exact_moments(centred.y, centred.sigma, n_grid=2001)
    np.testing.assert_allclose(coarse[0], mean, rtol=1e-6)
    np.testing.assert_allclose(coarse[1], var, rtol=1e-6)
