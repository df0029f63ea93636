"""The driver contract, and the one place that picks the driver of a run.

A *driver* takes the steps of a run: from a kernel state of every chain, it
advances the chains until the recorder holds a given number of steps per chain.
Two *schedules* of the same transitions exist (docs/design.md §9):

* ``"synchronous"`` — every chain takes its step together, rung by rung
  (:func:`~ladder_mcmc.drivers.synchronous.run_synchronous`, the reference);
* ``"ragged"`` — every chain at its own rung of its own step, one map call per
  iteration on the whole batch (:func:`~ladder_mcmc.drivers.ragged.run_ragged`).
  Kernels whose parts declare that they are the leapfrog look-ahead kernel
  (``lahmc``, ``hmc``: :func:`ladder_mcmc.drivers._leapfrog.applies_to`) run on
  a private fast path of this schedule, the same loop on plain arrays (its
  bookkeeping compiled by numba when available), draw for draw the generic
  loop's trace. On a target JAX can trace (``target.jax_potential``) the same loop
  runs compiled whole by JAX, in blocks of steps (:mod:`ladder_mcmc.drivers._leapfrog_jax`:
  the same draws to rounding).

:func:`driver_for` is the only function that chooses among them;
:func:`ladder_mcmc.sample` and :func:`ladder_mcmc.resume` call it and nothing else.
Warm-up asks :func:`adapting_driver_for` first: a driver that runs its blocks and their
step-size updates in one call (:class:`AdaptingDriver`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol

from ladder_mcmc.drivers import _leapfrog, _leapfrog_jax
from ladder_mcmc.drivers.ragged import run_ragged
from ladder_mcmc.drivers.step_control import StepSizeControl
from ladder_mcmc.drivers.streams import ChainStreams
from ladder_mcmc.drivers.synchronous import run_synchronous
from ladder_mcmc.ladder.kernel import Ladder, LadderState

if TYPE_CHECKING:
    from ladder_mcmc.drivers.recording import StepRecorder

Schedule = Literal["ragged", "synchronous"]
SCHEDULES: tuple[str, ...] = ("ragged", "synchronous")
"""The schedules :func:`driver_for` knows, the first the default of ``sample``."""


class Driver(Protocol):
    """Runs the steps of a batch of chains: ``(kernel, ks, recorder, streams, on_progress,
    until) -> LadderState``.

    The contract every driver keeps:

    * it advances every chain of ``ks`` (a :class:`~ladder_mcmc.ladder.kernel.LadderState`
      of the chains the recorder counts) by steps of ``kernel`` — the map, the rule,
      the refresh of :meth:`Ladder.step <ladder_mcmc.ladder.kernel.Ladder.step>`, in
      law — from the recorder's steps so far (``recorder.steps_done``) until it holds
      ``until`` steps per chain (default ``recorder.n_steps``), and no further: a chain
      that reaches ``until`` stops there, so a run cut in blocks (checkpoints) gives the
      same trace as one run;
    * it records every step of every chain in ``recorder``: the draw
      (``kernel.map.draw``), the rung code, the map applications and the non-finite
      rungs;
    * each chain's random numbers come from its own stream in ``streams``
      (:class:`~ladder_mcmc.drivers.streams.ChainStreams`), drawn in the chain's own
      step order (a step's uniform when the step begins), so every driver hands a
      chain the same numbers for the same step;
    * it calls ``on_progress(n)`` (if given) now and then with the steps completed by
      every chain;
    * it returns the kernel state of every chain after its last step (``ks`` unchanged
      if no chain took a step); on ``KeyboardInterrupt`` (or an error in the target)
      the recorder keeps every step completed so far and the exception propagates.
    """

    def __call__(
        self,
        kernel: Ladder,
        ks: LadderState,
        recorder: StepRecorder,
        streams: ChainStreams,
        on_progress: Callable[[int], None] | None = None,
        until: int | None = None,
    ) -> LadderState: ...


class AdaptingDriver(Protocol):
    """Runs warm-up's blocks with dual averaging of ``ε`` between them, in one call:
    ``(kernel, ks, recorder, streams, control, until) -> (LadderState, StepSizeControl)``.

    The :class:`Driver` contract, every chain starting at the same step, run in blocks of
    ``control.every`` steps: block ``b`` runs at the step size (and length) that
    ``control`` (:class:`~ladder_mcmc.drivers.step_control.StepSizeControl`) gives after
    the blocks before it, as if the driver were called block by block and ``control``
    updated in between (to the rounding of the driver's arithmetic); it records every
    step's cost, calls ``on_progress`` as a :class:`Driver` does, and returns ``control``
    after the last block.
    """

    def __call__(
        self,
        kernel: Ladder,
        ks: LadderState,
        recorder: StepRecorder,
        streams: ChainStreams,
        control: StepSizeControl,
        until: int | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> tuple[LadderState, StepSizeControl]: ...


def adapting_driver_for(kernel: Ladder, schedule: str) -> AdaptingDriver | None:
    """The :class:`AdaptingDriver` for ``kernel`` on ``schedule`` when its driver
    (:func:`driver_for`) is the loop compiled by JAX, else None (warm-up then calls the
    driver block by block)."""
    if driver_for(kernel, schedule) is _leapfrog_jax.run:
        return _leapfrog_jax.run_adapting
    return None


def driver_for(kernel: Ladder, schedule: str) -> Driver:
    """The driver that runs ``kernel`` on ``schedule``.

    ``"synchronous"``: :func:`~ladder_mcmc.drivers.synchronous.run_synchronous`.
    ``"ragged"``: the leapfrog fast path when the kernel's parts declare it
    (:func:`ladder_mcmc.drivers._leapfrog.applies_to`) and
    :data:`ladder_mcmc.drivers.FAST_PATH` is on — compiled by JAX when the target is a
    JAX one (:func:`ladder_mcmc.drivers._leapfrog_jax.applies_to`) — else the generic
    :func:`~ladder_mcmc.drivers.ragged.run_ragged`; the same draws either way.

    Raises
    ------
    ValueError
        For another schedule.
    """
    from ladder_mcmc import drivers  # the switches, read when a run starts

    if schedule == "synchronous":
        return run_synchronous
    if schedule == "ragged":
        if drivers.FAST_PATH and _leapfrog.applies_to(kernel):
            if _leapfrog_jax.applies_to(kernel):
                return _leapfrog_jax.run
            return _leapfrog.run
        return run_ragged
    raise ValueError(f"schedule must be 'ragged' or 'synchronous', got {schedule!r}")
