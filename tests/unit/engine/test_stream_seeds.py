"""The per-chain streams' host shortcuts give NumPy's numbers exactly.

* The seeds of all chains computed at once (``seeds.sfc64_seeds``) are the words NumPy's
  own ``SeedSequence`` gives each chain, for any entropy, spawn key and pool size; where
  they cannot be (a chain index over 32 bits) the chains are seeded one by one, alike.
* A call for every chain at one offset takes a block of columns (``_Stream.even``): the
  same numbers as the per-chain gather, before and after masked views and refills, and
  after a pickle.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ladder_mcmc.engine import seeds
from ladder_mcmc.engine.streams import ChainStreams

SEEDS = [
    np.random.SeedSequence(0),
    np.random.SeedSequence(1),
    np.random.SeedSequence(None),  # 128 bits of fresh entropy
    np.random.SeedSequence([1, 2, 3]),
    np.random.SeedSequence(2**200 + 7),
    np.random.SeedSequence(3, spawn_key=(4,)),
    np.random.SeedSequence(3, pool_size=8),
    np.random.SeedSequence([5, 2**40], spawn_key=(1, 2, 2**33), pool_size=5),
    np.random.SeedSequence(9).spawn(3)[2],
]


def numpy_generator(seed, chain, code):
    """What the streams promise chain ``chain``'s generator of kind ``code`` is."""
    return np.random.Generator(
        np.random.SFC64(
            np.random.SeedSequence(
                seed.entropy, spawn_key=(*seed.spawn_key, chain, code), pool_size=seed.pool_size
            )
        )
    )


@pytest.mark.parametrize("seed", SEEDS, ids=range(len(SEEDS)))
def test_the_seeds_of_all_chains_at_once_are_numpys(seed):
    chains = np.array([0, 1, 5, 1000, 2**32 - 1])
    for code in (0, 1):
        words = seeds.sfc64_seeds(seed, chains, code)
        assert words is not None and words.dtype == np.uint64
        for c, row in zip(chains, words, strict=True):
            expected = np.random.SeedSequence(
                seed.entropy, spawn_key=(*seed.spawn_key, int(c), code), pool_size=seed.pool_size
            ).generate_state(3, np.uint64)
            np.testing.assert_array_equal(row, expected)
    got = ChainStreams(seed, chains).view().standard_normal((chains.size, 4))
    for i, c in enumerate(chains):
        np.testing.assert_array_equal(got[i], numpy_generator(seed, int(c), 1).standard_normal(4))


def test_chains_beyond_32_bits_are_seeded_one_by_one_alike():
    seed = np.random.SeedSequence(7)
    chains = np.array([3, 2**32, 2**40 + 1])
    assert seeds.sfc64_seeds(seed, chains, 0) is None
    got = ChainStreams(seed, chains).view().random((3, 5))
    for i, c in enumerate(chains):
        np.testing.assert_array_equal(got[i], numpy_generator(seed, int(c), 0).random(5))


def test_calls_for_every_chain_at_one_offset_give_each_chains_stream():
    n = 6
    reference = [numpy_generator(np.random.SeedSequence(2), c, 0).random(6000) for c in range(n)]
    chain_streams = ChainStreams.for_chains(2, n)
    stream = chain_streams.uniforms
    got = [[] for _ in range(n)]

    def take_all(k):
        view = chain_streams.view()
        out = view.random((n, k)) if k > 1 else view.random(n)[:, None]
        for i in range(n):
            got[i].extend(out[i])

    for k in (1, 3, 1000):  # past the first buffer: a refill of every row
        take_all(k)
    assert stream.even
    masked = chain_streams.view(None, np.arange(n) % 2 == 0).random(n)  # only even chains move on
    assert not stream.even
    for i in range(0, n, 2):
        got[i].append(masked[i])
    for k in (2, 1, 2000, 7):  # uneven, refilled (even again where every row was), then even
        take_all(k)
    assert stream.even  # (the 2000 grew the buffer: every row refilled)
    assert pickle.loads(pickle.dumps(stream)).even
    again = pickle.loads(pickle.dumps(chain_streams))
    after = again.view().random((n, 5))
    for i in range(n):
        np.testing.assert_array_equal(got[i], reference[i][: len(got[i])])
        np.testing.assert_array_equal(after[i], reference[i][len(got[i]) : len(got[i]) + 5])
