"""from_pymc: a PyMC model's log density on its unconstrained space as a batched target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import expit

from ladder_mcmc import lahmc, sample
from ladder_mcmc.diagnostics import to_inference_data
from ladder_mcmc.models import from_pymc
from ladder_mcmc.models.adapters import pymc_models
from ladder_mcmc.models.posteriors import load
from ladder_mcmc.models.posteriors.comparison import compare

ROOT = Path(__file__).resolve().parents[3]
EIGHT = "eight_schools-eight_schools_noncentered"


@pytest.fixture(scope="module")
def pm():
    return pytest.importorskip("pymc")


def as_point(model, x):
    """A flat unconstrained point (dim,) as PyMC's dict of value variables."""
    point, start, initial = {}, 0, model.initial_point()
    for v in model.value_vars:
        shape = np.shape(initial[v.name])
        size = int(np.prod(shape))
        point[v.name] = x[start : start + size].reshape(shape)
        start += size
    return point


def assert_matches_pymc(target, model, x):
    """Energy and gradient at points x (n, dim) are PyMC's own -logp and -dlogp (PyTensor's
    Python implementations: no C compilation in the tests)."""
    logp = model.compile_logp(mode="FAST_COMPILE")
    dlogp = model.compile_dlogp(mode="FAST_COMPILE")
    e, g = target.energy_and_grad(x)
    for i, xi in enumerate(x):
        point = as_point(model, xi)
        np.testing.assert_allclose(e[i], -logp(point), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[i], -dlogp(point), rtol=1e-10, atol=1e-12)


def mixed_model(pm):
    """Transforms of several kinds, data, a potential and deterministics."""
    y = np.array([0.3, -1.2, 2.5, 0.7, 1.1])
    with pm.Model() as model:
        data = pm.Data("data", y)
        sigma = pm.HalfNormal("sigma", 2.0)  # log
        p = pm.Beta("p", 2.0, 3.0)  # log-odds
        u = pm.Uniform("u", -1.0, 3.0, shape=2)  # interval
        w = pm.Dirichlet("w", np.ones(3))  # simplex
        beta = pm.Normal("beta", 0.0, 1.0, shape=(2, 3))
        mean = pm.Deterministic("mean", beta.sum() * p + u[0] + w[0])
        pm.Potential("pull", -0.5 * (u[1] - 1.0) ** 2)
        pm.Normal("y", mean, sigma, observed=data)
    return model


@pytest.fixture(scope="module")
def mixed(pm):
    """The mixed model and its target, compiled once for the module."""
    model = mixed_model(pm)
    return model, from_pymc(model)


def eight_schools(pm):
    """PyMC's non-centred eight schools, posteriordb's model and data."""
    data = load(EIGHT)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta_tilde = pm.Normal("theta_tilde", 0.0, 1.0, shape=8)
        theta = pm.Deterministic("theta", mu + tau * theta_tilde)
        pm.Normal("y", theta, data.sigma, observed=data.y)
    return model


def test_energy_and_gradient_are_pymcs_own(mixed):
    model, target = mixed
    assert target.dim == 1 + 1 + 2 + 2 + 6 and target.backend == "pymc"
    x = np.random.default_rng(0).normal(0.0, 1.5, size=(6, target.dim))
    assert_matches_pymc(target, model, x)
    e, g = target.energy_and_grad(x)
    assert e.dtype == g.dtype == np.float64 and g.shape == (6, target.dim)


def test_a_dropped_jacobian_would_be_caught(pm, monkeypatch):
    model = mixed_model(pm)
    logp = pm.Model.logp
    monkeypatch.setattr(pm.Model, "logp", lambda self, *a, **k: logp(self, jacobian=False))
    broken = from_pymc(model)
    monkeypatch.undo()
    x = np.random.default_rng(1).normal(size=(3, broken.dim))
    with pytest.raises(AssertionError):
        assert_matches_pymc(broken, model, x)


def test_draws_are_constrained_named_and_shaped(mixed):
    space = mixed[1].parameters
    assert space.variables == (
        ("sigma", ()),
        ("p", ()),
        ("u", (2,)),
        ("w", (3,)),
        ("beta", (2, 3)),
        ("mean", ()),
    )
    assert space.labels[2:4] == ("u[0]", "u[1]") and space.labels[-2] == "beta[1,2]"
    x = np.random.default_rng(2).normal(size=(7, space.dim))
    got = space.split(space.constrain(x))
    np.testing.assert_allclose(got["sigma"], np.exp(x[:, 0]), rtol=1e-14)
    np.testing.assert_allclose(got["p"], expit(x[:, 1]), rtol=1e-14)
    np.testing.assert_allclose(got["u"], -1.0 + 4.0 * expit(x[:, 2:4]), rtol=1e-14)
    assert np.all(got["w"] > 0) and np.allclose(got["w"].sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_array_equal(got["beta"], x[:, 6:].reshape(7, 2, 3))
    mean = got["beta"].sum(axis=(1, 2)) * got["p"] + got["u"][:, 0] + got["w"][:, 0]
    np.testing.assert_allclose(got["mean"], mean, rtol=1e-13)


def test_every_number_of_points_gets_its_own_values(mixed, monkeypatch):
    # the transform pads to powers of two and works in chunks; padding must not leak
    space = mixed[1].parameters
    x = np.random.default_rng(3).normal(size=(7, space.dim))
    values = space.constrain(x)
    for n in (1, 2, 3, 5):
        np.testing.assert_allclose(space.constrain(x[:n]), values[:n], rtol=1e-15)
    monkeypatch.setattr(pymc_models, "_CHUNK", 3)  # 3 + 3 + 1 points, padded to 4, 4, 1
    np.testing.assert_allclose(space.constrain(x), values, rtol=1e-15)
    assert space.constrain(x[:0]).shape == (0, space.size)


def test_starting_points_are_about_pymcs_initial_point(mixed):
    model, target = mixed
    ip = model.initial_point()
    np.testing.assert_array_equal(
        target.centre, np.concatenate([np.ravel(ip[v.name]) for v in model.value_vars])
    )
    init = target.initial_points(50, np.random.default_rng(4), radius=1.0)
    assert init.shape == (50, target.dim) and np.all(np.abs(init - target.centre) <= 1.0)


def test_refusals_before_sampling(pm):
    with pytest.raises(ValueError, match="takes a pymc.Model, got dict"):
        from_pymc({"mu": 0.0})
    with pm.Model() as counts:
        pm.Normal("mu", 0.0, 1.0)
        pm.Poisson("k", 3.0)
        pm.Bernoulli("b", 0.5, shape=2)
    with pytest.raises(ValueError, match=r"discrete free variables \['k', 'b'\]"):
        from_pymc(counts)
    with pm.Model() as observed_only:
        pm.Normal("y", 0.0, 1.0, observed=[0.1, 0.2])
    with pytest.raises(ValueError, match="no free variables"):
        from_pymc(observed_only)


def test_without_pymc_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymc", None)  # import pymc now fails
    with pytest.raises(ImportError, match=r"pip install 'ladder_mcmc\[pymc\]'"):
        from_pymc(object())


def test_importing_the_adapter_imports_neither_pymc_nor_jax():
    code = (
        "import sys, ladder_mcmc; from ladder_mcmc.models import from_pymc; "
        "print([m for m in ('pymc', 'pytensor', 'jax') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def eight_schools_z(target, trace):
    """Our means of theta[1..8], mu, tau against posteriordb's reference means (z-scores
    within the combined MCSE, :func:`~ladder_mcmc.models.posteriors.comparison.compare`)."""
    labels = target.parameters.labels
    order = [labels.index(f"theta[{i}]") for i in range(8)] + [
        labels.index("mu"),
        labels.index("tau"),
    ]
    ref = load(EIGHT).reference
    view = SimpleNamespace(
        reference=ref,
        dim=target.dim,
        param_names=ref.names,
        constrain=lambda x: target.parameters.constrain(x)[..., order],
    )
    return compare(view, trace.positions)


def sample_eight_schools(target, seed=6):
    init = target.initial_points(4, np.random.default_rng(seed), radius=1.0)
    return sample(lahmc(target), init, 2000, seed=seed, warmup=1000)


@pytest.mark.slow  # a PyMC compilation and a run: seconds
def test_eight_schools_matches_posteriordb(pm):
    pytest.importorskip("arviz")
    target = from_pymc(eight_schools(pm))
    assert target.dim == 10
    assert [n for n, _ in target.parameters.variables] == ["mu", "tau", "theta_tilde", "theta"]
    trace = sample_eight_schools(target)
    comparison = eight_schools_z(target, trace)
    assert comparison.max_abs_z < 5.0, dict(
        zip(comparison.names, comparison.z.round(2), strict=True)
    )
    assert comparison.max_rhat < 1.05
    post = to_inference_data(trace).posterior
    assert set(post.data_vars) == {"mu", "tau", "theta_tilde", "theta"}
    assert post["theta"].shape == (4, 2000, 8) and post["tau"].shape == (4, 2000)
    np.testing.assert_allclose(post["theta"], post["mu"] + post["tau"] * post["theta_tilde"])


@pytest.mark.slow  # a PyMC compilation and a run: seconds
def test_eight_schools_without_the_jacobian_would_be_caught(pm, monkeypatch):
    # p(tau) in place of p(log tau): log tau runs off to -inf, the means are far off
    logp = pm.Model.logp
    monkeypatch.setattr(pm.Model, "logp", lambda self, *a, **k: logp(self, jacobian=False))
    broken = from_pymc(eight_schools(pm))
    monkeypatch.undo()
    assert eight_schools_z(broken, sample_eight_schools(broken)).max_abs_z > 5.0
