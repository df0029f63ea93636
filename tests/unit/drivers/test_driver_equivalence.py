"""The drivers agree, and the fast path is chosen by what a kernel's parts declare.

* The property of ``driver_equivalence.py`` (beside this file): on kernels composed by
  Hypothesis from the shipped parts, a refresh on another kinetic energy than the map's
  is refused, the fast path's ``applies_to`` accepts exactly the leapfrog look-ahead
  kernels on a ``Metric``, and the specialised driver (numpy and numba bookkeeping)
  gives the generic ragged driver's trace bit for bit. ``tests/mutation`` shows it
  failing on mutants of the selection.
* The declarations themselves: a subclass of ``Leapfrog``, ``LookAheadRule``,
  ``MomentumRefresh`` or ``Metric`` declares nothing unless it re-declares.
* The review's two bugs: a ``PowerKinetic`` leapfrog ran on the fast path with the
  Gaussian kinetic energy (now generic: the synchronous driver's law), and a refresh on
  another metric than the map's was accepted (now a ``ValueError``).
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from driver_equivalence import (
    KINETICS,
    TARGET,
    X0,
    Case,
    assert_same_trace,
    check_case,
    driver_equivalence_property,
    run,
)

from ladder_mcmc import (
    ComposedRefresh,
    CycleShift,
    DirectionRefresh,
    HarmonicFlow,
    JitteredLeapfrog,
    JitteredLengthLeapfrog,
    Ladder,
    Leapfrog,
    LengthJitter,
    LiftedLeapfrog,
    LiftedQuantileRefresh,
    LiftResampleRefresh,
    LookAheadRule,
    Metric,
    MomentumRefresh,
    NormalizedMomentumRefresh,
    PersistentUniformRule,
    PowerKinetic,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
    StepSizeJitter,
    TemperedLeapfrog,
    hmc,
    lahmc,
    lifted_lahmc,
    sample,
)
from ladder_mcmc.diagnostics import effective_sample_size
from ladder_mcmc.drivers import _leapfrog
from ladder_mcmc.hamiltonian import KineticEnergy
from ladder_mcmc.ladder import same_kinetic_energy
from ladder_mcmc.models import FunctionTarget
from ladder_mcmc.run.adaptation import with_hmc_parameters

test_every_accepting_driver_gives_the_generic_trace = driver_equivalence_property(300)

POWER = PowerKinetic(1.5, np.array([1.0, 10.0]))
DIAGONAL = Metric(np.array([0.5, 2.0]))
#: every shipped part at least once, whatever Hypothesis draws: (map, rule, refresh,
#: refused, fast)
EXPLICIT = {
    "lifted": (
        LiftedLeapfrog(TARGET, 0.3, 3, POWER),
        LookAheadRule(3),
        LiftedQuantileRefresh(0.1, POWER, 0.5) + LiftResampleRefresh(0.2),
        False,
        False,
    ),
    "lifted, other kinetic energy": (
        LiftedLeapfrog(TARGET, 0.3, 3, POWER),
        LookAheadRule(3),
        LiftResampleRefresh(0.2) + LiftedQuantileRefresh(0.1, PowerKinetic(2.0, np.ones(2))),
        True,
        False,
    ),
    "jittered": (
        JitteredLeapfrog(TARGET, 0.3, 3, DIAGONAL),
        LookAheadRule(3),
        MomentumRefresh(0.2, DIAGONAL) + StepSizeJitter(0.3),
        False,
        False,
    ),
    "jittered length": (
        JitteredLengthLeapfrog(TARGET, 0.3, 3, DIAGONAL),
        LookAheadRule(3),
        MomentumRefresh(0.2, DIAGONAL) + LengthJitter(3),
        False,
        True,
    ),
    "jittered length, two laws": (
        JitteredLengthLeapfrog(TARGET, 0.3, 3, DIAGONAL),
        LookAheadRule(3),
        LengthJitter(3) + MomentumRefresh(0.2, DIAGONAL) + LengthJitter(2),
        False,
        False,
    ),
    "normalized": (
        TemperedLeapfrog(TARGET, 0.3, 4, POWER, heat=2.0),
        ReducedFlipLookAheadRule(2),
        NormalizedMomentumRefresh(0.3, POWER) + DirectionRefresh(0.5),
        False,
        False,
    ),
    "harmonic": (
        HarmonicFlow(TARGET, 1.0, 0.7),
        PersistentUniformRule(2, 0.5),
        MomentumRefresh(0.5),
        False,
        False,
    ),
    "cycle": (CycleShift(5), ReducedFlipRule(), DirectionRefresh(0.5), False, False),
    "dense": (
        Leapfrog(TARGET, 0.8, 3, Metric(np.array([[1.0, 0.3], [0.3, 2.0]]))),
        LookAheadRule(3),
        MomentumRefresh(0.3, Metric(np.array([[1.0, 0.3], [0.3, 2.0]]))),
        False,
        True,
    ),
}


@pytest.mark.parametrize("name", list(EXPLICIT))
def test_explicit_compositions(name):
    map_, rule, refresh, refused, fast = EXPLICIT[name]
    init = np.arange(5) if name == "cycle" else X0
    check_case(Case(map_, rule, refresh, refused, fast, init), seed=4)


# ---------------------------------------------------------------- declarations
@attrs.frozen(eq=False)
class MyLeapfrog(Leapfrog):
    """A user's subclass: it could change anything, so it declares nothing."""


@attrs.frozen(eq=False)
class DeclaredLeapfrog(Leapfrog):
    """A user's subclass that promises Leapfrog's arithmetic."""

    plain_leapfrog = True


@attrs.frozen
class MyRule(LookAheadRule):
    pass


@attrs.frozen
class MyRefresh(MomentumRefresh):
    pass


@attrs.frozen(eq=False)
class MyMetric(Metric):
    pass


@attrs.frozen(eq=False)
class MyLengthLeapfrog(JitteredLengthLeapfrog):
    pass


@attrs.frozen
class MyLengthJitter(LengthJitter):
    pass


@attrs.frozen
class MyComposedRefresh(ComposedRefresh):
    pass


def test_kinetic_energies_satisfy_the_protocol():
    for make in KINETICS.values():
        assert isinstance(make(), KineticEnergy)
    metric = Metric(np.array([1.0, 2.0]))
    assert metric.gaussian_metric is metric
    assert PowerKinetic(2.0, np.ones(2)).gaussian_metric is None
    assert MyMetric().gaussian_metric is None


def test_shipped_fast_kernels_keep_the_fast_path():
    diagonal = np.array([0.5, 2.0])
    for kernel in (
        lahmc(TARGET, 0.5, 3, 0.1),
        hmc(TARGET, 0.5, 3, 1.0, inverse_mass=diagonal),
        lahmc(TARGET, 0.5, 3, 0.2, 2, inverse_mass=np.diag(diagonal) + 0.1),
        Ladder(Leapfrog(TARGET, 0.5, 3), LookAheadRule(2), None),
        Ladder(DeclaredLeapfrog(TARGET, 0.5, 3), LookAheadRule(2), MomentumRefresh(0.3)),
        Ladder(JitteredLengthLeapfrog(TARGET, 0.5, 3), LookAheadRule(2), LengthJitter(3)),
        Ladder(
            JitteredLengthLeapfrog(TARGET, 0.5, 3),
            LookAheadRule(2),
            MomentumRefresh(0.3) + LengthJitter(3, 0.5),
        ),
    ):
        assert _leapfrog.applies_to(kernel)


@pytest.mark.parametrize(
    "kernel",
    [
        Ladder(MyLeapfrog(TARGET, 0.5, 3), LookAheadRule(2), MomentumRefresh(0.3)),
        Ladder(Leapfrog(TARGET, 0.5, 3), MyRule(2), MomentumRefresh(0.3)),
        Ladder(Leapfrog(TARGET, 0.5, 3), LookAheadRule(2), MyRefresh(0.3)),
        Ladder(Leapfrog(TARGET, 0.5, 3, MyMetric()), LookAheadRule(2), None),
        Ladder(Leapfrog(TARGET, 0.5, 3, PowerKinetic(2.0, np.ones(2))), LookAheadRule(2), None),
        lahmc(TARGET, 0.5, 3, 0.1, jitter=0.2),
        lifted_lahmc(TARGET, 0.5, 3),
        Ladder(MyLengthLeapfrog(TARGET, 0.5, 3), LookAheadRule(2), LengthJitter(3)),
        Ladder(JitteredLengthLeapfrog(TARGET, 0.5, 3), LookAheadRule(2), MyLengthJitter(3)),
        Ladder(
            JitteredLengthLeapfrog(TARGET, 0.5, 3),
            LookAheadRule(2),
            MyComposedRefresh((MomentumRefresh(0.3), LengthJitter(3))),
        ),
        Ladder(Leapfrog(TARGET, 0.5, 3), LookAheadRule(2), MomentumRefresh(0.3) + LengthJitter(3)),
    ],
    ids=[
        "map",
        "rule",
        "refresh",
        "metric",
        "power-2",
        "jittered",
        "lifted",
        "length map",
        "length refresh",
        "composition",
        "length law on a fixed length",
    ],  # fmt: skip
)
def test_parts_that_declare_nothing_go_to_the_generic_driver(kernel):
    assert not _leapfrog.applies_to(kernel)


def test_a_redeclared_subclass_gives_the_generic_trace():
    kernel = Ladder(DeclaredLeapfrog(TARGET, 1.1, 3), LookAheadRule(3), MomentumRefresh(0.3))
    assert_same_trace(run(kernel, X0, 5, "numpy"), run(kernel, X0, 5, "generic"))


# ---------------------------------------------------------------- bug 1
VARIANCES = np.array([1.0, 10.0])
GAUSS2 = FunctionTarget(lambda x: 0.5 * (x**2 / VARIANCES).sum(1), lambda x: x / VARIANCES, dim=2)


def test_a_power_kinetic_energy_runs_on_the_generic_driver_with_the_right_law():
    """``PowerKinetic`` declares no Gaussian metric: the generic driver, draw for draw.

    Formerly the fast path computed ``log p`` with ``½ vᵀM⁻¹v`` for it and sampled
    variances (0.81, 7.8) instead of (1, 10).
    """
    kin = PowerKinetic(1.5, np.ones(2))
    kernel = Ladder(Leapfrog(GAUSS2, 0.3, 5, kin), LookAheadRule(4), MomentumRefresh(1.0, kin))
    assert not _leapfrog.applies_to(kernel)
    x0 = np.zeros((40, 2))
    ragged = sample(kernel, x0, 1500, seed=1, schedule="ragged", warmup=0)
    assert_same_trace(ragged, run(kernel, x0, 1, "generic", n_steps=1500))
    squares = ragged.positions[300:] ** 2  # E x² = variance; Var x² = 2 variance²
    mcse = np.sqrt(2.0) * VARIANCES / np.sqrt(effective_sample_size(squares))
    z = (squares.mean(axis=(0, 1)) - VARIANCES) / mcse
    assert np.all(np.abs(z) < 4), (squares.mean(axis=(0, 1)), mcse)


# ---------------------------------------------------------------- bug 2
def test_a_refresh_on_another_metric_is_refused_naming_both():
    map_ = Leapfrog(GAUSS2, 0.5, 4, Metric(np.array([1.0, 4.0])))
    with pytest.raises(ValueError) as err:
        Ladder(map_, LookAheadRule(4), MomentumRefresh(0.3))
    message = str(err.value)
    assert "MomentumRefresh draws momenta for Metric(inverse_mass=None)" in message
    assert "the map Leapfrog integrates Metric(inverse_mass=[1. 4.])" in message
    # also inside a composition, and for the lifted and normalised refreshes
    with pytest.raises(ValueError, match="ComposedRefresh draws momenta for Metric"):
        Ladder(map_, LookAheadRule(4), MomentumRefresh(0.3) + DirectionRefresh(0.5))
    power = PowerKinetic(1.5, np.ones(2))
    with pytest.raises(ValueError, match=r"PowerKinetic\(a=1.5, inverse_mass=\[1. 1.\]\)"):
        Ladder(map_, LookAheadRule(4), NormalizedMomentumRefresh(0.3, power))
    with pytest.raises(ValueError, match="integrates Metric"):
        Ladder(HarmonicFlow(GAUSS2, 1.0, 0.5), LookAheadRule(1), MomentumRefresh(0.3, map_.metric))


def test_equal_kinetic_energies_in_separate_objects_agree():
    for make in KINETICS.values():
        assert same_kinetic_energy(make(), make())
    assert same_kinetic_energy(Metric(), Metric(np.ones(2)))  # one law, written two ways
    assert same_kinetic_energy(Metric(np.ones(2)), Metric(np.eye(2)))
    assert not same_kinetic_energy(Metric(np.ones(2)), Metric(np.full(2, 2.0)))
    assert not same_kinetic_energy(Metric(np.ones(2)), PowerKinetic(2.0, np.ones(2)))
    assert not same_kinetic_energy(PowerKinetic(1.5, np.ones(2)), PowerKinetic(2.0, np.ones(2)))
    assert not same_kinetic_energy(Metric(np.ones(2)), Metric(np.ones(3)))
    kernel = Ladder(
        Leapfrog(GAUSS2, 0.5, 4, Metric(np.diag([1.0, 4.0]))),
        LookAheadRule(4),
        MomentumRefresh(0.3, Metric(np.diag([1.0, 4.0]))),
    )
    assert _leapfrog.applies_to(kernel)


@pytest.mark.parametrize("inverse_mass", [None, np.array([1.0, 4.0]), np.diag([1.0, 4.0])])
def test_warmup_swaps_the_kinetic_energy_of_map_and_refresh_together(inverse_mass):
    """``with_hmc_parameters`` (warm-up) builds kernels that pass the check."""
    new = Metric(np.array([2.0, 3.0]))
    kin = PowerKinetic(1.5, np.ones(2))
    for kernel in (
        lahmc(GAUSS2, 0.5, 4, 0.3, inverse_mass=inverse_mass),
        lahmc(GAUSS2, 0.5, 4, 0.3, inverse_mass=inverse_mass, jitter=0.3),
        lifted_lahmc(GAUSS2, 0.5, 4),
        Ladder(Leapfrog(GAUSS2, 0.3, 5, kin), LookAheadRule(4), MomentumRefresh(1.0, kin)),
    ):
        adapted = with_hmc_parameters(kernel, step_size=0.4, metric=new)
        assert adapted.map.kinetic_energy.inverse_mass.tolist() == [2.0, 3.0]
        assert type(adapted.map.kinetic_energy) is type(kernel.map.kinetic_energy)
    kernel = lahmc(GAUSS2, 0.5, 4, 0.3, inverse_mass=inverse_mass)
    trace = sample(kernel, np.zeros((4, 2)), 20, seed=0, warmup=40)
    assert np.isfinite(trace.positions).all()


def test_one_law_written_three_ways_is_accepted_and_gives_the_generic_trace(monkeypatch):
    """Identity, a diagonal of ones and the identity matrix are one Gaussian kinetic
    energy: a refresh written one way on a map written another is accepted, and every
    driver that takes it gives the generic trace; another law is still refused."""
    from ladder_mcmc import (
        Ladder,
        Leapfrog,
        LookAheadRule,
        Metric,
        MomentumRefresh,
        drivers,
        sample,
    )
    from ladder_mcmc.models import IllConditionedGaussian

    target = IllConditionedGaussian(2, log_condition=1)
    x0 = target.sample(5, np.random.default_rng(0))
    forms = [Metric(), Metric(np.ones(2)), Metric(np.eye(2))]
    for map_metric in forms:
        for refresh_metric in forms:
            kernel = Ladder(
                Leapfrog(target, 0.5, 3, map_metric),
                LookAheadRule(3),
                MomentumRefresh(0.5, refresh_metric),
            )
            assert _leapfrog.applies_to(kernel)
            fast = sample(kernel, x0, 15, seed=1, checks=False, warmup=0)
            monkeypatch.setattr(drivers, "FAST_PATH", False)
            generic = sample(kernel, x0, 15, seed=1, checks=False, warmup=0)
            monkeypatch.undo()
            np.testing.assert_array_equal(fast.positions, generic.positions)
    diag = Metric(np.array([1.0, 4.0]))
    Ladder(
        Leapfrog(target, 0.5, 3, diag),
        LookAheadRule(3),
        MomentumRefresh(0.5, Metric(np.diag([1.0, 4.0]))),
    )
    with pytest.raises(ValueError, match="draws momenta for"):
        Ladder(Leapfrog(target, 0.5, 3, diag), LookAheadRule(3), MomentumRefresh(0.5, Metric()))
