"""A minimal progress bar on stderr (no dependency), throttled to a few updates a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Text progress bar: ``label |#####     | 512/1000 steps  3.1 s  eta 2.9 s``.

    Parameters
    ----------
    total : int
        Number of units of work.
    label : str
        Prefix.
    enabled : bool
        When False, does nothing.
    stream : file
        Where to write (stderr by default).
    """

    def __init__(
        self,
        total: int,
        label: str = "sampling",
        enabled: bool = True,
        stream: TextIO | None = None,
    ) -> None:
        self.total, self.label, self.enabled = max(int(total), 1), label, enabled
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self._last = 0.0
        self.done = 0

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.25 and done < self.total:
            return
        self._last = now
        elapsed = now - self.start
        frac = min(done / self.total, 1.0)
        eta = elapsed * (1 - frac) / frac if frac > 0 else float("nan")
        bar = "#" * int(30 * frac)
        self.stream.write(
            f"\r{self.label} |{bar:<30}| {done}/{self.total} steps"
            f"  {elapsed:.1f} s  eta {eta:.1f} s"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._last = 0.0
            self.update(self.done)
            self.stream.write("\n")
            self.stream.flush()
