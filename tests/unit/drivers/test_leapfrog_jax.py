"""The JAX-compiled leapfrog driver gives the numpy fast path's draws, to rounding.

``ladder_mcmc.drivers._leapfrog_jax`` runs the ragged schedule of the leapfrog look-ahead
kernels compiled whole by JAX, with every chain's random numbers drawn in numpy from
its own streams. Its arithmetic is XLA's, so bit for bit is out of reach; what is
required, against the numpy fast path (``_leapfrog.run``) on the same JAX target and
seed, over 300 steps:

* identical rung codes, map applications, non-finite counts, step costs and final
  directions;
* positions (and the final kernel state) equal to 1e-10 relative.

The targets are a correlated Gaussian and a logistic-regression posterior, both
strongly log-concave, so the leapfrog does not amplify rounding differences
(on a rough target they grow, chaotically, by orders of magnitude per hundred steps).
The seeds are ones on which no step's uniform lies within rounding of its threshold
``p_a/p_0``: there a rung code could differ legitimately, and these tests would say so
(not the case for the seeds below). The comparison is shown able to fail on mutants
of the driver's source (the refresh's √(1−β) dropped, one rung short, the flipped
momentum not negated, a non-finite rung not counted, the length uniform's order, the
gradients of idle-batch rows scattered one row off). Warm-up, whose blocks and dual
averaging run inside the compiled calls (``run_adapting``), adapts what the numpy fast
path's warm-up adapts, block by block, to rounding (mutants of the update caught too).
"""

from __future__ import annotations

import inspect
import types
import warnings

import attrs
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from ladder_mcmc import (  # noqa: E402
    JitteredLengthLeapfrog,
    Ladder,
    Leapfrog,
    LookAheadRule,
    Metric,
    MomentumRefresh,
    drivers,
    hmc,
    lahmc,
    sample,
)
from ladder_mcmc.drivers import ChainStreams, _leapfrog, _leapfrog_jax, contract  # noqa: E402
from ladder_mcmc.drivers.step_control import StepSizeControl  # noqa: E402
from ladder_mcmc.models import IllConditionedGaussian, from_jax  # noqa: E402
from ladder_mcmc.run.recorder import Recorder  # noqa: E402

DIM = 4
_COV = np.array(
    [[1.0, 0.5, 0.0, 0.1], [0.5, 2.0, 0.3, 0.0], [0.0, 0.3, 0.5, 0.0], [0.1, 0.0, 0.0, 1.5]]
)
_PREC = np.linalg.inv(_COV)


def _gauss(x):
    return -0.5 * x @ (jnp.asarray(_PREC) @ x)


def _cliff(x):
    """The Gaussian with density zero (energy +inf) beyond x₀ = 1.2."""
    return jnp.where(x[0] > 1.2, -jnp.inf, _gauss(x))


_rng = np.random.default_rng(7)
_DESIGN = _rng.normal(size=(60, DIM))
_Y = (_rng.random(60) < 1 / (1 + np.exp(-_DESIGN @ np.array([1.0, -0.5, 0.3, 0.0])))) * 1.0


def _logistic(beta):
    eta = jnp.asarray(_DESIGN) @ beta
    return jnp.sum(jnp.asarray(_Y) * eta - jnp.logaddexp(0.0, eta)) - 0.5 * beta @ beta


GAUSS = from_jax(_gauss, DIM)
CLIFF = from_jax(_cliff, DIM)
LOGISTIC = from_jax(_logistic, DIM)
X0 = np.random.default_rng(1).normal(size=(6, DIM)) * 0.5
DIAGONAL = np.linspace(0.5, 2.0, DIM)
DENSE = _COV


CASES = {
    "lahmc K=4 beta=0.2": (lahmc(GAUSS, 0.5, 4, 0.2, 4), {}),
    "hmc (K=1) beta=0.2": (hmc(GAUSS, 0.5, 4, 0.2), {}),
    "lahmc K=3 full refresh diagonal": (lahmc(GAUSS, 0.6, 3, 1.0, 3, inverse_mass=DIAGONAL), {}),
    "lahmc K=4 beta=0.3 dense": (lahmc(GAUSS, 0.6, 3, 0.3, 4, inverse_mass=DENSE), {}),
    "hmc full refresh dense": (hmc(GAUSS, 0.6, 3, 1.0, inverse_mass=DENSE), {}),
    "no refresh": (Ladder(Leapfrog(GAUSS, 0.3, 4), LookAheadRule(3), None), {}),
    "jittered length K=4 beta=0.2": (lahmc(GAUSS, 0.4, 6, 0.2, 4, length_jitter=0.8), {}),
    "jittered length hmc full diagonal": (
        hmc(GAUSS, 0.4, 6, 1.0, inverse_mass=DIAGONAL, length_jitter=0.8),
        {},
    ),
    "jittered length dense": (
        lahmc(GAUSS, 0.5, 5, 0.3, 3, inverse_mass=DENSE, length_jitter=1.0),
        {},
    ),
    "jittered-length map without a length law": (
        Ladder(
            JitteredLengthLeapfrog(GAUSS, 0.4, 5, Metric(DIAGONAL)),
            LookAheadRule(3),
            MomentumRefresh(0.3, Metric(DIAGONAL)),
        ),
        {},
    ),
    "logistic K=4 jittered": (lahmc(LOGISTIC, 0.15, 5, 0.3, 4, length_jitter=0.6), {}),
    "logistic hmc": (hmc(LOGISTIC, 0.15, 5, 0.5), {}),
    "non-finite rungs": (lahmc(CLIFF, 0.5, 4, 0.2, 4), {}),
    "hmc non-finite rungs": (hmc(CLIFF, 0.5, 4, 0.2), {}),
    "checkpoint blocks, thin=3": (
        lahmc(GAUSS, 0.4, 6, 0.2, 4, length_jitter=0.8),
        {"checkpoint_every": 70, "thin": 3},
    ),
}
STEPS, SEED = 300, 3


def _run(kernel, jax_driver: bool, monkeypatch, x0=X0, n_steps=STEPS, **kwargs):
    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: R-hat and ESS warnings
        m.setattr(drivers, "JAX_DRIVER", jax_driver)
        chosen = contract.driver_for(kernel, "ragged")
        assert chosen is (_leapfrog_jax.run if jax_driver else _leapfrog.run)
        return sample(kernel, x0, n_steps, seed=SEED, warmup=0, **kwargs)


def assert_close_runs(a, b, rtol: float = 1e-10) -> None:
    """Same rung codes, moves, non-finite counts, costs, directions; states to ``rtol``."""
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_array_equal(a.n_moves, b.n_moves)
    np.testing.assert_array_equal(a.non_finite_rungs, b.non_finite_rungs)
    if a.step_cost is not None or b.step_cost is not None:
        np.testing.assert_array_equal(a.step_cost, b.step_cost)
    scale = np.max(np.abs(a.positions))
    np.testing.assert_allclose(a.positions, b.positions, rtol=rtol, atol=rtol * scale)
    for field in ("x", "v", "energy", "grad"):
        fa, fb = getattr(a.final.state, field), getattr(b.final.state, field)
        np.testing.assert_allclose(fa, fb, rtol=rtol, atol=rtol * np.max(np.abs(fa)))
    np.testing.assert_array_equal(a.final.direction, b.final.direction)
    if hasattr(a.final.state, "n_leapfrog"):
        np.testing.assert_array_equal(a.final.state.n_leapfrog, b.final.state.n_leapfrog)
    lp = a.final.log_density
    np.testing.assert_allclose(lp, b.final.log_density, rtol=rtol, atol=rtol * np.max(np.abs(lp)))


@pytest.mark.parametrize("case", list(CASES))
def test_jax_driver_equals_the_numpy_fast_path(case, monkeypatch):
    kernel, kwargs = CASES[case]
    x0 = np.minimum(X0, 1.0) if "non-finite" in case else X0
    fast = _run(kernel, False, monkeypatch, x0=x0, **kwargs)
    compiled = _run(kernel, True, monkeypatch, x0=x0, **kwargs)
    assert_close_runs(fast, compiled)
    assert len(np.unique(fast.rungs)) > 1  # both decisions happen: the test can see them
    if "non-finite" in case:
        assert fast.non_finite > 0 and np.isfinite(compiled.positions).all()


def test_short_blocks_and_until_cuts(monkeypatch):
    """Compiled blocks of 17 steps within run blocks of 40 (``until``): the numpy fast
    path's trace."""
    kernel = lahmc(GAUSS, 0.4, 6, 0.2, 4, length_jitter=0.8)
    monkeypatch.setattr(_leapfrog_jax, "BLOCK", 17)
    fast = _run(kernel, False, monkeypatch, checkpoint_every=40)
    compiled = _run(kernel, True, monkeypatch, checkpoint_every=40)
    assert_close_runs(fast, compiled)


def test_warmup_does_not_recompile_per_block(monkeypatch):
    """Warm-up's changing ε, M, β and mass (the identity, then a diagonal): one
    compilation."""
    monkeypatch.setattr(drivers, "JAX_DRIVER", True)
    target = from_jax(_logistic, DIM)  # a new target: its own compilations
    before = _leapfrog_jax.TRACES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = sample(lahmc(target), X0, 200, seed=0, warmup=300)
    assert _leapfrog_jax.TRACES - before == 1
    assert np.isfinite(trace.positions).all()


#: warm-up kernels (everything adapted) and sample's settings: 3 chains (fractions of
#: chains not exact in binary), and a fixed length that follows a given trajectory length
WARM_CASES = {
    "3 chains, jittered length": (lambda: lahmc(LOGISTIC), 3, {}),
    "fixed length, trajectory_length": (
        lambda: lahmc(GAUSS, length_jitter=0),
        4,
        {"trajectory_length": 2.0},
    ),
}
WARM_STEPS = 300  # windows ending at 100, 150, 250: four stretches, one compiled call each
#: warm-up 500: the window from 250 to 450 is 200 steps, two compiled calls (126 + 74 steps
#: of blocks of 6), so the dual-averaging state must be handed from one call to the next
LONG_STRETCH = "3 chains, a stretch over two calls"
LONG_BASE = "3 chains, jittered length"


def _warm_run(case, jax_driver, monkeypatch, module=None):
    make, chains, kwargs = WARM_CASES[case] if case != LONG_STRETCH else WARM_CASES[LONG_BASE]
    warmup = 500 if case == LONG_STRETCH else WARM_STEPS
    x0 = np.random.default_rng(2).uniform(-0.5, 0.5, size=(chains, DIM))
    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.setattr(drivers, "JAX_DRIVER", jax_driver)
        if module is not None:
            m.setattr(contract, "_leapfrog_jax", module)
        return sample(make(), x0, 100, seed=SEED, warmup=warmup, **kwargs)


def assert_same_warmup(a, b) -> None:
    """The same adapted values to rounding, the same counts, then the same runs."""
    wa, wb = a.warmup, b.warmup
    np.testing.assert_allclose(wa.step_size, wb.step_size, rtol=1e-13)
    np.testing.assert_allclose(wa.inverse_mass, wb.inverse_mass, rtol=1e-10)
    np.testing.assert_allclose(wa.beta, wb.beta, rtol=1e-10)
    assert wa.n_leapfrog == wb.n_leapfrog
    np.testing.assert_array_equal(wa.grad_evals, wb.grad_evals)
    assert (wa.first_stage_prob, wa.flip_fraction) == (wb.first_stage_prob, wb.flip_fraction)
    assert_close_runs(a, b, rtol=1e-9)


@pytest.mark.parametrize("case", [*WARM_CASES, LONG_STRETCH])
def test_warmup_in_the_compiled_loop_equals_the_numpy_warmup(case, monkeypatch):
    """Warm-up's blocks and their dual averaging run inside the compiled calls (one call
    per stretch between window ends): what the numpy fast path's warm-up, block by block,
    adapts, to rounding."""
    calls = []
    function = _leapfrog_jax._block_function

    def counting(*args):
        compiled = function(*args)
        return lambda *a: calls.append(1) or compiled(*a)

    fast = _warm_run(case, False, monkeypatch)
    monkeypatch.setattr(_leapfrog_jax, "_block_function", counting)
    compiled = _warm_run(case, True, monkeypatch)
    # the warm-up's stretches (four, or five with one over two calls), then the 100 steps
    assert len(calls) == (6 if case == LONG_STRETCH else 4) + 1
    assert_same_warmup(fast, compiled)


WARM_MUTANTS = {
    "first-rung fractions in float32 (jnp.mean)": (
        'jnp.sum(out["stats"][:, s, 0] == 1).astype(jnp.float64) / n',
        'jnp.mean(out["stats"][:, s, 0] == 1)',
        "3 chains, jittered length",
    ),
    "the step not updated between blocks": (
        '"eps": jnp.exp(log_eps)',
        '"eps": d["eps"]',
        "3 chains, jittered length",
    ),
    "the fixed length not following the step": (
        'st = {**st, "n": jnp.full(n, dual["centre"], dtype=jnp.int64)}',
        "pass",
        "fixed length, trajectory_length",
    ),
    "the step-size state not handed to the next call": (
        'ctl["dual"] = dual',
        "pass",
        LONG_STRETCH,
    ),
}


#: run by ``-m slow`` only (each recompiles the driver): the default run keeps the others
SLOW_WARM_MUTANTS = (
    "the step not updated between blocks",
    "the fixed length not following the step",
)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW_WARM_MUTANTS else name
        for name in WARM_MUTANTS
    ],
)
def test_the_warmup_comparison_catches_mutants(name, monkeypatch):
    old, new, case = WARM_MUTANTS[name]
    fast = _warm_run(case, False, monkeypatch)
    broken = _warm_run(case, True, monkeypatch, _mutant_module(old, new))
    with pytest.raises(AssertionError):
        assert_same_warmup(fast, broken)


def test_run_adapting_refuses_chains_at_different_steps_and_bad_blocks():
    kernel = lahmc(GAUSS, 0.4, 6, 0.2, 4)
    streams = ChainStreams.for_chains(0, 3)
    ks = kernel.init(X0[:3], streams.view())
    control = StepSizeControl(4, 0.8, 0.4, 10.0, 0.75, 0.0, 0, 0.0, 0.0, 0.0)
    recorder = Recorder(10, 3, max_rung=4)
    recorder.steps_done[:] = [0, 1, 0]
    with pytest.raises(ValueError, match="same step, got steps_done \\[0, 1, 0\\]"):
        _leapfrog_jax.run_adapting(kernel, ks, recorder, streams, control)
    recorder.steps_done[:] = 0
    with pytest.raises(ValueError, match="control.every must be in 1 .. 128, got 0"):
        _leapfrog_jax.run_adapting(kernel, ks, recorder, streams, attrs.evolve(control, every=0))


def test_switches_and_selection(monkeypatch):
    kernel = lahmc(GAUSS, 0.5, 4, 0.2, 4)
    monkeypatch.setattr(drivers, "JAX_DRIVER", None)
    monkeypatch.setenv("LADDER_MCMC_JAX", "0")
    assert contract.driver_for(kernel, "ragged") is _leapfrog.run
    monkeypatch.setenv("LADDER_MCMC_JAX", "1")
    assert contract.driver_for(kernel, "ragged") is _leapfrog_jax.run
    assert contract.driver_for(kernel, "synchronous") is not _leapfrog_jax.run
    monkeypatch.setattr(drivers, "FAST_PATH", False)
    assert contract.driver_for(kernel, "ragged") is not _leapfrog_jax.run
    monkeypatch.setattr(drivers, "FAST_PATH", True)

    # a kernel the numpy fast path refuses, on a JAX target: not this driver either
    class Rule(LookAheadRule):  # a subclass that does not re-declare: declares nothing
        pass

    odd = Ladder(Leapfrog(GAUSS, 0.3, 4), Rule(3), None)
    assert not _leapfrog.applies_to(odd) and not _leapfrog_jax.applies_to(odd)
    assert contract.driver_for(odd, "ragged") is not _leapfrog_jax.run
    # a numpy target: the numpy fast path
    numpy_target = lahmc(IllConditionedGaussian(DIM), 0.5, 4, 0.2, 4)
    assert contract.driver_for(numpy_target, "ragged") is _leapfrog.run


def _mutant_module(old: str, new: str) -> types.ModuleType:
    """The driver's source with ``old`` replaced by ``new``, run as a new module."""
    source = inspect.getsource(_leapfrog_jax)
    assert source.count(old) == 1, old
    module = types.ModuleType("_leapfrog_jax_mutant")
    exec(compile(source.replace(old, new), "_leapfrog_jax_mutant", "exec"), module.__dict__)
    return module


MUTANTS = {
    "refresh keeps p whole (√(1−β) dropped)": (
        "keep * pn + noise[rows, s_now]",
        "pn + noise[rows, s_now]",
        "lahmc K=4 beta=0.2",
    ),
    "one rung short": (
        '(st["stage"] == rungs - 1)',
        '(st["stage"] >= rungs - 2)',
        "lahmc K=4 beta=0.2",
    ),
    "flipped momentum not negated": (
        "pn = jnp.where(s2, p, -st",
        "pn = jnp.where(s2, p, st",
        "no refresh",
    ),
    "non-finite rung not counted": (
        'bad = st["nf"] + (~finite)',
        'bad = st["nf"] + 0 * (~finite)',
        "non-finite rungs",
    ),
    "length uniform after the step's uniform": (
        "u_next[rows, :b] = u[:, :, -1]",
        "u_next[rows, :b] = u[:, :, 0]",
        "jittered length K=4 beta=0.2",
    ),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_comparison_catches_mutants(name, monkeypatch):
    old, new, case = MUTANTS[name]
    kernel, kwargs = CASES[case]
    x0 = np.minimum(X0, 1.0) if "non-finite" in case else X0
    fast = _run(kernel, False, monkeypatch, x0=x0, **kwargs)
    monkeypatch.setattr(contract, "_leapfrog_jax", _mutant_module(old, new))
    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.setattr(drivers, "JAX_DRIVER", True)
        broken = sample(kernel, x0, STEPS, seed=SEED, warmup=0, **kwargs)
    with pytest.raises(AssertionError):
        assert_close_runs(fast, broken)


def test_the_mutation_harness_changes_nothing(monkeypatch):
    kernel, _ = CASES["lahmc K=4 beta=0.2"]
    fast = _run(kernel, False, monkeypatch)
    monkeypatch.setattr(contract, "_leapfrog_jax", _mutant_module("BLOCK = 128", "BLOCK = 128"))
    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.setattr(drivers, "JAX_DRIVER", True)
        assert_close_runs(fast, sample(kernel, X0, STEPS, seed=SEED, warmup=0))


def _different_steps(target, monkeypatch, module=_leapfrog_jax):
    """The records and final states of the numpy fast path and of ``module``'s run, on 16
    chains that have taken different numbers of steps before."""
    kernel = lahmc(target, 0.3, 6, 0.2, 4, length_jitter=0.8)
    monkeypatch.setattr(module, "BLOCK", 16)
    x0 = np.random.default_rng(4).normal(size=(16, DIM)) * 0.5
    done_before = np.array([0, 3, 17, 40, 0, 59, 58, 57, 10, 20, 30, 45, 50, 55, 59, 1])
    runs = []
    for run in (_leapfrog.run, module.run):
        streams = ChainStreams.for_chains(5, x0.shape[0])
        ks = kernel.init(x0, streams.view())
        recorder = Recorder(80, x0.shape[0], max_rung=4)
        recorder.steps_done[:] = done_before
        with monkeypatch.context() as m:
            m.setattr(drivers, "JAX_DRIVER", True)
            runs.append((recorder, run(kernel, ks, recorder, streams, until=60)))
    return runs


def _assert_same_records(runs) -> None:
    (a, final_a), (b, final_b) = runs
    np.testing.assert_array_equal(b.steps_done, np.full(b.n_chains, 60))
    for name in ("rungs", "n_moves", "non_finite", "step_cost"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_allclose(np.asarray(a.draws), np.asarray(b.draws), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(final_a.state.x, final_b.state.x, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(final_a.direction, final_b.direction)


@pytest.mark.parametrize("target", [GAUSS, LOGISTIC], ids=["gauss", "logistic"])
def test_chains_at_different_steps(target, monkeypatch):
    """A recorder whose 16 chains have taken different numbers of steps (each chain's
    own blocks, its own numbers; chains idle while others finish, the gradients then
    taken on 8 or 4 rows): the numpy fast path's records and final state."""
    kernel = lahmc(target, 0.3, 6, 0.2, 4, length_jitter=0.8)
    monkeypatch.setattr(drivers, "JAX_DRIVER", True)
    assert contract.driver_for(kernel, "ragged") is _leapfrog_jax.run
    _assert_same_records(_different_steps(target, monkeypatch))


def test_idle_rows_mutant_is_caught(monkeypatch):
    """Gradients of the gathered rows scattered back one row off: caught."""
    mutant = _mutant_module(
        "jnp.zeros((n, dim)).at[idx].set(g_k)", "jnp.zeros((n, dim)).at[jnp.roll(idx, 1)].set(g_k)"
    )
    with pytest.raises(AssertionError):
        _assert_same_records(_different_steps(LOGISTIC, monkeypatch, mutant))


def test_the_environment_switch_reads_the_usual_words_and_refuses_others():
    from ladder_mcmc.drivers._leapfrog_jax import environment_switch

    assert [environment_switch(w) for w in ("1", "TRUE", " yes", "on")] == [True] * 4
    assert [environment_switch(w) for w in ("0", "false", "No", "OFF")] == [False] * 4
    with pytest.raises(ValueError, match="LADDER_MCMC_JAX must be .* got 'maybe'"):
        environment_switch("maybe")
