"""Random numbers inside the compiled loop: each chain's own streams, drawn ahead of a block.

The JAX loop (:mod:`ladder_mcmc.engine.jax_loop`) gives every chain the numbers the numpy
loop gives it: those of its :class:`~ladder_mcmc.engine.streams.ChainStreams`, in its own
step order. Inside a compiled function every draw has a static shape, so a step consumes
the same count of uniforms and of normals per chain every time (:func:`consumption`
counts them, once per kernel, by tracing the refresh and the rule's uniform). Before a
block of ``s`` steps, the host draws ``s`` steps' worth from each chain's streams
(:func:`draw_block`); inside the block, :class:`BlockDraws` hands each chain its next
numbers from its row, at its own offset, and moves the offset on only for the chains
that take them (``view(advance)``), as :class:`~ladder_mcmc.engine.streams.ChainRandom`
does on the host. So both backends draw the same numbers for the same step, and a
checkpoint stores the same stream state whichever ran.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladder_mcmc.arrays import namespace, special
from ladder_mcmc.engine.streams import ChainStreams


def _shape(size: Any, n: int) -> tuple[int, ...]:
    if isinstance(size, (int, np.integer)):
        shape: tuple[int, ...] = (int(size),)
    else:
        shape = tuple(int(s) for s in size) if size is not None else ()
    if not shape or shape[0] != n:
        raise ValueError(
            f"per-chain random streams: size must start with the number of chains ({n}), "
            f"got {size!r}"
        )
    return shape


class _Generator:
    """The ``numpy.random.Generator`` methods the package's parts use, from two sources
    ``_uniform(shape)`` and ``_normal(shape)`` (subclasses)."""

    n: int

    def _uniform(self, shape: tuple[int, ...]) -> Any:
        raise NotImplementedError

    def _normal(self, shape: tuple[int, ...]) -> Any:
        raise NotImplementedError

    def random(self, size: Any = None) -> Any:
        """Uniforms on [0, 1)."""
        return self._uniform(_shape(size, self.n))

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> Any:
        """Uniforms on [low, high)."""
        return low + (high - low) * self.random(size)

    def standard_normal(self, size: Any = None) -> Any:
        """Standard normals."""
        return self._normal(_shape(size, self.n))

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
        """Normals ``loc + scale·z``."""
        return loc + scale * self.standard_normal(size)

    def gamma(self, shape: float, scale: float = 1.0, size: Any = None) -> Any:
        """Gamma(shape, scale): the inverse regularised incomplete gamma of uniforms."""
        u = self.random(size)
        return scale * special(namespace(u)).gammaincinv(shape, u)

    def standard_exponential(self, size: Any = None) -> Any:
        """Exp(1) draws, ``−log(1 − u)``."""
        u = self.random(size)
        return -namespace(u).log1p(-u)

    def exponential(self, scale: float = 1.0, size: Any = None) -> Any:
        """Exponential draws with mean ``scale``."""
        return scale * self.standard_exponential(size)


class Counting(_Generator):
    """A generator that counts what it hands out per chain and returns zeros (JAX)."""

    def __init__(self, n: int) -> None:
        import jax.numpy as jnp

        self.n, self.uniforms, self.normals, self._jnp = n, 0, 0, jnp

    def view(self, advance: Any) -> Counting:
        return self

    def _uniform(self, shape: tuple[int, ...]) -> Any:
        self.uniforms += math.prod(shape[1:])
        return self._jnp.zeros(shape) + 0.5

    def _normal(self, shape: tuple[int, ...]) -> Any:
        self.normals += math.prod(shape[1:])
        return self._jnp.zeros(shape)


class BlockDraws:
    """The :class:`~ladder_mcmc.engine.ragged.Draws` of a block inside the compiled loop.

    ``uniforms``, ``normals``: (chains, k) rows of each chain's next numbers (drawn by
    :func:`draw_block`); ``offsets``: (chains, 2) the next unused entry of each row. The
    offsets are updated in place as the views hand numbers out (the Python object lives
    for one trace of the loop's body).
    """

    def __init__(self, uniforms: Any, normals: Any, offsets: Any) -> None:
        self.uniforms, self.normals, self.offsets = uniforms, normals, offsets

    def view(self, advance: Any) -> BlockView:
        return BlockView(self, advance)


class BlockView(_Generator):
    """A generator over a :class:`BlockDraws`: every chain gets its next numbers; the
    chains in ``advance`` (all for ``None``) move their offsets on."""

    def __init__(self, block: BlockDraws, advance: Any) -> None:
        self.block, self.advance, self.n = block, advance, block.offsets.shape[0]

    def _take(self, column: int, rows: Any, shape: tuple[int, ...]) -> Any:
        xp = namespace(rows)
        k = math.prod(shape[1:])
        offset = self.block.offsets[:, column]
        index = offset[:, None] + xp.arange(k)[None, :]
        width = rows.shape[1]
        values = xp.take_along_axis(rows, xp.clip(index, 0, max(width - 1, 0)), axis=1)
        step = k if self.advance is None else xp.where(self.advance, k, 0)
        # elementwise, not a scatter into the column: XLA fuses it with its neighbours
        moved = xp.asarray(step)[..., None] * (xp.arange(2) == column)
        self.block.offsets = self.block.offsets + moved
        return values.reshape(shape)

    def _uniform(self, shape: tuple[int, ...]) -> Any:
        return self._take(0, self.block.uniforms, shape)

    def _normal(self, shape: tuple[int, ...]) -> Any:
        return self._take(1, self.block.normals, shape)


_COUNTED: dict[Any, tuple[int, int]] = {}


def consumption(kernel: Any, ks: Any) -> tuple[int, int]:
    """``(uniforms, normals)`` one step of ``kernel`` draws per chain: the refresh's and the
    rule's next uniform, counted by tracing them on ``ks``'s shapes (JAX; once per kernel
    structure and state shape)."""
    import jax

    from ladder_mcmc.engine.pytree import structure_key

    key = structure_key(kernel, ks)
    found = _COUNTED.get(key)
    if found is not None:
        return found

    n = int(ks.direction.shape[0])
    counting = Counting(n)

    def one_step(ks):
        out = ks.state
        if kernel.refresh is not None:
            out = kernel.refresh.with_cost(ks.state, ks.direction, counting)
        u = kernel.rule.uniform(ks.carry, counting, n)
        return out, u

    jax.eval_shape(one_step, ks)
    found = _COUNTED[key] = (counting.uniforms, counting.normals)
    return found


def draw_block(
    streams: ChainStreams, steps: np.ndarray, uniforms: int, normals: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each chain's next ``steps[i] × (uniforms, normals)`` numbers from its streams, as
    rows of ``width`` steps' worth (zeros after them): ``(chains, width × uniforms)`` and
    ``(chains, width × normals)`` float64 arrays (at least one column each)."""
    n = steps.shape[0]
    out = []
    for per_step, stream in ((uniforms, streams.uniforms), (normals, streams.normals)):
        rows = np.zeros((n, max(width * per_step, 1)))
        if per_step:
            for count in np.unique(steps[steps > 0]):
                ids = np.flatnonzero(steps == count)
                k = int(count) * per_step
                taken = stream.take(ids, k, None)
                rows[ids, :k] = taken.reshape(ids.size, k)
        out.append(rows)
    return out[0], out[1]


__all__ = ["BlockDraws", "BlockView", "Counting", "consumption", "draw_block"]
