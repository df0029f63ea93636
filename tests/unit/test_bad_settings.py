"""Kernel settings that used to give wrong answers or late crashes are refused, or now work.

Each refusal is a ``ValueError`` naming the parameter and the value, raised before
any work; settings that numpy gives (``np.int64``, ``np.float32``, ...) work
everywhere a Python number does.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from ladder_mcmc import (
    Checkpoint,
    DirectionRefresh,
    Ladder,
    Leapfrog,
    LookAhead,
    LookAheadRule,
    MomentumRefresh,
    Parallel,
    Warmup,
    hmc,
    lahmc,
    lifted_lahmc,
    resume,
    sample,
)
from ladder_mcmc.hamiltonian import (
    HarmonicFlow,
    LiftResampleRefresh,
    Metric,
    NormalizedMomentumRefresh,
    PowerKinetic,
    StepSizeJitter,
)
from ladder_mcmc.hamiltonian.warmup import moments
from ladder_mcmc.ladder import CycleShift
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian, RoughWell
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.verify import FiniteLadder

TARGET = IllConditionedGaussian(2, log_condition=1)
X0 = np.zeros((4, 2))


# ------------------------------------------------------------------ dense inverse mass
def test_non_symmetric_inverse_mass_is_refused_with_the_asymmetry():
    m = np.array([[1.0, 0.5], [0.4, 1.0]])
    with pytest.raises(ValueError, match=r"inverse_mass must be symmetric.*0\.1"):
        Metric(m)
    with pytest.raises(ValueError, match=r"inverse_mass must be symmetric"):
        lahmc(TARGET, 0.5, 3, 0.5, inverse_mass=m)


@pytest.mark.parametrize(
    ("m", "smallest"),
    [
        (np.array([[1.0, 2.0], [2.0, 1.0]]), "-1"),
        (np.array([[1.0, 1.0], [1.0, 1.0]]), "0"),
        (-np.eye(3), "-1"),
    ],
)
def test_non_positive_definite_inverse_mass_is_refused_with_its_smallest_eigenvalue(m, smallest):
    with pytest.raises(ValueError, match=rf"inverse_mass must be positive definite.*{smallest}"):
        Metric(m)


def test_inverse_mass_asymmetric_by_rounding_is_accepted_and_made_symmetric():
    a = np.random.default_rng(0).standard_normal((4, 4))
    m = a @ a.T + 4 * np.eye(4)
    m[0, 1] *= 1 + 1e-15
    metric = Metric(m)
    assert np.array_equal(metric.inverse_mass, metric.inverse_mass.T)
    np.testing.assert_allclose(metric.inverse_mass, m, rtol=1e-14)


def test_dense_warmup_estimate_is_exactly_symmetric():
    x = np.random.default_rng(1).standard_normal((300, 5)) @ np.triu(np.ones((5, 5)))
    m = moments.init(5, True, np)
    for step in np.split(x, 100):  # a warm-up window's steps, 3 chains each
        m = moments.update(m, step)
    cov = moments.regularised(m)
    assert np.array_equal(cov, cov.T)
    Metric(cov)
    kernel = lahmc(TARGET, n_leapfrog=3, beta=0.5)  # a given step would keep its mass
    trace = sample(kernel, X0, 5, seed=0, warmup=Warmup(200, dense_mass=True))
    assert trace.warmup.inverse_mass.shape == (2, 2)


# ------------------------------------------------------------------ refreshes without randomness
@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: MomentumRefresh(0), r"beta.*0.*omit the refresh"),
        (lambda: MomentumRefresh(0.0), r"beta.*0\.0.*omit the refresh"),
        (lambda: MomentumRefresh(np.float32(0)), r"beta.*0.*omit the refresh"),
        (lambda: lahmc(TARGET, 0.5, 3, 0.0), r"beta.*0\.0.*omit the refresh"),
        (lambda: hmc(TARGET, 0.5, 3, 0), r"beta.*0.*omit the refresh"),
        (lambda: MomentumRefresh.from_alpha(0.0, 0.5, 4), r"alpha.*0\.0"),
        (
            lambda: NormalizedMomentumRefresh(0.0, PowerKinetic(1.5, np.ones(2))),
            r"beta.*0\.0.*omit the refresh",
        ),
        (lambda: DirectionRefresh(0), r"prob.*0.*omit the refresh"),
        (lambda: DirectionRefresh(Fraction(0)), r"prob.*0.*omit the refresh"),
        (lambda: LiftResampleRefresh(0.0), r"prob.*0\.0.*omit the refresh"),
        (lambda: StepSizeJitter(0.0), r"jitter.*0\.0.*omit"),
    ],
)
def test_a_refresh_without_randomness_is_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_refresh_parameters_in_range_still_work():
    assert DirectionRefresh(Fraction(1, 3)).prob == Fraction(1, 3)
    assert MomentumRefresh(1).beta == 1
    assert MomentumRefresh.from_alpha(1.0, 0.5, 4).beta == 1.0
    assert MomentumRefresh.from_alpha(1e-6, 0.5, 4).beta > 0
    lahmc(TARGET, 0.5, 3, 0.5, jitter=0)  # no jitter: no StepSizeJitter


# ------------------------------------------------------------------ rung codes
def test_recorder_dtype_follows_the_largest_rung():
    assert Recorder(2, 2).rungs.dtype == np.int8
    assert Recorder(2, 2, max_rung=127).rungs.dtype == np.int8
    assert Recorder(2, 2, max_rung=150).rungs.dtype == np.int16
    assert Recorder(2, 2, max_rung=40_000).rungs.dtype == np.int32


def _far_rung_kernel():
    """From state 1 forwards, rungs 1..149 are a million times lighter, rung 150 heavier."""
    n = 151
    weights = [1] * n
    weights[0], weights[1] = 10**12, 10**6
    ladder = FiniteLadder([(i + 1) % n for i in range(n)], weights)
    kernel = Ladder(ladder, LookAheadRule(150))
    ks = kernel.init(np.ones(6, dtype=np.int64), np.random.default_rng(0), np.ones(6, np.int8))
    return kernel, ks


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_rung_150_is_recorded_as_150(schedule):
    kernel, ks = _far_rung_kernel()
    trace = sample(kernel, ks, 1, seed=0, schedule=schedule, warmup=0)
    assert (trace.rungs[0] == 150).all()
    assert trace.transition_fractions()["L150"] == 1.0
    assert "stay" not in trace.transition_fractions()


def test_rung_150_survives_a_checkpoint_and_resume(tmp_path):
    kernel, ks = _far_rung_kernel()
    path = tmp_path / "run.npz"
    whole = sample(kernel, ks, 4, seed=3, warmup=0)
    first = sample(kernel, ks, 4, seed=3, checkpoint=Checkpoint(path, every=1), warmup=0)
    assert first.rung_counts[150] > 0
    resumed = resume(path, kernel, n_steps=2)
    assert resumed.rungs.dtype == first.rungs.dtype
    np.testing.assert_array_equal(resumed.rungs[:4], whole.rungs)
    assert resumed.rungs.max() <= 150 and resumed.rungs.min() >= 0


# ------------------------------------------------------------------ refresh must be an instance
def test_refresh_class_is_refused_naming_an_instance():
    with pytest.raises(ValueError, match=r"refresh.*instance.*MomentumRefresh\(0\.1\).*class"):
        Ladder(Leapfrog(TARGET, 0.5, 3), LookAheadRule(2), MomentumRefresh)


def test_refresh_function_is_refused():
    def my_refresh(state, direction, rng):
        return state, direction

    with pytest.raises(ValueError, match=r"refresh must be a Refresh instance.*my_refresh"):
        Ladder(Leapfrog(TARGET, 0.5, 3), LookAheadRule(2), my_refresh)


# ------------------------------------------------------------------ numpy numbers as settings
INTS = [np.int64, np.int32]
FLOATS = [np.float32, np.float64]


def _json_safe(description: dict) -> None:
    assert json.loads(json.dumps(description)) == description


@pytest.mark.parametrize("int_type", INTS)
@pytest.mark.parametrize("float_type", FLOATS)
def test_numpy_numbers_as_settings(int_type, float_type):
    i, f = int_type, float_type
    kernels = [
        lahmc(TARGET, f(0.5), i(3), f(0.5), look_ahead=i(2), jitter=f(0.25)),
        lahmc(TARGET, f(0.5), i(3), f(0.5), inverse_mass=np.ones(2, dtype=f)),
        hmc(TARGET, f(0.5), i(3), f(1.0), jitter=f(0.25)),
        hmc(TARGET, f(0.5), i(3), f(0.5), inverse_mass=np.array([[2, 1], [1, 2]], dtype=f)),
        lifted_lahmc(TARGET, f(0.5), i(3), delta=f(0.25), look_ahead=i(2), a=f(1.5)),
        lifted_lahmc(TARGET, f(0.5), i(3), inverse_mass=np.ones(2, dtype=f)),
        LookAhead(Leapfrog(TARGET, f(0.5), i(3)), max_rungs=i(2), refresh=MomentumRefresh(f(0.5))),
        LookAhead(CycleShift(i(5)), max_rungs=i(2), refresh=DirectionRefresh(f(0.5))),
        Ladder(
            HarmonicFlow(TARGET, f(1.0), f(0.5)),
            LookAheadRule(i(2)),
            MomentumRefresh.from_alpha(f(0.5), f(0.5), i(4)),
        ),
    ]
    for kernel in kernels:
        _json_safe(kernel.describe())
        init = np.zeros(4, dtype=np.int64) if isinstance(kernel.map, CycleShift) else X0
        trace = sample(kernel, init, i(6), seed=i(1), thin=i(2), warmup=0)
        assert trace.rungs.shape == (6, 4)
        _json_safe(trace.kernel)


@pytest.mark.parametrize("int_type", INTS)
def test_numpy_integers_for_float_settings(int_type):
    i = int_type
    for kernel in [
        lahmc(TARGET, i(1), i(2), i(1)),
        lifted_lahmc(TARGET, i(1), i(2), delta=i(1), a=i(2)),
        LookAhead(CycleShift(5), 1, DirectionRefresh(i(1))),
    ]:
        _json_safe(kernel.describe())


def test_numpy_numbers_for_sample_settings():
    kernel = lahmc(TARGET, beta=0.5)
    trace = sample(
        kernel,
        X0,
        np.int64(8),
        seed=np.int64(0),
        thin=np.int32(2),
        warmup=Warmup(np.int64(30), target_prob=np.float32(0.8), trajectory_length=np.float32(1.5)),
        checkpoint=Checkpoint(every=np.int64(4)),
    )
    assert trace.rungs.shape == (8, 4)
    _json_safe(trace.kernel)


# ------------------------------------------------------------------ dense mass, diagonal family
def test_dense_mass_with_a_diagonal_only_kinetic_energy_is_refused_before_any_work():
    calls = []
    well = RoughWell()

    def energy(x):
        calls.append(len(x))
        return well.energy(x)

    target = FunctionTarget(energy, well.grad, dim=2)
    kernel = lifted_lahmc(target, 0.5, 3)
    with pytest.raises(ValueError, match=r"dense_mass=True.*PowerKinetic.*diagonal"):
        sample(kernel, X0, 10, seed=0, warmup=Warmup(300, dense_mass=True))
    assert calls == []
    with pytest.raises(ValueError, match="dense_mass=True.*adapts no mass"):  # contradictory
        sample(kernel, X0, 2, seed=0, warmup=Warmup(20, adapt_mass=False, dense_mass=True))


# ------------------------------------------------------------------ harmonic flow init
def test_harmonic_flow_init_errors_name_the_chains():
    flow = HarmonicFlow(TARGET, 1.0, 0.5)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"init must be finite; chains \[1, 3\] are not"):
        flow.prepare(np.array([[0.0, 0.0], [np.nan, 0.0], [1.0, 1.0], [0.0, np.inf]]), rng)
    cliff = FunctionTarget(
        lambda x: np.where(x[:, 0] > 0, np.inf, 0.0), lambda x: np.zeros_like(x), dim=2
    )
    with pytest.raises(ValueError, match=r"energy is not finite .*chains \[0, 2\]"):
        HarmonicFlow(cliff, 1.0, 0.5).prepare(np.array([[1.0, 0], [-1, 0], [2, 0]]), rng)
    with pytest.raises(ValueError, match=r"shape \(chains, dim\).*\(3,\)"):
        flow.prepare(np.zeros(3), rng)


def test_a_partial_gaussian_blend_of_non_gaussian_momenta_is_refused():
    """√(1−β) v + √β n keeps N(0, M) invariant, not the power kinetic energy's law."""
    kin = PowerKinetic(1.5, np.ones(2))
    with pytest.raises(ValueError, match=r"MomentumRefresh\(beta=0.3\).*NormalizedMomentumRefresh"):
        MomentumRefresh(0.3, kin)
    assert MomentumRefresh(1.0, kin).beta == 1.0  # a full redraw from the kinetic energy's law


def test_further_bad_settings_name_the_parameter():
    """A mass matrix for a metric, a target without a dimension, a string for a flag, a
    warm-up setting out of range without warm-up, an outcome code below STAY."""
    from concurrent.futures import ThreadPoolExecutor

    import attrs as _attrs

    from ladder_mcmc.ladder.rules import LookAheadRule as LookAhead4

    t = IllConditionedGaussian(2)
    with pytest.raises(ValueError, match="metric must be a kinetic energy.*Metric"):
        Leapfrog(t, 0.4, 3, np.ones(2))
    for dim in (-1, 0, 2.5, "3"):
        with pytest.raises(ValueError, match="dim"):
            FunctionTarget(lambda x: x.sum(1), lambda x: x, dim=dim)
    with pytest.raises(ValueError, match="energy"):
        FunctionTarget(3, lambda x: x, dim=2)
    kernel = lahmc(t, 0.5, 5, 0.5)
    x0 = np.zeros((2, 2))
    for option, value in [
        ("checks", "no"),
        ("warmup", "100"),
        ("checkpoint", 3),
        ("executor", "pool"),
        ("thin", 0),
    ]:
        with pytest.raises(ValueError, match=option):
            sample(kernel, x0, 5, seed=0, **{option: value})
    for make, option, value in [
        (Warmup, "adapt_mass", "no"),
        (Warmup, "target_prob", 7),
        (Warmup, "trajectory_length", -1),
        (Checkpoint, "every", 0),
        (Parallel, "groups", -3),
    ]:
        with pytest.raises(ValueError, match=f"{option}.*{value}"):
            if make is Parallel:
                make(ThreadPoolExecutor(1), **{option: value})
            else:
                make(**{option: value})
    with pytest.raises(ValueError, match="groups=5 needs an executor"):
        Parallel(groups=5)  # no executor: no groups to run, refused rather than ignored

    @_attrs.frozen
    class BadOutcome(LookAhead4):
        @property
        def outcomes(self):
            return (1, -2)

    with pytest.raises(ValueError, match="outcome -2"):
        Ladder(Leapfrog(t, 0.4, 3), BadOutcome(2))
