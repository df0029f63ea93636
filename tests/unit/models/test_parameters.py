"""Names, shapes and constraining transforms of targets (ParameterSpace), and their way
into the trace, summary and InferenceData; the log-density convention."""

import numpy as np
import pytest

from ladder_mcmc import hmc, sample
from ladder_mcmc.diagnostics import summary
from ladder_mcmc.models import FunctionTarget, LogDensityTarget, ParameterSpace
from ladder_mcmc.models.posteriors.eight_schools import EightSchoolsNoncentered
from ladder_mcmc.models.posteriors.posterior import variables_of

SCHOOLS = {"J": 3, "y": [1.0, 2.0, 3.0], "sigma": [1.0, 2.0, 3.0]}


def scale_space() -> ParameterSpace:
    """beta (2,) on the real line, sigma = exp(x[2])."""
    return ParameterSpace(
        3,
        [("beta", (2,)), ("sigma", ())],
        lambda x: np.column_stack([x[:, :2], np.exp(x[:, 2])]),
    )


def test_labels_split_and_constrain():
    space = scale_space()
    assert space.labels == ("beta[0]", "beta[1]", "sigma")
    x = np.arange(12.0).reshape(2, 2, 3) / 10
    values = space.constrain(x)
    assert values.shape == (2, 2, 3)
    np.testing.assert_array_equal(values[..., 2], np.exp(x[..., 2]))
    parts = space.split(values)
    assert parts["beta"].shape == (2, 2, 2) and parts["sigma"].shape == (2, 2)
    matrix = ParameterSpace(4, {"m": (2, 2)})
    assert matrix.labels == ("m[0,0]", "m[0,1]", "m[1,0]", "m[1,1]")
    np.testing.assert_array_equal(matrix.split(np.arange(4.0))["m"], [[0, 1], [2, 3]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dim": 0, "variables": [("a", ())]}, "dim must be an integer >= 1, got 0"),
        ({"dim": 2, "variables": [("a", ())]}, "dim = 2 values in all, got 1"),
        ({"dim": 1, "variables": [("a", ()), ("a", ())]}, "distinct"),
        ({"dim": 1, "variables": []}, "at least one"),
        ({"dim": 2, "variables": [("a", (0,))]}, "positive ints"),
        ({"dim": 2, "variables": [("a", "x")]}, "shape must be"),
        ({"dim": 1, "variables": [("a", ())], "labels": ["a", "b"]}, "labels must be 1 strings"),
        (
            {"dim": 2, "variables": [("a", ())], "transform": lambda x: x},
            r"transform must give 1 values per point .* gave shape \(1, 2\)",
        ),
        ({"dim": 1, "variables": [("a", ())], "transform": 3}, "transform must be a function"),
    ],
)
def test_bad_spaces_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ParameterSpace(**kwargs)


def test_targets_take_names_and_check_their_dimension():
    t = FunctionTarget(lambda x: x.sum(1), lambda x: np.ones_like(x), parameters=["a", "b"])
    assert t.dim == 2 and t.parameters.labels == ("a", "b")
    with pytest.raises(ValueError, match="parameters describe dim = 2, the target has dim = 3"):
        FunctionTarget(lambda x: x.sum(1), lambda x: x, dim=3, parameters=["a", "b"])
    with pytest.raises(ValueError, match="ParameterSpace or a list of names, got 'ab'"):
        FunctionTarget(lambda x: x.sum(1), lambda x: x, parameters="ab")


def test_log_density_target_is_the_energy_negated():
    log_p = LogDensityTarget(lambda x: -0.5 * (x**2).sum(1) + 3.0, lambda x: -x, dim=2)
    x = np.array([[1.0, 2.0], [0.5, -1.0]])
    np.testing.assert_array_equal(log_p.energy(x), 0.5 * (x**2).sum(1) - 3.0)
    np.testing.assert_array_equal(log_p.grad(x), x)
    with pytest.raises(ValueError, match="grad_log_density must be a function"):
        LogDensityTarget(lambda x: x, None)


def test_stan_labels_become_variables():
    assert variables_of(("theta[1]", "theta[2]", "mu", "tau")) == [
        ("theta", (2,)),
        ("mu", ()),
        ("tau", ()),
    ]
    with pytest.raises(ValueError, match="does not continue a vector"):
        variables_of(("theta[2]",))


def test_named_draws_summary_and_inference_data_use_the_targets_names():
    target = EightSchoolsNoncentered.from_data(SCHOOLS)
    rng = np.random.default_rng(0)
    trace = sample(hmc(target, 0.3, 3), target.initial_points(4, rng), 40, seed=1, checks=False)
    assert trace.parameters is not None
    named = trace.named_draws()
    assert set(named) == {"theta", "mu", "tau"} and named["theta"].shape == (40, 4, 3)
    np.testing.assert_allclose(named["tau"], np.exp(trace.positions[..., 4]))
    s = summary(trace)
    assert s.names == ["theta[1]", "theta[2]", "theta[3]", "mu", "tau"]
    np.testing.assert_allclose(s.mean[-1], np.exp(trace.positions[..., 4]).mean())
    raw = summary(trace, constrained=False)
    assert raw.names == ["x0", "x1", "x2", "x3", "x4"]
    np.testing.assert_allclose(raw.mean[-1], trace.positions[..., 4].mean())
    plain = sample(
        hmc(FunctionTarget(lambda x: 0.5 * (x**2).sum(1), lambda x: x), 0.5, 3),
        rng.standard_normal((4, 2)),
        10,
        seed=0,
        checks=False,
    )
    with pytest.raises(ValueError, match="constrained=True needs a target with parameters"):
        summary(plain, constrained=True)
    assert plain.named_draws().keys() == {"x"}
    az = pytest.importorskip("arviz")
    from ladder_mcmc.diagnostics import to_inference_data

    idata = to_inference_data(trace)
    assert set(idata.posterior.data_vars) == {"theta", "mu", "tau"}
    assert idata.posterior["theta"].shape == (4, 40, 3)
    assert idata.unconstrained_posterior["x"].shape == (4, 40, 5)
    rows = az.summary(idata, kind="stats", round_to="none")
    np.testing.assert_allclose(rows["mean"].to_numpy(), s.mean, rtol=1e-12)
    # names given: both name the constrained values, row for row
    labels = ["a", "b", "c", "m", "t"]
    renamed = to_inference_data(trace, labels)
    rows = az.summary(renamed, kind="stats", round_to="none")
    assert list(rows.index) == labels == summary(trace, labels).names
    np.testing.assert_allclose(rows["mean"].to_numpy(), s.mean, rtol=1e-12)


def test_a_map_with_an_auxiliary_law_keeps_its_targets_names():
    from ladder_mcmc.hamiltonian import refined_lahmc
    from ladder_mcmc.models import NealsFunnel

    target = NealsFunnel(3)
    init = target.sample(4, np.random.default_rng(0))
    trace = sample(refined_lahmc(target, 0.5), init, 5, seed=0, checks=False)
    assert trace.parameters.labels == ("v", "x[0]", "x[1]")
    assert set(trace.named_draws()) == {"v", "x"}
