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
import itertools
import os
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
    Warmup,
    lahmc,
)
from ladder_mcmc import resume as resume_run
from ladder_mcmc import sample as sample_run
from ladder_mcmc.engine import Driver, driver_for
from ladder_mcmc.engine import backend as backend_module
from ladder_mcmc.engine.backend import choose_backend
from ladder_mcmc.engine.sequential import (
    LOOP_SECONDS,
    MARGIN,
    batch_waste,
    chains_rule,
    probe,
    run_sequential,
    usable_threads,
)
from ladder_mcmc.hamiltonian import LengthJitter

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


def _sample(kernel, x0, n_steps, chains=None, threads=None, **options):
    if chains is not None:
        options["executor"] = Parallel(chains=chains, threads=threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # short runs: R-hat, ESS
        return sample_run(kernel, x0, n_steps, seed=3, checks=False, warmup=0, **options)


# ---------------------------------------------------------------- the rule
def test_the_rule_predicts_each_arrangement_and_chooses_above_the_margin():
    assert MARGIN == 1.4 and LOOP_SECONDS == 1e-5
    # batched: waste · batched + loop / (chains · per_call);
    # one after another: (alone + loop / per_call) / threads
    kw = {"chains": 4, "waste": 1.5, "per_call": 2.0, "threads": 2, "loop": 8e-6}
    choice, reason = chains_rule(20e-6, 16e-6, **kw)
    vectorized, sequential = 1.5 * 20e-6 + 8e-6 / 8, (16e-6 + 8e-6 / 2) / 2
    assert choice == "sequential"
    assert f"predicted {vectorized:.3g} s per gradient batched" in reason
    assert f"{sequential:.3g} s one after another" in reason and "2 threads" in reason
    assert f"{vectorized / sequential:.3g}× faster" in reason
    # the margin: just above and just below it
    alone = 1e-6
    batched = (MARGIN * (alone + LOOP_SECONDS) - LOOP_SECONDS / 4) / 1.0
    assert chains_rule(batched * 1.001, alone, chains=4)[0] == "sequential"
    assert chains_rule(batched * 0.999, alone, chains=4)[0] == "vectorized"
    assert "chains batched" in chains_rule(batched * 0.999, alone, chains=4)[1]
    assert chains_rule(3e-3, 1e-3, chains=4, margin=4.0)[0] == "vectorized"
    # more threads, or a wider law of lengths, tip the same timings towards one after another
    assert chains_rule(20e-6, 20e-6, chains=4)[0] == "vectorized"
    assert chains_rule(20e-6, 20e-6, chains=4, threads=2)[0] == "sequential"
    assert chains_rule(20e-6, 20e-6, chains=4, waste=2.0, per_call=10.0)[0] == "sequential"
    # a round lasts as many blocks as the busiest thread runs: 4 chains on 3 threads, 2
    three = chains_rule(20e-6, 20e-6, chains=4, threads=3)[1]
    assert f"{(20e-6 + LOOP_SECONDS) * 2 / 4:.3g} s one after another" in three


def test_batch_waste_is_the_expected_longest_chain_over_the_mean():
    """By enumeration: three chains, lengths 1, 2, 4 with probabilities 1/2, 1/4, 1/4."""
    values, probs = np.array([4.0, 1.0, 2.0]), np.array([0.25, 0.5, 0.25])
    most = sum(
        max(values[[a, b, c]]) * probs[a] * probs[b] * probs[c]
        for a, b, c in itertools.product(range(3), repeat=3)
    )
    mean = float(values @ probs)
    waste, per_call = batch_waste((values, probs), 3)
    assert per_call == pytest.approx(mean, rel=1e-15)
    assert waste == pytest.approx(most / mean, rel=1e-14)
    assert batch_waste(None, 8) == (1.0, 1.0)
    assert batch_waste((values, probs), 1)[0] == pytest.approx(1.0, rel=1e-15)


def test_the_length_jitter_declares_its_law_and_a_composed_refresh_passes_it_on():
    values, probs = LengthJitter(2, 1.0).length_law
    np.testing.assert_array_equal(values, [1, 2, 3])
    np.testing.assert_allclose(probs, [1 / 3] * 3)
    np.testing.assert_array_equal(LengthJitter(10, 0.5).length_law[0], np.arange(6, 15))
    assert MomentumRefresh(0.5).length_law is None
    composed = MomentumRefresh(0.5) + LengthJitter(5)
    np.testing.assert_array_equal(composed.length_law[0], np.arange(1, 10))
    assert lahmc(GAUSSIAN).refresh.length_law is not None  # the default kernel's jitter


def test_a_single_chain_is_batched_whatever_was_chosen_before():
    kernel = _kernel(GAUSSIAN)
    ks = kernel.init(solver_start(1), np.random.default_rng(0))
    before = backend_module.Backend("jax", "asked", "sequential", "old", {"probe": 1.0}, 2)
    again = backend_module.choose_chains(kernel, ks, before, "auto")
    assert (again.chains, again.threads, again.timings) == ("vectorized", 1, None)
    assert again.chains_reason == "one chain"


def test_the_threads_are_the_cores_at_most_and_parallel_checks_them():
    assert usable_threads(1) == 1
    assert usable_threads(64, 1) == 1
    assert 1 <= usable_threads(64) <= (os.cpu_count() or 1)
    with pytest.raises(ValueError, match="threads must be"):
        Parallel(chains="sequential", threads=0)


# ---------------------------------------------------------------- the measurement
def test_the_probe_finds_each_model_its_choice():
    """A wide margin: with one chain of 16 far out, the solver's batched gradient costs several
    times one chain's per chain; the Gaussian's costs, either way, a small fraction of the
    loop's own work per call, which then decides."""
    slow = probe(SOLVER, solver_start(16))
    cheap = probe(GAUSSIAN, solver_start(16))
    assert slow["vectorized"] > MARGIN * slow["sequential"], slow  # 6.1x measured (16 chains)
    assert max(cheap["vectorized"], cheap["sequential"]) < LOOP_SECONDS / 50, cheap  # 1-2e-8 s
    assert probe(SOLVER, solver_start(16)) is slow  # measured once per target and shape
    for name, target in (("sequential", SOLVER), ("vectorized", GAUSSIAN)):
        kernel = _kernel(target)
        ks = kernel.init(solver_start(16), np.random.default_rng(0))
        chosen = choose_backend(kernel, ks, chains="auto")
        assert (chosen.name, chosen.chains) == ("jax", name)
        assert chosen.timings is not None and chosen.timings["probe"] > 0
        assert "predicted" in chosen.chains_reason


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
    alone = _sample(kernel, x0, 150, chains="sequential", threads=2)  # two at a time
    assert (batched.backend["chains"], alone.backend["chains"]) == ("vectorized", "sequential")
    assert alone.backend["threads"] == min(2, usable_threads(5))
    one_thread = _sample(kernel, x0, 150, chains="sequential", threads=1)
    np.testing.assert_array_equal(one_thread.positions, alone.positions)  # whatever the threads
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


def test_after_warm_up_auto_arranges_the_chains_for_the_adapted_kernel(monkeypatch):
    """The probe's timings fixed (the clock is test_the_probe_finds_each_model_its_choice's):
    the reason recorded is the rule's on the adapted kernel's law of lengths, not the
    first kernel's."""
    timings = {"vectorized": 2e-5, "sequential": 2e-5, "probe": 0.1}
    monkeypatch.setattr(backend_module, "probe", lambda target, x: dict(timings))
    x0 = np.random.default_rng(4).normal(size=(4, DIM))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        trace = sample_run(
            lahmc(GAUSSIAN), x0, 20, seed=1, checks=False, warmup=Warmup(60, trajectory_length=3.0),
            executor=Parallel(chains="auto", threads=1),
        )  # fmt: skip
    from ladder_mcmc.hamiltonian.warmup.parameters import apply_warmup

    adapted = apply_warmup(lahmc(GAUSSIAN), trace.warmup)
    waste, per_call = batch_waste(adapted.refresh.length_law, 4)
    expected = chains_rule(
        2e-5, 2e-5, chains=4, waste=waste, per_call=per_call, threads=1
    )  # fmt: skip
    assert (trace.backend["chains"], trace.backend["chains_reason"]) == expected
    first = lahmc(GAUSSIAN)
    before = batch_waste(first.refresh.length_law, 4)
    assert before != (waste, per_call)  # warm-up changed the law: the reason is the new one's


def test_run_sequential_has_the_driver_signature_and_is_picked_by_driver_for():
    expected = inspect.signature(Driver.__call__).parameters
    got = inspect.signature(run_sequential).parameters
    assert list(got) == [name for name in expected if name != "self"] + ["threads"]
    assert got["threads"].kind is inspect.Parameter.KEYWORD_ONLY
    kernel = _kernel(GAUSSIAN)
    assert driver_for(kernel, "ragged", "jax", "sequential") is run_sequential
    on_two = driver_for(kernel, "ragged", "jax", "sequential", threads=2)
    assert on_two.func is run_sequential and on_two.keywords == {"threads": 2}
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
