"""The engine: how the steps of a run are taken, for every map, rule and refresh.

The ladder kernel (:mod:`ladder_mcmc.ladder`) says what one step of a chain is; the
engine runs those steps for a batch of chains and writes them to the run's recorder.

* :mod:`~ladder_mcmc.engine.ragged` — the ragged step, written once: every chain at its
  own rung of its own step, one map call per iteration on the whole batch;
* :mod:`~ladder_mcmc.engine.numpy_loop` and :mod:`~ladder_mcmc.engine.jax_loop` — the two
  loops that run it: a Python loop on the host, and ``lax.while_loop`` under ``jax.jit``
  in blocks of steps;
* :mod:`~ladder_mcmc.engine.backend` — the one place that chooses numpy or JAX, and
  says why (``Trace.backend``);
* :mod:`~ladder_mcmc.engine.streams` — per-chain random streams: every loop hands a
  chain the same numbers for the same step.

Every loop keeps the contract written down in :class:`Driver`;
:func:`driver_for` is the one place that picks one. Sampling and warm-up run on the
same loops (warm-up is the loop with an adaptation in it: :mod:`~ladder_mcmc.engine.warmup`).
The synchronous schedule on :meth:`Ladder.step <ladder_mcmc.ladder.kernel.Ladder.step>`
(:mod:`~ladder_mcmc.engine.contract`) is the readable reference the tests compare the
loops with, run only when asked for.
"""

from ladder_mcmc.engine.backend import Backend, choose_backend
from ladder_mcmc.engine.contract import SCHEDULES, Driver, Schedule, driver_for
from ladder_mcmc.engine.recording import StepRecorder
from ladder_mcmc.engine.streams import ChainStreams

__all__ = [
    "SCHEDULES",
    "Backend",
    "ChainStreams",
    "Driver",
    "Schedule",
    "StepRecorder",
    "choose_backend",
    "driver_for",
]
