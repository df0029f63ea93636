"""The compiled loop's host work per block does not grow with the block's steps (issue 29,
aim 2): a block's steps reach the recorder in one call, and the streams draw a bounded
number of draws ahead of a block's (a short run does not pay for draws it never uses)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from ladder_mcmc import Ladder, Leapfrog, LookAheadRule, MomentumRefresh, sample  # noqa: E402
from ladder_mcmc.engine import jax_loop  # noqa: E402
from ladder_mcmc.engine.streams import ChainStreams  # noqa: E402
from ladder_mcmc.models import from_jax  # noqa: E402
from ladder_mcmc.run.recorder import Recorder  # noqa: E402


def _kernel():
    import jax.numpy as jnp

    target = from_jax(lambda x: -0.5 * jnp.sum(x * x), 3)
    return Ladder(Leapfrog(target, 0.4, 2), LookAheadRule(3), MomentumRefresh(0.5))


def test_a_block_is_recorded_in_one_call(monkeypatch):
    calls = {"record": 0, "record_row": 0}
    for name in calls:
        method = getattr(Recorder, name)

        def counted(self, *args, _name=name, _method=method, **kw):
            calls[_name] += 1
            return _method(self, *args, **kw)

        monkeypatch.setattr(Recorder, name, counted)
    init = np.random.default_rng(0).normal(size=(3, 3))
    steps = 2 * jax_loop.BLOCK + 5
    trace = sample(_kernel(), init, steps, seed=1, warmup=0, backend="jax", checks=False)
    assert trace.rungs.shape == (steps, 3)
    assert calls == {"record": 3, "record_row": 0}


def test_a_block_draws_a_bounded_number_ahead():
    n, k = 4, jax_loop.BLOCK * 100  # a block of a 100-d momentum refresh
    chain_streams = ChainStreams.for_chains(0, n)
    chain_streams.view().standard_normal((n, k))
    assert chain_streams.normals.capacity <= max(2 * k, 1 << 14)
