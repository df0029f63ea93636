"""``hamiltonian.jittered_length``: the leapfrog ladder with a per-chain, per-step length.

* bad input (``LengthJitter``'s centre and jitter, ``init.n_leapfrog``) is a ``ValueError``;
* the map: its contract (``assert_map``) with varied per-chain lengths, each chain's rung
  bit for bit a plain ``Leapfrog(n_i)`` on that chain alone, and the contract catching a
  map that lets ``n`` change during the step;
* the law of ``LengthJitter``: the exact support, uniform frequencies, ``M = 1``, one
  uniform per chain whatever ``M``;
* one-step invariance of the extended target ``p(x, v) q(n)``, and a refresh whose law of
  ``n`` depends on ``x`` caught by the same check;
* exact gradient counts: the recorded costs equal the gradient rows a counting target
  evaluates, on both schedules, in blocks (checkpoints) and through ``sample`` and
  ``resume``;
* :func:`integrate_lengths` on JAX values (the masked loop of the compiled backend) is
  the numpy loop's arithmetic, row by row.

Statistical checks use fixed seeds: invariance by two-sample KS tests at a total false
alarm rate of 1e-6 (``assert_one_step_invariance``), frequencies by z-scores (4.5).
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from ladder_mcmc import (
    Checkpoint,
    FunctionTarget,
    Ladder,
    Leapfrog,
    LookAheadRule,
    MomentumRefresh,
    PhaseState,
    resume,
    sample,
)
from ladder_mcmc.diagnostics import GradientCounter
from ladder_mcmc.engine import ChainStreams, driver_for
from ladder_mcmc.hamiltonian import (
    JitteredLengthLeapfrog,
    JitteredLengthState,
    LengthJitter,
    Metric,
)
from ladder_mcmc.hamiltonian.jittered_length import integrate_lengths, lengths_of
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.verify import assert_map, assert_one_step_invariance

TARGET = IllConditionedGaussian(2, log_condition=1)
Z_MAX = 4.5
DENSE = Metric(np.array([[1.0, 0.3], [0.3, 2.0]]))


def _states(map_, lengths, seed=3):
    rng = np.random.default_rng(seed)
    st = map_.prepare(TARGET.sample(len(lengths), rng), rng)
    return attrs.evolve(st, n_leapfrog=np.asarray(lengths, dtype=np.int64))


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "args, match",
    [
        ((0,), r"n_leapfrog.*>= 1.*got 0"),
        ((-3,), r"n_leapfrog.*got -3"),
        ((2.5,), r"n_leapfrog.*got 2\.5"),
        ((True,), r"n_leapfrog.*got True"),
        ((5, 0), r"jitter.*\(0, 1\].*got 0"),
        ((5, 0.0), r"jitter.*got 0\.0"),
        ((5, 1.5), r"jitter.*got 1\.5"),
        ((5, -0.5), r"jitter.*got -0\.5"),
        ((5, float("nan")), r"jitter.*got nan"),
        ((5, "0.5"), r"jitter.*got '0\.5'"),
    ],
)
def test_bad_length_jitter_is_refused_naming_the_parameter(args, match):
    with pytest.raises(ValueError, match=match):
        LengthJitter(*args)


@pytest.mark.parametrize(
    "bad",
    [np.array([3, 0]), np.array([3, -1]), np.array([3.0, 2.5]), np.array([3, 3, 3]), [[3, 3]]],
)
def test_bad_initial_lengths_are_refused(bad):
    lf = JitteredLengthLeapfrog(TARGET, 0.3, 5)
    rng = np.random.default_rng(0)
    st = lf.prepare(np.zeros((2, 2)), rng)
    with pytest.raises(ValueError, match=r"init\.n_leapfrog.*positive integers.*got"):
        lf.prepare(attrs.evolve(st, n_leapfrog=bad), rng)


def test_the_refresh_needs_a_state_with_lengths():
    rng = np.random.default_rng(0)
    st = Leapfrog(TARGET, 0.3, 5).prepare(np.zeros((2, 2)), rng)
    with pytest.raises(ValueError, match="n_leapfrog"):
        LengthJitter(4)(st, np.ones(2, dtype=np.int8), rng)


# ------------------------------------------------------------------ the map


def test_prepare_sets_n_steps_or_keeps_the_given_lengths():
    lf = JitteredLengthLeapfrog(TARGET, 0.3, 5)
    rng = np.random.default_rng(0)
    st = lf.prepare(np.zeros((3, 2)), rng)
    assert isinstance(st, JitteredLengthState)
    assert st.n_leapfrog.dtype == np.int64 and st.n_leapfrog.tolist() == [5, 5, 5]
    given = lf.prepare(attrs.evolve(st, n_leapfrog=np.array([1.0, 7.0, 2.0])), rng)
    assert given.n_leapfrog.dtype == np.int64 and given.n_leapfrog.tolist() == [1, 7, 2]
    np.testing.assert_array_equal(lf.cost_of(given), [1, 7, 2])
    assert lf.describe()["map"] == "JitteredLengthLeapfrog"


@pytest.mark.parametrize("metric", [Metric(), Metric(np.array([0.5, 2.0])), DENSE])
def test_the_map_is_valid_with_each_chains_own_length(metric):
    lf = JitteredLengthLeapfrog(TARGET, 0.2, 3, metric)
    st = _states(lf, [1, 4, 2, 7, 3, 1])
    assert_map(lf, st)
    d = np.array([1, -1, 1, -1, 1, 1])
    moved = lf.move(st, d)
    np.testing.assert_array_equal(moved.n_leapfrog, st.n_leapfrog)
    np.testing.assert_array_equal(lf.flip(st).n_leapfrog, st.n_leapfrog)
    for i, n in enumerate(st.n_leapfrog):  # chain i alone: a plain Leapfrog(n_i), bit for bit
        plain = Leapfrog(TARGET, 0.2, int(n), metric)
        row = slice(i, i + 1)
        one = plain.move(PhaseState(st.x[row], st.v[row], st.energy[row], st.grad[row]), d[row])
        for name in ("x", "v", "energy", "grad"):
            np.testing.assert_array_equal(getattr(moved, name)[i], getattr(one, name)[0])


def test_with_one_length_it_is_the_leapfrog_bit_for_bit():
    jl, lf = JitteredLengthLeapfrog(TARGET, 0.2, 4), Leapfrog(TARGET, 0.2, 4)
    st = _states(jl, [4] * 5)
    for name in ("x", "v", "energy", "grad"):
        np.testing.assert_array_equal(getattr(jl.forward(st), name), getattr(lf.forward(st), name))


@attrs.frozen(eq=False)
class GrowingLength(JitteredLengthLeapfrog):
    """A broken variant: every map application lengthens the next by one step (``n``
    changes during the ladder step)."""

    def move(self, state, direction):
        moved = super().move(state, direction)
        return attrs.evolve(moved, n_leapfrog=moved.n_leapfrog + 1)


def test_the_map_check_catches_a_length_that_changes_during_the_step():
    st = _states(JitteredLengthLeapfrog(TARGET, 0.2, 3), [1, 4, 2, 7, 3, 1])
    with pytest.raises(AssertionError, match="GrowingLength"):
        assert_map(GrowingLength(TARGET, 0.2, 3), st)


# ------------------------------------------------------------------ the law


class _CountingRandom:
    """A generator that records the sizes it is asked for."""

    def __init__(self, seed: int) -> None:
        self.rng, self.calls = np.random.default_rng(seed), []

    def random(self, size):
        self.calls.append(size)
        return self.rng.random(size)


@pytest.mark.parametrize(
    "centre, jitter, support",
    [
        (10, 1.0, range(1, 20)),
        (10, 0.5, range(6, 15)),
        (4, 0.34, range(3, 6)),
        (4, 0.3, range(4, 5)),  # w = floor(0.9) = 0: always M
        (1, 1.0, range(1, 2)),  # M = 1: always 1
        (2, 1.0, range(1, 4)),
    ],
)
def test_length_jitter_draws_uniformly_on_its_support(centre, jitter, support):
    n = 100_000
    rng = _CountingRandom(7)
    st = _states(JitteredLengthLeapfrog(TARGET, 0.2, 3), np.full(n, 3))
    refresh = LengthJitter(centre, jitter)
    assert (refresh.n_leapfrog, refresh.half_width) == (centre, (len(support) - 1) // 2)
    new, d = refresh(st, np.ones(n, dtype=np.int8), rng)
    assert rng.calls == [n]  # one uniform per chain, also when w = 0
    lengths = new.n_leapfrog
    assert lengths.dtype == np.int64
    counts = np.bincount(lengths, minlength=support.stop + 1)
    assert set(np.flatnonzero(counts)) == set(support)
    share = 1.0 / len(support)
    if len(support) > 1:
        z = (counts[support.start : support.stop] / n - share) / np.sqrt(share * (1 - share) / n)
        assert np.all(np.abs(z) < Z_MAX), z
    assert abs(lengths.mean() - centre) < Z_MAX * lengths.std() / np.sqrt(n) + 1e-12
    for name in ("x", "v", "energy", "grad"):
        assert getattr(new, name) is getattr(st, name)


def test_the_lengths_of_the_extreme_uniforms():
    u = np.array([0.0, np.nextafter(1.0, 0.0), 0.5])
    for centre in (1, 2, 10, 1000, 2**40):
        for w in {0, (centre - 1) // 2, centre - 1}:
            n = lengths_of(u, centre, w)
            assert n.tolist() == [centre - w, centre + w, centre], (centre, w)


# ------------------------------------------------------------------ invariance

CENTRE, JITTER = 3, 1.0


def _exact_extended(n, rng, kernel=None):
    """Exact draws of ``(x, v, n)``: positions from the target, ``v`` from ``prepare``,
    ``n`` from ``LengthJitter(CENTRE, JITTER)``'s law, independent of both."""
    lf = JitteredLengthLeapfrog(TARGET, 0.9, CENTRE)
    st = lf.prepare(TARGET.sample(n, rng), rng)
    return attrs.evolve(st, n_leapfrog=lengths_of(rng.random(n), CENTRE, CENTRE - 1))


def _features(ks):
    st = ks.state
    d = ks.direction[:, None].astype(float)
    n = (st.n_leapfrog[:, None] - CENTRE).astype(float)
    return np.concatenate([st.x, d * st.v, n, n * st.x, n * d * st.v], axis=1)


def _kernel(refresh_length, beta=0.2):
    return Ladder(
        JitteredLengthLeapfrog(TARGET, 0.9, CENTRE),
        LookAheadRule(3),
        MomentumRefresh(beta) + refresh_length,
    )


@pytest.mark.parametrize("beta", [1.0, 0.2])
def test_the_jittered_length_kernel_keeps_the_extended_target(beta):
    kernel = _kernel(LengthJitter(CENTRE, JITTER), beta)
    report = assert_one_step_invariance(
        kernel, _exact_extended, n_chains=40_000, seed=4, features=_features
    )
    assert report.ok


@attrs.frozen
class PositionDependentLength(LengthJitter):
    """A broken variant: the longest length where ``x₀ > 0``, the shortest elsewhere (a
    law of ``n`` that depends on the state, so not a Gibbs update of ``n``)."""

    def __call__(self, state, direction, rng):
        new, d = super().__call__(state, direction, rng)
        centre, w = self.n_leapfrog, self.half_width
        return attrs.evolve(new, n_leapfrog=np.where(new.x[:, 0] > 0, centre + w, centre - w)), d


def test_the_invariance_check_catches_a_length_law_that_depends_on_the_position():
    bad = _kernel(PositionDependentLength(CENTRE, JITTER))
    with pytest.raises(AssertionError, match="one step changed"):
        assert_one_step_invariance(
            bad, _exact_extended, n_chains=40_000, seed=4, features=_features
        )


# ------------------------------------------------------------------ gradient counts


def _counting(target):
    """``target`` as a FunctionTarget that counts the rows of its gradient calls."""
    calls = {"rows": 0}

    def grad(x):
        calls["rows"] += x.shape[0]
        return target.grad(x)

    return FunctionTarget(target.energy, grad, dim=target.dim), calls


def _jittered_kernel(target, lengths=None):
    lengths = LengthJitter(4, 1.0) if lengths is None else lengths
    return Ladder(
        JitteredLengthLeapfrog(target, 0.5, 4), LookAheadRule(3), MomentumRefresh(0.3) + lengths
    )


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize("blocks", [[40], [7, 20, 33, 40]])
def test_recorded_costs_count_every_gradient_evaluation(schedule, blocks):
    """Both schedules record each step's ``n``: ``n_moves · step_cost`` summed is the
    number of gradient rows the target evaluated, also run in blocks (checkpoints)."""
    target, calls = _counting(TARGET)
    kernel = _jittered_kernel(target)
    streams = ChainStreams.for_chains(3, 6)
    ks = kernel.init(TARGET.sample(6, np.random.default_rng(1)), streams.view())
    run = driver_for(kernel, schedule)
    recorder = Recorder(blocks[-1], 6, max_rung=3)
    calls["rows"] = 0
    for until in blocks:
        ks = run(kernel, ks, recorder, streams, until=until)
    assert recorder.step_cost is not None and recorder.step_cost.dtype == np.int32
    counted = recorder.grad_evals_per_step(kernel.map.cost)
    assert counted.shape == (blocks[-1], 6)
    assert int(counted.sum()) == calls["rows"]
    assert len(np.unique(recorder.step_cost)) > 3  # the lengths did vary


def test_fixed_cost_maps_record_no_costs():
    kernel = Ladder(Leapfrog(TARGET, 0.5, 4), LookAheadRule(3), MomentumRefresh(0.3))
    trace = sample(kernel, np.zeros((3, 2)), 10, seed=0, checks=False, warmup=0)
    assert trace.step_cost is None
    np.testing.assert_array_equal(trace.grad_evals, trace.n_moves.sum(axis=0) * 4)


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_trace_grad_evals_are_exact_through_sample_and_resume(schedule, tmp_path):
    target, calls = _counting(TARGET)
    kernel = _jittered_kernel(target)
    x0 = TARGET.sample(5, np.random.default_rng(2))
    calls["rows"] = 0
    whole = sample(kernel, x0, 30, seed=1, schedule=schedule, checks=False, warmup=0)
    used = calls["rows"] - 5  # (prepare evaluates every chain's gradient once)
    assert int(whole.grad_evals.sum()) == used
    np.testing.assert_array_equal(
        whole.grad_evals_per_step, whole.n_moves * whole.step_cost.astype(np.int64)
    )
    path = tmp_path / "run.npz"  # 12 steps with checkpoints, then 18 more
    first = sample(kernel, x0, 12, seed=1, schedule=schedule, checks=False,
                   checkpoint=Checkpoint(path, every=5), warmup=0)  # fmt: skip
    np.testing.assert_array_equal(first.step_cost, whole.step_cost[:12])
    resumed = resume(path, kernel, n_steps=18, checks=False)
    np.testing.assert_array_equal(resumed.step_cost, whole.step_cost)
    np.testing.assert_array_equal(resumed.grad_evals, whole.grad_evals)
    np.testing.assert_array_equal(resumed.positions, whole.positions)


# ------------------------------------------------------------------ the masked loop


@pytest.mark.parametrize("metric", [None, Metric(np.array([0.5, 2.0])), DENSE])
@pytest.mark.parametrize("per_chain_step", [False, True])
def test_the_masked_loop_on_jax_values_is_the_numpy_loop_row_by_row(metric, per_chain_step):
    """:func:`integrate_lengths` on JAX values (a traced maximum length, every row masked
    once its own steps are done) against the numpy loop (rows sorted by length, the
    gradient on the rows still integrating): the same end points to rounding."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    velocity = None if metric is None else metric.velocity
    st = _states(JitteredLengthLeapfrog(TARGET, 0.2, 3), [1, 4, 2, 7, 3, 1, 7])
    n = st.n_leapfrog
    eps = np.linspace(0.1, 0.3, n.size)[:, None] if per_chain_step else 0.2
    want = integrate_lengths(TARGET, velocity, eps, st.x, st.v, st.grad, n)
    with jax.enable_x64(True):
        jm = None if metric is None else Metric(jnp.asarray(metric.inverse_mass))

        @jax.jit
        def masked(x, v, g, n, eps):
            vel = None if jm is None else jm.velocity
            return integrate_lengths(FunctionTarget(_energy, _grad, dim=2), vel, eps, x, v, g, n)

        got = masked(st.x, st.v, st.grad, n, jnp.asarray(eps))
        got = [np.asarray(a) for a in got]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    if not per_chain_step:  # each row: a plain Leapfrog(n_i) on that row alone
        for i, k in enumerate(n):
            plain = Leapfrog(TARGET, 0.2, int(k), metric if metric is not None else Metric())
            one = plain.integrate(st.x[i : i + 1], st.v[i : i + 1], st.grad[i : i + 1])
            np.testing.assert_allclose(got[0][i], one.x[0], rtol=1e-13, atol=1e-13)


def _energy(x):
    """``TARGET``'s energy written with the namespace of ``x`` (a JAX target)."""
    return 0.5 * (x * x * TARGET.precisions).sum(axis=1)


def _grad(x):
    return x * TARGET.precisions


@pytest.mark.parametrize("lengths", [[3, 3, 3, 3], [1, 4, 2, 7]])
def test_the_masked_loop_evaluates_no_gradient_that_no_row_uses(lengths):
    """The masked loop (one step per chain, or JAX values) evaluates ``max n`` gradients
    per row: ``max n − 1`` inner kicks and the end point's; before, its last inner
    gradient, used by no row, made ``max n + 1``, one more than any chain counts."""
    counter = GradientCounter(TARGET)
    st = _states(JitteredLengthLeapfrog(TARGET, 0.2, 3), lengths)
    eps = np.full((len(lengths), 1), 0.2)  # a step per chain: the masked loop on numpy
    integrate_lengths(counter, None, eps, st.x, st.v, st.grad, st.n_leapfrog)
    assert counter.rows == len(lengths) * max(lengths)
