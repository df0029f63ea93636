"""Per-chain random streams, and what they give on each backend: the same run again.

* ``ChainStreams``: a draw depends only on (seed, chain, position in the chain's stream),
  however the draws are grouped into calls; a view advances only the masked chains; the
  state round-trips through a checkpoint and a pickle; the distributions are right.
* On each backend: the same seed gives the same draws bit for bit (another seed others);
  a run checkpointed and resumed is the uninterrupted run (bit for bit on numpy; on JAX to
  rounding or better — it is bit for bit here, the compiled blocks being the same
  arithmetic on the same values); warm-up inside the compiled loop adapts what the numpy
  loop's warm-up adapts, to 1e-10, and the runs after it agree to 1e-10.
"""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest
from driver_equivalence import assert_close_trace, assert_same_trace
from scipy import stats

from ladder_mcmc import Checkpoint, Ladder, MomentumRefresh, lahmc, resume, sample
from ladder_mcmc.engine.streams import ChainStreams, root_seed
from ladder_mcmc.hamiltonian import JitteredLengthLeapfrog, LengthJitter, Metric
from ladder_mcmc.ladder import PersistentUniformRule
from ladder_mcmc.models import IllConditionedGaussian


def uniforms(streams, k):
    return streams.view().random((streams.n_chains, k))


def normals(streams, k):
    return streams.view().standard_normal((streams.n_chains, k))


def test_a_draw_depends_only_on_seed_chain_and_position():
    whole = uniforms(ChainStreams.for_chains(3, 4), 5000)
    whole_normals = normals(ChainStreams.for_chains(3, 4), 5000)
    # drawn in pieces of other sizes (one larger than the buffer), interleaved kinds
    pieces = ChainStreams.for_chains(3, 4)
    parts, normal_parts = [], []
    for k in (1, 3, 5, 3000, 7):
        parts.append(uniforms(pieces, k))
        normal_parts.append(normals(pieces, k + 1))
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), whole[:, :3016])
    np.testing.assert_array_equal(np.concatenate(normal_parts, axis=1), whole_normals[:, :3021])
    # chains 2 and 3 alone (an executor's group) are chains 2 and 3 of the run
    group = ChainStreams(root_seed(3), np.array([2, 3]))
    np.testing.assert_array_equal(uniforms(group, 5000), whole[2:])
    # chains differ from each other, and so do seeds
    assert len({row[:8].tobytes() for row in whole}) == 4
    assert not np.array_equal(uniforms(ChainStreams.for_chains(4, 4), 1000), whole[:, :1000])


def test_a_view_advances_only_the_masked_chains():
    streams = ChainStreams.for_chains(0, 3)
    reference = uniforms(ChainStreams.for_chains(0, 3), 4)
    first = streams.view(None, np.array([True, False, True])).random(3)
    np.testing.assert_array_equal(first, reference[:, 0])  # every chain sees its next draw
    rows = streams.view(np.array([1, 2])).random(2)
    np.testing.assert_array_equal(rows, [reference[1, 0], reference[2, 1]])
    np.testing.assert_array_equal(
        uniforms(streams, 1)[:, 0], [reference[0, 1], reference[1, 1], reference[2, 2]]
    )


def test_state_round_trip_continues_the_streams():
    streams = ChainStreams.for_chains(11, 5)
    uniforms(streams, 37)
    normals(streams, 1100)
    streams.view(None, np.arange(5) % 2 == 0).random(5)
    meta, arrays = streams.state()
    json.loads(json.dumps(meta))  # JSON-able
    again = ChainStreams.from_state(json.loads(json.dumps(meta)), arrays)
    np.testing.assert_array_equal(uniforms(again, 3000), uniforms(streams, 3000))
    np.testing.assert_array_equal(normals(again, 3000), normals(streams, 3000))
    # a root seeded by a list of words (as the reproduction's seeds are)
    listed = ChainStreams(np.random.SeedSequence([3, 2**40, 7]), np.arange(2))
    uniforms(listed, 5)
    copy = ChainStreams.from_state(*listed.state())
    np.testing.assert_array_equal(uniforms(copy, 10), uniforms(listed, 10))
    with pytest.raises(ValueError, match="corrupt"):
        ChainStreams.from_state({"entropy": "x"}, arrays)
    with pytest.raises(ValueError, match="corrupt"):
        ChainStreams.from_state(meta, {**arrays, "normal_offset": arrays["normal_offset"] + 10**6})


def test_a_pickled_copy_continues_the_streams():
    """Process pools and clusters receive the streams pickled."""
    streams = ChainStreams.for_chains(5, 3)
    uniforms(streams, 10)
    normals(streams, 10)
    copy = pickle.loads(pickle.dumps(streams))
    np.testing.assert_array_equal(uniforms(copy, 3000), uniforms(streams, 3000))
    np.testing.assert_array_equal(normals(copy, 3000), normals(streams, 3000))


def test_the_distributions():
    """Kolmogorov–Smirnov at a fixed seed: uniform, normal, gamma, exponential, uniform(a, b)."""
    rng = ChainStreams.for_chains(2026, 40).view()
    size = (40, 500)
    for draws, cdf in [
        (rng.random(size), stats.uniform.cdf),
        (rng.standard_normal(size), stats.norm.cdf),
        (rng.normal(1.0, 2.0, size), stats.norm(1.0, 2.0).cdf),
        (rng.gamma(0.8, 1.5, size), stats.gamma(0.8, scale=1.5).cdf),
        (rng.exponential(2.0, size), stats.expon(scale=2.0).cdf),
        (rng.uniform(-1.0, 3.0, size), stats.uniform(-1.0, 4.0).cdf),
    ]:
        assert stats.kstest(draws.ravel(), cdf).pvalue > 1e-3
    u = rng.random(size)
    assert 0 < u.min() and u.max() < 1  # the open interval: Φ⁻¹(u) is finite
    # successive draws of one chain, and neighbouring chains, are uncorrelated
    z = rng.standard_normal((40, 2000))
    assert abs(np.corrcoef(z[:, :-1].ravel(), z[:, 1:].ravel())[0, 1]) < 4 / np.sqrt(z.size)
    assert abs(np.corrcoef(z[:-1].ravel(), z[1:].ravel())[0, 1]) < 4 / np.sqrt(z.size)


def test_bad_calls():
    rng = ChainStreams.for_chains(0, 3).view()
    with pytest.raises(ValueError, match="number of chains"):
        rng.random(4)
    with pytest.raises(ValueError, match="number of chains"):
        rng.random()
    with pytest.raises(AttributeError, match="integers"):
        rng.integers(3)
    for seed in (-1, 1.5, "abc", True):
        with pytest.raises(ValueError, match="seed"):
            root_seed(seed)
    x0 = np.zeros((3, 2))
    with pytest.raises(ValueError, match="seed has streams for 4 chains"):
        sample(
            lahmc(IllConditionedGaussian(2), 0.5, 5, 0.5),
            x0,
            5,
            seed=ChainStreams.for_chains(0, 4),
            warmup=0,
        )


# ---------------------------------------------------------------- each backend
jax = pytest.importorskip("jax")
jnp = jax.numpy

from ladder_mcmc.models import from_jax  # noqa: E402

COV = np.array([[1.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 0.5]])
PRECISION = np.linalg.inv(COV)


def _gauss(x):
    return -0.5 * x @ (jnp.asarray(PRECISION) @ x)


GAUSS = from_jax(_gauss, dim=3)
X0 = np.random.default_rng(1).normal(size=(5, 3)) * 0.5
DIAGONAL = Metric(np.array([0.5, 1.0, 2.0]))
#: a chain-dependent cost (the jittered length), a composed refresh (normals and a
#: uniform), a rule with a carry (the persistent uniform): every piece of state a
#: checkpoint must carry
KERNEL = Ladder(
    JitteredLengthLeapfrog(GAUSS, 0.4, 4, DIAGONAL),
    PersistentUniformRule(3, 0.3),
    MomentumRefresh(0.3, DIAGONAL) + LengthJitter(4, 0.75),
)
BACKENDS = ["numpy", "jax"]


def _sample(backend, n_steps=40, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: R-hat and ESS warnings
        options = {"seed": 3, "warmup": 0, "checks": False, **options}
        return sample(KERNEL, X0, n_steps, backend=backend, **options)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_seed_gives_the_same_draws(backend):
    a, b, other = _sample(backend), _sample(backend), _sample(backend, seed=4)
    assert a.backend["name"] == backend
    assert_same_trace(a, b)
    assert not np.array_equal(a.positions, other.positions)
    assert len(np.unique(a.rungs)) > 2  # the rule's outcomes vary: the comparison has teeth


@pytest.mark.parametrize("backend", BACKENDS)
def test_checkpoint_and_resume_is_the_uninterrupted_run(backend, tmp_path):
    whole = _sample(backend, checkpoint=Checkpoint(every=10))
    path = tmp_path / f"{backend}.npz"
    first = _sample(backend, n_steps=20, checkpoint=Checkpoint(path, every=10))
    assert first.backend["name"] == backend
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rest = resume(path, KERNEL, 20, checks=False)
    assert rest.backend["name"] == backend and rest.n_steps == 40
    if backend == "numpy":
        assert_same_trace(rest, whole)
    else:
        # "to rounding or better": the same compiled arithmetic on the same values
        assert_close_trace(whole, rest)
        assert_same_trace(rest, whole)


def test_the_backends_agree_and_the_comparison_sees_one_number():
    """The JAX run is the numpy run to 1e-10; the tolerance is not so loose that it passes
    a run whose kernel differs in its 8th significant digit."""
    numpy_run, jax_run = _sample("numpy"), _sample("jax")
    assert_close_trace(numpy_run, jax_run)
    nudged = Ladder(
        JitteredLengthLeapfrog(GAUSS, 0.4 * (1 + 1e-8), 4, DIAGONAL), KERNEL.rule, KERNEL.refresh
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = sample(nudged, X0, 40, seed=3, warmup=0, checks=False, backend="jax")
    with pytest.raises(AssertionError):
        assert_close_trace(numpy_run, other)


def _warm(backend, chains=3):
    x0 = np.random.default_rng(2).uniform(-0.5, 0.5, size=(chains, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sample(lahmc(GAUSS), x0, 50, seed=3, warmup=200, backend=backend)


def assert_same_warmup(a, b, rtol=1e-10) -> None:
    """What warm-up adapted to ``rtol``, its counts exactly, then the runs after it."""
    wa, wb = a.warmup, b.warmup
    assert wa.adapted == wb.adapted == ("step_size", "inverse_mass", "n_leapfrog", "beta")
    np.testing.assert_allclose(wa.step_size, wb.step_size, rtol=rtol)
    np.testing.assert_allclose(wa.inverse_mass, wb.inverse_mass, rtol=rtol)
    np.testing.assert_allclose(wa.beta, wb.beta, rtol=rtol)
    np.testing.assert_allclose(wa.largest_eigenvalue, wb.largest_eigenvalue, rtol=rtol)
    assert wa.n_leapfrog == wb.n_leapfrog
    np.testing.assert_array_equal(wa.grad_evals, wb.grad_evals)
    np.testing.assert_allclose(wa.first_stage_prob, wb.first_stage_prob, rtol=rtol)
    np.testing.assert_allclose(wa.flip_fraction, wb.flip_fraction, rtol=rtol)
    assert_close_trace(a, b, rtol)


def test_warmup_on_jax_is_warmup_on_numpy():
    """Three chains (fractions of chains not exact in binary); 200 warm-up steps: the
    step size, the windows' masses, the length and β, adapted inside the compiled loop."""
    numpy_run, jax_run = _warm("numpy"), _warm("jax")
    assert (numpy_run.backend["name"], jax_run.backend["name"]) == ("numpy", "jax")
    assert_same_warmup(numpy_run, jax_run)
