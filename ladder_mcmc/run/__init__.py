"""Running chains: ``sample`` and ``resume``, and what a run is made of.

:func:`sample` runs a ladder kernel on a batch of chains — a warm-up that adapts what
the kernel leaves unset (the kernel's adaptation, run by :mod:`ladder_mcmc.engine.warmup`),
then the steps, taken by the loop of the chosen schedule and backend
(:mod:`ladder_mcmc.engine`) and
written to a :class:`Recorder` (in memory, or streamed to ``.npy`` files:
:mod:`ladder_mcmc.run.draws_files`) — and returns a :class:`Trace`, the record of the
run: draws, the rung each step took (the paper's table 1), gradient evaluations.
Runs checkpoint to one file (:mod:`ladder_mcmc.run.checkpoint`) that :func:`resume`
continues bit for bit, split their chains over an executor
(:mod:`ladder_mcmc.run.parallel`), and show their progress
(:mod:`ladder_mcmc.run.progress`).
"""

from ladder_mcmc.run.draws_files import draws_file_path, grow_npy_rows, memmap_allocator
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.run.resume import resume
from ladder_mcmc.run.sample import sample
from ladder_mcmc.run.trace import Trace
from ladder_mcmc.run.warmup import warmup

__all__ = [
    "Recorder",
    "Trace",
    "draws_file_path",
    "grow_npy_rows",
    "memmap_allocator",
    "resume",
    "sample",
    "warmup",
]
