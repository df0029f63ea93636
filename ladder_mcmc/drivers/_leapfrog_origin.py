"""The packed step origins of the leapfrog fast path, in and out of a kernel state (private).

Each chain's step origin is one row of a float array,
``[x | -p | ∂E/∂x | E | log p | u]`` and, for a jittered-length map, ``| n``: the
flipped state ``F ζ`` (physical momentum ``p = d·v`` stored negated, the only form in
which the origin is used), the step's uniform, and the step's number of leapfrog steps
(an integer, exact in a float). :func:`initial_origin` packs a
:class:`~ladder_mcmc.ladder.kernel.LadderState`; :func:`finish` puts the retired
chains' rows back into one, in chain order (:mod:`ladder_mcmc.drivers._leapfrog`,
:mod:`ladder_mcmc.drivers._leapfrog_numba`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ladder_mcmc.drivers._iteration_buffer import IterationBuffer
from ladder_mcmc.drivers.streams import ChainStreams
from ladder_mcmc.hamiltonian.jittered_length import JitteredLengthState
from ladder_mcmc.hamiltonian.leapfrog import PhaseState
from ladder_mcmc.ladder.kernel import LadderState


def initial_origin(
    ks: LadderState, streams: ChainStreams, going_on: np.ndarray, jittered: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Each chain's step origin as a packed row, and its physical momentum ``p = d·v``.

    Row ``[x | -p | ∂E/∂x | E | log p | u]`` (``| n`` if ``jittered``: the state's
    ``n_leapfrog``): the flipped state ``F ζ`` and the step's uniform, drawn here
    (``LookAheadRule.uniform``: one per chain) by the chains ``going_on`` to a step.
    """
    state: PhaseState = ks.state
    n, dim = state.x.shape
    d_col = np.asarray(ks.direction, dtype=np.int8)[:, None].astype(float)
    p = d_col * state.v
    origin = np.empty((n, 3 * dim + 3 + int(jittered)))
    origin[:, :dim], origin[:, dim : 2 * dim] = state.x, -(d_col * state.v)
    origin[:, 2 * dim : 3 * dim] = state.grad
    origin[:, 3 * dim], origin[:, 3 * dim + 1] = state.energy, ks.log_density
    if jittered:
        origin[:, 3 * dim + 3] = state.n_leapfrog
    origin[:, 3 * dim + 2] = streams.uniforms.take(None, 1, going_on)
    return origin, p


def finish(
    window: IterationBuffer,
    on_progress: Callable[[int], None] | None,
    ks: LadderState,
    final_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> LadderState:
    """Write the last window, report progress, and put the retired chains' states together.

    ``final_parts``: (chain ids, origin rows, starting directions) of the chains
    that finished; empty when none did (``ks`` is returned unchanged).
    """
    window.write()
    recorder = window.recorder
    recorder.flush()
    if on_progress is not None:
        on_progress(recorder.completed())
    if not final_parts:
        return ks
    # each chain's direction: its starting one, negated once per flip
    signs = np.where(window.flips % 2 == 1, -1, 1).astype(np.int8)
    final_parts = [(ids, rows, signs[ids] * d) for ids, rows, d in final_parts]
    return _assemble(final_parts, ks.state.x.shape[1])


def _assemble(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], dim: int) -> LadderState:
    """Put the per-chain final states back in chain order, momenta back to ``v = d·p``
    (a :class:`JitteredLengthState` when the rows carry ``n``)."""
    ids = np.concatenate([part[0] for part in parts])
    order = np.argsort(ids)
    rows = np.concatenate([part[1] for part in parts])[order]
    direction = np.concatenate([part[2] for part in parts])[order]
    x, g = rows[:, :dim].copy(), rows[:, 2 * dim : 3 * dim].copy()
    v = direction[:, None].astype(float) * -rows[:, dim : 2 * dim]
    e = rows[:, 3 * dim].copy()
    if rows.shape[1] > 3 * dim + 3:
        lengths = rows[:, 3 * dim + 3].astype(np.int64)
        state: PhaseState = JitteredLengthState(x=x, v=v, energy=e, grad=g, n_leapfrog=lengths)
    else:
        state = PhaseState(x=x, v=v, energy=e, grad=g)
    return LadderState(state, direction, rows[:, 3 * dim + 1].copy(), None)
