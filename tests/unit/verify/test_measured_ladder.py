"""``verify.measured``: the finite model of a map that changes volume (docs/design.md §13)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from ladder_mcmc.verify import MeasuredLadder, assert_map, check_map, measured_ladders


@settings(max_examples=40)
@given(ladder=measured_ladders(1, 6))
def test_measured_ladders_pass_the_map_contract(ladder):
    report = assert_map(ladder, np.arange(ladder.n))
    assert report.bijective and report.jacobian_error <= 1e-12
    # the float Jacobian is the log of the exact one
    s = np.arange(ladder.n)
    exact = np.array([float(j) for j in ladder.jacobian(s)])
    np.testing.assert_allclose(np.exp(ladder.log_det_jacobian(s)), exact, rtol=1e-12)


class OffsetJacobian(MeasuredLadder):
    """Declares ``log(m(L i)/m(i)) + i/10``: not the Jacobian of any map its flip conjugates."""

    def log_det_jacobian(self, state):
        return super().log_det_jacobian(state) + 0.1 * np.asarray(state)


def test_a_declared_jacobian_that_disagrees_with_the_flip_is_reported():
    args = ([1, 3, 0, 4, 2], [2, 2, 5, 5, 1], [1, 1, 3, 3, 2], [1, 0, 3, 2, 4])
    assert check_map(MeasuredLadder(*args), np.arange(5)).ok  # control
    report = check_map(OffsetJacobian(*args), np.arange(5))
    assert len(report.violations) == 1
    assert report.violations[0].startswith(
        "jacobian: log_det_jacobian(F ζ) = −log_det_jacobian(L⁻¹ ζ) (F preserves volume) fails"
    )


def test_masses_description_and_strategy_bounds():
    ladder = MeasuredLadder([1, 2, 0], [1, 2, 3], [2, 1, 1])
    assert ladder.masses == (2, 2, 3)
    assert ladder.describe()["measure"] == ["2", "1", "1"]
    report = check_map(ladder, np.arange(3))
    np.testing.assert_allclose(report.declared_log_det_jacobian, np.log([0.5, 1.0, 2.0]))
    with pytest.raises(ValueError, match="max_measure"):
        measured_ladders(max_measure=0)
