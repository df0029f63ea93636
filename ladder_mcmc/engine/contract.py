"""The driver contract, and the one place that picks the loop a run takes its steps on.

A *driver* takes the steps of a run: from a kernel state of every chain, it advances
the chains until the recorder holds a given number of steps per chain. Two *schedules*
of the same transitions exist (docs/design.md §9):

* ``"synchronous"`` — every chain takes its step together, rung by rung
  (:func:`run_synchronous`, on :meth:`Ladder.step <ladder_mcmc.ladder.kernel.Ladder.step>`):
  the reference the tests hold the ragged loops to, run only when asked for
  (``sample(..., schedule="synchronous")``), never chosen for a run;
* ``"ragged"`` — every chain at its own rung of its own step, one map call per
  iteration on the whole batch (:func:`~ladder_mcmc.engine.ragged.iterate`), on one of
  two *backends*: ``"numpy"``, a Python loop on the host
  (:func:`~ladder_mcmc.engine.numpy_loop.run_numpy`), or ``"jax"``, the same step
  compiled by JAX and run in blocks of steps (:func:`~ladder_mcmc.engine.jax_loop.run_jax`).

:func:`driver_for` is the only function that chooses among them, from the kernel, the
schedule and the backend :func:`~ladder_mcmc.engine.backend.choose_backend` chose;
:func:`ladder_mcmc.sample` and :func:`ladder_mcmc.resume` call it and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Literal, Protocol

from ladder_mcmc.engine.numpy_loop import run_numpy
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder.kernel import Ladder, LadderState

if TYPE_CHECKING:
    from ladder_mcmc.engine.recording import StepRecorder

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
      (:class:`~ladder_mcmc.engine.streams.ChainStreams`), drawn in the chain's own
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


def run_synchronous(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """The reference: every chain steps together with :meth:`Ladder.step
    <ladder_mcmc.ladder.kernel.Ladder.step>` (the paper's algorithm, section 4.2) until
    step ``until``; the :class:`Driver` contract, the numbers from one view of every
    chain's streams."""
    stop = recorder.n_steps if until is None else until
    rng = streams.view()
    for t in range(recorder.completed(), stop):
        ks, info = kernel.step(ks, rng)
        stats = {
            "energy": -ks.log_density,
            "acceptance_rate": info.first_stage_prob,
            "energy_error": info.energy_error,
        }
        recorder.record_row(
            t, kernel.map.draw(ks.state), info.rung, info.n_moves, info.non_finite,
            info.cost, info.overhead, stats,
        )  # fmt: skip
        if on_progress is not None:
            on_progress(t + 1)
    return ks


def driver_for(
    kernel: Ladder,
    schedule: str,
    backend: str = "numpy",
    chains: str = "vectorized",
    threads: int = 1,
) -> Driver:
    """The driver that runs ``kernel`` on ``schedule`` and ``backend``.

    ``"synchronous"``: :func:`run_synchronous` (numpy only). ``"ragged"``:
    :func:`~ladder_mcmc.engine.numpy_loop.run_numpy` on
    ``"numpy"``, :func:`~ladder_mcmc.engine.jax_loop.run_jax` on ``"jax"``, or with
    ``chains="sequential"`` :func:`~ladder_mcmc.engine.sequential.run_sequential` (the
    chains one after another in the compiled loop, on ``threads`` threads).

    Raises
    ------
    ValueError
        For another schedule, backend or ``chains``, the synchronous schedule on JAX, or
        sequential chains on numpy.
    """
    if backend not in ("numpy", "jax"):
        raise ValueError(f"backend must be 'numpy' or 'jax', got {backend!r}")
    if chains not in ("vectorized", "sequential"):
        raise ValueError(f"chains must be 'vectorized' or 'sequential', got {chains!r}")
    if chains == "sequential" and (backend != "jax" or schedule != "ragged"):
        raise ValueError(
            "chains='sequential' runs on the compiled ragged loop only, got "
            f"backend={backend!r}, schedule={schedule!r}"
        )
    if schedule == "synchronous":
        if backend != "numpy":
            raise ValueError(
                "schedule='synchronous' runs on the numpy backend only (it is the reference "
                f"Ladder.step); got backend={backend!r}"
            )
        return run_synchronous
    if schedule == "ragged":
        if chains == "sequential":
            from ladder_mcmc.engine.sequential import run_sequential

            return run_sequential if threads == 1 else partial(run_sequential, threads=threads)
        if backend == "jax":
            from ladder_mcmc.engine.jax_loop import run_jax

            return run_jax
        return run_numpy
    raise ValueError(f"schedule must be 'ragged' or 'synchronous', got {schedule!r}")
