"""Progress bars on stderr, drawn by tqdm (a terminal bar, or a notebook's widget)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _in_notebook() -> bool:
    """Whether ``tqdm.auto`` draws widgets (Jupyter), whose output is no terminal; without
    IPython loaded, no, without importing tqdm (``tqdm.auto`` loads asyncio)."""
    if "IPython" not in sys.modules:
        return False
    from tqdm.asyncio import tqdm as console
    from tqdm.auto import tqdm as auto

    return auto is not console


def interactive(stream: TextIO | None = None) -> bool:
    """Whether progress is shown by default: on a terminal (stderr, or ``stream``) or in a
    Jupyter notebook; not when stderr is redirected to a file or a pipe."""
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty()) or _in_notebook()


class Progress:
    """Progress of ``total`` units of work: ``label: 45%|████▌     | 450/1000 [...]``.

    On a terminal, a tqdm bar updated in place; in a Jupyter notebook, tqdm's
    widget. Otherwise (stderr redirected to a file or a pipe) no in-place
    updates: one line when closed, ``label: 1000/1000 steps in 3.1 s``.

    Parameters
    ----------
    total : int
        Number of units of work.
    label : str
        Prefix.
    enabled : bool
        When False, prints nothing.
    stream : file
        Where to write (stderr by default).
    unit : str
        What is counted (``"step"``: sampling and warm-up steps).
    """

    def __init__(
        self,
        total: int,
        label: str = "sampling",
        enabled: bool = True,
        stream: TextIO | None = None,
        unit: str = "step",
    ) -> None:
        self.total, self.label, self.enabled, self.unit = max(int(total), 0), label, enabled, unit
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.done = 0
        self._closed = False
        self._bar = None
        isatty = getattr(self.stream, "isatty", None)
        if enabled and ((isatty is not None and isatty()) or _in_notebook()):
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=self.total,
                desc=label,
                unit=unit,
                file=self.stream,
                mininterval=0.25,
                dynamic_ncols=True,
            )

    def update(self, done: int) -> None:
        """``done`` units of ``total`` are complete (a count, not an increment)."""
        if self._bar is not None and done > self._bar.n:
            self._bar.update(done - self._bar.n)
        self.done = done

    def close(self) -> None:
        """End the bar (off a terminal: write the one line). Only the first call counts."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            elapsed = time.perf_counter() - self.start
            units = self.unit if self.total == 1 else f"{self.unit}s"
            done = f"{self.done}/{self.total} {units}"
            self.stream.write(f"{self.label}: {done} in {elapsed:.1f} s\n")
            self.stream.flush()
