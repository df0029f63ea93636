"""The ragged schedule's fast path for leapfrog look-ahead kernels equals the generic loop.

``ladder_mcmc.drivers._leapfrog`` re-implements the ragged driver on plain arrays
for ``Ladder(Leapfrog, LookAheadRule, MomentumRefresh | None)``. It must give
the generic driver's run *draw for draw*: same positions, rung codes, map
applications, non-finite counts and final kernel state, bit for bit. The
generic driver is itself checked in law against the synchronous driver
(tests/statistical/test_drivers.py) and exactly on finite ladders.

The specialised driver's bookkeeping runs in numpy, or compiled by numba
(``ladder_mcmc.drivers._leapfrog_numba``) when numba is installed: every comparison runs
for both (the compiled ones are skipped without numba).

Each comparison is shown able to fail: on a kernel that differs in one
parameter, and on mutants of either driver's source (one line changed each).
Time: about 5 s, and about 20 s more to compile the numba mutants.
"""

from __future__ import annotations

import importlib.util
import inspect
import types

import numpy as np
import pytest
from trace_assertions import assert_same_run

import ladder_mcmc
from ladder_mcmc import (
    DirectionRefresh,
    Ladder,
    Leapfrog,
    MomentumRefresh,
    drivers,
    hmc,
    lahmc,
    sample,
)
from ladder_mcmc.drivers import _iteration_buffer, _leapfrog, contract
from ladder_mcmc.hamiltonian import Metric, PowerKinetic, Yoshida4
from ladder_mcmc.ladder import LookAheadRule, PersistentUniformRule, ReducedFlipLookAheadRule
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian, RoughWell

WELL = RoughWell()
GAUSS = IllConditionedGaussian(5)
X_WELL = WELL.sample(12, np.random.default_rng(0))
X_GAUSS = GAUSS.sample(9, np.random.default_rng(1))
X_CLIFF = np.minimum(X_WELL * 0.1 + 30, 38.0)  # near the cliff, inside it
POWER = PowerKinetic(1.5, np.ones(2))


def _cliff_energy(x):
    """The rough well, with density zero (energy +inf, or NaN) beyond x₀ = 40."""
    e = WELL.energy(x)
    e = np.where(x[:, 0] > 40, np.inf, e)
    return np.where(x[:, 0] > 60, np.nan, e)


CLIFF = FunctionTarget(_cliff_energy, WELL.grad, dim=2)


HAVE_NUMBA = importlib.util.find_spec("numba") is not None
#: the specialised driver's two bookkeepings: numpy, and numba-compiled
BOOKKEEPING = [
    "numpy",
    pytest.param("numba", marks=pytest.mark.skipif(not HAVE_NUMBA, reason="numba absent")),
]


def _run(kernel, x0, n_steps, seed, specialised, monkeypatch, **kwargs):
    """``specialised``: False (generic driver), True or "numpy", or "numba"."""
    with monkeypatch.context() as m:
        if not specialised:
            m.setattr(drivers, "FAST_PATH", False)
        elif specialised in ("numpy", "numba"):
            m.setattr(drivers, "COMPILED", specialised == "numba")
        return sample(kernel, x0, n_steps, seed=seed, **{"warmup": 0, **kwargs})


_assert_same_run = assert_same_run


DIAGONAL = np.linspace(0.5, 2.0, 5)
DENSE = np.diag(DIAGONAL) + 0.1

CASES = {
    "lahmc K=4 beta=0.1": (lahmc(WELL, 1.0, 10, 0.1, 4), X_WELL, {}),
    "hmc beta=0.1": (hmc(WELL, 1.0, 10, 0.1), X_WELL, {}),
    "lahmc K=2 beta=1": (lahmc(WELL, 0.7, 3, 1.0, 2), X_WELL, {}),
    "lahmc beta=1e-9 (hardly any noise)": (lahmc(GAUSS, 0.3, 4, 1e-9, 3), X_GAUSS, {}),
    "no refresh": (Ladder(Leapfrog(GAUSS, 0.3, 4), LookAheadRule(3), None), X_GAUSS, {}),
    "diagonal mass": (lahmc(GAUSS, 0.4, 3, 0.2, 4, inverse_mass=DIAGONAL), X_GAUSS, {}),
    "dense mass": (lahmc(GAUSS, 0.4, 3, 0.2, 4, inverse_mass=DENSE), X_GAUSS, {}),
    "thin=3": (lahmc(WELL, 1.0, 10, 0.1, 4), X_WELL, {"thin": 3}),
    "checkpoint blocks": (lahmc(WELL, 1.0, 10, 0.1, 4), X_WELL, {"checkpoint_every": 7}),
    "non-finite rungs": (lahmc(CLIFF, 1.0, 10, 0.1, 4), X_CLIFF, {}),
    "hmc non-finite rungs": (hmc(CLIFF, 1.0, 10, 0.1), X_CLIFF, {}),
    "hmc beta=1 dense mass": (hmc(GAUSS, 0.4, 3, 1.0, inverse_mass=DENSE), X_GAUSS, {}),
    "hmc no refresh": (Ladder(Leapfrog(GAUSS, 0.3, 4), LookAheadRule(1), None), X_GAUSS, {}),
    "hmc thin=3": (hmc(WELL, 1.0, 10, 0.1), X_WELL, {"thin": 3}),
    "hmc checkpoint blocks": (hmc(WELL, 1.0, 10, 0.1), X_WELL, {"checkpoint_every": 7}),
}


@pytest.mark.parametrize("bookkeeping", BOOKKEEPING)
@pytest.mark.parametrize("case", list(CASES))
def test_specialised_driver_equals_the_generic_driver_bit_for_bit(case, bookkeeping, monkeypatch):
    kernel, x0, kwargs = CASES[case]
    assert _leapfrog.applies_to(kernel)
    fast = _run(kernel, x0, 70, 3, bookkeeping, monkeypatch, **kwargs)
    generic = _run(kernel, x0, 70, 3, False, monkeypatch, **kwargs)
    _assert_same_run(fast, generic)
    if "non-finite" in case:
        assert fast.non_finite > 0 and np.isfinite(fast.positions).all()


@pytest.mark.parametrize("bookkeeping", BOOKKEEPING)
def test_small_windows_and_a_draws_file_change_nothing(bookkeeping, monkeypatch, tmp_path):
    """Many short iteration windows, memory-mapped draws: the same run."""
    kernel = lahmc(WELL, 1.0, 10, 0.1, 4)
    reference = _run(kernel, X_WELL, 90, 8, False, monkeypatch)
    monkeypatch.setattr(_iteration_buffer, "MAX_BYTES", 1)  # 4 iterations per window
    fast = _run(kernel, X_WELL, 90, 8, bookkeeping, monkeypatch, draws_file=tmp_path / "d.npy")
    _assert_same_run(fast, reference)
    # draws written to the trace every iteration (as for wide batches)
    monkeypatch.setattr(_iteration_buffer, "DIRECT_BYTES", 0)
    for thin in (1, 3):
        reference = _run(kernel, X_WELL, 90, 8, False, monkeypatch, thin=thin)
        fast = _run(kernel, X_WELL, 90, 8, bookkeeping, monkeypatch, thin=thin)
        _assert_same_run(fast, reference)


@pytest.mark.parametrize("bookkeeping", BOOKKEEPING)
@pytest.mark.parametrize("look_ahead", [1, 4])
@pytest.mark.parametrize("direct", [False, True])
def test_an_interrupted_run_keeps_the_same_steps_as_the_generic_driver(
    direct, look_ahead, bookkeeping, monkeypatch
):
    """Ctrl-C inside the target: the buffered iterations reach the trace (nothing lost)."""
    if direct:
        monkeypatch.setattr(_iteration_buffer, "DIRECT_BYTES", 0)
    calls = {"n": 0}

    def grad(x):
        calls["n"] += 1
        if calls["n"] == 1_500:
            raise KeyboardInterrupt
        return WELL.grad(x)

    kernel = lahmc(FunctionTarget(WELL.energy, grad, dim=2), 1.0, 10, 0.1, look_ahead)
    runs = []
    for specialised in (bookkeeping, False):
        calls["n"] = 0
        runs.append(_run(kernel, X_WELL, 400, 5, specialised, monkeypatch))
    fast, generic = runs
    assert fast.interrupted and generic.interrupted and 0 < fast.n_steps < 400
    assert fast.n_steps == generic.n_steps
    np.testing.assert_array_equal(fast.positions, generic.positions)
    np.testing.assert_array_equal(fast.rungs, generic.rungs)


def test_the_comparison_can_fail_on_a_different_kernel(monkeypatch):
    """The bit-for-bit comparison is not vacuous: one parameter off is seen."""
    fast = _run(lahmc(WELL, 1.0, 10, 0.1, 4), X_WELL, 70, 3, True, monkeypatch)
    for other in (lahmc(WELL, 1.0, 10, 0.1, 3), lahmc(WELL, 1.0, 10, 0.11, 4)):
        generic = _run(other, X_WELL, 70, 3, False, monkeypatch)
        with pytest.raises(AssertionError):
            _assert_same_run(fast, generic)


MUTANTS = {
    # the flip chosen for chains that have not decided yet
    "flip >=": ("flip = ~stop if everyone else done > stop", "flip = ~stop"),
    # the origin kept with its momentum, not the flipped momentum
    "origin not flipped": ("np.negative(p_ref, out=nxt[:, cp])", "nxt[:, cp] = p_ref"),
    # K - 1 rungs before the flip
    "one rung short": (
        "done = stop | (start == iteration - last)",
        "done = stop | (start == iteration - last + 1)",
    ),
    # a full kick at the end of the rung
    "leapfrog end kick": ("return x, p - half * g, e, g", "return x, p - eps * g, e, g"),
    # non-finite rungs not counted
    "non-finite uncounted": (
        "non_finite = np.where(start == iteration, 0, non_finite) + bad",
        "non_finite = np.where(start == iteration, 0, non_finite)",
    ),
}


def _mutant_module(old: str, new: str, original: types.ModuleType = _leapfrog):
    """``original``'s source with every ``old`` replaced by ``new``, run as a new module."""
    source = inspect.getsource(original)
    assert source.count(old) >= 1, old  # every occurrence is changed
    name = original.__name__.rsplit(".", 1)[-1] + "_mutant"
    module = types.ModuleType(name)
    if original is _leapfrog:  # the numpy bookkeeping, the one mutated
        numba_choice = "if compiled(recorder.n_steps - int(recorder.completed())):"
        assert source.count(numba_choice) == 1
        source = source.replace(numba_choice, "if False:")
    else:  # a numba module run from a string has no file to cache its compilation in
        source = source.replace("cache=True", "cache=False")
    exec(compile(source.replace(old, new), name, "exec"), module.__dict__)
    return module


#: the mutants that change HMC (K = 1) too: on one rung every chain decides on every
#: iteration, so the stage and the choice of the flipped chains do not matter
MUTANTS_HMC = ["origin not flipped", "leapfrog end kick", "non-finite uncounted"]


@pytest.mark.parametrize("name", MUTANTS_HMC)
def test_a_broken_fast_path_is_caught_on_hmc(name, monkeypatch):
    kernel = Ladder(Leapfrog(CLIFF, 1.0, 10), LookAheadRule(1), None)
    generic = _run(kernel, X_CLIFF, 70, 3, False, monkeypatch)
    monkeypatch.setattr(contract, "_leapfrog", _mutant_module(*MUTANTS[name]))
    broken = sample(kernel, X_CLIFF, 70, seed=3, warmup=0)
    with pytest.raises(AssertionError):
        _assert_same_run(broken, generic)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_broken_specialised_driver_is_caught(name, monkeypatch):
    kernel = lahmc(CLIFF, 1.0, 10, 0.1, 4)
    generic = _run(kernel, X_CLIFF, 70, 3, False, monkeypatch)
    monkeypatch.setattr(contract, "_leapfrog", _mutant_module(*MUTANTS[name]))
    broken = sample(kernel, X_CLIFF, 70, seed=3, warmup=0)
    with pytest.raises(AssertionError):
        _assert_same_run(broken, generic)


def test_the_unmutated_source_passes_through_the_same_harness(monkeypatch):
    """The mutation harness itself (exec of the module's source) changes nothing."""
    kernel = lahmc(CLIFF, 1.0, 10, 0.1, 4)
    generic = _run(kernel, X_CLIFF, 70, 3, False, monkeypatch)
    monkeypatch.setattr(contract, "_leapfrog", _mutant_module("_FLOAT = ", "_FLOAT = "))
    _assert_same_run(sample(kernel, X_CLIFF, 70, seed=3, warmup=0), generic)


MUTANTS_COMPILED = {
    # the origin kept with its momentum, not the flipped momentum
    "origin not flipped": ("origin[i, cp + j] = -p_ref[i, j]", "origin[i, cp + j] = p_ref[i, j]"),
    # K - 1 rungs before the flip
    "one rung short": ("ints[START, i] == oldest\n", "ints[START, i] == oldest + 1\n"),
    # non-finite rungs not counted, or counted across steps
    "non-finite uncounted": ("ints[NON_FINITE, i] += 1", "ints[NON_FINITE, i] += 0"),
    "non-finite count not restarted": (
        "ints[NON_FINITE, i] = 0",
        "ints[NON_FINITE, i] = ints[NON_FINITE, i]",
    ),
    # the next step starts from the rung's momentum, not the refreshed one
    "refresh lost": ("pc[i, j] = p_ref[i, j]", "pc[i, j] = p[i, j]"),
    # after a flip, the rung's position is kept (and drawn)
    "flip keeps the rung": ("xc[i, j] = origin[i, j]", "xc[i, j] = x[i, j]"),
}


# each case compiles the mutated module anew; the default run takes the unmutated one and
# three mutants, -m slow the other three
SLOW_MUTANTS = ("non-finite uncounted", "non-finite count not restarted", "flip keeps the rung")


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba absent")
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW_MUTANTS else name
        for name in ["unmutated", *MUTANTS_COMPILED]
    ],
)
def test_a_broken_compiled_driver_is_caught(name, monkeypatch):
    from ladder_mcmc.drivers import _leapfrog_numba

    old, new = MUTANTS_COMPILED.get(name, ("_jit = ", "_jit = "))
    kernel = lahmc(CLIFF, 1.0, 10, 0.1, 4)
    generic = _run(kernel, X_CLIFF, 70, 3, False, monkeypatch)
    mutant = _mutant_module(old, new, _leapfrog_numba)
    monkeypatch.setattr(ladder_mcmc.drivers, "_leapfrog_numba", mutant)
    broken = _run(kernel, X_CLIFF, 70, 3, "numba", monkeypatch)
    if name == "unmutated":  # the harness itself changes nothing
        _assert_same_run(broken, generic)
        return
    with pytest.raises(AssertionError):
        _assert_same_run(broken, generic)


@pytest.mark.parametrize(
    "kernel",
    [
        Ladder(Yoshida4(WELL, 0.5, 3), LookAheadRule(4), MomentumRefresh(0.1)),
        Ladder(Leapfrog(WELL, 1.0, 10), ReducedFlipLookAheadRule(3), MomentumRefresh(0.1)),
        Ladder(Leapfrog(WELL, 1.0, 10), PersistentUniformRule(3), MomentumRefresh(0.1)),
        Ladder(
            Leapfrog(WELL, 1.0, 10), LookAheadRule(3), MomentumRefresh(0.1) + DirectionRefresh(0.5)
        ),
        # a kinetic energy that declares no Gaussian metric
        Ladder(Leapfrog(WELL, 1.0, 10, POWER), LookAheadRule(3), MomentumRefresh(1.0, POWER)),
    ],
    ids=["yoshida", "reduced-flip", "persistent-uniform", "composed-refresh", "power-kinetic"],
)
def test_other_kernels_are_left_to_the_generic_driver(kernel):
    assert not _leapfrog.applies_to(kernel)


def test_a_refresh_on_another_metric_is_refused():
    """Formerly left to the generic driver, which sampled the wrong law with it."""
    with pytest.raises(ValueError, match=r"MomentumRefresh draws momenta for Metric\(inverse"):
        Ladder(
            Leapfrog(WELL, 1.0, 10, Metric(np.ones(2) * 2)), LookAheadRule(3), MomentumRefresh(0.1)
        )


def test_equal_metrics_in_separate_objects_are_recognised():
    same = Ladder(Leapfrog(WELL, 1.0, 10), LookAheadRule(3), MomentumRefresh(0.1))
    assert _leapfrog.applies_to(same)
    diag = Ladder(
        Leapfrog(WELL, 1.0, 10, Metric(np.ones(2))),
        LookAheadRule(3),
        MomentumRefresh(0.1, Metric([1.0, 1.0])),
    )
    assert _leapfrog.applies_to(diag)


def test_when_the_compiled_bookkeeping_is_used(monkeypatch):
    """drivers.COMPILED decides; else LADDER_MCMC_NUMBA; else long runs or once loaded (with
    numba)."""
    import sys

    monkeypatch.setattr(drivers, "COMPILED", False)
    monkeypatch.setenv("LADDER_MCMC_NUMBA", "1")
    assert not _leapfrog.compiled(10**6)
    monkeypatch.setattr(drivers, "COMPILED", None)
    assert _leapfrog.compiled(1) is HAVE_NUMBA
    monkeypatch.setenv("LADDER_MCMC_NUMBA", "0")
    assert not _leapfrog.compiled(10**6)
    monkeypatch.delenv("LADDER_MCMC_NUMBA")
    monkeypatch.delitem(sys.modules, "ladder_mcmc.drivers._leapfrog_numba", raising=False)
    long, short = _leapfrog.COMPILE_FROM_STEPS, _leapfrog.COMPILE_FROM_STEPS - 1
    assert _leapfrog.compiled(long) is HAVE_NUMBA
    assert not _leapfrog.compiled(short)
    loaded = types.ModuleType("loaded")
    monkeypatch.setitem(sys.modules, "ladder_mcmc.drivers._leapfrog_numba", loaded)
    assert _leapfrog.compiled(short)


def test_a_numba_that_fails_to_import_falls_back_to_numpy_with_a_warning(monkeypatch):
    """Installed is not importable (numba lags numpy releases): same draws, one warning."""
    import sys

    kernel = lahmc(WELL, 1.0, 10, 0.1, 4)
    reference = _run(kernel, X_WELL, 30, 2, "numpy", monkeypatch)
    monkeypatch.setattr(drivers, "COMPILED", True)
    monkeypatch.setattr(_leapfrog, "_NUMBA_ERROR", None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.delitem(sys.modules, "ladder_mcmc.drivers._leapfrog_numba", raising=False)
    monkeypatch.delattr(ladder_mcmc.drivers, "_leapfrog_numba", raising=False)
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    with pytest.warns(RuntimeWarning, match="could not be imported"):
        fallback = sample(kernel, X_WELL, 30, seed=2, warmup=0)
    _assert_same_run(fallback, reference)
    assert not _leapfrog.compiled(10**6)  # remembered: no second attempt
