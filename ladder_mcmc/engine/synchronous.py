"""The synchronous schedule: every chain takes its step together (the reference driver).

Each step is one :meth:`Ladder.step <ladder_mcmc.ladder.kernel.Ladder.step>` on the
whole batch: the rule's rungs are computed stage by stage, each stage only for the
chains still undecided (paper, section 4.2), then the refresh runs on every chain.
Simple and obviously the paper's algorithm, but a stage whose few undecided chains
cost a whole map call makes it slower than the ragged schedule
(:mod:`ladder_mcmc.engine.ragged`) on small batched targets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder.kernel import Ladder, LadderState

if TYPE_CHECKING:
    from ladder_mcmc.engine.recording import StepRecorder


def run_synchronous(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """Step every chain together with :meth:`Ladder.step` until step ``until``.

    The :class:`~ladder_mcmc.engine.contract.Driver` contract; the random numbers
    come from the chains' streams (one view of all of them).
    """
    stop = recorder.n_steps if until is None else until
    rng = streams.view()
    for t in range(recorder.completed(), stop):
        ks, info = kernel.step(ks, rng)
        draw = kernel.map.draw(ks.state)
        stats = {
            "energy": -ks.log_density,
            "acceptance_rate": info.first_stage_prob,
            "energy_error": info.energy_error,
        }
        recorder.record_row(
            t, draw, info.rung, info.n_moves, info.non_finite, info.cost, info.overhead, stats
        )
        if on_progress is not None:
            on_progress(t + 1)
    return ks
