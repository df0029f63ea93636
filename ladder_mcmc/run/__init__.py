"""Running chains: ``sample`` and ``resume``, and what a run is made of.

:func:`sample` runs a ladder kernel on a batch of chains — a warm-up that adapts what
the kernel leaves unset (:mod:`ladder_mcmc.run.adaptation`: the step size
(:mod:`~ladder_mcmc.run.step_size`), the mass matrix, the trajectory length and the
refresh (:mod:`~ladder_mcmc.run.trajectory`)), then the
steps, taken by the driver of the chosen schedule (:mod:`ladder_mcmc.engine`) and
written to a :class:`Recorder` (in memory, or streamed to ``.npy`` files:
:mod:`ladder_mcmc.run.draws_files`) — and returns a :class:`Trace`, the record of the
run: draws, the rung each step took (the paper's table 1), gradient evaluations.
Runs checkpoint to one file (:mod:`ladder_mcmc.run.checkpoint`) that :func:`resume`
continues bit for bit, split their chains over an executor
(:mod:`ladder_mcmc.run.parallel`), and show their progress
(:mod:`ladder_mcmc.run.progress`).
"""

from ladder_mcmc.run.adaptation import GroupedWarmup, WarmupResult, warmup
from ladder_mcmc.run.draws_files import draws_file_path, grow_npy_rows, memmap_allocator
from ladder_mcmc.run.kernel_parameters import apply_warmup, with_hmc_parameters
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.run.resume import resume
from ladder_mcmc.run.sample import sample
from ladder_mcmc.run.trace import Trace

__all__ = [
    "GroupedWarmup",
    "apply_warmup",
    "with_hmc_parameters",
    "Recorder",
    "Trace",
    "WarmupResult",
    "draws_file_path",
    "grow_npy_rows",
    "memmap_allocator",
    "resume",
    "sample",
    "warmup",
]
