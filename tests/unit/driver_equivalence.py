"""The composition property, reusable: the engine's loops give the reference's trace.

Hypothesis composes kernels from the shipped parts: maps (``Leapfrog`` on an identity,
diagonal or dense ``Metric`` or on a ``PowerKinetic``; ``Yoshida4``, ``McLachlan2``,
``TemperedLeapfrog``, ``JitteredLeapfrog``, ``JitteredLengthLeapfrog``, ``LiftedLeapfrog``,
``HarmonicFlow``, ``CycleShift``, ``LogScaleWalk`` (which changes volume), and the
auxiliary-law maps of ``state_length_lahmc``, ``refined_lahmc`` and ``span_lahmc`` (whose
cost is per chain)) × rules (``LookAheadRule``, ``ReducedFlipRule``, ``ReducedFlipLookAheadRule``,
``PersistentUniformRule``) × refreshes (none, or one or two of ``MomentumRefresh``,
``NormalizedMomentumRefresh``, ``DirectionRefresh``, ``StepSizeJitter``, ``LengthJitter``,
``LiftedQuantileRefresh``, ``LiftResampleRefresh``, ``LogScaleRefresh``, where they fit
the map), each momentum refresh on the map's own kinetic energy, an equal copy of it, or
another one. :func:`check_case` then checks that

* a refresh on another kinetic energy than the map's is refused by ``Ladder``
  (``ValueError``), and every other composition is accepted;
* on the numpy backend, the ragged loop (``engine.numpy_loop``) gives the synchronous
  reference's trace (``schedule="synchronous"``, ``Ladder.step``) **bit for bit**: draws,
  rung codes, map applications, non-finite counts, recorded costs (``step_cost``,
  ``step_overhead``), final kernel state. It holds for every composition of the
  catalogue (dense metrics, auxiliary-law maps and costly refreshes included): every
  part computes each chain's row on its own, so a batch of another size (the synchronous
  step's undecided chains) rounds no row differently;
* on the JAX backend (``engine.jax_loop``), the numpy backend's trace: the same rung
  codes, map applications, non-finite counts and costs, and draws and final state equal
  to 1e-10 (XLA's arithmetic rounds differently; the targets here are log-concave or
  integer-valued, so the difference stays at rounding);
* every chain draws from its own random streams: the same trace when the chains are
  brought together every third step (``Checkpoint(every=3)``), and when they run in two
  groups on an executor (``Parallel(pool, groups=2)``), on each backend checked: bit for
  bit on numpy; on JAX the same rung codes, costs and counts, and draws to 1e-10 (a step
  that begins a compiled block can round its arithmetic differently, by an ulp, from one
  inside a block, so a trace cut into other blocks may differ at rounding).

``tests/unit/engine/test_composition.py`` runs it; ``tests/mutation/test_engine_mutants.py``
runs it on mutants of the engine's source and asserts that it fails.
"""

from __future__ import annotations

import contextlib
import warnings
from concurrent.futures import ThreadPoolExecutor

import attrs
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladder_mcmc import (
    Checkpoint,
    ComposedRefresh,
    DirectionRefresh,
    Ladder,
    Leapfrog,
    LookAheadRule,
    MomentumRefresh,
    Parallel,
    sample,
)
from ladder_mcmc.engine import jax_loop
from ladder_mcmc.hamiltonian import (
    HarmonicFlow,
    JitteredLeapfrog,
    JitteredLengthLeapfrog,
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
from ladder_mcmc.ladder import (
    CycleShift,
    LogScaleRefresh,
    LogScaleWalk,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
    batch,
)
from ladder_mcmc.models import GammaTarget, IllConditionedGaussian

TARGET = IllConditionedGaussian(2, log_condition=1)  # variances 1 and 10
GAMMA = GammaTarget(2.0, 1.5, dim=2)
#: four chains (two groups of two on an executor), steps a multiple of 3 (checkpoints) and
#: of :data:`JAX_BLOCK`: on JAX every run of one kernel then takes compiled blocks of one
#: width, and shares one compilation (two with the groups' batch shape)
N_CHAINS, N_STEPS = 4, 24
JAX_BLOCK = 4
X0 = TARGET.sample(N_CHAINS, np.random.default_rng(0))
GAMMA_X0 = GAMMA.sample(N_CHAINS, np.random.default_rng(0))
CYCLE_X0 = np.array([0, 2, 3, 4])
#: settings of the property runs: the same examples every run, no example database
SETTINGS = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
}
#: the JAX backend's draws against the numpy backend's
JAX_RTOL = 1e-10

#: fresh kinetic energies by name (each call a new object: equal arrays, another object)
KINETICS = {
    "identity": lambda: Metric(),
    "diagonal": lambda: Metric(np.array([0.5, 2.0])),
    "dense": lambda: Metric(np.array([[1.0, 0.3], [0.3, 2.0]])),
    "power-1.5": lambda: PowerKinetic(1.5, np.array([1.0, 10.0])),
    "power-2": lambda: PowerKinetic(2.0, np.array([1.0, 10.0])),
}
GAUSSIAN = ("identity", "diagonal", "dense")
POWER = ("power-1.5", "power-2")
LEAPFROGS = ("leapfrog", "yoshida4", "mclachlan2", "tempered", "jittered", "lifted", "length")
#: maps with a fixed refresh of their own (their builders'), on a Gaussian identity metric
AUXILIARY = ("state-length", "refined", "span")
MAPS = (*LEAPFROGS, "harmonic", "cycle", "log-scale", *AUXILIARY)

LOOK_AHEAD = st.sampled_from([4, 2, 3, 1]).map(LookAheadRule)
OTHER_RULES = st.one_of(
    st.just(ReducedFlipRule()),
    st.sampled_from([3, 1, 2]).map(ReducedFlipLookAheadRule),
    st.builds(PersistentUniformRule, st.sampled_from([3, 1, 2]), st.sampled_from([0.5, 0.01])),
)
RULES = LOOK_AHEAD | OTHER_RULES
JITTERS = st.sampled_from([1.0, 0.5])


@attrs.frozen
class Case:
    """A composed kernel's parts, its initial values, and whether ``Ladder`` refuses it."""

    map: object
    rule: object
    refresh: object
    refused: bool  # a refresh on another kinetic energy than the map's
    init: np.ndarray

    def kernel(self) -> Ladder:
        return Ladder(self.map, self.rule, self.refresh)


def _map(kind: str, kinetic, step: float, n_steps: int):
    if kind == "cycle":
        return CycleShift(5, weights=np.array([1.0, 3.0, 2.0, 4.0, 1.0]))
    if kind == "harmonic":
        return HarmonicFlow(TARGET, omega=1.0, time=step)
    if kind == "log-scale":
        return LogScaleWalk(GAMMA, step / 2)
    cls = {
        "leapfrog": Leapfrog,
        "yoshida4": Yoshida4,
        "mclachlan2": McLachlan2,
        "jittered": JitteredLeapfrog,
        "length": JitteredLengthLeapfrog,
        "lifted": LiftedLeapfrog,
    }.get(kind)
    if cls is None:
        return TemperedLeapfrog(TARGET, step, n_steps, kinetic, heat=2.0)
    return cls(TARGET, step, n_steps, kinetic)


def _auxiliary(kind: str, step: float, n_steps: int):
    """The map and refresh of ``state_length_lahmc``, ``refined_lahmc`` or ``span_lahmc``
    on the target."""
    if kind == "state-length":
        built = state_length_lahmc(TARGET, step / 3, time=step, max_steps=4 * n_steps, beta=0.5)
    elif kind == "span":
        built = span_lahmc(TARGET, step, n_steps, 0.5, 1.0, 1.0, -2, 2)
    else:
        built = refined_lahmc(TARGET, step, n_steps=n_steps, max_level=2, beta=0.5)
    return built.map, built.refresh


def _refresh(draw, parts: list[str], name: str, kinetic):
    """The refresh made of ``parts`` (None for none) and whether ``Ladder`` must refuse it."""
    refused, chosen = False, []
    for part in parts:
        if part in ("momentum", "normalized", "lifted"):
            # the refresh's kinetic energy: the map's, an equal copy, or another
            # (the normalised and lifted refreshes need a transform to a normal)
            others = list(KINETICS) if part == "momentum" else list(POWER)
            own = draw(st.sampled_from(["same", "equal", "same", "equal", *others]))
            if part != "momentum" and name not in POWER and own in ("same", "equal"):
                own = POWER[0]
            refused |= own not in ("same", "equal", name)
            kin = kinetic if own == "same" else KINETICS[name if own == "equal" else own]()
            beta = draw(st.sampled_from([0.3, 1.0, 1e-9]))
            if part == "momentum" and beta != 1 and not isinstance(kin, Metric):
                beta = 1.0  # a partial Gaussian blend of non-Gaussian momenta is refused
            chosen.append(
                MomentumRefresh(beta, kin)
                if part == "momentum"
                else NormalizedMomentumRefresh(beta, kin)
                if part == "normalized"
                else LiftedQuantileRefresh(draw(st.sampled_from([0.06, 0.5])), kin, 0.5)
            )
        elif part == "direction":
            chosen.append(DirectionRefresh(draw(st.sampled_from([0.25, 1.0]))))
        elif part == "jitter":
            chosen.append(StepSizeJitter(0.5))
        elif part == "length":
            chosen.append(LengthJitter(draw(st.sampled_from([4, 1, 2])), draw(JITTERS)))
        elif part == "log-scale":
            chosen.append(LogScaleRefresh(draw(st.sampled_from([0.3, 1.0]))))
        else:
            chosen.append(LiftResampleRefresh(0.3))
    refresh = None if not chosen else chosen[0] if len(chosen) == 1 else ComposedRefresh(chosen)
    return refresh, refused


@st.composite
def cases(draw, maps: tuple[str, ...] = MAPS) -> Case:
    """A kernel composed of shipped parts (see the module docstring), its map among ``maps``."""
    kind = draw(st.sampled_from(maps))
    rule = draw(RULES)
    step = draw(st.sampled_from([1.1, 0.3, 2.3]))
    n_steps = draw(st.integers(1, 4))
    if kind in AUXILIARY:
        map_, refresh = _auxiliary(kind, step, n_steps)
        return Case(map_, rule, refresh, False, X0)
    names = [*POWER, *POWER, *KINETICS] if kind == "lifted" else [*GAUSSIAN, *KINETICS]
    name = (
        "identity" if kind in ("harmonic", "cycle", "log-scale") else draw(st.sampled_from(names))
    )
    parts = {"cycle": ["direction"], "log-scale": ["log-scale", "direction"]}.get(
        kind, ["momentum", "normalized", "direction"]
    )
    if kind == "jittered":
        parts += ["jitter", "jitter"]
    if kind == "length":
        parts += ["length", "length"]
    if kind == "lifted" and name in POWER:
        parts += ["lifted", "lifted", "lift-resample"]
    chosen = [draw(st.sampled_from(parts)) for _ in range(draw(st.integers(0, 2)))]
    kinetic = KINETICS[name]()
    map_ = _map(kind, kinetic, step, n_steps)
    refresh, refused = _refresh(draw, chosen, name, kinetic)
    init = {"cycle": CYCLE_X0, "log-scale": GAMMA_X0}.get(kind, X0)
    return Case(map_, rule, refresh, refused, init)


@contextlib.contextmanager
def jax_block(steps: int | None):
    """The JAX loop's compiled blocks at most ``steps`` steps wide (``None``: its default)."""
    saved = jax_loop.BLOCK
    jax_loop.BLOCK = saved if steps is None else steps
    try:
        yield
    finally:
        jax_loop.BLOCK = saved


def run(kernel, init, seed: int, schedule: str = "ragged", backend: str = "numpy", **options):
    """``sample`` without warm-up or checks; ``groups=g`` runs the chains in ``g`` groups on
    a thread pool (each group its own chains' streams); ``block=b`` runs the JAX loop in
    blocks of at most ``b`` steps."""
    groups = options.pop("groups", None)
    with warnings.catch_warnings(), jax_block(options.pop("block", None)):
        warnings.simplefilter("ignore")  # short runs: R-hat and ESS warnings
        if groups is not None:
            with ThreadPoolExecutor(2) as pool:
                return sample(
                    kernel, init, options.pop("n_steps", N_STEPS), seed=seed, schedule=schedule,
                    backend=backend, executor=Parallel(pool, groups=groups), warmup=0, checks=False,
                    **options,
                )  # fmt: skip
        return sample(
            kernel, init, options.pop("n_steps", N_STEPS), seed=seed, schedule=schedule,
            backend=backend, warmup=0, checks=False, **options,
        )  # fmt: skip


def _pairs(a, b):
    return zip(batch.leaves(a), batch.leaves(b), strict=True)


def assert_same_trace(a, b) -> None:
    """Same draws, rungs, map applications, non-finite counts, costs and final kernel
    state, bit for bit."""
    for x, y in _pairs(a.states, b.states):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_array_equal(a.n_moves, b.n_moves)
    np.testing.assert_array_equal(a.non_finite_rungs, b.non_finite_rungs)
    for name in ("step_cost", "step_overhead"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), f"{name} recorded by one only"
        if x is not None:
            np.testing.assert_array_equal(x, y)
    assert type(a.final.state) is type(b.final.state), (
        f"final states of another class: {type(a.final.state)}, {type(b.final.state)}"
    )
    for x, y in _pairs(a.final.state, b.final.state):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.final.direction, b.final.direction)
    np.testing.assert_array_equal(a.final.log_density, b.final.log_density)
    assert (a.final.carry is None) == (b.final.carry is None), "a carry in one only"
    if a.final.carry is not None:
        for x, y in _pairs(a.final.carry, b.final.carry):
            np.testing.assert_array_equal(x, y)


def _assert_close(x, y, rtol: float) -> None:
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype.kind == y.dtype.kind, (x.dtype, y.dtype)
    if x.dtype.kind in "biu":
        np.testing.assert_array_equal(x, y)
        return
    np.testing.assert_array_equal(np.isfinite(x), np.isfinite(y))
    finite = np.isfinite(x)
    np.testing.assert_array_equal(x[~finite], y[~finite])
    scale = np.max(np.abs(x[finite]), initial=1.0)
    np.testing.assert_allclose(x[finite], y[finite], rtol=rtol, atol=rtol * scale)


def assert_close_trace(a, b, rtol: float = JAX_RTOL) -> None:
    """Same rung codes, map applications, non-finite counts, costs and final directions;
    draws and the final kernel state equal to ``rtol`` (relative to their largest
    magnitude; integer leaves exactly)."""
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_array_equal(a.n_moves, b.n_moves)
    np.testing.assert_array_equal(a.non_finite_rungs, b.non_finite_rungs)
    for name in ("step_cost", "step_overhead"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), f"{name} recorded by one only"
        if x is not None:
            np.testing.assert_array_equal(x, y)
    for x, y in _pairs(a.states, b.states):
        _assert_close(x, y, rtol)
    assert type(a.final.state) is type(b.final.state)
    for x, y in _pairs(a.final.state, b.final.state):
        _assert_close(x, y, rtol)
    np.testing.assert_array_equal(a.final.direction, b.final.direction)
    _assert_close(a.final.log_density, b.final.log_density, rtol)
    assert (a.final.carry is None) == (b.final.carry is None), "a carry in one only"
    if a.final.carry is not None:
        for x, y in _pairs(a.final.carry, b.final.carry):
            _assert_close(x, y, rtol)


def check_case(
    case: Case, seed: int, backends: tuple[str, ...] = ("numpy",), check_streams: bool = True
) -> None:
    """The property on one composed kernel (see the module docstring): on ``"numpy"``,
    the synchronous reference bit for bit; on ``"jax"``, the numpy backend to 1e-10;
    with ``check_streams``, checkpoints every third step and two groups of chains change
    nothing on each backend."""
    if case.refused:
        try:
            case.kernel()
        except ValueError as err:
            assert "draws momenta for" in str(err), err
            return
        raise AssertionError(f"a refresh on another kinetic energy was accepted: {case}")
    kernel = case.kernel()
    numpy_trace = run(kernel, case.init, seed)
    if "numpy" in backends:
        assert_same_trace(numpy_trace, run(kernel, case.init, seed, schedule="synchronous"))
    for backend in backends:
        options = {"backend": backend, "block": JAX_BLOCK if backend == "jax" else None}
        if backend == "numpy":
            trace = numpy_trace
        else:
            trace = run(kernel, case.init, seed, **options)
            assert trace.backend["name"] == backend
            assert_close_trace(numpy_trace, trace)
        if check_streams:
            # each chain's own random streams: bringing the chains together every third
            # step, or running them in two groups, hands each the same numbers (on JAX
            # the same rung codes, and draws to rounding: a step that begins a compiled
            # block may round differently from one inside it)
            same = assert_same_trace if backend == "numpy" else assert_close_trace
            same(run(kernel, case.init, seed, checkpoint=Checkpoint(every=3), **options), trace)
            same(run(kernel, case.init, seed, groups=2, **options), trace)


def assert_first_stage_probabilities(kernel, init, seed: int = 3, iterations: int = 200) -> None:
    """``StepRecord.first_prob`` is ``C_0`` of each step: ``rule.update`` on the density
    ratio of ``L ζ`` to the step's origin ``ζ``, whatever stage the chain decided at
    (to 1e-12). Driven through the numpy loop's ``start`` and ``iterate`` (looked up on
    ``engine.numpy_loop`` when called: a mutation test may replace them); at least three
    stages decided at and 500 steps checked."""
    from ladder_mcmc.engine import numpy_loop
    from ladder_mcmc.engine.ragged import Plan
    from ladder_mcmc.engine.streams import ChainStreams
    from ladder_mcmc.ladder.kernel import quiet_log_density_of

    n = len(init)
    streams = ChainStreams.for_chains(seed, n)
    ks = kernel.init(init, streams.view())
    draws, plan = numpy_loop.StreamDraws(streams, None), Plan.of(kernel.rule)
    rs = numpy_loop.start(kernel, ks, np.zeros(n, dtype=np.int64), draws)
    expected = np.full(n, np.nan)
    stages_seen, checked = set(), 0
    with np.errstate(all="ignore"):
        for _ in range(iterations):
            rung = kernel.map.move(rs.origin, rs.direction)
            ratio = np.exp(quiet_log_density_of(kernel.map, rung)[0] - rs.log_density)
            c0 = kernel.rule.update(np.zeros(n), np.zeros(n, dtype=np.int64), ratio)[1]
            expected = np.where(rs.stage == 0, c0, expected)
            stage = rs.stage
            rs, rec = numpy_loop.iterate(kernel, plan, rs, draws, 10**6)
            if rec is None:
                continue
            decided = rec.decided
            np.testing.assert_allclose(rec.first_prob[decided], expected[decided], rtol=1e-12)
            stages_seen |= set(stage[decided].tolist())
            checked += int(decided.sum())
    assert checked > 500 and len(stages_seen) >= 3, (checked, stages_seen)


def composition_property(
    max_examples: int = 200,
    backends: tuple[str, ...] = ("numpy",),
    check_streams: bool = True,
    maps: tuple[str, ...] = MAPS,
    **kw,
):
    """The Hypothesis test: :func:`check_case` on composed kernels and seeds."""

    @settings(max_examples=max_examples, **{**SETTINGS, **kw})
    @given(case=cases(maps), seed=st.integers(0, 2**16))
    def prop(case, seed):
        check_case(case, seed, backends, check_streams)

    return prop
