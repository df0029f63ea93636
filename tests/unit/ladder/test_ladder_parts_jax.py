"""The abstract ladder's parts on JAX values: each runs unchanged in the compiled loop.

* ``ReversibleMap.move`` and ``move_log_det_jacobian`` under ``jax.jit`` give the numpy
  values for mixed, all-forward and all-backward directions: a map with a flip through
  ``F L F``, a map with ``backward`` only through both directions and a selection;
* every rule's ``update``, ``uniform`` and ``next_carry`` under ``jax.jit`` give the
  numpy values (the same IEEE operations: exactly);
* ``sample(..., backend="jax")`` gives the numpy backend's trace for kernels made of the
  ladder's parts: exactly for the integer maps (``CycleShift``, an ``AuxiliaryMap`` of
  steps on a cycle), to 1e-10 with the same rung codes, map applications and costs for
  the others (``LogScaleWalk``, an ``AuxiliaryMap`` whose law probes the target and
  reports costs, a translation with ``backward`` only).
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import attrs
import numpy as np
import pytest

from ladder_mcmc import Ladder, sample
from ladder_mcmc.arrays import namespace
from ladder_mcmc.engine.pytree import register
from ladder_mcmc.ladder import (
    AuxiliaryLaw,
    AuxiliaryMap,
    AuxiliaryRefresh,
    CycleShift,
    DirectionRefresh,
    InnerRefresh,
    LogScaleRefresh,
    LogScaleState,
    LogScaleWalk,
    LookAheadRule,
    MapFamily,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
    ReversibleMap,
)
from ladder_mcmc.models import GammaTarget

jax = pytest.importorskip("jax")
jnp = jax.numpy

GAMMA = GammaTarget(3.0, 2.0, dim=2)
WEIGHTS = np.array([1.0, 3.0, 2.0, 4.0, 1.0, 2.0, 5.0])
CYCLE_X0 = np.array([0, 1, 2, 3, 4, 5, 6, 2])
GAMMA_X0 = GAMMA.sample(6, np.random.default_rng(0))
DIRECTIONS = {
    "mixed": np.array([1, -1, -1, 1, 1, -1, 1, -1], dtype=np.int8),
    "forward": np.ones(8, dtype=np.int8),
    "backward": -np.ones(8, dtype=np.int8),
}


def jitted(fn, *args):
    """``fn(*args)`` compiled, with float64, as numpy values."""
    register(*args)  # the states' attrs classes as pytrees
    with jax.enable_x64(True):
        out = jax.jit(fn)(*jax.tree_util.tree_map(jnp.asarray, args))
        return jax.tree_util.tree_map(np.asarray, out)


@attrs.frozen(eq=False)
class Translate(ReversibleMap):
    """``x → x + c`` with ``backward`` only, on a Gaussian density."""

    shift: np.ndarray
    precision: np.ndarray

    def forward(self, x):
        return x + self.shift

    def backward(self, x):
        return x - self.shift

    def log_density(self, x):
        return -0.5 * namespace(x).einsum("ij,ij->i", x, x * self.precision)


class ScaleFamily(MapFamily):
    """``(x, v) → (x e^{α v}, v)``: a family with a flip that changes volume."""

    def forward(self, s, alpha):
        return LogScaleState(s.x * namespace(s.x, alpha).exp(alpha[:, None] * s.v), s.v)

    def flip(self, s, alpha):
        return LogScaleState(s.x, -s.v)

    def log_density(self, s):
        xp = namespace(s.x, s.v)
        inside = (s.x > 0).all(axis=1)
        energy = GAMMA.energy(xp.where(s.x > 0, s.x, 1.0))
        return xp.where(inside, -energy - 0.5 * xp.einsum("ij,ij->i", s.v, s.v), -xp.inf)

    def log_det_jacobian(self, s, alpha):
        return alpha * s.v.sum(axis=1)

    def prepare(self, init, rng):
        x = np.asarray(init, dtype=float)
        return LogScaleState(x, rng.standard_normal(x.shape))

    def draw(self, s):
        return s.x


class LogNormalStep(AuxiliaryLaw):
    """``log α ~ N(log 0.4 − 0.1 log(1 + |x|²), 0.3²)``, reporting made-up gradient costs."""

    def _centre(self, s):
        return np.log(0.4) - 0.1 * namespace(s.x).log1p((s.x * s.x).sum(axis=1))

    def log_prob(self, alpha, s):
        log_alpha = namespace(alpha).log(alpha)
        z = (log_alpha - self._centre(s)) / 0.3
        return -0.5 * z * z - log_alpha

    def log_prob_cost(self, alpha, s):
        xp = namespace(alpha)
        return xp.where(alpha > 0.4, 2, 1).astype(xp.int64)

    def sample(self, s, rng):
        return namespace(s.x).exp(self._centre(s) + 0.3 * rng.standard_normal(s.x.shape[0]))

    def sample_with_cost(self, s, rng):
        alpha = self.sample(s, rng)
        xp = namespace(alpha)
        return alpha, xp.full(alpha.shape[0], 3, dtype=xp.int64)


class Steps(MapFamily):
    """``i → i + α (mod 9)``, ``α ∈ {1, 2}``: a family with ``backward`` only."""

    def forward(self, s, alpha):
        return (s + alpha) % 9

    def backward(self, s, alpha):
        return (s - alpha) % 9

    def log_density(self, s):
        return namespace(s).log(1.0 + (s % 3))


class EvenLong(AuxiliaryLaw):
    """``α = 2`` with probability 3/4 on the even states, 1/4 on the odd ones."""

    def log_prob(self, alpha, s):
        xp = namespace(alpha, s)
        p_two = xp.where(s % 2 == 0, 0.75, 0.25)
        return xp.log(xp.where(alpha == 2, p_two, 1 - p_two))

    def sample(self, s, rng):
        xp = namespace(s)
        p_two = xp.where(s % 2 == 0, 0.75, 0.25)
        return xp.where(rng.random(s.shape[0]) < p_two, 2, 1)


# ------------------------------------------------------------------ maps
@pytest.mark.parametrize("which", list(DIRECTIONS))
def test_move_of_a_map_with_backward_only_is_the_numpy_move_exactly(which):
    direction = DIRECTIONS[which]
    cycle = CycleShift(7, weights=WEIGHTS)
    moved = jitted(cycle.move, CYCLE_X0, direction)
    np.testing.assert_array_equal(moved, cycle.move(CYCLE_X0, direction))
    np.testing.assert_array_equal(moved, (CYCLE_X0 + direction) % 7)
    np.testing.assert_array_equal(jitted(cycle.log_density, moved), np.log(WEIGHTS)[moved])
    shift = Translate(np.array([0.3, -0.2]), np.array([1.0, 0.5]))
    x = np.random.default_rng(1).normal(size=(8, 2))
    np.testing.assert_array_equal(jitted(shift.move, x, direction), shift.move(x, direction))


@pytest.mark.parametrize("which", list(DIRECTIONS))
def test_move_of_a_map_with_a_flip_and_its_jacobian_are_the_numpy_values(which):
    direction = DIRECTIONS[which][:6]
    walk = LogScaleWalk(GAMMA, 0.4)
    state = walk.prepare(GAMMA_X0, np.random.default_rng(2))
    moved = jitted(walk.move, state, direction)
    expected = walk.move(state, direction)
    np.testing.assert_allclose(moved.x, expected.x, rtol=1e-14)
    np.testing.assert_array_equal(moved.v, expected.v)
    logdet = jitted(walk.move_log_det_jacobian, state, expected, direction)
    np.testing.assert_allclose(logdet, walk.move_log_det_jacobian(state, expected, direction))
    np.testing.assert_allclose(logdet, 0.4 * direction * state.v.sum(axis=1), rtol=1e-14)


# ------------------------------------------------------------------ rules
RULES = [
    LookAheadRule(3),
    ReducedFlipRule(),
    ReducedFlipLookAheadRule(2),
    PersistentUniformRule(2, 0.3),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: type(r).__name__)
def test_rules_give_the_numpy_values_under_jit(rule):
    rng = np.random.default_rng(3)
    memory, ratio = rng.uniform(0, 2, 8), np.r_[rng.uniform(0, 3, 7), 0.0]
    stage = rng.integers(0, rule.n_stages, 8)
    for got, want in zip(
        jitted(rule.update, memory, stage, ratio), rule.update(memory, stage, ratio), strict=True
    ):
        np.testing.assert_array_equal(got, want)
    carry = rule.init_carry(8, np.random.default_rng(4))
    if carry is None:
        return
    u = rule.uniform(carry, None, 8)
    np.testing.assert_array_equal(jitted(lambda c: rule.uniform(c, None, 8), carry), u)
    code = np.array([1, 0, 2, -1, 1, 0, 2, 1])
    taken = np.where(code > 0, rng.uniform(u + 1e-3, 3.0), 1.0)
    np.testing.assert_array_equal(
        jitted(rule.next_carry, carry, u, code, taken), rule.next_carry(carry, u, code, taken)
    )


def test_rules_still_update_fractions():
    half, third = Fraction(1, 2), Fraction(1, 3)
    memory = np.array([Fraction(0), half], dtype=object)
    ratio = np.array([third, Fraction(3, 2)], dtype=object)
    for rule in RULES:
        new, cumulative = rule.update(memory, np.zeros(2, dtype=int), ratio)
        assert list(new) == [third, Fraction(3, 2)] and list(cumulative) == [third, 1]
    rule = PersistentUniformRule(2, Fraction(1, 4))
    carry = np.array([-half, Fraction(1, 4)], dtype=object)
    u = rule.uniform(carry, None, 2)
    after = rule.next_carry(carry, u, np.array([0, 1]), np.array([1, half], dtype=object))
    assert list(after) == [Fraction(-1, 4), Fraction(3, 4)]


# ------------------------------------------------------------------ sampling
def _steps_kernel(law):
    refresh = AuxiliaryRefresh(law) + DirectionRefresh(Fraction(2, 5))
    return Ladder(AuxiliaryMap(Steps(), law), LookAheadRule(2), refresh)


def _scale_kernel(law):
    family = ScaleFamily()
    refresh = InnerRefresh(LogScaleRefresh(0.5)) + AuxiliaryRefresh(law) + DirectionRefresh(0.3)
    return Ladder(AuxiliaryMap(family, law), ReducedFlipLookAheadRule(2), refresh)


KERNELS = {
    "cycle-look-ahead": (
        lambda: Ladder(CycleShift(7, weights=WEIGHTS), LookAheadRule(2), DirectionRefresh(0.3)),
        CYCLE_X0,
    ),
    "cycle-persistent-uniform": (
        lambda: Ladder(
            CycleShift(7, weights=WEIGHTS), PersistentUniformRule(2, 0.3), DirectionRefresh(0.5)
        ),
        CYCLE_X0,
    ),
    "cycle-steps": (
        lambda: _steps_kernel(EvenLong()),
        CYCLE_X0,
    ),
    "log-scale": (
        lambda: Ladder(
            LogScaleWalk(GAMMA, 0.6),
            ReducedFlipLookAheadRule(2),
            LogScaleRefresh(0.5) + DirectionRefresh(0.5),
        ),
        GAMMA_X0,
    ),
    "auxiliary-scale": (lambda: _scale_kernel(LogNormalStep()), GAMMA_X0),
    "translate": (
        lambda: Ladder(
            Translate(np.array([0.3, -0.2]), np.array([1.0, 0.5])),
            ReducedFlipRule(),
            DirectionRefresh(0.5),
        ),
        GAMMA_X0,
    ),
}
EXACT = ("cycle-look-ahead", "cycle-persistent-uniform", "cycle-steps", "translate")


@pytest.mark.parametrize("name", list(KERNELS))
def test_the_jax_backend_gives_the_numpy_trace(name):
    build, init = KERNELS[name]
    kernel = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: R-hat and ESS warnings
        a = sample(kernel, init, 120, seed=5, backend="numpy", checks=False)
        b = sample(kernel, init, 120, seed=5, backend="jax", checks=False)
    assert b.backend["name"] == "jax"
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_array_equal(a.n_moves, b.n_moves)
    np.testing.assert_array_equal(a.non_finite_rungs, b.non_finite_rungs)
    for field in ("step_cost", "step_overhead"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)
    if name in EXACT:
        np.testing.assert_array_equal(a.states, b.states)
    else:
        np.testing.assert_allclose(a.states, b.states, rtol=1e-10, atol=1e-10)
    assert len(np.unique(a.rungs)) > 1  # the run moves, flips or stays: not all one code
