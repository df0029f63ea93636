"""The driver-equivalence property, reusable: every driver that accepts a kernel gives the
generic ragged driver's trace, bit for bit.

Hypothesis composes kernels from the shipped parts: maps (``Leapfrog`` on an identity,
diagonal or dense ``Metric`` or on a ``PowerKinetic``; ``Yoshida4``, ``McLachlan2``,
``TemperedLeapfrog``, ``JitteredLeapfrog``, ``JitteredLengthLeapfrog``, ``LiftedLeapfrog``,
``HarmonicFlow``, ``CycleShift``) × rules (``LookAheadRule``, ``ReducedFlipRule``,
``ReducedFlipLookAheadRule``, ``PersistentUniformRule``) × refreshes (none, or one or
two of ``MomentumRefresh``, ``NormalizedMomentumRefresh``, ``DirectionRefresh``,
``StepSizeJitter``, ``LengthJitter``, ``LiftedQuantileRefresh``, ``LiftResampleRefresh``,
where they fit
the map), each momentum refresh on the map's own kinetic energy, an equal copy of it,
or another one. :func:`driver_equivalence_property` then checks that

* a refresh on another kinetic energy than the map's is refused by ``Ladder``
  (``ValueError``), and every other composition is accepted;
* the fast path's ``applies_to`` (``ladder_mcmc.drivers._leapfrog``) accepts exactly
  the leapfrog look-ahead kernels on a ``Metric`` (``Leapfrog``, ``LookAheadRule``,
  ``MomentumRefresh`` on the map's metric or none; or ``JitteredLengthLeapfrog`` with at
  most one such ``MomentumRefresh`` and at most one ``LengthJitter``;
  ``check_selection``);
* the fast path, with its numpy and (if numba is installed) its compiled
  bookkeeping, gives the generic ragged driver's trace bit for bit on every kernel it
  accepts: draws, rungs, map applications, non-finite counts, recorded costs
  (``step_cost``), final kernel state;
* every chain draws from its own random streams: the generic driver gives the same
  trace when the chains are brought together every third step (``checkpoint_every``),
  and, on the exact map ``CycleShift``, on the synchronous schedule.

``tests/unit/drivers/test_driver_equivalence.py`` runs it; ``tests/mutation/test_mutants.py``
runs it on mutants of the driver selection and asserts that it fails.
"""

from __future__ import annotations

import importlib.util

import attrs
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    McLachlan2,
    Metric,
    MomentumRefresh,
    NormalizedMomentumRefresh,
    PersistentUniformRule,
    PowerKinetic,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
    StepSizeJitter,
    TemperedLeapfrog,
    Yoshida4,
    drivers,
    sample,
)
from ladder_mcmc.drivers import contract
from ladder_mcmc.ladder import batch
from ladder_mcmc.models import IllConditionedGaussian

TARGET = IllConditionedGaussian(2, log_condition=1)  # variances 1 and 10
N_CHAINS, N_STEPS = 5, 20
X0 = TARGET.sample(N_CHAINS, np.random.default_rng(0))
CYCLE_X0 = np.array([0, 1, 2, 3, 4])
HAVE_NUMBA = importlib.util.find_spec("numba") is not None
#: settings of the property runs: the same examples every run, no example database
SETTINGS = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
}

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
MAPS = (*LEAPFROGS, "harmonic", "cycle")

LOOK_AHEAD = st.sampled_from([4, 2, 3, 1]).map(LookAheadRule)
OTHER_RULES = st.one_of(
    st.just(ReducedFlipRule()),
    st.sampled_from([3, 1, 2]).map(ReducedFlipLookAheadRule),
    st.builds(PersistentUniformRule, st.sampled_from([3, 1, 2]), st.sampled_from([0.5, 0.01])),
)
RULES = LOOK_AHEAD | OTHER_RULES
JITTERS = st.sampled_from([1.0, 0.5])
#: refreshes of a jittered-length map that the fast path runs
LENGTH_REFRESHES = [["momentum", "length"], ["length"], ["length", "momentum"], ["momentum"], []]


@attrs.frozen
class Case:
    """A composed kernel's parts and what is expected of it."""

    map: object
    rule: object
    refresh: object
    refused: bool  # a refresh on another kinetic energy than the map's
    fast: bool  # a leapfrog look-ahead kernel on a Metric: the specialised driver's
    init: np.ndarray


def _map(kind: str, kinetic, step: float, n_steps: int):
    if kind == "cycle":
        return CycleShift(5, weights=np.array([1.0, 3.0, 2.0, 4.0, 1.0]))
    if kind == "harmonic":
        return HarmonicFlow(TARGET, omega=1.0, time=step)
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
            if part == "momentum" and beta != 1 and kin.gaussian_metric is None:
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
        else:
            chosen.append(LiftResampleRefresh(0.3))
    refresh = None if not chosen else chosen[0] if len(chosen) == 1 else ComposedRefresh(chosen)
    return refresh, refused


@st.composite
def cases(draw) -> Case:
    """A kernel composed of shipped parts (see the module docstring).

    A third are the specialised driver's kernels (``Leapfrog`` on a ``Metric``,
    ``LookAheadRule``, no refresh or one ``MomentumRefresh``; or
    ``JitteredLengthLeapfrog`` with ``MomentumRefresh`` and ``LengthJitter`` parts), a
    third differ from those in one part (map, kinetic energy, rule or refresh), a third
    are any.
    """
    mode = draw(st.sampled_from(["fast", "near miss", "any"]))
    if mode == "any":
        kind = draw(st.sampled_from(MAPS))
        names = [*POWER, *POWER, *KINETICS] if kind == "lifted" else [*GAUSSIAN, *KINETICS]
        name = draw(st.sampled_from(names))
        rule = draw(RULES)
        parts = ["momentum", "normalized", "direction"] if kind != "cycle" else ["direction"]
        if kind == "jittered":
            parts += ["jitter", "jitter"]
        if kind == "length":
            parts += ["length", "length"]
        if kind == "lifted" and name in POWER:
            parts += ["lifted", "lifted", "lift-resample"]
        chosen = [draw(st.sampled_from(parts)) for _ in range(draw(st.integers(0, 2)))]
    else:
        kind = draw(st.sampled_from(["leapfrog", "length"]))
        name, rule = draw(st.sampled_from(GAUSSIAN)), draw(LOOK_AHEAD)
        chosen = draw(st.sampled_from([["momentum"], []]))
        if kind == "length":
            chosen = draw(st.sampled_from(LENGTH_REFRESHES))
        change = draw(st.sampled_from(["map", "kinetic", "rule", "refresh"]))
        if mode == "fast":
            pass
        elif change == "refresh" and kind == "length":
            chosen = draw(
                st.sampled_from(
                    [["momentum", "length", "direction"], ["length", "length"]]
                    + [["momentum", "momentum", "length"], ["normalized", "length"]]
                )
            )
        elif change == "map":
            kind = draw(st.sampled_from([*LEAPFROGS[1:], "harmonic"]))
        elif change == "kinetic":
            name = draw(st.sampled_from(POWER))
        elif change == "rule":
            rule = draw(OTHER_RULES)
        else:
            chosen = draw(
                st.sampled_from(
                    [["momentum", "direction"], ["direction"], ["direction", "momentum"]]
                    + [["momentum", "momentum"], ["normalized"]]
                )
            )
    name = "identity" if kind == "harmonic" else name
    if kind != "length":  # LengthJitter needs the lengths only JitteredLengthLeapfrog carries
        chosen = [part for part in chosen if part != "length"]
    kinetic = KINETICS[name]()
    step = draw(st.sampled_from([1.1, 0.3, 2.3]))
    map_ = _map(kind, kinetic, step, draw(st.integers(1, 4)))
    refresh, refused = _refresh(draw, chosen, name, kinetic)
    fast = (
        kind in ("leapfrog", "length")
        and name in GAUSSIAN
        and type(rule) is LookAheadRule
        and _fast_refresh(kind, refresh)
        and not refused
    )
    init = CYCLE_X0 if kind == "cycle" else X0
    return Case(map_, rule, refresh, refused, fast, init)


def _fast_refresh(kind: str, refresh) -> bool:
    """Whether the fast path runs ``refresh`` on a ``kind`` map: none or one
    ``MomentumRefresh`` (a plain leapfrog); at most one ``MomentumRefresh`` and one
    ``LengthJitter``, alone or composed (a jittered length)."""
    if refresh is None or type(refresh) is MomentumRefresh:
        return True
    if kind != "length":
        return False
    parts = refresh.parts if type(refresh) is ComposedRefresh else (refresh,)
    kinds = [type(part) for part in parts]
    return set(kinds) <= {MomentumRefresh, LengthJitter} and len(set(kinds)) == len(kinds)


def run(kernel, init, seed: int, driver: str, n_steps: int = N_STEPS, **options):
    """``sample`` on the generic ragged driver (``"generic"``), on the fast path's
    ``"numpy"`` or ``"numba"`` bookkeeping when it accepts the kernel, or on the
    ``"synchronous"`` schedule."""
    saved = drivers.FAST_PATH, drivers.COMPILED
    try:
        if driver in ("generic", "synchronous"):
            drivers.FAST_PATH = False
        else:
            drivers.COMPILED = driver == "numba"
        schedule = "synchronous" if driver == "synchronous" else "ragged"
        return sample(kernel, init, n_steps, seed=seed, schedule=schedule, **options)
    finally:
        drivers.FAST_PATH, drivers.COMPILED = saved


def assert_same_trace(a, b) -> None:
    """Same draws, rungs, map applications, non-finite counts and final kernel state."""
    for x, y in zip(batch.leaves(a.states), batch.leaves(b.states), strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_array_equal(a.n_moves, b.n_moves)
    np.testing.assert_array_equal(a.non_finite_rungs, b.non_finite_rungs)
    assert (a.step_cost is None) == (b.step_cost is None), "step costs recorded by one only"
    if a.step_cost is not None:
        np.testing.assert_array_equal(a.step_cost, b.step_cost)
    assert type(a.final.state) is type(b.final.state), (
        f"final states of another class: {type(a.final.state)}, {type(b.final.state)}"
    )
    for x, y in zip(batch.leaves(a.final.state), batch.leaves(b.final.state), strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.final.direction, b.final.direction)
    np.testing.assert_array_equal(a.final.log_density, b.final.log_density)
    if a.final.carry is not None or b.final.carry is not None:
        np.testing.assert_array_equal(a.final.carry, b.final.carry)


def check_case(
    case: Case, seed: int, check_selection: bool = True, check_streams: bool = True
) -> None:
    """The property on one composed kernel (see the module docstring)."""
    if case.refused:
        try:
            Ladder(case.map, case.rule, case.refresh)
        except ValueError as err:
            assert "draws momenta for" in str(err), err
            return
        raise AssertionError(f"a refresh on another kinetic energy was accepted: {case}")
    kernel = Ladder(case.map, case.rule, case.refresh)
    accepted = contract._leapfrog.applies_to(kernel)  # read here: a mutation test may replace it
    if check_selection:
        assert accepted == case.fast, f"applies_to is {accepted} for {case}"
    generic = run(kernel, case.init, seed, "generic")
    if check_streams:
        # each chain's own random streams: bringing the chains together at every
        # third step (what checkpoints do) changes nothing, and with exact (integer)
        # arithmetic neither does the synchronous schedule
        assert_same_trace(run(kernel, case.init, seed, "generic", checkpoint_every=3), generic)
        if isinstance(case.map, CycleShift):
            assert_same_trace(run(kernel, case.init, seed, "synchronous"), generic)
    if not accepted:
        return  # sample() runs the generic driver: nothing more to compare
    for driver in ("numpy", "numba") if HAVE_NUMBA else ("numpy",):
        try:
            trace = run(kernel, case.init, seed, driver)
        except Exception as err:  # the generic driver ran: a failure of this one
            raise AssertionError(f"the {driver} driver failed on {case}: {err!r}") from err
        assert_same_trace(trace, generic)


def driver_equivalence_property(
    max_examples: int = 200, check_selection: bool = True, check_streams: bool = True, **kw
):
    """The Hypothesis test: :func:`check_case` on composed kernels and seeds."""

    @settings(max_examples=max_examples, **{**SETTINGS, **kw})
    @given(case=cases(), seed=st.integers(0, 2**16))
    def prop(case, seed):
        check_case(case, seed, check_selection, check_streams)

    return prop
