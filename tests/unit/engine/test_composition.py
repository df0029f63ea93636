"""The composition property: the engine runs every composition of the shipped parts as
the reference does.

``driver_equivalence.py`` (in ``tests/unit``) composes kernels from every shipped map,
kinetic energy, refresh and rule, and checks that a refresh on another kinetic energy
than the map's is refused; that the ragged numpy loop gives the synchronous reference's
trace (``Ladder.step``) bit for bit; that the JAX loop gives the numpy loop's draws to
1e-10 with the same rung codes, map applications, non-finite counts and costs; and that
checkpoints every third step and two groups of chains on an executor change nothing, on
each backend. Here it runs:

* on the numpy backend, on 150 Hypothesis examples, and on fixed compositions that hold
  every shipped part at least once;
* on the JAX backend, on a few fixed compositions (each a compilation of 1–4 s), one of
  them with the streams checks, and on 3 Hypothesis examples; ``-m slow`` runs 100 more
  examples on both backends with the streams checks.

``tests/mutation/test_engine_mutants.py`` shows it failing on mutants of the engine.
Also here: the refusal of a refresh on another kinetic energy, with both names; equal
kinetic energies in separate objects; warm-up swapping the kinetic energy of map and
refresh together; the law sampled with a power kinetic energy.
"""

from __future__ import annotations

import numpy as np
import pytest
from driver_equivalence import (
    KINETICS,
    TARGET,
    X0,
    Case,
    check_case,
    composition_property,
)

from ladder_mcmc import (
    DirectionRefresh,
    FunctionTarget,
    Ladder,
    Leapfrog,
    LookAheadRule,
    MomentumRefresh,
    lahmc,
    lifted_lahmc,
    sample,
)
from ladder_mcmc.diagnostics import effective_sample_size
from ladder_mcmc.hamiltonian import (
    HarmonicFlow,
    JitteredLeapfrog,
    JitteredLengthLeapfrog,
    KineticEnergy,
    LengthJitter,
    LiftedLeapfrog,
    LiftedQuantileRefresh,
    LiftResampleRefresh,
    McLachlan2,
    Metric,
    NormalizedMomentumRefresh,
    PowerKinetic,
    StepSizeJitter,
    TemperedLeapfrog,
    Yoshida4,
    refined_lahmc,
    span_lahmc,
    state_length_lahmc,
)
from ladder_mcmc.hamiltonian.warmup.parameters import with_hmc_parameters
from ladder_mcmc.ladder import (
    CycleShift,
    LogScaleRefresh,
    LogScaleWalk,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
)
from ladder_mcmc.ladder.refresh import same_kinetic_energy
from ladder_mcmc.models import GammaTarget

test_composed_kernels_on_numpy_are_the_synchronous_reference = composition_property(150)


def _jax():
    pytest.importorskip("jax")


def test_composed_kernels_on_jax_are_the_numpy_backend():
    _jax()
    composition_property(3, ("jax",), check_streams=False)()


@pytest.mark.slow
def test_composed_kernels_on_both_backends_with_their_streams():
    _jax()
    composition_property(100, ("numpy", "jax"))()


POWER = PowerKinetic(1.5, np.array([1.0, 10.0]))
DIAGONAL = Metric(np.array([0.5, 2.0]))
DENSE = Metric(np.array([[1.0, 0.3], [0.3, 2.0]]))
GAMMA = GammaTarget(2.0, 1.5, dim=2)
STATE_LENGTH = state_length_lahmc(TARGET, 0.3, time=1.2, max_steps=8, beta=0.5, look_ahead=3)
REFINED = refined_lahmc(TARGET, 1.1, n_steps=2, max_level=2, beta=0.5, look_ahead=2)
SPAN = span_lahmc(TARGET, 0.6, 2, 0.5, 1.0, 1.0, -2, 2, look_ahead=2)
#: every shipped part at least once, whatever Hypothesis draws: (map, rule, refresh, refused)
EXPLICIT = {
    "lifted": (
        LiftedLeapfrog(TARGET, 0.3, 3, POWER),
        LookAheadRule(3),
        LiftedQuantileRefresh(0.1, POWER, 0.5) + LiftResampleRefresh(0.2),
        False,
    ),
    "lifted, other kinetic energy": (
        LiftedLeapfrog(TARGET, 0.3, 3, POWER),
        LookAheadRule(3),
        LiftResampleRefresh(0.2) + LiftedQuantileRefresh(0.1, PowerKinetic(2.0, np.ones(2))),
        True,
    ),
    "jittered": (
        JitteredLeapfrog(TARGET, 0.3, 3, DIAGONAL),
        ReducedFlipRule(),
        MomentumRefresh(0.2, DIAGONAL) + StepSizeJitter(0.3),
        False,
    ),
    "jittered length": (
        JitteredLengthLeapfrog(TARGET, 0.3, 3, DIAGONAL),
        PersistentUniformRule(3, 0.3),
        MomentumRefresh(0.2, DIAGONAL) + LengthJitter(3),
        False,
    ),
    "jittered length, two laws": (
        JitteredLengthLeapfrog(TARGET, 0.3, 3, DIAGONAL),
        LookAheadRule(3),
        LengthJitter(3) + MomentumRefresh(0.2, DIAGONAL) + LengthJitter(2),
        False,
    ),
    "normalized": (
        TemperedLeapfrog(TARGET, 0.3, 4, POWER, heat=2.0),
        ReducedFlipLookAheadRule(2),
        NormalizedMomentumRefresh(0.3, POWER) + DirectionRefresh(0.5),
        False,
    ),
    "yoshida": (
        Yoshida4(TARGET, 0.5, 2, DENSE),
        LookAheadRule(2),
        MomentumRefresh(0.5, DENSE),
        False,
    ),
    "mclachlan": (McLachlan2(TARGET, 0.5, 2), PersistentUniformRule(2, 0.01), None, False),
    "harmonic": (
        HarmonicFlow(TARGET, 1.0, 0.7),
        PersistentUniformRule(2, 0.5),
        MomentumRefresh(0.5),
        False,
    ),
    "cycle": (CycleShift(5), ReducedFlipRule(), DirectionRefresh(0.5), False),
    "dense": (
        Leapfrog(TARGET, 1.5, 3, DENSE),
        LookAheadRule(3),
        MomentumRefresh(0.3, Metric(np.array([[1.0, 0.3], [0.3, 2.0]]))),
        False,
    ),
    "log-scale": (
        LogScaleWalk(GAMMA, 0.8),
        ReducedFlipLookAheadRule(2),
        LogScaleRefresh(0.3) + DirectionRefresh(0.25),
        False,
    ),
    "state length": (STATE_LENGTH.map, ReducedFlipLookAheadRule(2), STATE_LENGTH.refresh, False),
    "refined step": (REFINED.map, LookAheadRule(2), REFINED.refresh, False),
    "span step": (SPAN.map, ReducedFlipLookAheadRule(3), SPAN.refresh, False),
}
#: the fixed compositions run on JAX in the default run (one compilation each)
ON_JAX = ["dense", "jittered length", "log-scale", "state length", "span step"]


def _case(name: str) -> Case:
    map_, rule, refresh, refused = EXPLICIT[name]
    init = {"cycle": np.arange(4), "log-scale": GAMMA.sample(4, np.random.default_rng(0))}
    return Case(map_, rule, refresh, refused, init.get(name, X0))


@pytest.mark.parametrize("name", list(EXPLICIT))
def test_explicit_compositions_on_numpy(name):
    check_case(_case(name), seed=4)


@pytest.mark.parametrize("name", ON_JAX)
def test_explicit_compositions_on_jax(name):
    _jax()
    check_case(_case(name), seed=4, backends=("jax",), check_streams=name == "jittered length")


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in EXPLICIT if n not in ON_JAX])
def test_more_explicit_compositions_on_jax(name):
    _jax()
    check_case(_case(name), seed=4, backends=("jax",))


# ---------------------------------------------------------------- kinetic energies
VARIANCES = np.array([1.0, 10.0])
GAUSS2 = FunctionTarget(lambda x: 0.5 * (x**2 / VARIANCES).sum(1), lambda x: x / VARIANCES, dim=2)


def test_kinetic_energies_satisfy_the_protocol():
    for make in KINETICS.values():
        assert isinstance(make(), KineticEnergy)


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


def test_one_law_written_three_ways_is_accepted_and_runs_as_the_reference():
    """Identity, a diagonal of ones and the identity matrix are one Gaussian kinetic
    energy: a refresh written one way on a map written another is accepted, and gives the
    same draws whichever way; another law is still refused."""
    forms = [Metric(), Metric(np.ones(2)), Metric(np.eye(2))]
    traces = []
    for map_metric in forms:
        for refresh_metric in forms:
            kernel = Ladder(
                Leapfrog(TARGET, 0.5, 3, map_metric),
                LookAheadRule(3),
                MomentumRefresh(0.5, refresh_metric),
            )
            traces.append(sample(kernel, X0, 15, seed=1, checks=False, warmup=0))
    for trace in traces[1:]:
        np.testing.assert_allclose(trace.positions, traces[0].positions, rtol=1e-12, atol=1e-12)
    diag = Metric(np.array([1.0, 4.0]))
    Ladder(
        Leapfrog(TARGET, 0.5, 3, diag),
        LookAheadRule(3),
        MomentumRefresh(0.5, Metric(np.diag([1.0, 4.0]))),
    )
    with pytest.raises(ValueError, match="draws momenta for"):
        Ladder(Leapfrog(TARGET, 0.5, 3, diag), LookAheadRule(3), MomentumRefresh(0.5, Metric()))


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


def test_a_power_kinetic_energy_samples_the_target():
    """``PowerKinetic`` momenta with a full refresh: the right variances (1, 10).

    (The former leapfrog fast path computed ``log p`` with ``½ vᵀM⁻¹v`` for it and sampled
    variances (0.81, 7.8).)
    """
    kin = PowerKinetic(1.5, np.ones(2))
    kernel = Ladder(Leapfrog(GAUSS2, 0.3, 5, kin), LookAheadRule(4), MomentumRefresh(1.0, kin))
    trace = sample(kernel, np.zeros((40, 2)), 1500, seed=1, warmup=0)
    squares = trace.positions[300:] ** 2  # E x² = variance; Var x² = 2 variance²
    mcse = np.sqrt(2.0) * VARIANCES / np.sqrt(effective_sample_size(squares))
    z = (squares.mean(axis=(0, 1)) - VARIANCES) / mcse
    assert np.all(np.abs(z) < 4), (squares.mean(axis=(0, 1)), mcse)
