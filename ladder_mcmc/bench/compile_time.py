"""Seconds JAX spends compiling, measured by its monitoring events.

ESS per second leaves compile time out, for the package's JAX loop and for NumPyro alike
(NumPyro 0.22 recompiles its loop at every ``warmup`` and ``run`` call, so it cannot be
left out by reusing a compiled function). :class:`CompileClock` sums the durations of
JAX's tracing, lowering and XLA compilation events
(``jax.monitoring.register_event_duration_secs_listener``), as
``benchmarks/nuts_peers.py`` does; a run's compile time is the difference of
:func:`compile_seconds` around it. Without JAX nothing compiles: zero. Subtracting it
from a run's wall time flatters a run that samples while it compiles (NumPyro's
sequential chains); :mod:`ladder_mcmc.bench.warm_cache` times such runs again with a
warm cache instead.
"""

from __future__ import annotations

import time
from types import TracebackType

import attrs

COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
"""JAX's monitoring events whose durations count as compile time."""

_total = [0.0]  # seconds of COMPILE_EVENTS seen since the listener was registered
_listening = [False]


def _listener(event: str, duration: float, **_kwargs: object) -> None:
    if event in COMPILE_EVENTS:
        _total[0] += duration


def listen() -> bool:
    """Register the listener once, if JAX is installed (and imported: a process that never
    imported JAX compiles nothing). Returns whether it listens."""
    if not _listening[0]:
        import sys

        if "jax" not in sys.modules:
            return False
        import jax

        jax.monitoring.register_event_duration_secs_listener(_listener)
        _listening[0] = True
    return True


def compile_seconds() -> float:
    """Seconds of compilation seen so far (since :func:`listen` first succeeded)."""
    return _total[0]


@attrs.define
class CompileClock:
    """Wall time and compile time of a block: ``with CompileClock() as clock: …``, then
    ``clock.wall`` (seconds, all of it), ``clock.compile`` (seconds JAX compiled in it)
    and ``clock.net`` (the difference, never below zero)."""

    wall: float = 0.0
    compile: float = 0.0
    _start: float = 0.0
    _compiled: float = 0.0

    def __enter__(self) -> CompileClock:
        listen()
        self._compiled = compile_seconds()
        self._start = time.perf_counter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.wall = time.perf_counter() - self._start
        listen()  # JAX may have been imported inside the block
        self.compile = compile_seconds() - self._compiled

    @property
    def net(self) -> float:
        """``wall − compile``, at least 0."""
        return max(0.0, self.wall - self.compile)


__all__ = ["COMPILE_EVENTS", "CompileClock", "compile_seconds", "listen"]
