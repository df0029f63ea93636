"""posteriordb targets: energies against independent Stan-like code, gradients, registry, errors.

Each model's energy is compared with a separate, unbatched implementation written
here straight from the Stan code (``scipy.stats`` log densities, loops over time,
and the Jacobian of each constraining transform written out), up to the additive
constant Stan drops: we compare energy *differences* between points. Gradients are
compared with central finite differences at random points, batched over chains.
Skipped when the reference file (data) is absent. About 3 s.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from ladder_mcmc import lahmc, sample
from ladder_mcmc.models import posteriors as pdb
from ladder_mcmc.models.posteriors.references import ENV_VAR

try:
    DB_PATH = pdb.find_database()
except FileNotFoundError:  # pragma: no cover - depends on the checkout
    pytest.skip("posteriordb reference file not found", allow_module_level=True)

DB = json.loads(DB_PATH.read_text())["posteriors"]
NAMES = pdb.names()


# ---------------------------------------------------------------------------------------
# Independent log densities, one unconstrained point at a time, straight from the Stan code.
# Each returns (log density incl. Jacobian, constrained parameters in the reference order).
# ---------------------------------------------------------------------------------------


def eight_schools(u, d):
    j = d["J"]
    theta_trans, mu, tau = u[:j], u[j], np.exp(u[j + 1])
    theta = theta_trans * tau + mu
    lp = stats.norm.logpdf(theta_trans, 0, 1).sum()
    lp += stats.norm.logpdf(d["y"], theta, d["sigma"]).sum()
    lp += stats.norm.logpdf(mu, 0, 5) + stats.cauchy.logpdf(tau, 0, 5)
    lp += np.log(tau)  # d tau / d u = tau
    return lp, np.r_[theta, mu, tau]


def ark(u, d):
    k, t_len, y = d["K"], d["T"], d["y"]
    alpha, beta, sigma = u[0], u[1 : k + 1], np.exp(u[k + 1])
    lp = stats.norm.logpdf(alpha, 0, 10) + stats.norm.logpdf(beta, 0, 10).sum()
    lp += stats.cauchy.logpdf(sigma, 0, 2.5)
    for t in range(k + 1, t_len + 1):  # Stan's 1-based t
        mu = alpha
        for kk in range(1, k + 1):
            mu = mu + beta[kk - 1] * y[t - kk - 1]
        lp += stats.norm.logpdf(y[t - 1], mu, sigma)
    lp += np.log(sigma)
    return lp, np.r_[alpha, beta, sigma]


def garch(u, d):
    y, t_len = d["y"], d["T"]
    mu, alpha0, alpha1 = u[0], np.exp(u[1]), expit(u[2])
    lb, ub = 0.0, 1.0 - alpha1
    beta1 = lb + (ub - lb) * expit(u[3])
    sigma = [d["sigma1"]]
    for t in range(2, t_len + 1):
        sigma.append(np.sqrt(alpha0 + alpha1 * (y[t - 2] - mu) ** 2 + beta1 * sigma[t - 2] ** 2))
    lp = stats.norm.logpdf(y, mu, np.array(sigma)).sum()
    lp += np.log(alpha0)  # lower=0
    lp += np.log(alpha1) + np.log(1 - alpha1)  # lower=0, upper=1
    s = expit(u[3])
    lp += np.log(ub - lb) + np.log(s) + np.log(1 - s)  # lower=0, upper=1-alpha1
    return lp, np.r_[mu, alpha0, alpha1, beta1]


def gauss_mix(u, d):
    y = np.asarray(d["y"])
    mu = np.array([u[0], u[0] + np.exp(u[1])])  # ordered[2]
    sigma = np.exp(u[2:4])
    theta = expit(u[4])
    lp = stats.norm.logpdf(sigma, 0, 2).sum() + stats.norm.logpdf(mu, 0, 2).sum()
    lp += stats.beta.logpdf(theta, 5, 5)
    a = np.log(theta) + stats.norm.logpdf(y, mu[0], sigma[0])
    b = np.log1p(-theta) + stats.norm.logpdf(y, mu[1], sigma[1])
    lp += np.logaddexp(a, b).sum()  # log_mix
    lp += u[1] + u[2] + u[3] + np.log(theta) + np.log(1 - theta)
    return lp, np.r_[mu, sigma, theta]


def blr(u, d):
    x, y, dd = np.asarray(d["X"]), np.asarray(d["y"]), d["D"]
    beta, sigma = u[:dd], np.exp(u[dd])
    lp = stats.norm.logpdf(beta, 0, 10).sum() + stats.norm.logpdf(sigma, 0, 10)
    lp += stats.norm.logpdf(y, x @ beta, sigma).sum()
    lp += np.log(sigma)
    return lp, np.r_[beta, sigma]


def arma(u, d):
    y, t_len = d["y"], d["T"]
    mu, phi, theta, sigma = u[0], u[1], u[2], np.exp(u[3])
    lp = stats.norm.logpdf(mu, 0, 10) + stats.norm.logpdf(phi, 0, 2)
    lp += stats.norm.logpdf(theta, 0, 2) + stats.cauchy.logpdf(sigma, 0, 2.5)
    nu = [mu + phi * mu]
    err = [y[0] - nu[0]]
    for t in range(2, t_len + 1):
        nu.append(mu + phi * y[t - 2] + theta * err[t - 2])
        err.append(y[t - 1] - nu[t - 1])
    lp += stats.norm.logpdf(err, 0, sigma).sum()
    lp += np.log(sigma)
    return lp, np.r_[mu, phi, theta, sigma]


def kidiq(u, d):
    b1, b2, sigma = u[0], u[1], np.exp(u[2])
    lp = stats.cauchy.logpdf(sigma, 0, 2.5)
    lp += stats.norm.logpdf(d["kid_score"], b1 + b2 * np.asarray(d["mom_iq"]), sigma).sum()
    lp += np.log(sigma)
    return lp, np.r_[b1, b2, sigma]


INDEPENDENT = {
    "eight_schools-eight_schools_noncentered": eight_schools,
    "arK-arK": ark,
    "garch-garch11": garch,
    "low_dim_gauss_mix-low_dim_gauss_mix": gauss_mix,
    "sblrc-blr": blr,
    "arma-arma11": arma,
    "kidiq-kidscore_momiq": kidiq,
}


@pytest.fixture(scope="module", params=NAMES)
def target(request):
    return pdb.load(request.param)


def points(target, rng, n_near=3, n_wide=3):
    """Random unconstrained points: near the posterior (reference unconstrained mean ± 2 sd)
    and at Stan's default initialisation (uniform on (-2, 2))."""
    un = target.reference.unconstrained
    assert len(un) == target.dim
    mean = np.array([v["mean"] for v in un.values()])
    sd = np.array([v["sd"] for v in un.values()])
    near = mean + sd * rng.uniform(-2, 2, size=(n_near, target.dim))
    wide = rng.uniform(-2, 2, size=(n_wide, target.dim))
    return np.vstack([near, wide])


# ---------------------------------------------------------------------------------------
# Registry and reference
# ---------------------------------------------------------------------------------------


def test_registry_names_and_models():
    assert len(NAMES) == 7
    assert set(NAMES) == set(DB)
    assert set(INDEPENDENT) == set(NAMES)


def test_shapes_and_names(target):
    record = DB[target.name]
    assert target.dim == sum(record["dimensions"].values())
    assert target.param_names == tuple(record["reference_summary_constrained"])
    ref = target.reference
    assert ref.names == target.param_names
    for arr in (ref.mean, ref.sd, ref.mcse, ref.ess):
        assert arr.shape == (len(target.param_names),) and np.all(np.isfinite(arr))
    first = record["reference_summary_constrained"][target.param_names[0]]
    assert ref.mean[0] == first["mean"] and ref.mcse[0] == first["mcse_mean"]
    x = np.zeros((3, target.dim))
    assert target.energy(x).shape == (3,)
    assert target.grad(x).shape == (3, target.dim)
    assert target.constrain(x).shape == (3, len(target.param_names))
    assert target.constrain(np.zeros((5, 3, target.dim))).shape == (5, 3, target.dim)


# ---------------------------------------------------------------------------------------
# Energies against the independent code; constrain against its transforms
# ---------------------------------------------------------------------------------------


def test_energy_matches_independent_stan_code(target):
    rng = np.random.default_rng(1)
    x = points(target, rng)
    data = DB[target.name]["data"]
    lp, theta = zip(*(INDEPENDENT[target.name](u, data) for u in x), strict=True)
    lp, theta = np.array(lp), np.array(theta)
    e = target.energy(x)
    # E = -lp + c: differences from the first point agree up to rounding of the sums,
    # a few ulps of the largest |lp| involved (terms of size up to |lp| are added).
    diff_ours, diff_ref = e - e[0], -(lp - lp[0])
    tol = 1e-10 * (np.abs(lp) + np.abs(lp[0]) + 1.0)
    np.testing.assert_array_less(np.abs(diff_ours - diff_ref), tol)
    assert np.ptp(diff_ref) > 1e3 * tol.max()  # the points differ: the check has teeth
    np.testing.assert_allclose(target.constrain(x), theta, rtol=1e-12, atol=1e-12)


def test_energy_in_the_far_tails(target):
    # Far from the posterior (uniform on (-8, 8)) the terms are huge and cancellations
    # would show; the mixture also gets a collapsed component (sigma[2] = e^-150, e^-300),
    # where a softplus-based logsumexp once lost all precision. Same finiteness, and the
    # differences agree to ~1e-10 of the largest |lp| (observed: a few 1e-16).
    rng = np.random.default_rng(7)
    x = rng.uniform(-8, 8, size=(6, target.dim))
    if target.name == "low_dim_gauss_mix-low_dim_gauss_mix":
        x[0] = [-1.6, -30.0, 0.8, -150.0, -2.0]
        x[1] = [-2.7, 1.7, 0.0, -300.0, 0.5]
    data = DB[target.name]["data"]
    with np.errstate(all="ignore"):
        lp = np.array([INDEPENDENT[target.name](u, data)[0] for u in x])
    e = target.energy(x)
    np.testing.assert_array_equal(np.isfinite(e), np.isfinite(lp))
    fin = np.flatnonzero(np.isfinite(lp))
    assert fin.size >= 4
    i = fin[0]
    gap = np.abs((e[fin] - e[i]) + (lp[fin] - lp[i]))
    np.testing.assert_array_less(gap, 1e-10 * (np.abs(lp[fin]) + np.abs(lp[i])) + 1e-9)


def test_energy_and_grad_agree_with_energy_and_grad(target):
    x = points(target, np.random.default_rng(2))
    e, g = target.energy_and_grad(x)
    np.testing.assert_array_equal(e, target.energy(x))
    np.testing.assert_array_equal(g, target.grad(x))
    # batching: each chain on its own gives the same numbers
    for i in range(x.shape[0]):
        ei, gi = target.energy_and_grad(x[i : i + 1])
        np.testing.assert_allclose(ei, e[i : i + 1], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gi, g[i : i + 1], rtol=1e-12, atol=1e-9)


# ---------------------------------------------------------------------------------------
# Gradients against central finite differences
# ---------------------------------------------------------------------------------------


def finite_difference_gap(energy, grad, x):
    """|grad - central FD| and its tolerance, per chain and coordinate.

    With step ``h`` the central difference errs by ``h² |E'''| / 6`` (truncation) plus
    about ``ε |E| / h`` (rounding, ε = 2.2e-16). We take ``h = 1e-5 (1 + |x|)`` and
    estimate the truncation term from the same formula at ``2h`` (Richardson: the two
    differ by ``3 h² |E'''| / 6``), so the tolerance is
    ``|FD(h) - FD(2h)| + 20 ε |E| / h + 1e-8 |g|``; a wrong term in the gradient gives
    an error of the size of that term, orders of magnitude above this.
    """
    e = energy(x)
    g = grad(x)
    gap = np.empty_like(x)
    tol = np.empty_like(x)
    for i in range(x.shape[1]):
        h = 1e-5 * (1.0 + np.abs(x[:, i]))

        def central(step, i=i):
            up, down = x.copy(), x.copy()
            up[:, i] += step
            down[:, i] -= step
            return (energy(up) - energy(down)) / (2 * step)

        fd_h, fd_2h = central(h), central(2 * h)
        gap[:, i] = np.abs(g[:, i] - fd_h)
        tol[:, i] = np.abs(fd_h - fd_2h) + 20 * 2.2e-16 * np.abs(e) / h + 1e-8 * np.abs(g[:, i])
    return gap, tol


def test_gradient_matches_finite_differences(target):
    x = points(target, np.random.default_rng(3))  # 6 chains at once
    gap, tol = finite_difference_gap(target.energy, target.grad, x)
    assert np.all(np.isfinite(gap))
    bad = np.argwhere(gap > tol)
    assert bad.size == 0, f"{target.name}: gradient off at (chain, coord) {bad.tolist()}"


def test_finite_difference_check_detects_a_wrong_gradient():
    # mutation: a gradient off by 1e-4 relative in one coordinate must fail the check
    target = pdb.load("garch-garch11")
    x = points(target, np.random.default_rng(4))

    def wrong_grad(z):
        g = target.grad(z)
        g[:, 2] *= 1 + 1e-4
        return g

    gap, tol = finite_difference_gap(target.energy, wrong_grad, x)
    assert np.any(gap[:, 2] > tol[:, 2])
    assert np.all(gap[:, [0, 1, 3]] <= tol[:, [0, 1, 3]])


def test_far_tails_give_non_finite_or_finite_values_without_raising(target):
    x = np.full((2, target.dim), 800.0)
    x[1] = -800.0
    e, g = target.energy_and_grad(x)
    assert e.shape == (2,) and g.shape == (2, target.dim)


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------


def test_positions_of_the_wrong_shape(target):
    with pytest.raises(ValueError, match=rf"shape \(chains, {target.dim}\)"):
        target.energy(np.zeros((2, target.dim + 1)))
    with pytest.raises(ValueError, match="shape"):
        target.grad(np.zeros(target.dim))
    with pytest.raises(ValueError, match="last axis"):
        target.constrain(np.zeros((2, target.dim - 1)))


def test_init_of_the_wrong_dimension_is_refused_before_sampling():
    target = pdb.load("kidiq-kidscore_momiq")
    kernel = lahmc(target, 0.01, 5, 1.0)
    with pytest.raises(ValueError, match="dimension 2 but the target has dim=3"):
        sample(kernel, np.zeros((4, 2)), 10, seed=0, warmup=0)


@pytest.mark.parametrize(
    "name, change, message",
    [
        ("eight_schools-eight_schools_noncentered", {"y": [1.0] * 7}, "'y'.*length 7"),
        ("eight_schools-eight_schools_noncentered", {"sigma": [0.0] * 8}, "sigma"),
        ("arK-arK", {"T": 201}, "'y'.*length 200, expected 201"),
        ("arK-arK", {"K": 300}, r"'T'\] must be an integer >= 301"),
        ("garch-garch11", {"sigma1": -1.0}, r"'sigma1'\] must be a number > 0"),
        ("garch-garch11", {"sigma1": None}, "missing 'sigma1'"),
        ("low_dim_gauss_mix-low_dim_gauss_mix", {"N": 999}, "'y'.*length 1000"),
        ("sblrc-blr", {"D": 4}, r"'X'.*\(100, 4\)"),
        ("arma-arma11", {"y": [1.0, np.nan] + [0.0] * 198}, "finite"),
        ("kidiq-kidscore_momiq", {"mom_iq": None}, "missing 'mom_iq'"),
    ],
)
def test_data_mismatch(name, change, message):
    data = dict(DB[name]["data"])
    for key, value in change.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    with pytest.raises(ValueError, match=message):
        pdb.MODELS[name].from_data(data)


def test_unknown_name():
    with pytest.raises(ValueError, match="unknown posterior 'nope'.*arK-arK"):
        pdb.load("nope")


def test_file_location(tmp_path, monkeypatch):
    missing = tmp_path / "absent.json"
    with pytest.raises(FileNotFoundError, match="absent.json"):
        pdb.load("arK-arK", path=missing)
    monkeypatch.setenv(ENV_VAR, str(missing))
    with pytest.raises(FileNotFoundError, match=ENV_VAR):
        pdb.load("arK-arK")
    copy = tmp_path / "copy.json"
    copy.write_text(DB_PATH.read_text())
    monkeypatch.setenv(ENV_VAR, str(copy))
    assert pdb.load("arK-arK").dim == 7
    assert pdb.load("arK-arK", path=DB_PATH).dim == 7  # explicit path wins


def test_malformed_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"something": 1}))
    with pytest.raises(ValueError, match="not a posteriordb reference file"):
        pdb.load("arK-arK", path=bad)
    content = json.loads(DB_PATH.read_text())
    del content["posteriors"]["arK-arK"]
    summary = content["posteriors"]["arma-arma11"]["reference_summary_constrained"]
    summary["renamed"] = summary.pop("sigma")
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(content))
    with pytest.raises(ValueError, match="'arK-arK' is not in the reference file"):
        pdb.load("arK-arK", path=edited)
    with pytest.raises(ValueError, match="do not match"):
        pdb.load("arma-arma11", path=edited)
