"""Warm-up keeps the chains ragged (docs/design/warmup.md §12): sub-block ``b`` runs at
the adaptation's state after sub-block ``b − 2``, so that on the compiled loop a chain
waits for the others only when a whole sub-block ahead of the slowest."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import lahmc, sample
from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation

DIM = 5
SCALES = np.linspace(0.5, 3.0, DIM)


def _x0(chains: int) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(chains, DIM)) * SCALES


class _Gauss:
    """A numpy Gaussian of scales ``SCALES``."""

    dim = DIM

    def energy(self, x):
        return 0.5 * np.sum((x / SCALES) ** 2, axis=1)

    def grad(self, x):
        return x / SCALES**2


def test_each_sub_block_runs_at_the_state_before_the_last_update(monkeypatch):
    seen: list[tuple[str, object]] = []
    kernel_of, update = HMCAdaptation.kernel, HMCAdaptation.update
    window_end = HMCAdaptation.window_end

    def record_kernel(self, kernel, state):
        seen.append(("kernel", state))
        return kernel_of(self, kernel, state)

    def record_update(self, state, *args):
        out = update(self, state, *args)
        seen.append(("update", out))
        return out

    def record_window_end(self, kernel, ks, state, rng):
        kernel, ks, state = window_end(self, kernel, ks, state, rng)
        seen.append(("window", state))
        return kernel, ks, state

    monkeypatch.setattr(HMCAdaptation, "kernel", record_kernel)
    monkeypatch.setattr(HMCAdaptation, "update", record_update)
    monkeypatch.setattr(HMCAdaptation, "window_end", record_window_end)
    sample(lahmc(_Gauss()), _x0(4), 5, warmup=400, seed=2, checks=False)
    # per segment: the states the sub-blocks ran at, and those their updates gave
    segments, first = [], None
    for what, state in seen:
        if what == "window" or first is None:
            segments.append(([], [], state))
            first = state
            if what == "window":
                continue
        if what == "kernel":
            segments[-1][0].append(state)
        elif what == "update":
            segments[-1][1].append(state)
    checked = 0
    for ran, gave, start in segments[1:]:
        if len(gave) < 3:
            continue
        ran = ran[: len(gave)]  # `final` builds the kernel once more
        assert ran[0] is start and ran[1] is start
        for b in range(2, len(gave)):
            assert ran[b] is gave[b - 2], b
            checked += 1
    assert checked > 10


def test_compiled_warmup_chains_wait_only_a_sub_block_ahead():
    jax = pytest.importorskip("jax")
    from ladder_mcmc.engine import jax_loop
    from ladder_mcmc.models import from_jax

    scales = jax.numpy.asarray(SCALES)
    target = from_jax(lambda x: -0.5 * jax.numpy.sum((x / scales) ** 2), DIM)
    calls, iterations, moves = jax_loop.segment_calls()
    sample(lahmc(target), _x0(4), 5, warmup=400, seed=1, backend="jax", checks=False)
    calls_now, iterations_now, moves_now = jax_loop.segment_calls()
    # map calls on the batch per map call of a chain: 1 when no chain ever waits; about
    # 1.4 when every chain waits for the slowest at every sub-block's end
    waiting = (iterations_now - iterations) / (moves_now - moves)
    assert 1.0 <= waiting < 1.2
    assert calls_now - calls <= 8  # a few round trips: the segments, in calls of 128 steps
