"""What a driver writes its steps into: the :class:`StepRecorder` interface.

Drivers depend on this interface only; :class:`ladder_mcmc.run.recorder.Recorder`
implements it (in memory, or with the draws in ``.npy`` files).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["StepRecorder"]


@runtime_checkable
class StepRecorder(Protocol):
    """The steps of a batch of chains: per-step statistics and the kept draws.

    Attributes
    ----------
    n_steps, n_chains, thin : int
        Steps per chain the run will record, chains, and the thinning of the draws
        (the draw of step ``s`` is kept when ``(s + 1) % thin == 0``).
    steps_done : int array (chains,)
        Steps each chain has recorded so far.
    rungs, n_moves, non_finite : int arrays (n_steps, chains)
        Rung codes, map applications and non-finite rungs of every recorded step.
    draws : array, tree of arrays, or None
        The kept draws (None until the first one).
    flush_every : int
        Buffered :meth:`record_masked` calls after which a driver reports progress.
    """

    n_steps: int
    n_chains: int
    thin: int
    steps_done: np.ndarray
    rungs: np.ndarray
    n_moves: np.ndarray
    non_finite: np.ndarray
    draws: Any
    flush_every: int

    def record(
        self,
        chains: np.ndarray,
        steps: np.ndarray,
        draw: Any,
        rung: np.ndarray,
        n_moves: np.ndarray,
        non_finite: np.ndarray,
    ) -> None:
        """Step ``steps[i]`` of chain ``chains[i]`` for every ``i`` (``draw=None``: the
        draws were written already with :meth:`record_draws`)."""

    def record_draws(self, chains: np.ndarray, steps: np.ndarray, draw: Any) -> None:
        """The draws of step ``steps[i]`` of chain ``chains[i]`` that ``thin`` keeps."""

    def record_row(self, step: int, draw: Any, rung, n_moves, non_finite) -> None:
        """Step ``step`` of every chain at once (chains in order)."""

    def record_masked(
        self,
        mask: np.ndarray | None,
        chains: np.ndarray,
        steps: np.ndarray,
        draw: Any,
        rung: np.ndarray,
        n_moves: np.ndarray,
        non_finite: np.ndarray,
    ) -> bool:
        """Buffer the steps where ``mask`` (every ``i`` if None); True when it flushed."""

    def draw_rows(self, draw: Any) -> np.ndarray | None:
        """The kept draws as one ``(n_kept * n_chains, ...)`` array to write into, or None."""

    def record_written(self, steps_done: np.ndarray) -> None:
        """Count the steps a writer put into :meth:`draw_rows` and the statistics."""

    def flush(self) -> None:
        """Write the buffered steps of :meth:`record_masked`."""

    def completed(self) -> int:
        """Steps completed by every chain."""
