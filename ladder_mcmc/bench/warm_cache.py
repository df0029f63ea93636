"""Compile time left out by a warm cache: a run timed again once its compilations are cached.

Subtracting the compile seconds JAX reports (:mod:`ladder_mcmc.bench.compile_time`) from a
cold run's wall time is exact only when nothing runs while JAX compiles. NumPyro's
``chain_method="sequential"`` compiles each chain's loop while the chain before it
samples, so subtracting its compile seconds also subtracts sampling time, and flatters it.
:func:`cold_and_warm` times compile out another way, the same for every sampler: the run is
made three times, JAX's in-memory caches cleared before each,

1. cold, JAX's persistent compilation cache off: its draws, figures and verdict are the
   result's, and its wall time is the run's cost with compilation;
2. again, filling a new persistent cache (not timed);
3. again, with that cache warm: its wall time less its remaining compile events (tracing,
   lowering, and the cache's loads, which JAX times as compilations) is the run's cost with
   compile time left out.

What is left of the overlap still flatters the side that overlaps: a sequential chain
still traces and loads its loop while the one before samples (about a fifth of the
compile-out seconds of NumPyro's sequential chains on a small model, against the same run
dispatched synchronously), so ratios against them err in their favour.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

import attrs
import numpy as np

from ladder_mcmc.bench.runs import SamplerRun

_SETTINGS = (
    "jax_enable_compilation_cache",
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
)


@contextlib.contextmanager
def persistent_cache(directory: str | os.PathLike | None) -> Iterator[None]:
    """Inside the block, JAX's persistent compilation cache in ``directory``, every
    compilation written however short it was; or off (``None``). JAX's settings are
    restored after it."""
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise ValueError(f"directory must be a folder's path or None, got {directory!r}")
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    saved = {name: getattr(jax.config, name) for name in _SETTINGS}
    try:
        jax.config.update("jax_enable_compilation_cache", directory is not None)
        if directory is not None:
            jax.config.update("jax_compilation_cache_dir", os.fspath(directory))
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        compilation_cache.reset_cache()  # JAX decides once per cache whether it is used
        yield
    finally:
        for name, value in saved.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()


def _timed(run: Callable[[], SamplerRun]) -> SamplerRun:
    import jax

    jax.clear_caches()  # nothing compiled before stays in memory
    return run()


def cold_and_warm(run: Callable[[], SamplerRun]) -> SamplerRun:
    """``run()`` three times (the module's protocol): the cold run, with ``wall_time`` the
    warm run's seconds less its compile events, and ``compile_time`` what the cold run took
    beyond that (at least zero): ``wall_time + compile_time`` is the cold run's wall time
    (its seconds less compile events, plus its compile events) unless the warm run took
    longer.

    ``run`` must draw the same each time it is called (fresh seeds, not a generator it
    consumes). A warm run that drew differently from the cold one (a backend chosen by a
    timing, on a busy machine) is said in ``notes``. If Ctrl-C cuts the cold run short,
    that run is the result (NUTS's ``KeyboardInterrupt`` propagates); if it cuts a later
    one short, the cold run is returned marked ``interrupted``: its timing is incomplete.
    """
    with persistent_cache(None):
        cold = _timed(run)
    if cold.interrupted:
        return cold
    directory = tempfile.mkdtemp(prefix="ladder_mcmc_jax_cache_")
    try:
        with persistent_cache(directory):
            warm = _timed(run)  # fills the cache
            if not warm.interrupted:
                warm = _timed(run)
    except KeyboardInterrupt:  # NUTS's (the package's sample returns what it drew)
        return attrs.evolve(cold, interrupted=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if warm.interrupted:
        return attrs.evolve(cold, interrupted=True)
    notes = cold.notes
    if not np.array_equal(warm.positions, cold.positions, equal_nan=True):
        notes += ("the warm run (timed compile out) drew differently from the cold run",)
    return attrs.evolve(
        cold,
        wall_time=warm.wall_time,
        compile_time=max(0.0, cold.wall_time + cold.compile_time - warm.wall_time),
        notes=notes,
    )


__all__ = ["cold_and_warm", "persistent_cache"]
