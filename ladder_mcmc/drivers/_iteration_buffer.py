"""A window of ragged-driver iterations, handed to the trace's recorder at once.

In the ragged driver a chain finishes a step on some iterations and not on
others, so each iteration's draws belong to different steps of different
chains. Scattering them into the trace one iteration at a time costs a fancy
index per iteration; buffering them as Python lists costs a concatenation of
many small arrays per flush. This buffer instead keeps the last ``capacity``
iterations as rows of preallocated ``(capacity, chains, ...)`` arrays — one
row copy per quantity per iteration — and hands the finished steps to
:meth:`Recorder.record` in one call per window.

A row holds, for every chain in the batch: whether it finished a step on that
iteration (``done``), the iteration its step started on, whether its rule
stopped (a rung taken) or ran out of rungs (a flip), its draw, and its count
of non-finite rungs. Everything else follows, for rules whose rungs are
``1..K`` in order (the look-ahead rule): the stage is the iteration minus the
start, ``n_moves = stage + 1``, the rung code is ``n_moves`` if the rule
stopped and ``0`` (``FLIP``) otherwise, and each chain's step index is its
count of finished steps so far.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ladder_mcmc.drivers.recording import StepRecorder

#: rows of :attr:`IterationBuffer.block` (and of a compiled driver's per-chain state);
#: COST: the step's gradient evaluations per map application (``costs`` only)
START, NON_FINITE, STOP, DONE, COST = 0, 1, 2, 3, 4

#: largest buffer of draws, bytes (the window shrinks for wide batches)
MAX_BYTES = 1 << 23
#: above this many bytes of draws per window, draws go straight to the trace
#: every iteration instead (a window that does not fit in the caches would be
#: written and read back through main memory)
DIRECT_BYTES = 1 << 20


class IterationBuffer:
    """Rows of ragged iterations for a batch of chains, with draws of shape ``(dim,)``.

    Columns are the chains of the run (chain ``j`` in column ``j``). While
    every chain is in the batch a row is copied whole; once chains have left
    it, the batch's rows are scattered into their columns (``columns``), so
    that a chain leaving costs nothing here.

    Parameters
    ----------
    recorder : StepRecorder
        Where the steps go.
    dim : int
        Length of a draw.
    capacity : int
        Iterations per window (fewer if the draws would exceed ``MAX_BYTES``).
    direct : bool or None
        Write draws straight to the trace on every iteration instead of
        buffering them; ``None``: when a window of draws would exceed
        ``DIRECT_BYTES`` (right for the numpy driver, whose per-iteration
        copies into a large window miss the caches; the compiled driver
        buffers always, measured faster in ``benchmarks/results/overhead.md``).
    costs : bool
        Each step comes with its cost (gradient evaluations per map application, for a
        map with ``cost_of``), kept in row ``COST`` and handed to the recorder.
    """

    def __init__(
        self,
        recorder: StepRecorder,
        dim: int,
        capacity: int = 64,
        direct: bool | None = None,
        costs: bool = False,
    ) -> None:
        self.recorder = recorder
        n = recorder.n_chains
        self.capacity = max(4, min(capacity, MAX_BYTES // max(1, 8 * n * dim)))
        c = self.capacity
        self.direct = 8 * c * n * dim > DIRECT_BYTES if direct is None else direct
        self.steps_done = recorder.steps_done.astype(np.int64)
        self.flips = np.zeros(n, dtype=np.int64)
        # one block, so that a compiled loop takes the window's rows as one
        # argument (rows START, NON_FINITE, STOP, DONE, COST; stop and done are 0/1)
        self.block = np.zeros((5, c, n), dtype=np.int64)
        self.start, self.non_finite, self.stop, self.done, self.cost = self.block
        self.costs = costs
        self.draw = np.zeros((1 if self.direct else c, n, dim))
        # each chain's draw as one record: a boolean gather of records copies
        # whole rows (0.23 ms for 64 × 100 draws of 100 floats, against 0.37 ms
        # for the float array)
        self._draw_rows = self.draw.view(np.dtype((np.void, 8 * dim)))[..., 0]
        self._next_step = self.steps_done.copy()  # direct draws: each chain's next step
        self._all = np.arange(n)
        #: every chain's column, for writers that fill a row themselves
        self.all_columns = self._all
        self.iteration = np.zeros((c, 1), dtype=np.int64)
        self.rows = 0
        self._nf_dirty = False
        #: a compiled ``write`` (``writer(buffer) -> bool``, False when it cannot)
        self.writer = None

    def push(
        self, iteration: int, done, start, stop, draw, non_finite=None, columns=None, cost=None
    ) -> bool:
        """Copy one iteration in; True when the buffer is full (call :meth:`write`).

        ``columns``: the chains of the batch, when it is no longer all of them;
        ``cost``: each chain's cost in its current step (``costs`` only).
        """
        i = self.rows
        self.iteration[i] = iteration
        if columns is None:
            self.done[i] = done
            self.start[i] = start
            self.stop[i] = stop
            if cost is not None:
                self.cost[i] = cost
        else:
            self.done[i] = False
            self.done[i, columns] = done
            self.start[i, columns] = start
            self.stop[i, columns] = stop
            if cost is not None:
                self.cost[i, columns] = cost
        if self.direct:
            chains = (self._all if columns is None else columns)[done]
            self.recorder.record_draws(chains, self._next_step[chains], draw[done])
            self._next_step[chains] += 1
        elif columns is None:
            self.draw[i] = draw
        else:
            self.draw[i, columns] = draw
        if non_finite is not None:
            if columns is None:
                self.non_finite[i] = non_finite
            else:
                self.non_finite[i, columns] = non_finite
            self._nf_dirty = True
        self.rows = i + 1
        return self.rows == self.capacity

    def pushed(self, iteration: int, non_finite: bool) -> bool:
        """Complete a row whose chain columns a compiled loop has filled; True when full.

        The loop (:func:`ladder_mcmc.drivers._leapfrog_numba._restart`, on a buffer built
        with ``direct=False``) wrote row :attr:`rows` of :attr:`block` (done,
        start, stop, non-finite counts) and of the draws. This records the
        iteration and marks the non-finite counts as worth reading
        (``non_finite``: some rung has been non-finite).
        """
        i = self.rows
        self.iteration[i] = iteration
        if non_finite:
            self._nf_dirty = True
        self.rows = i + 1
        return self.rows == self.capacity

    def pending_steps(self) -> np.ndarray:
        """Each chain's finished steps, the buffered iterations included."""
        return self.steps_done + self.done[: self.rows].sum(axis=0)

    def write(self) -> None:
        """Record every finished step in the buffer, then empty it.

        Safe to call again after an interruption inside it: nothing of the
        buffer changes until the recorder has every step.
        """
        k = self.rows
        if k == 0:
            return
        if self.writer is not None and self.writer(self):
            return
        done = self.done[:k] != 0
        count = np.cumsum(done, axis=0)
        steps = (self.steps_done + count - done)[done]
        chains = np.nonzero(done)[1]
        n_moves = (self.iteration[:k] - self.start[:k] + 1)[done]
        code = n_moves * self.stop[:k][done]
        if self._nf_dirty:
            non_finite = self.non_finite[:k][done]
        else:
            non_finite = np.zeros(steps.shape, dtype=np.int64)
        if self.direct:
            draws = None
        else:
            draws = self._draw_rows[:k][done].view(np.float64).reshape(len(steps), -1)
        cost = self.cost[:k][done] if self.costs else None
        recorder = self.recorder
        recorder.record(chains, steps, draws, code, n_moves, non_finite, cost)
        steps_done = self.steps_done + count[-1]
        recorder.steps_done[:] = steps_done
        # the buffer's own counts change only now
        self.flips += (done & (self.stop[:k] == 0)).sum(axis=0)
        self.steps_done = steps_done
        if self._nf_dirty:
            self.non_finite[:k] = 0
            self._nf_dirty = False
        self.rows = 0
