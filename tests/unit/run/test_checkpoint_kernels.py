"""Checkpoints of every kernel the package ships: ``resume`` continues bit for bit.

``tests/unit/run/test_checkpoint.py`` covers ``lahmc()``/``hmc()``. Here: the kernels
whose state is not a plain ``PhaseState`` or whose refresh, map or rule carries
more — the lifted refresh (``LiftedPhaseState.lift``), the power kinetic energy
with its normalised refresh, the tempered leapfrog, Yoshida's integrator, the
reduced-flip rule, the persistent uniform (the rule's per-chain carry) and the
jittered step size (``JitteredPhaseState.step_scale``) — on
both schedules, after warm-up and after a crash (the JAX backend's checkpoints:
``tests/unit/engine/test_streams_checkpoints.py``). Each comparison is bit for bit
(draws, rung codes, map applications, non-finite counts, the whole final kernel
state and the adapted kernel's description); the perturbation tests show that the comparison fails
when the restored state is not the run's.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np
import pytest
from trace_assertions import assert_same_run

from ladder_mcmc import (
    Checkpoint,
    Ladder,
    LookAheadRule,
    MomentumRefresh,
    Warmup,
    lahmc,
    resume,
    sample,
)
from ladder_mcmc.hamiltonian import (
    JitteredLeapfrog,
    Leapfrog,
    LiftedLeapfrog,
    LiftedPhaseState,
    LiftedQuantileRefresh,
    LiftResampleRefresh,
    McLachlan2,
    NormalizedMomentumRefresh,
    PowerKinetic,
    StepSizeJitter,
    TemperedLeapfrog,
    Yoshida4,
)
from ladder_mcmc.ladder import (
    ComposedRefresh,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    batch,
)
from ladder_mcmc.models import IllConditionedGaussian, RoughWell
from ladder_mcmc.run import checkpoint as checkpoint_module

WELL = RoughWell()
GAUSS = IllConditionedGaussian(3, log_condition=1)
N_CHAINS, N_STEPS, EVERY = 6, 40, 10
SCHEDULES = ["ragged", "synchronous"]


@attrs.frozen(eq=False)
class Walled:
    """``target`` with density zero beyond ``x_0 > wall``: rungs there are non-finite.

    ``calls`` counts energy evaluations; at ``calls["limit"]`` it raises
    ``KeyboardInterrupt`` (a crash in the middle of a run).
    """

    target: object
    wall: float = float("inf")
    calls: dict = attrs.field(factory=lambda: {"n": 0, "limit": None})

    def _count(self) -> None:
        self.calls["n"] += 1
        if self.calls["limit"] is not None and self.calls["n"] >= self.calls["limit"]:
            raise KeyboardInterrupt

    def energy(self, x):
        self._count()
        return np.where(x[:, 0] > self.wall, np.inf, self.target.energy(x))

    def grad(self, x):
        return self.target.grad(x)

    def energy_and_grad(self, x):
        return self.energy(x), self.grad(x)


# each kernel with the parameter that its "foreign" variant changes (the description
# differs only there); small enough that a run of 40 steps takes a fraction of a second
KIN_LIFT = PowerKinetic(1.25, np.full(2, 1e4))
KIN_POWER = PowerKinetic(1.5, np.full(2, 1e4))


def lifted(target, delta=0.06):
    return Ladder(
        LiftedLeapfrog(target, 0.01, 10, KIN_LIFT),
        LookAheadRule(3),
        LiftedQuantileRefresh(delta, KIN_LIFT, jitter=0.5),
    )


def lifted_resample(target, prob=0.1):
    return Ladder(
        LiftedLeapfrog(target, 0.01, 10, KIN_LIFT),
        LookAheadRule(3),
        ComposedRefresh((LiftedQuantileRefresh(0.06, KIN_LIFT), LiftResampleRefresh(prob))),
    )


def power(target, beta=0.3):
    return Ladder(
        Leapfrog(target, 0.01, 10, KIN_POWER),
        LookAheadRule(3),
        NormalizedMomentumRefresh(beta, KIN_POWER),
    )


def tempered(target, heat=4.0):
    return Ladder(
        TemperedLeapfrog(target, 0.3, 10, heat=heat), LookAheadRule(3), MomentumRefresh(0.3)
    )


def yoshida(target, integrator=Yoshida4):
    return Ladder(integrator(target, 0.9, 2), LookAheadRule(3), MomentumRefresh(0.3))


def reduced_flip(target, k=3):
    # a step size large enough for stays (both directions rejected) to occur
    return Ladder(Leapfrog(target, 1.3, 4), ReducedFlipLookAheadRule(k), MomentumRefresh(0.3))


def persistent(target, delta=0.1):
    return Ladder(Leapfrog(target, 0.9, 4), PersistentUniformRule(3, delta), MomentumRefresh(0.3))


def jittered(target, jitter=0.3):
    # put together by hand (``lahmc(target, 0.9, 4, 0.3, look_ahead=3, jitter=jitter)``'s
    # parts): warm-up adapts its step size and mass from the values it holds, where
    # ``lahmc`` with every value given leaves nothing to adapt
    return Ladder(
        JitteredLeapfrog(target, 0.9, 4),
        LookAheadRule(3),
        MomentumRefresh(0.3) + StepSizeJitter(jitter),
    )


# name: (kernel factory, foreign variant's keyword, base target, wall)
CASES = {
    "lifted-quantile": (lifted, {"delta": 0.05}, WELL, np.inf),
    "lifted-quantile+resample": (lifted_resample, {"prob": 0.2}, WELL, np.inf),
    "power-kinetic": (power, {"beta": 0.2}, WELL, np.inf),
    "tempered": (tempered, {"heat": 2.0}, WELL, np.inf),
    "yoshida4": (yoshida, {"integrator": McLachlan2}, GAUSS, 1.5),
    "reduced-flip": (reduced_flip, {"k": 2}, GAUSS, 1.5),
    "persistent-uniform": (persistent, {"delta": 0.2}, GAUSS, np.inf),
    "jittered-step": (jittered, {"jitter": 0.2}, GAUSS, 1.5),
}


def case(name, **changes):
    """``(kernel, initial positions, target)`` of a case; the target counts its calls."""
    make, _, base, wall = CASES[name]
    target = Walled(base, wall)
    x0 = base.sample(N_CHAINS, np.random.default_rng(0))
    if np.isfinite(wall):
        x0[:, 0] = np.minimum(x0[:, 0], wall - 0.5)
    return make(target, **changes), x0, target


def assert_same(a, b) -> None:
    """:func:`assert_same_run`, plus every leaf of the final state, the carry, the kernel."""
    assert_same_run(a, b)
    assert type(a.final.state) is type(b.final.state)
    for leaf_a, leaf_b in zip(
        batch.leaves(a.final.state), batch.leaves(b.final.state), strict=True
    ):
        np.testing.assert_array_equal(leaf_a, leaf_b)
    assert (a.final.carry is None) == (b.final.carry is None)
    if a.final.carry is not None:
        np.testing.assert_array_equal(a.final.carry, b.final.carry)
        assert a.final.carry.dtype == b.final.carry.dtype
    assert a.kernel == b.kernel


def split_run(name, tmp_path, schedule, **options):
    """An uninterrupted run, and one checkpointed halfway and resumed to the same end."""
    kernel, x0, _ = case(name)
    whole = sample(
        kernel,
        x0,
        N_STEPS,
        seed=7,
        schedule=schedule,
        checkpoint=Checkpoint(every=EVERY),
        **options,
    )
    path = tmp_path / "run.npz"
    first = sample(
        kernel,
        x0,
        N_STEPS // 2,
        seed=7,
        schedule=schedule,
        checkpoint=Checkpoint(path, every=EVERY),
        **options,
    )
    assert first.n_steps == N_STEPS // 2
    return whole, path


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(CASES))
def test_resume_continues_every_kernel_bit_identically(tmp_path, name, schedule):
    whole, path = split_run(name, tmp_path, schedule)
    rest = resume(path, case(name)[0], N_STEPS // 2)
    assert rest.n_steps == N_STEPS
    assert_same(rest, whole)
    # what makes the case what it is, exercised
    if name.startswith("lifted"):
        assert isinstance(rest.final.state, LiftedPhaseState)
    if name == "persistent-uniform":
        assert rest.final.carry.shape == (N_CHAINS,)
    if name == "reduced-flip":
        assert {-1, 0} <= set(np.unique(whole.rungs).tolist())  # stays and flips
    if np.isfinite(CASES[name][3]):
        assert whole.non_finite_rungs.sum() > 0
    assert whole.rungs.max() >= 2  # look-ahead rungs were taken


@pytest.mark.parametrize("name", list(CASES))
def test_crash_then_resume_equals_uninterrupted(tmp_path, name):
    kernel, x0, target = case(name)
    whole = sample(kernel, x0, N_STEPS, seed=5, checkpoint=Checkpoint(every=EVERY), warmup=0)
    target.calls.update(n=0, limit=int(target.calls["n"] * 0.6))
    path = tmp_path / "run.npz"
    broken = sample(kernel, x0, N_STEPS, seed=5, checkpoint=Checkpoint(path, every=EVERY), warmup=0)
    assert broken.interrupted and EVERY <= broken.n_steps < N_STEPS
    target.calls["limit"] = None
    assert_same(resume(path, kernel), whole)


@pytest.mark.parametrize(
    ("name", "schedule"),
    [(name, "ragged") for name in CASES] + [("lifted-quantile", "synchronous")],
)
def test_resume_after_warmup_restores_the_adapted_kernel(tmp_path, name, schedule):
    """Warm-up of 30 steps (step size and diagonal mass: Stan's windows, shortened)."""
    whole, path = split_run(name, tmp_path, schedule, warmup=30)
    rest = resume(path, case(name)[0], N_STEPS // 2)
    assert rest.warmup.step_size == whole.warmup.step_size
    np.testing.assert_array_equal(rest.warmup.inverse_mass, whole.warmup.inverse_mass)
    assert rest.kernel == whole.kernel != case(name)[0].describe()  # the adapted step size
    assert_same(rest, whole)


@pytest.mark.parametrize(
    "options",
    [{"adapt_mass": False}, {"trajectory_length": 0.05}],
    ids=["step-size-only", "trajectory-length"],
)
def test_resume_after_warmup_variants(tmp_path, options):
    """The power kinetic energy keeps its family; the step count adapted is restored."""
    settings = Warmup(30, **options)
    whole, path = split_run("power-kinetic", tmp_path, "ragged", warmup=settings)
    rest = resume(path, case("power-kinetic")[0], N_STEPS // 2)
    assert rest.warmup.n_leapfrog == whole.warmup.n_leapfrog
    if "trajectory_length" in options:
        assert whole.warmup.n_leapfrog != 10
    assert_same(rest, whole)


FOREIGN = [pytest.param(name, changes, id=name) for name, (_, changes, _, _) in CASES.items()] + [
    pytest.param("power-kinetic", {}, id="power-kinetic-a"),  # the exponent, below
    pytest.param("persistent-uniform", {"delta": Fraction(1, 10)}, id="persistent-fraction"),
]


@pytest.mark.parametrize(("name", "changes"), FOREIGN)
def test_resume_refuses_a_kernel_of_another_description(tmp_path, name, changes):
    kernel, x0, target = case(name)
    path = tmp_path / "run.npz"
    sample(kernel, x0, 10, seed=1, checkpoint=Checkpoint(path, every=5), warmup=0)
    before = path.read_bytes()
    if changes:
        other = CASES[name][0](target, **changes)
    else:
        kin = PowerKinetic(1.75, KIN_POWER.inverse_mass)
        refresh = attrs.evolve(kernel.refresh, kinetic=kin)
        other = Ladder(Leapfrog(target, 0.01, 10, kin), LookAheadRule(3), refresh)
    assert other.describe() != kernel.describe()
    with pytest.raises(ValueError, match="another kernel"):
        resume(path, other)
    assert path.read_bytes() == before
    # the rule alone, the refresh alone, no refresh at all: also refused
    for variant in (
        attrs.evolve(kernel, rule=LookAheadRule(1)),
        attrs.evolve(kernel, refresh=None),
    ):
        if variant.describe() != kernel.describe():
            with pytest.raises(ValueError, match="another kernel"):
                resume(path, variant)


def rewrite(path, change_trees=None, change_meta=None) -> None:
    """Rewrite a checkpoint with some of its contents changed (a corrupted state)."""
    meta, trees = checkpoint_module.load(path)
    meta = {k: v for k, v in meta.items() if k not in ("format", "version", "structure")}
    if change_trees is not None:
        trees = change_trees(trees)
    if change_meta is not None:
        meta = change_meta(meta)
    checkpoint_module.save(path, meta, trees)


def with_state(trees, **fields):
    ks = trees["ks"]
    return {**trees, "ks": attrs.evolve(ks, state=attrs.evolve(ks.state, **fields))}


def test_an_untouched_rewrite_still_matches(tmp_path):
    """Control for the perturbation tests: load + save alone changes nothing."""
    whole, path = split_run("lifted-quantile", tmp_path, "ragged")
    rewrite(path)
    assert_same(resume(path, case("lifted-quantile")[0], N_STEPS // 2), whole)


PERTURBATIONS = {
    # the lift, which only LiftedQuantileRefresh reads, is restored and used
    "lift": ("lifted-quantile", {}, lambda t: with_state(t, lift=-t["ks"].state.lift), None),
    # the persistent uniform's carry
    "carry": (
        "persistent-uniform",
        {},
        lambda t: {**t, "ks": attrs.evolve(t["ks"], carry=np.abs(t["ks"].carry))},
        None,
    ),
    # the momenta of the power kinetic energy (last bit of one coordinate)
    "momentum": (
        "power-kinetic",
        {},
        lambda t: with_state(t, v=np.nextafter(t["ks"].state.v, np.inf)),
        None,
    ),
    # the adapted step size
    "step-size": (
        "tempered",
        {"warmup": 30},
        lambda t: {
            **t,
            "warmup": attrs.evolve(t["warmup"], step_size=t["warmup"].step_size * 1.01),
        },
        None,
    ),
    # the next normal of one chain's stream (the draws made but not yet used)
    "streams": (
        "yoshida4",
        {},
        lambda t: {**t, "streams_normal_buffer": next_normal_nudged(t)},
        None,
    ),
}


def next_normal_nudged(trees):
    buffer = np.array(trees["streams_normal_buffer"])
    offset = trees["streams_normal_offset"][0]
    buffer[0, offset] += 0.5
    return buffer


@pytest.mark.parametrize("what", list(PERTURBATIONS))
def test_a_perturbed_checkpoint_does_not_match(tmp_path, what):
    name, options, change_trees, change_meta = PERTURBATIONS[what]
    whole, path = split_run(name, tmp_path, "ragged", **options)
    rewrite(path, change_trees, change_meta)
    rest = resume(path, case(name)[0], N_STEPS // 2)
    with pytest.raises(AssertionError):
        assert_same(rest, whole)
    # the steps before the checkpoint are the run's own; only what follows differs
    np.testing.assert_array_equal(rest.rungs[: N_STEPS // 2], whole.rungs[: N_STEPS // 2])


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", list(CASES))
def test_draws_do_not_depend_on_checkpoint_every(name, schedule):
    """Each chain consumes its own stream in its own step order, so bringing every
    chain to each block's end (``Checkpoint.every``) changes nothing."""
    kernel, x0, _ = case(name)
    whole = sample(kernel, x0, N_STEPS, seed=7, schedule=schedule, warmup=0)
    for every in (1, 3, EVERY):
        assert_same(
            sample(
                kernel,
                x0,
                N_STEPS,
                seed=7,
                schedule=schedule,
                checkpoint=Checkpoint(every=every),
                warmup=0,
            ),
            whole,
        )


def test_another_seed_gives_other_draws():
    """The comparisons above have teeth: another seed changes the run."""
    kernel, x0, _ = case("reduced-flip")
    whole = sample(kernel, x0, N_STEPS, seed=7, warmup=0)
    with pytest.raises(AssertionError):
        assert_same(sample(kernel, x0, N_STEPS, seed=8, warmup=0), whole)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_persistent_uniform_with_a_fraction_delta_round_trips(tmp_path, schedule):
    """``float + Fraction`` is a float, so the carry is an object array of floats:
    stored as float64 (exact), restored as an object array."""
    kernel, x0, target = case("persistent-uniform", delta=Fraction(1, 8))
    whole = sample(
        kernel, x0, N_STEPS, seed=3, schedule=schedule, checkpoint=Checkpoint(every=EVERY), warmup=0
    )
    assert whole.final.carry.dtype == object
    path = tmp_path / "run.npz"
    sample(
        kernel,
        x0,
        20,
        seed=3,
        schedule=schedule,
        checkpoint=Checkpoint(path, every=EVERY),
        warmup=0,
    )
    assert_same(resume(path, kernel, 20), whole)


def test_checkpoints_refuse_object_arrays_that_need_a_pickle(tmp_path):
    with pytest.raises(ValueError, match="Fraction"):
        checkpoint_module.save(
            tmp_path / "c.npz", {}, {"x": np.array([Fraction(1, 3), 0.5], dtype=object)}
        )
    assert list(tmp_path.iterdir()) == []


# kernels equal to the checkpointed one in description but not in their parameters
SAME_DESCRIPTION_OTHER_PARAMETERS = {
    "power kinetic's inverse mass": lambda: Ladder(
        Leapfrog(Walled(WELL), 0.01, 10, PowerKinetic(1.5, np.full(2, 1.0))),
        LookAheadRule(3),
        NormalizedMomentumRefresh(0.3, PowerKinetic(1.5, np.full(2, 1.0))),
    ),
    "target parameter": lambda: power(Walled(RoughWell(sigma2=5.0))),
}


@pytest.mark.parametrize("name", list(SAME_DESCRIPTION_OTHER_PARAMETERS))
def test_a_kernel_with_the_same_description_but_other_parameters_is_refused(tmp_path, name):
    kernel, x0, _ = case("power-kinetic")
    path = tmp_path / "run.npz"
    sample(kernel, x0, N_STEPS // 2, seed=7, checkpoint=Checkpoint(path, every=EVERY), warmup=0)
    before = path.read_bytes()
    other = SAME_DESCRIPTION_OTHER_PARAMETERS[name]()
    assert other.describe() == kernel.describe()  # the description alone would accept it
    with pytest.raises(ValueError, match="other parameters"):
        resume(path, other, 10)
    assert path.read_bytes() == before
    # a kernel rebuilt with the same parameters resumes
    assert resume(path, case("power-kinetic")[0], 10).n_steps == N_STEPS // 2 + 10


def test_the_fingerprint_ignores_mutable_state_and_is_the_same_in_another_process():
    """A target's call counter (a dict) changes during a run: not a parameter."""
    import subprocess
    import sys

    kernel, _, target = case("power-kinetic")
    before = checkpoint_module.fingerprint(kernel)
    target.calls["n"] += 123
    assert checkpoint_module.fingerprint(kernel) == before
    code = (
        "import numpy as np; from ladder_mcmc import lahmc;"
        "from ladder_mcmc.run import checkpoint; from ladder_mcmc.models import RoughWell;"
        "print(checkpoint.fingerprint(lahmc(RoughWell(), 0.5, 7, 0.2, 3, "
        "inverse_mass=np.array([2.0, 3.0]))))"
    )
    here = checkpoint_module.fingerprint(
        lahmc(RoughWell(), 0.5, 7, 0.2, 3, inverse_mass=np.array([2.0, 3.0]))
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert there == here
    other = lahmc(RoughWell(), 0.5, 7, 0.2, 3, inverse_mass=np.array([2.0, 3.0 + 1e-12]))
    assert checkpoint_module.fingerprint(other) != here


def test_the_fingerprint_sees_what_a_function_closes_over():
    """Lambdas made in a loop share a qualified name; their captured values differ."""
    from ladder_mcmc.models import FunctionTarget

    def gaussian(scale, shift=0.0):
        return FunctionTarget(
            lambda x: 0.5 * ((x - shift) ** 2).sum(1) / scale, lambda x: (x - shift) / scale, dim=2
        )

    prints = [checkpoint_module.fingerprint(gaussian(s)) for s in (1.0, 2.0, 1.0)]
    assert prints[0] != prints[1]
    assert prints[0] == prints[2]
    assert checkpoint_module.fingerprint(gaussian(1.0, 0.5)) != prints[0]

    def with_default(x, scale=1.0):
        return x / scale

    def with_other_default(x, scale=2.0):
        return x / scale

    with_other_default.__qualname__ = with_default.__qualname__
    assert checkpoint_module.fingerprint(with_default) != checkpoint_module.fingerprint(
        with_other_default
    )
