"""Per-chain random streams: the draws depend only on (seed, chain index, kernel, init).

Every chain has its own two streams — uniforms and standard normals — each from
its own ``SFC64`` generator seeded by ``SeedSequence(seed, spawn_key=(chain,
kind))``, and consumes them in its own step order. Draw ``j`` of a chain's
stream is the ``j``-th output of its generator, however the draws are grouped
into calls, so

* the ragged and synchronous schedules, the numpy and JAX loops (which draws a
  block's numbers ahead, :mod:`ladder_mcmc.engine.block_draws`), checkpointed and
  uninterrupted runs, and any grouping of the chains over an executor hand each chain
  the same numbers for the same step;
* the only state is each chain's generators and the draws made but not yet
  consumed, which a checkpoint stores (:meth:`ChainStreams.state`).

The loops pass a :class:`ChainRandom` — a view of some chains' streams — where a
``numpy.random.Generator`` was passed before: maps, rules and refreshes call
``rng.random(size)``, ``rng.standard_normal(size)``, … with ``size[0]`` the
number of chains in the view, and row ``i`` of the result comes from chain
``i``'s stream. A view with an ``advance`` mask hands every chain its next
numbers but moves only the masked chains' streams on (the ragged step refreshes the
whole batch and keeps the result only where a chain decided).
Gamma and exponential draws are inverse distribution functions of uniforms.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ladder_mcmc.engine.seeds import SeedWords, chain_seed, root_seed, sfc64_seeds

#: the smallest buffer per chain and stream (draws), for a few thousand chains at most
#: (many chains start smaller: :data:`_FIRST_DRAWS` in all); grown to hold many calls' worth
_MIN_CAPACITY = 1024
_FIRST_DRAWS = 1 << 22
#: the buffers' memory budget (bytes) per stream kind, above which they hold fewer calls
_BUDGET = 1 << 27
#: draws per chain a refill makes at most beyond twice the call's (a compiled block takes
#: thousands a call: a refill 32 calls ahead would draw far more than a short run uses)
_AHEAD = 1 << 14
_KINDS = ("uniform", "normal")


class _Stream:
    """One kind of draw for every chain: a generator per chain and a buffer row per chain.

    ``buffer[i, offset[i]:]`` holds chain ``i``'s next draws, made but not yet
    consumed; ``high`` bounds ``offset`` from above, so that most calls need no
    check for a refill; ``even``: every offset is ``high`` (the chains have drawn
    alike since the last refill), so that a call for every chain takes a block of
    columns.
    """

    def __init__(self, seed: np.random.SeedSequence, chains: np.ndarray, code: int, kind: str):
        self.seed, self.chains, self.code = seed, chains, code
        self._generators: list[np.random.Generator] | None = None  # made when first used
        self.kind = kind
        n = len(chains)
        self.capacity = max(32, min(_MIN_CAPACITY, _FIRST_DRAWS // max(n, 1)))
        self.buffer = np.empty((n, self.capacity))
        self.offset = np.full(n, self.capacity, dtype=np.int64)  # empty: filled when first used
        self.high = self.capacity
        self.even = True
        self.row_start = np.arange(n, dtype=np.int64) * self.capacity
        self.flat = self.buffer.reshape(-1)
        self.windows: dict[int, np.ndarray] = {}  # views of ``flat``, by k

    @property
    def generators(self) -> list[np.random.Generator]:
        """Each chain's generator, keyed by the run's seed, the chain and the kind (made on
        first use: a run with many chains that draws no normals never makes theirs).

        Chain ``c``'s is ``Generator(SFC64(SeedSequence(seed.entropy,
        spawn_key=(*seed.spawn_key, c, code), pool_size=seed.pool_size)))``; the seed
        sequences' words are computed for all the chains at once (:func:`sfc64_seeds`: the
        same words, without a ``SeedSequence`` object per chain)."""
        if self._generators is None:
            seed = self.seed
            words = sfc64_seeds(seed, self.chains, self.code)
            if words is None:
                self._generators = [
                    np.random.Generator(np.random.SFC64(chain_seed(seed, c, self.code)))
                    for c in self.chains
                ]
            else:
                self._generators = [
                    np.random.Generator(np.random.SFC64(SeedWords(row))) for row in words
                ]
        return self._generators

    def __getstate__(self) -> dict:
        # ``flat`` and ``windows`` are views of ``buffer``: a pickle would copy them apart
        return {k: v for k, v in vars(self).items() if k not in ("flat", "windows")}

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self.flat, self.windows = self.buffer.reshape(-1), {}
        if "even" not in state:  # pickled before the flag
            self.even = _even(self.offset, self.high)

    def _draw(self, generator: np.random.Generator, out: np.ndarray) -> None:
        if self.kind == "uniform":
            generator.random(out=out)
        else:
            generator.standard_normal(out=out)

    def refill(self, k: int) -> None:
        """Make at least ``k`` unconsumed draws available in every chain's row."""
        n = len(self.chains)
        # room for some 32 calls of k draws, within the memory budget and _AHEAD, and for 2
        # at least
        ahead = min(1 << (32 * k - 1).bit_length(), _BUDGET // (8 * max(n, 1)), _AHEAD)
        wanted = max(ahead, 2 * k)
        if wanted > self.capacity:  # grow, keeping every row's unconsumed draws
            capacity = max(wanted, self.capacity)
            buffer = np.empty((n, capacity))
            for i in range(n):
                rest = self.buffer[i, self.offset[i] :]
                buffer[i, : rest.size] = rest
                self._draw(self.generators[i], buffer[i, rest.size :])
            self.buffer, self.capacity, self.flat = buffer, capacity, buffer.reshape(-1)
            self.windows = {}
            self.offset = np.zeros(n, dtype=np.int64)
            self.row_start = np.arange(n, dtype=np.int64) * capacity
        else:
            for i in np.flatnonzero(self.offset > self.capacity - k):
                row, off = self.buffer[i], self.offset[i]
                rest = self.capacity - off
                row[:rest] = row[off:]
                self._draw(self.generators[i], row[rest:])
                self.offset[i] = 0
        self.high = int(self.offset.max(initial=0))
        self.even = _even(self.offset, self.high)

    def take(self, ids: np.ndarray | None, k: int, advance: np.ndarray | None) -> np.ndarray:
        """The next ``k`` draws of each chain in ``ids`` (all if None): (chains,) or (chains, k)."""
        if self.high + k > self.capacity:
            self.refill(k)
        if ids is None and advance is None and self.even:  # every chain at one offset
            o = self.high
            self.high = o + k
            self.offset += k
            if k == 1:
                return self.buffer[:, o].copy()
            return self.buffer[:, o : o + k].copy()
        self.high += k
        self.even = False
        if ids is None:
            off = self.offset
            start = self.row_start + off
            if advance is None:
                off += k
            else:
                off += advance if k == 1 else k * advance
        else:
            off = self.offset[ids]
            start = self.row_start[ids] + off
            if advance is None:
                self.offset[ids] = off + k
            else:
                self.offset[ids] = off + (advance if k == 1 else k * advance)
        if k == 1:
            return self.flat.take(start)
        windows = self.windows.get(k)
        if windows is None:  # every run of k consecutive draws of the flat buffer, as a row
            windows = self.windows[k] = as_strided(
                self.flat, (self.flat.size - k + 1, k), (8, 8), writeable=False
            )
        return windows[start]


def _even(offset: np.ndarray, high: int) -> bool:
    """Whether every offset is ``high``."""
    return bool(offset.min(initial=high) == high)


class ChainStreams:
    """The random streams of a batch of chains.

    Parameters
    ----------
    seed : SeedSequence
        The run's root (:func:`root_seed`).
    chains : int array (n,)
        The chains' indices in the whole run (an executor's group holds a
        slice of them); they key the streams.
    """

    def __init__(self, seed: np.random.SeedSequence, chains: np.ndarray) -> None:
        self.seed = seed
        self.chains = np.asarray(chains, dtype=np.int64).reshape(-1)
        self._streams = {
            kind: _Stream(seed, self.chains, code, kind) for code, kind in enumerate(_KINDS)
        }
        #: the chains' uniform and normal streams, for drivers that know what they draw:
        #: ``take(ids, k, advance)`` is what a view's ``random``/``standard_normal`` call
        self.uniforms, self.normals = self._streams["uniform"], self._streams["normal"]

    @classmethod
    def for_chains(cls, seed: Any, n_chains: int, first: int = 0) -> ChainStreams:
        """Streams of chains ``first, …, first + n_chains − 1`` of the run seeded by ``seed``."""
        return cls(root_seed(seed), np.arange(first, first + n_chains))

    @property
    def n_chains(self) -> int:
        return self.chains.size

    def view(self, ids: np.ndarray | None = None, advance: np.ndarray | None = None) -> ChainRandom:
        """The streams of the chains ``ids`` (all by default) as a generator-like object.

        ``advance``: a boolean mask over ``ids``; only those chains' streams move
        on (the others are handed their next numbers without consuming them).
        """
        return ChainRandom(self, ids, advance)

    # ---- state, for checkpoints -------------------------------------------------
    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """``(meta, arrays)``: JSON-able seed, chains and generator states; the buffers."""
        meta: dict[str, Any] = {
            "entropy": (
                str(self.seed.entropy)
                if isinstance(self.seed.entropy, int)
                else [str(e) for e in self.seed.entropy]
            ),
            "spawn_key": [int(k) for k in self.seed.spawn_key],
            "pool_size": int(self.seed.pool_size),
            "chains": self.chains.tolist(),
        }
        arrays = {}
        for kind, stream in self._streams.items():
            meta[kind] = [_json_state(g.bit_generator.state) for g in stream.generators]
            arrays[f"{kind}_buffer"] = stream.buffer
            arrays[f"{kind}_offset"] = stream.offset
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict, arrays: dict[str, np.ndarray]) -> ChainStreams:
        """The streams exactly as :meth:`state` recorded them."""
        try:
            entropy = meta["entropy"]
            seed = np.random.SeedSequence(
                int(entropy) if isinstance(entropy, str) else [int(e) for e in entropy],
                spawn_key=tuple(int(k) for k in meta["spawn_key"]),
                pool_size=int(meta["pool_size"]),
            )
            streams = cls(seed, np.array(meta["chains"], dtype=np.int64))
            n = streams.n_chains
            for kind, stream in streams._streams.items():
                states = meta[kind]
                buffer = np.asarray(arrays[f"{kind}_buffer"], dtype=np.float64)
                offset = np.asarray(arrays[f"{kind}_offset"], dtype=np.int64)
                if len(states) != n or buffer.ndim != 2 or buffer.shape[0] != n:
                    raise ValueError(f"{kind} stream of {len(states)} chains for {n}")
                if offset.shape != (n,) or np.any(offset < 0) or np.any(offset > buffer.shape[1]):
                    raise ValueError(f"{kind} stream offsets out of range")
                for generator, state in zip(stream.generators, states, strict=True):
                    generator.bit_generator.state = _numpy_state(state)
                stream.buffer, stream.offset = buffer.copy(), offset.copy()
                stream.flat, stream.windows = stream.buffer.reshape(-1), {}
                stream.capacity = buffer.shape[1]
                stream.row_start = np.arange(n, dtype=np.int64) * stream.capacity
                stream.high = int(offset.max(initial=0))
                stream.even = _even(offset, stream.high)
            return streams
        except (KeyError, TypeError, ValueError, OverflowError) as err:
            raise ValueError(f"corrupt random-stream state: {err}") from err


def _json_state(state: dict) -> dict:
    """A bit generator's state with its arrays as lists of ints (JSON-able)."""
    return {
        k: (_json_state(v) if isinstance(v, dict) else np.asarray(v).tolist())
        for k, v in state.items()
    }


def _numpy_state(state: dict) -> dict:
    inner = dict(state["state"])
    inner["state"] = np.array(inner["state"], dtype=np.uint64)
    return {**state, "state": inner}


class ChainRandom:
    """A generator-like view of some chains' streams (see the module docstring).

    The methods are those of ``numpy.random.Generator`` that the package's
    maps, rules and refreshes use; ``size`` must start with the number of
    chains in the view, and each chain's values come from its own streams.
    """

    __slots__ = ("_streams", "_ids", "_advance", "_n")

    def __init__(
        self, streams: ChainStreams, ids: np.ndarray | None, advance: np.ndarray | None
    ) -> None:
        self._streams = streams
        self._ids = ids
        self._advance = advance
        self._n = streams.n_chains if ids is None else len(ids)

    def _take(self, stream: _Stream, size: Any) -> np.ndarray:
        if type(size) is int and size == self._n:  # the common call: one draw per chain
            return stream.take(self._ids, 1, self._advance)
        if type(size) is tuple and len(size) == 2 and size[0] == self._n:
            k = size[1]
            if type(k) is int and k > 1:  # k per chain: take's (chains, k) as it is
                return stream.take(self._ids, k, self._advance)
        if isinstance(size, (int, np.integer)):
            shape: tuple = (int(size),)
        else:
            shape = tuple(size) if size is not None else ()
        if not shape or shape[0] != self._n:
            raise ValueError(
                f"per-chain random streams: size must start with the number of chains "
                f"({self._n}), got {size!r}"
            )
        k = math.prod(shape[1:])
        return stream.take(self._ids, k, self._advance).reshape(shape)

    def random(self, size: Any = None) -> np.ndarray:
        """Uniforms on [0, 1)."""
        return self._take(self._streams.uniforms, size)

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> np.ndarray:
        """Uniforms on [low, high)."""
        return low + (high - low) * self.random(size)

    def standard_normal(self, size: Any = None) -> np.ndarray:
        """Standard normals."""
        return self._take(self._streams.normals, size)

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> np.ndarray:
        """Normals ``loc + scale·z``."""
        return loc + scale * self.standard_normal(size)

    def gamma(self, shape: float, scale: float = 1.0, size: Any = None) -> np.ndarray:
        """Gamma(shape, scale) draws: the inverse regularised incomplete gamma of uniforms."""
        from scipy import special  # imported when first needed: scipy is slow to load

        return scale * special.gammaincinv(shape, self.random(size))

    def standard_exponential(self, size: Any = None) -> np.ndarray:
        """Exp(1) draws, ``−log(1 − u)``."""
        return -np.log1p(-self.random(size))

    def exponential(self, scale: float = 1.0, size: Any = None) -> np.ndarray:
        """Exponential draws with mean ``scale``."""
        return scale * self.standard_exponential(size)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"per-chain random streams offer random, uniform, standard_normal, normal, gamma, "
            f"exponential and standard_exponential; {name!r} is not available (draw it from "
            "uniforms, one row per chain)"
        )
