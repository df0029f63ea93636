"""Warm-up adapts the mass of a non-Gaussian kinetic energy and keeps its family."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import Ladder, Leapfrog, LookAheadRule, sample
from ladder_mcmc.hamiltonian import Metric, NormalizedMomentumRefresh, PowerKinetic
from ladder_mcmc.hamiltonian.warmup.parameters import with_hmc_parameters
from ladder_mcmc.models import IllConditionedGaussian

TARGET = IllConditionedGaussian(3, log_condition=2.0)


def _kernel(a=1.5):
    kin = PowerKinetic(a, np.ones(3))
    return Ladder(
        Leapfrog(TARGET, 0.3, 3, kin), LookAheadRule(3), NormalizedMomentumRefresh(0.5, kin)
    )


def test_a_metric_update_keeps_the_kinetic_family_in_map_and_refresh():
    new = with_hmc_parameters(_kernel(), metric=Metric(np.array([1.0, 4.0, 9.0])))
    assert isinstance(new.map.metric, PowerKinetic) and new.map.metric.a == 1.5
    np.testing.assert_array_equal(new.map.metric.inverse_mass, [1.0, 4.0, 9.0])
    assert new.refresh.kinetic is new.map.metric


def test_a_dense_metric_for_a_diagonal_family_is_refused():
    with pytest.raises(ValueError, match="inverse_mass"):
        with_hmc_parameters(_kernel(), metric=Metric(np.eye(3)))


def test_warmup_adapts_a_power_kinetic_kernel():
    x0 = np.random.default_rng(0).normal(size=(8, 3))
    trace = sample(_kernel(), x0, 200, seed=1, warmup=300)
    inv = trace.warmup.inverse_mass
    # the adapted diagonal follows the target's variances (1, 10, 100) in order
    assert inv[0] < inv[1] < inv[2]
    assert np.isfinite(trace.positions).all()
