"""Chains one after another in the compiled loop, and the measured rule that offers it.

* ``chains_rule`` on given timings: sequential only above the margin, the reason naming
  both timings;
* ``probe`` and ``choose_backend`` on two models: a target whose gradient runs an
  iterative solver, its trip count set by the point (batched, every chain waits for the
  slowest: sequential wins), and a cheap elementwise Gaussian (vectorized wins);
* ``run_sequential`` gives the batched loop's draws to rounding, with the same rung codes,
  over several blocks, with a checkpoint and a resume;
* ``Parallel(chains=...)`` checks its value, and ``trace.backend`` records the choice,
  its reason and the timings.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

from ladder_mcmc import (
    Checkpoint,
    Ladder,
    Leapfrog,
    LookAheadRule,
    MomentumRefresh,
    Parallel,
    lahmc,
)
from ladder_mcmc import resume as resume_run
from ladder_mcmc import sample as sample_run
from ladder_mcmc.engine import Driver, driver_for
from ladder_mcmc.engine import backend as backend_module
from ladder_mcmc.engine.backend import choose_backend
from ladder_mcmc.engine.sequential import MARGIN, chains_rule, probe, run_sequential

jax = pytest.importorskip("jax")
jnp = jax.numpy

from ladder_mcmc.models import from_jax  # noqa: E402

DIM, WIDTH, TRIPS = 3, 32, 100
_M = np.random.default_rng(0).normal(size=(WIDTH, WIDTH))
_A = _M @ _M.T / WIDTH + np.eye(WIDTH)


@jax.custom_jvp
def solver_energy(x):
    """``|x|²/2``, after an iterative solve (a Cholesky factorisation per iteration) whose
    iterations, up to ``TRIPS``, are many only where ``|x[0]| > 1.5`` (an adaptive solver
    inside a model): batched, every chain runs the slowest chain's iterations."""
    trips = 1 + jnp.floor(TRIPS * jnp.tanh((x[0] / 1.5) ** 8)).astype(jnp.int32)

    def body(carry):
        i, v = carry
        factor = jnp.linalg.cholesky(jnp.asarray(_A) + jnp.diag(v * v))
        return i + 1, jnp.tanh(factor[:, 0])

    _, v = jax.lax.while_loop(lambda c: c[0] < trips, body, (0, jnp.zeros(WIDTH)))
    return 0.5 * x @ x + 0.0 * v[0]


@solver_energy.defjvp
def _solver_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return solver_energy(x), x @ t


SOLVER = from_jax(energy=solver_energy, dim=DIM)
GAUSSIAN = from_jax(lambda x: -0.5 * jnp.sum(x**2 / jnp.arange(1.0, DIM + 1)), dim=DIM)


def solver_start(n):
    """One chain far out (the solver's longest runs), the others near the mode."""
    x = np.full((n, DIM), 0.05)
    x[0, 0] = 2.0
    return x


def _kernel(target, steps=3):
    return Ladder(Leapfrog(target, 0.3, steps), LookAheadRule(3), MomentumRefresh(0.5))


def _sample(kernel, x0, n_steps, chains=None, **options):
    if chains is not None:
        options["executor"] = Parallel(chains=chains)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # short runs: R-hat, ESS
        return sample_run(kernel, x0, n_steps, seed=3, checks=False, warmup=0, **options)


# ---------------------------------------------------------------- the rule
def test_the_rule_chooses_sequential_only_above_the_margin():
    assert MARGIN == 2.0
    choice, reason = chains_rule(3e-3, 1e-3)
    assert choice == "sequential"
    assert "0.003 s per chain batched, 0.001 s for one chain" in reason
    assert "one after another" in reason
    assert chains_rule(1.99e-3, 1e-3)[0] == "vectorized"
    assert chains_rule(2.01e-3, 1e-3)[0] == "sequential"
    assert chains_rule(0.2e-3, 1e-3)[0] == "vectorized"
    assert "batched" in chains_rule(0.2e-3, 1e-3)[1]
    assert chains_rule(3.0, 1.0, margin=4.0)[0] == "vectorized"


# ---------------------------------------------------------------- the measurement
def test_the_probe_finds_each_model_its_choice():
    """A wide margin: with one chain of 16 far out, the solver's batched gradient costs several
    times one chain's per chain, the Gaussian's a fraction."""
    slow = probe(SOLVER, solver_start(16))
    cheap = probe(GAUSSIAN, solver_start(16))
    assert slow["vectorized"] > MARGIN * slow["sequential"], slow  # 6.1x measured (16 chains)
    assert cheap["vectorized"] < 0.6 * cheap["sequential"], cheap  # 0.13-0.2x measured
    assert probe(SOLVER, solver_start(16)) is slow  # measured once per target and shape
    for name, target in (("sequential", SOLVER), ("vectorized", GAUSSIAN)):
        kernel = _kernel(target)
        ks = kernel.init(solver_start(16), np.random.default_rng(0))
        chosen = choose_backend(kernel, ks, chains="auto")
        assert (chosen.name, chosen.chains) == ("jax", name)
        assert chosen.timings is not None and chosen.timings["probe"] > 0
        assert "the batched gradient costs" in chosen.chains_reason


@pytest.mark.slow
def test_trace_backend_records_the_choice_its_reason_and_the_timings(monkeypatch):
    # the probe's timings as measured on an idle machine (the measurement itself is
    # test_the_probe_finds_each_model_its_choice): what is recorded, not the clock
    measured = {
        id(SOLVER): {"vectorized": 2.6e-4, "sequential": 4.2e-5, "probe": 0.38},
        id(GAUSSIAN): {"vectorized": 1.5e-5, "sequential": 8.0e-5, "probe": 0.1},
    }
    monkeypatch.setattr(backend_module, "probe", lambda target, x: dict(measured[id(target)]))
    trace = _sample(_kernel(SOLVER, steps=1), solver_start(16), 2, chains="auto")
    backend = trace.backend
    assert (backend["name"], backend["chains"]) == ("jax", "sequential")
    assert "one after another" in backend["chains_reason"]
    assert set(backend["timings"]) == {"vectorized", "sequential", "probe"}
    assert backend["timings"]["vectorized"] > MARGIN * backend["timings"]["sequential"]
    cheap = _sample(_kernel(GAUSSIAN), solver_start(8), 5, chains="auto").backend
    assert cheap["chains"] == "vectorized" and "chains batched" in cheap["chains_reason"]
    asked = _sample(_kernel(GAUSSIAN), solver_start(8), 5, chains="sequential").backend
    assert asked["chains"] == "sequential" and "timings" not in asked
    assert asked["chains_reason"] == "asked for (chains='sequential')"
    one = _sample(_kernel(GAUSSIAN), solver_start(1), 5, chains="auto").backend
    assert (one["chains"], one["chains_reason"]) == ("vectorized", "one chain")
    numpy_run = _sample(_kernel(GAUSSIAN), solver_start(2), 5, backend="numpy").backend
    assert "chains" not in numpy_run


# ---------------------------------------------------------------- the driver
def test_sequential_chains_give_the_batched_draws_to_rounding():
    """Over two blocks (the second ragged: 150 = 128 + 22 steps), with a rule that carries
    state (the default LAHMC kernel)."""
    kernel = lahmc(GAUSSIAN, 0.6, 4, 0.3)
    x0 = np.random.default_rng(1).normal(size=(5, DIM))
    batched = _sample(kernel, x0, 150, chains="vectorized")
    alone = _sample(kernel, x0, 150, chains="sequential")
    assert (batched.backend["chains"], alone.backend["chains"]) == ("vectorized", "sequential")
    np.testing.assert_array_equal(alone.rungs, batched.rungs)
    np.testing.assert_allclose(alone.positions, batched.positions, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(alone.n_moves, batched.n_moves)
    np.testing.assert_allclose(alone.final.state.x, batched.final.state.x, rtol=1e-12, atol=1e-12)
    assert len(np.unique(batched.rungs)) > 1  # the chains did take different rungs


def test_a_sequential_run_checkpointed_and_resumed_is_the_whole_run(tmp_path):
    kernel = _kernel(GAUSSIAN)
    x0 = np.random.default_rng(2).normal(size=(3, DIM))
    whole = _sample(kernel, x0, 40, chains="sequential")
    path = tmp_path / "run.npz"
    first = _sample(kernel, x0, 40, chains="sequential", checkpoint=Checkpoint(path, every=16))
    np.testing.assert_array_equal(first.positions, whole.positions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        again = resume_run(path, kernel, 60, checks=False)
    assert again.backend["chains"] == "sequential"  # the checkpoint keeps the choice
    np.testing.assert_array_equal(again.positions[:40], whole.positions)


def test_run_sequential_has_the_driver_signature_and_is_picked_by_driver_for():
    expected = inspect.signature(Driver.__call__).parameters
    got = inspect.signature(run_sequential).parameters
    assert list(got) == [name for name in expected if name != "self"]
    kernel = _kernel(GAUSSIAN)
    assert driver_for(kernel, "ragged", "jax", "sequential") is run_sequential
    with pytest.raises(ValueError, match="chains='sequential' runs on the compiled ragged"):
        driver_for(kernel, "ragged", "numpy", "sequential")
    with pytest.raises(ValueError, match="chains must be 'vectorized' or 'sequential'"):
        driver_for(kernel, "ragged", "jax", "auto")


# ---------------------------------------------------------------- the argument
def test_the_chains_argument_is_checked():
    kernel = _kernel(GAUSSIAN)
    with pytest.raises(
        ValueError, match="chains must be 'auto', 'vectorized' or 'sequential', got 'serial'"
    ):
        _sample(kernel, solver_start(2), 5, chains="serial")
    with pytest.raises(ValueError, match="chains='sequential' runs on the JAX backend only"):
        _sample(kernel, solver_start(2), 5, chains="sequential", backend="numpy")
    with pytest.raises(ValueError, match="chains='sequential': schedule='synchronous'"):
        _sample(kernel, solver_start(2), 5, chains="sequential", schedule="synchronous")
