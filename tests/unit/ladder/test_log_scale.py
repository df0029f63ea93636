"""The log-scale walk and the declared-Jacobian contract of maps (docs/design.md §13)."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from ladder_mcmc import Ladder, LookAhead, ReversibleMap
from ladder_mcmc.ladder import LogScaleRefresh, LogScaleState, LogScaleWalk, LookAheadRule
from ladder_mcmc.ladder.maps import log_det_jacobian_of
from ladder_mcmc.models import GammaTarget
from ladder_mcmc.verify import FiniteLadder, MeasuredLadder, assert_map, check_map

TARGET = GammaTarget(2.0, 1.5, dim=2)


def _states(walk, n=8, seed=0):
    rng = np.random.default_rng(seed)
    return walk.prepare(TARGET.sample(n, rng), rng)


def test_walk_passes_the_map_contract_with_its_declared_jacobian():
    walk = LogScaleWalk(TARGET, 0.7)
    report = assert_map(walk, _states(walk))
    assert not walk.volume_preserving
    np.testing.assert_allclose(report.log_det_jacobian, report.declared_log_det_jacobian, atol=1e-7)
    assert np.all(np.abs(report.declared_log_det_jacobian) > 1e-3)  # it does change volume
    assert np.all(np.abs(report.flip_log_det_jacobian) < 1e-6)  # F(x, v) = (x, −v) does not
    assert report.jacobian_error == 0.0


@attrs.frozen(eq=False)
class WrongJacobianWalk(LogScaleWalk):
    """Declares ``ε Σ v / 2``: half the true log Jacobian."""

    def log_det_jacobian(self, state):
        return 0.5 * super().log_det_jacobian(state)


def test_a_wrong_declared_jacobian_is_caught_with_both_numbers():
    walk = WrongJacobianWalk(TARGET, 0.7)
    states = _states(walk)
    with pytest.raises(AssertionError) as err:
        assert_map(walk, states)
    message = str(err.value)
    true = LogScaleWalk(TARGET, 0.7).log_det_jacobian(states)
    chain = int(message.split("at chain ")[1].split()[0])
    assert f"declared log_det_jacobian {0.5 * true[chain]:.6g}" in message
    assert f"finite differences give {true[chain]:.6g}" in message


@attrs.frozen(eq=False)
class UndeclaredWalk(LogScaleWalk):
    """The walk that forgets to declare its Jacobian: checked for volume preservation."""

    @property
    def volume_preserving(self) -> bool:
        return True


def test_a_map_that_declares_nothing_is_still_held_to_volume_preservation():
    walk = UndeclaredWalk(TARGET, 0.7)
    report = check_map(walk, _states(walk))
    assert report.declared_log_det_jacobian is None
    assert any(v.startswith("volume: log|det J| = ") for v in report.violations)


@attrs.frozen(eq=False)
class StretchingFlipWalk(LogScaleWalk):
    """``F(x, v) = (1/x, −v)``: an involution, but ``|det ∂F/∂(x, v)| = 1/x²``."""

    def flip(self, state):
        return LogScaleState(1.0 / state.x, -state.v)


def test_a_flip_that_changes_volume_is_caught():
    walk = StretchingFlipWalk(TARGET, 0.7)
    report = check_map(walk, _states(walk))
    assert any(v.startswith("flip: log|det ∂(F ζ)/∂ζ|") for v in report.violations)


class Shift(ReversibleMap):
    """A volume-preserving map that declares nothing."""

    def forward(self, state):
        return (state + 1) % 3

    def backward(self, state):
        return (state - 1) % 3

    def log_density(self, state):
        return np.zeros(len(state))


def test_volume_preserving_is_the_default_and_costs_nothing():
    assert Shift().volume_preserving and FiniteLadder([1, 0], [1, 2]).volume_preserving
    assert not MeasuredLadder([1, 0], [1, 2], [1, 1]).volume_preserving
    np.testing.assert_array_equal(Shift().log_det_jacobian(np.arange(3)), np.zeros(3))


def test_move_log_det_jacobian_is_forward_or_minus_the_jacobian_before():
    walk = LogScaleWalk(TARGET, 0.5)
    states = _states(walk, n=4)
    d = np.array([1, -1, 1, -1])
    moved = walk.move(states, d)
    got = walk.move_log_det_jacobian(states, moved, d)
    want = np.where(d > 0, walk.log_det_jacobian(states), -walk.log_det_jacobian(moved))
    np.testing.assert_array_equal(got, want)
    # log |det ∂(L⁻¹ ζ)/∂ζ| = −ε Σ v: the walk's backward step shrinks by e^{−εv}
    np.testing.assert_allclose(got[d < 0], -0.5 * states.v[d < 0].sum(axis=1))


@attrs.frozen(eq=False)
class BadShapeWalk(LogScaleWalk):
    def log_det_jacobian(self, state):
        return super().log_det_jacobian(state)[:, None]


def test_a_jacobian_of_the_wrong_shape_is_refused_naming_the_map_and_shape():
    walk = BadShapeWalk(TARGET, 0.5)
    match = r"BadShapeWalk\.log_det_jacobian returned shape \(3, 1\), expected \(3,\)"
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match=match):
        LookAhead(walk, 2).init(TARGET.sample(3, rng), rng)
    with pytest.raises(ValueError, match=match):
        check_map(walk, _states(walk, n=3))
    with pytest.raises(ValueError, match=match):
        log_det_jacobian_of(walk, _states(walk, n=3))


def test_walk_forward_flip_and_density():
    walk = LogScaleWalk(TARGET, 0.5)
    s = LogScaleState(np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[2.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_allclose(walk.forward(s).x, [[np.e, 2.0], [3.0, -np.exp(0.5)]])
    np.testing.assert_array_equal(walk.flip(s).v, -s.v)
    lp = walk.log_density(s)
    assert lp[1] == -np.inf  # a negative coordinate: density zero
    assert lp[0] == pytest.approx(-TARGET.energy(s.x[:1])[0] - 2.0)
    np.testing.assert_array_equal(walk.log_det_jacobian(s), [1.0, 0.5])
    np.testing.assert_array_equal(walk.draw(s), s.x)


@pytest.mark.parametrize(
    ("init", "match"),
    [
        (np.ones(3), "shape"),
        (np.array([[1.0], [0.0]]), "positive"),
        (np.array([[1.0], [np.nan]]), "positive"),
        (LogScaleState(np.ones((2, 1)), np.ones((2, 2))), "init.v"),
    ],
)
def test_walk_rejects_bad_input(init, match):
    with pytest.raises(ValueError, match=match):
        LogScaleWalk(TARGET, 0.5).prepare(init, np.random.default_rng(0))


def test_walk_and_refresh_parameters_are_validated():
    with pytest.raises(ValueError, match="step_size"):
        LogScaleWalk(TARGET, 0.0)
    with pytest.raises(ValueError, match="energy"):
        LogScaleWalk(object(), 0.5)
    with pytest.raises(ValueError, match="beta"):
        LogScaleRefresh(0.0)
    with pytest.raises(ValueError, match="shape"):
        GammaTarget(-1.0)


def test_refresh_keeps_x_and_blends_v():
    s = LogScaleState(np.ones((3, 1)), np.full((3, 1), 2.0))
    out, d = LogScaleRefresh(1.0)(s, np.array([1, -1, 1]), np.random.default_rng(0))
    np.testing.assert_array_equal(out.x, s.x)
    assert not np.allclose(out.v, s.v)
    kernel = Ladder(LogScaleWalk(TARGET, 0.5), LookAheadRule(2), LogScaleRefresh(0.25))
    assert kernel.describe()["refresh"] == {"refresh": "LogScaleRefresh", "beta": 0.25}
