"""CycleShift, HarmonicFlow, Yoshida4 and McLachlan2: the map contract and their own properties."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from ladder_mcmc import DirectionRefresh, Ladder, LookAhead, PhaseState
from ladder_mcmc.hamiltonian import HarmonicFlow, Leapfrog, McLachlan2, Yoshida4
from ladder_mcmc.ladder import CycleShift, LookAheadRule
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian
from ladder_mcmc.verify import FiniteLadder, assert_map, check_map, exact_transition_matrix

QUARTIC = FunctionTarget(lambda x: 0.25 * (x**4).sum(1), lambda x: x**3, dim=2)


# ------------------------------------------------------------------ cycle
def test_cycle_shift_passes_the_map_contract():
    rng = np.random.default_rng(0)
    assert_map(CycleShift(7), np.arange(7), rng)
    assert_map(CycleShift(5, weights=[1, 2, 3, 4, 5]), np.arange(5), rng)


def test_cycle_shift_is_the_finite_ladder_of_the_shift_permutation():
    """Same map as FiniteLadder(i -> i+1): the exact matrices of the two kernels agree."""
    shift = CycleShift(6, weights=[1, 2, 3, 1, 2, 5])
    ladder = FiniteLadder([(i + 1) % 6 for i in range(6)], [1, 2, 3, 1, 2, 5])
    s = np.arange(6)
    for d in (1, -1):
        np.testing.assert_array_equal(shift.move(s, np.full(6, d)), ladder.move(s, np.full(6, d)))
    np.testing.assert_allclose(shift.log_density(s), ladder.log_density(s))


def test_uniform_cycle_with_full_direction_refresh_is_the_simple_random_walk():
    ladder = FiniteLadder([(i + 1) % 5 for i in range(5)], [1] * 5)
    t = exact_transition_matrix(Ladder(ladder, LookAheadRule(1), DirectionRefresh(Fraction(1))))
    # from (0, +1) to position 1, direction then uniform
    assert t[0].tolist() == [0, Fraction(1, 2), 0, 0, 0, 0, Fraction(1, 2), 0, 0, 0]
    # so from position 0 with a uniform direction: to 1 or 4 with probability 1/2 each
    pos = (t[0] + t[5]) / 2
    assert (pos[:5] + pos[5:]).tolist() == [0, Fraction(1, 2), 0, 0, Fraction(1, 2)]


def test_cycle_shift_validates():
    with pytest.raises(ValueError, match="n must be"):
        CycleShift(1)
    with pytest.raises(ValueError, match="weights"):
        CycleShift(3, weights=[1, 0, 1])
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        LookAhead(CycleShift(3), 1).init(np.array([3]), np.random.default_rng(0))


def test_a_broken_cycle_map_fails_the_contract():
    class NotInjective(CycleShift):
        def forward(self, state):
            return np.minimum(np.asarray(state) + 1, self.n - 1)

    assert not check_map(NotInjective(5), np.arange(5), np.random.default_rng(0)).ok


# ------------------------------------------------------------------ harmonic flow
def test_harmonic_flow_passes_the_map_contract():
    rng = np.random.default_rng(1)
    flow = HarmonicFlow(QUARTIC, omega=1.3, time=0.7)
    states = flow.prepare(rng.standard_normal((6, 2)), rng)
    assert_map(flow, states, rng)


def test_harmonic_flow_is_the_exact_oscillator_flow_and_not_energy_conserving():
    flow = HarmonicFlow(QUARTIC, omega=2.0, time=0.3)
    x0, v0 = np.array([[0.7, -1.1]]), np.array([[0.4, 0.9]])
    z = PhaseState(x=x0, v=v0, energy=QUARTIC.energy(x0), grad=np.zeros_like(x0))
    out = flow.forward(flow.forward(z))  # two steps = time 0.6
    t, w = 0.6, 2.0
    np.testing.assert_allclose(out.x, x0 * math.cos(w * t) + v0 / w * math.sin(w * t), rtol=1e-13)
    np.testing.assert_allclose(out.v, -x0 * w * math.sin(w * t) + v0 * math.cos(w * t), rtol=1e-13)
    h0 = 0.5 * w**2 * (z.x**2).sum() + 0.5 * (z.v**2).sum()
    h1 = 0.5 * w**2 * (out.x**2).sum() + 0.5 * (out.v**2).sum()
    assert h1 == pytest.approx(h0, rel=1e-13)  # conserves the reference energy ...
    assert abs(flow.log_density(out)[0] - flow.log_density(z)[0]) > 0.1  # ... not the target's
    assert flow.cost == 1


# ------------------------------------------------------------------ splitting integrators
@pytest.mark.parametrize("cls", [Yoshida4, McLachlan2])
def test_splitting_integrators_pass_the_map_contract(cls):
    rng = np.random.default_rng(2)
    target = IllConditionedGaussian(3, log_condition=1)
    m = cls(target, step_size=0.4, n_steps=3)
    assert_map(m, m.prepare(target.sample(5, rng), rng), rng)
    assert_map(cls(QUARTIC, 0.2, 4), cls(QUARTIC, 0.2, 4).prepare(rng.normal(size=(5, 2)), rng))


def _oscillator_error(map_cls, eps: float) -> float:
    """Position error after time 1.2 on the unit harmonic oscillator (exact: rotation)."""
    target = IllConditionedGaussian(1, log_condition=0)  # E = x²/2, ω = 1
    n = round(1.2 / eps)
    m = map_cls(target, step_size=eps, n_steps=n)
    z = m.prepare(np.array([[1.0]]), np.random.default_rng(0))
    z = PhaseState(x=z.x, v=np.array([[0.5]]), energy=z.energy, grad=z.grad)
    out = m.forward(z)
    t = n * eps
    exact = math.cos(t) + 0.5 * math.sin(t)
    return abs(out.x[0, 0] - exact)


@pytest.mark.parametrize(("cls", "order"), [(Leapfrog, 2), (McLachlan2, 2), (Yoshida4, 4)])
def test_global_error_order(cls, order):
    """log-log slope of the error against ε (ε = 0.1, 0.05, 0.025) is the integrator's order."""
    eps = np.array([0.1, 0.05, 0.025])
    err = np.array([_oscillator_error(cls, e) for e in eps])
    slope = np.polyfit(np.log(eps), np.log(err), 1)[0]
    assert slope == pytest.approx(order, abs=0.15)


def test_mclachlan_beats_leapfrog_energy_error_at_equal_cost():
    """Equal cost (16 gradients) and trajectory length 3.2 on N(0, 1): the two-stage
    splitting's energy error is far smaller (Blanes, Casas & Sanz-Serna 2014)."""
    target = IllConditionedGaussian(1, log_condition=0)
    rng = np.random.default_rng(0)
    x = target.sample(500, rng)

    def rms_energy_error(m):
        z = m.prepare(x, np.random.default_rng(1))
        return np.sqrt(np.mean((m.log_density(m.forward(z)) - m.log_density(z)) ** 2))

    leapfrog, mclachlan = Leapfrog(target, 0.2, 16), McLachlan2(target, 0.4, 8)
    assert leapfrog.cost == mclachlan.cost == 16
    assert rms_energy_error(mclachlan) < 0.1 * rms_energy_error(leapfrog)


def test_costs_count_gradients():
    target = IllConditionedGaussian(2)
    assert Yoshida4(target, 0.5, 10).cost == 30
    assert McLachlan2(target, 0.5, 10).cost == 20
    calls = []

    def grad(x):
        calls.append(len(x))
        return x

    counted = FunctionTarget(lambda x: 0.5 * (x**2).sum(1), grad, dim=2)
    m = Yoshida4(counted, 0.3, 4)
    z = m.prepare(np.zeros((1, 2)) + 0.5, np.random.default_rng(0))
    calls.clear()
    m.forward(z)
    assert len(calls) == m.cost  # energy_and_grad absent: grad called once per stage
