"""Running chains: ``sample`` and ``resume``, and what a run is made of.

:func:`sample` runs a ladder kernel on a batch of chains — a warm-up that adapts what
the kernel leaves unset (the kernel's adaptation, run by :mod:`ladder_mcmc.engine.warmup`),
then the steps, taken by the loop of the chosen schedule and backend
(:mod:`ladder_mcmc.engine`) and
written to a :class:`~ladder_mcmc.run.recorder.Recorder` (in memory, or streamed to ``.npy`` files:
:mod:`ladder_mcmc.run.draws_files`) — and returns a :class:`Trace`, the record of the
run: draws, the rung each step took (the paper's table 1), gradient evaluations.
Runs checkpoint to one file (:class:`Checkpoint`, :mod:`ladder_mcmc.run.checkpoint`) that
:func:`resume` continues bit for bit, split their chains over an executor
(:class:`Parallel`, :mod:`ladder_mcmc.run.parallel`), and show their progress
(:mod:`ladder_mcmc.run.progress`).
"""

from ladder_mcmc.run.resume import resume
from ladder_mcmc.run.sampling import sample
from ladder_mcmc.run.settings import Checkpoint, Parallel
from ladder_mcmc.run.trace import Trace
from ladder_mcmc.run.warmup_only import warmup

__all__ = [
    "Checkpoint",
    "Parallel",
    "Trace",
    "resume",
    "sample",
    "warmup",
]
