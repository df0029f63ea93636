"""The seeds of the per-chain streams (:mod:`ladder_mcmc.engine.streams`).

Chain ``c``'s stream of kind ``code`` is an ``SFC64`` generator seeded by
``SeedSequence(root.entropy, spawn_key=(*root.spawn_key, c, code))``. Rather than one
``SeedSequence`` per chain, :func:`sfc64_seeds` computes the same words for every chain
at once with numpy (NumPy's own algorithm,
checked against NumPy for the first chain, and left to NumPy where it cannot apply).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def root_seed(seed: Any) -> np.random.SeedSequence:
    """The run's root ``SeedSequence`` from ``sample``'s ``seed`` argument.

    An int, ``None`` (fresh entropy) or a ``SeedSequence`` is used as it is; a
    ``Generator`` is used once, to draw the root's entropy.
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(2**63)))
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        return np.random.SeedSequence(None if seed is None else int(seed))
    raise ValueError(
        f"seed must be an int, a numpy SeedSequence or Generator, or None, got {seed!r}"
    )


def chain_seed(seed: np.random.SeedSequence, chain: Any, code: int) -> np.random.SeedSequence:
    """The ``SeedSequence`` of one chain's stream of one kind."""
    return np.random.SeedSequence(
        seed.entropy, spawn_key=(*seed.spawn_key, int(chain), code), pool_size=seed.pool_size
    )


# NumPy's SeedSequence (numpy/random/bit_generator.pyx, after M. O'Neill's seed_seq_fe),
# fixed by NumPy's stream-compatibility policy: its hash constants, on uint32 words
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R, _XSHIFT = 0xCA01F9DD, 0x4973F715, 16
_MASK32 = 0xFFFFFFFF


def _words(value: Any) -> list[int] | None:
    """An int's (or a sequence of ints') uint32 words, least significant first, as
    SeedSequence reads its entropy and spawn key (``0`` is one word); None for other kinds."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        n = int(value)
        if n < 0:
            return None
        out = [n & _MASK32]
        n >>= 32
        while n:
            out.append(n & _MASK32)
            n >>= 32
        return out
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            w = _words(v)
            if w is None:
                return None
            out += w
        return out
    return None


class SeedWords(np.random.bit_generator.ISeedSequence):
    """The three uint64 words a chain's ``SeedSequence`` gives ``SFC64`` (made for many
    chains at once by :func:`sfc64_seeds`)."""

    __slots__ = ("words",)

    def __init__(self, words: np.ndarray) -> None:
        self.words = words

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        if n_words != 3 or np.dtype(dtype) != np.uint64:
            raise ValueError("only SFC64's seed (3 uint64 words) is kept")
        return self.words.copy()


def sfc64_seeds(seed: np.random.SeedSequence, chains: np.ndarray, code: int):
    """``SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, c, code),
    pool_size=seed.pool_size).generate_state(3, np.uint64)`` for every chain ``c``, as a
    (chains, 3) array computed with numpy over the chains (NumPy's algorithm, its words
    checked against NumPy's own for the first chain); None where the entropy is not ints or
    a chain needs more than one word (the chains then seeded one by one)."""
    run, spawn = _words(seed.entropy), _words(tuple(seed.spawn_key))
    n = len(chains)
    if run is None or spawn is None or n == 0 or int(chains.max()) > _MASK32:
        return None
    if int(chains.min()) < 0:
        return None
    if len(run) < seed.pool_size:  # (a spawn key follows: padded to the pool size)
        run = run + [0] * (seed.pool_size - len(run))
    entropy = np.empty((n, len(run) + len(spawn) + 2), dtype=np.uint32)
    entropy[:, : len(run) + len(spawn)] = run + spawn
    entropy[:, -2] = chains
    entropy[:, -1] = code
    pool = seed.pool_size
    hash_const = _INIT_A  # the running hash constants as Python ints, each step masked
    zeros = np.zeros(n, dtype=np.uint32)

    def hashmix(value):
        nonlocal hash_const
        value = value ^ hash_const
        hash_const = (hash_const * _MULT_A) & _MASK32
        value = value * hash_const  # uint32 arrays: the product wraps, as the C code's
        return value ^ (value >> _XSHIFT)

    def mix(x, y):
        result = x * _MIX_MULT_L - y * _MIX_MULT_R
        return result ^ (result >> _XSHIFT)

    mixer = [hashmix(entropy[:, i] if i < entropy.shape[1] else zeros) for i in range(pool)]
    for i_src in range(pool):
        for i_dst in range(pool):
            if i_src != i_dst:
                mixer[i_dst] = mix(mixer[i_dst], hashmix(mixer[i_src]))
    for i_src in range(pool, entropy.shape[1]):
        for i_dst in range(pool):
            mixer[i_dst] = mix(mixer[i_dst], hashmix(entropy[:, i_src]))
    state = np.empty((n, 6), dtype=np.uint32)
    hash_b = _INIT_B
    for i_dst in range(6):
        value = mixer[i_dst % pool] ^ hash_b
        hash_b = (hash_b * _MULT_B) & _MASK32
        value = value * hash_b
        state[:, i_dst] = value ^ (value >> _XSHIFT)
    words = state.astype("<u4").view("<u8").astype(np.uint64)
    expected = chain_seed(seed, chains[0], code).generate_state(3, np.uint64)
    if not np.array_equal(words[0], expected):  # another NumPy's algorithm: theirs, chain by chain
        return None
    return words


__all__ = ["SeedWords", "chain_seed", "root_seed", "sfc64_seeds"]
