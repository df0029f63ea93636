"""The suite's models: targets, reference moments, initial points, JAX densities."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc.bench import SUITE, get_model, model_names
from ladder_mcmc.bench.moments import Moments, rough_well_moments
from ladder_mcmc.bench.registry import select
from ladder_mcmc.models import RoughWell
from ladder_mcmc.models import posteriors as pdb


def test_the_suite_holds_the_paper_targets_the_funnel_eight_schools_and_every_posterior():
    names = set(model_names())
    assert {"gauss2", "gauss100", "rough_well", "funnel", "eight_schools_centered"} <= names
    assert {m.posteriordb for m in SUITE.values() if m.posteriordb} == set(pdb.names())
    assert len(names) == 5 + len(pdb.names())


@pytest.mark.parametrize("name", model_names())
def test_every_model_has_moments_of_its_quantities_and_initial_points(name):
    model = SUITE[name]
    target = model.target()
    moments = model.moments(target)
    assert isinstance(moments, Moments)
    init = model.initial_points(target, 3, np.random.default_rng(0))
    assert init.shape == (3, target.dim)
    assert np.all(np.abs(init) < model.init_radius)
    draws = np.stack([init, init])  # (steps, chains, dim)
    assert model.quantities(target, draws).shape == (2, 3, len(moments.names))
    assert np.all(np.isfinite(moments.mean)) and np.all(moments.sd > 0)
    exact = model.posteriordb is None
    assert (moments.mcse == 0).all() == exact


def test_exact_moments_match_the_targets_closed_forms():
    gauss = SUITE["gauss100"]
    t = gauss.target()
    m = gauss.moments(t)
    assert m.variance == pytest.approx(t.variances)
    funnel = SUITE["funnel"].target()
    assert SUITE["funnel"].moments(funnel).variance == pytest.approx(funnel.variance)
    assert m.second_moment == pytest.approx(t.variances)


def test_the_rough_wells_variance_agrees_with_exact_draws():
    target = RoughWell()
    var = rough_well_moments(target).variance[0]
    draws = target.sample(200_000, np.random.default_rng(1)).ravel()
    se = np.sqrt(2.0 / draws.size) * var  # sd of a sample variance of a near-normal law
    assert abs(draws.var() - var) < 5 * se


def test_models_are_found_by_their_posteriordb_names_and_unknown_ones_are_refused():
    assert get_model("kidiq-kidscore_momiq").name == "kidiq"
    assert [m.name for m in select(["gauss2", "gauss2", "arK"])] == ["gauss2", "arK"]
    with pytest.raises(ValueError, match="unknown suite model 'nope'"):
        get_model("nope")


@pytest.mark.parametrize(
    "name", ["gauss2", "gauss100", "rough_well", "funnel", "eight_schools_centered", "kidiq"]
)
def test_jax_log_density_is_minus_the_energy(name):
    pytest.importorskip("jax")
    from ladder_mcmc.bench.jax_densities import density_error

    model = SUITE[name]
    target = model.target()
    points = model.initial_points(target, 5, np.random.default_rng(2)) * 3
    assert density_error(target, model.jax_log_density(target), points) < 1e-12


def test_the_jax_target_is_the_same_density():
    pytest.importorskip("jax")
    model = SUITE["funnel"]
    target = model.target()
    jt = model.jax_target(target)
    x = model.initial_points(target, 4, np.random.default_rng(3))
    e, g = jt.energy_and_grad(x)
    e0, g0 = target.energy_and_grad(x)
    assert e == pytest.approx(e0, rel=1e-12) and g == pytest.approx(g0, rel=1e-10)
