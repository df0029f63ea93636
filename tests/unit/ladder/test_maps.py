"""The ReversibleMap contract's generic parts: derived inverse, per-chain direction."""

import numpy as np
import pytest

from ladder_mcmc import ReversibleMap
from ladder_mcmc.hamiltonian import Leapfrog
from ladder_mcmc.models import IllConditionedGaussian


class Shift(ReversibleMap):
    """Shift on a cycle of 7 states, inverse given directly."""

    def forward(self, s):
        return (s + 1) % 7

    def backward(self, s):
        return (s - 1) % 7

    def log_density(self, s):
        return np.log1p(s.astype(float))


class Reflect(ReversibleMap):
    """States (k, sign) on a line; forward k -> k + sign; flip negates sign: L⁻¹ = F L F."""

    def forward(self, s):
        return s + np.stack([s[:, 1], np.zeros_like(s[:, 1])], axis=1)

    def flip(self, s):
        return s * np.array([1, -1])

    def log_density(self, s):
        return -0.5 * s[:, 0].astype(float) ** 2


def test_move_splits_chains_by_direction_without_flip():
    s = np.array([0, 3, 6])
    np.testing.assert_array_equal(Shift().move(s, np.array([1, -1, 1])), [1, 2, 0])


def test_backward_is_derived_from_flip():
    m = Reflect()
    s = np.array([[0, 1], [2, -1]])
    np.testing.assert_array_equal(m.backward(m.forward(s)), s)
    np.testing.assert_array_equal(m.move(s, np.array([-1, 1])), [[-1, 1], [1, -1]])


def test_map_without_inverse_is_refused():
    class NoInverse(ReversibleMap):
        def forward(self, s):
            return s

        def log_density(self, s):
            return np.zeros(len(s))

    with pytest.raises(TypeError, match="backward\\(\\) or flip\\(\\)"):
        NoInverse().backward(np.zeros(2))


def test_leapfrog_move_folds_direction_into_momentum():
    target = IllConditionedGaussian(3)
    lf = Leapfrog(target, 0.3, 4)
    rng = np.random.default_rng(0)
    s = lf.prepare(target.sample(4, rng), rng)
    d = np.array([1, -1, -1, 1])
    moved = lf.move(s, d)
    fwd, bwd = lf.forward(s), lf.backward(s)
    expect_x = np.where(d[:, None] > 0, fwd.x, bwd.x)
    np.testing.assert_allclose(moved.x, expect_x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(lf.move(moved, -d).x, s.x, rtol=1e-10, atol=1e-10)
