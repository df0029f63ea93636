"""Per-chain random streams: keyed by (seed, chain), the same draws under any driver."""

import json
import pickle
from unittest import mock

import numpy as np
import pytest
from scipy import stats

from ladder_mcmc import (
    CycleShift,
    DirectionRefresh,
    Ladder,
    LookAheadRule,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
    lahmc,
    sample,
)
from ladder_mcmc.drivers import ChainStreams, root_seed
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


WALK = CycleShift(21, stats.binom.pmf(np.arange(21), 20, 0.5))
RULES = [
    LookAheadRule(3),
    ReducedFlipLookAheadRule(3),
    ReducedFlipRule(),
    PersistentUniformRule(3, 0.1),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: type(r).__name__)
def test_schedules_and_checkpoints_give_the_same_draws_on_an_exact_map(rule, tmp_path):
    """Integer arithmetic: ragged, synchronous, and any ``checkpoint_every`` agree bit for bit."""
    kernel = Ladder(WALK, rule, DirectionRefresh(0.1))
    x0 = np.arange(30) % 21
    ragged_run = sample(kernel, x0, 200, seed=3, warmup=0)
    for other in (
        sample(kernel, x0, 200, seed=3, schedule="synchronous", warmup=0),
        sample(kernel, x0, 200, seed=3, checkpoint_every=7, warmup=0),
        sample(kernel, x0, 200, seed=3, schedule="synchronous", checkpoint_every=13, warmup=0),
    ):
        np.testing.assert_array_equal(other.states, ragged_run.states)
        np.testing.assert_array_equal(other.rungs, ragged_run.rungs)
    assert len(np.unique(ragged_run.rungs)) >= 3  # several outcomes: the comparison has teeth


def test_the_checkpoint_comparison_catches_streams_shared_by_the_batch():
    """The mutant moves every chain's stream on whenever any chain draws (as one
    generator shared by the batch did): then checkpoints change the draws, and the
    comparison of the test above fails."""
    kernel = Ladder(WALK, LookAheadRule(3), DirectionRefresh(0.1))
    x0 = np.arange(30) % 21
    original_view = ChainStreams.view

    def shared(self, ids=None, advance=None):
        return original_view(self, ids, None)

    with mock.patch.object(ChainStreams, "view", shared):
        whole = sample(kernel, x0, 60, seed=3, warmup=0)
        checkpointed = sample(kernel, x0, 60, seed=3, checkpoint_every=10, warmup=0)
    assert not np.array_equal(checkpointed.states, whole.states)
