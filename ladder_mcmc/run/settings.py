"""A run's settings that come in groups: where and how often it checkpoints
(:class:`Checkpoint`), and how its chains are spread over an executor (:class:`Parallel`).

Warm-up's settings are :class:`ladder_mcmc.engine.warmup.Warmup`. Each is a frozen
object, checked when it is made: a bad value raises ``ValueError`` naming it.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.engine.sequential import check_chains
from ladder_mcmc.engine.warmup import Warmup
from ladder_mcmc.validation import positive_int


def _as_path(value: Any) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"checkpoint path must be a str or a path, got {value!r}")
    return Path(value)


def _as_every(value: Any) -> int | None:
    return None if value is None else positive_int("checkpoint every", value)


def _as_executor(value: Any) -> Executor | None:
    if value is not None and not isinstance(value, Executor):
        raise ValueError(
            f"executor must be a concurrent.futures.Executor (a process pool, or Dask's "
            f"Client.get_executor()), got {value!r}"
        )
    return value


@attrs.frozen
class Checkpoint:
    """Where a run writes its checkpoint, and how often.

    Parameters
    ----------
    path : path, optional
        The ``.npz`` file (which must not exist) the run's full state is written to,
        atomically, every ``every`` steps; :func:`~ladder_mcmc.resume` continues it.
        ``None``: the run still stops every ``every`` steps, but writes nothing (its
        draws are the same either way).
    every : int, optional
        Steps between checkpoints; default ``n_steps // 10`` (at least 1). Every chain
        reaches each checkpoint step before any goes on.
    """

    path: Path | None = attrs.field(default=None, converter=_as_path)
    every: int | None = attrs.field(default=None, converter=_as_every)

    def block(self, n_steps: int) -> int:
        """Steps between stops, for a run of ``n_steps``."""
        if self.every is not None:
            return self.every
        return max(1, n_steps // 10) if self.path is not None else n_steps


def _as_groups(value: Any) -> int | None:
    return None if value is None else positive_int("groups", value)


def _as_threads(value: Any) -> int | None:
    return None if value is None else positive_int("threads", value)


@attrs.frozen
class Parallel:
    """How the chains run side by side: split into ``groups`` contiguous groups run through
    ``executor`` (:mod:`ladder_mcmc.run.parallel`), and, on JAX, batched or one after
    another in the compiled loop (``chains``: :mod:`ladder_mcmc.engine.sequential`).

    Parameters
    ----------
    executor : concurrent.futures.Executor, optional
        A process pool, or Dask's ``Client.get_executor()``; the kernel and the initial
        values must then pickle (module-level targets and functions, or a ``from_jax``
        model, which pickles as its function; Dask also sends lambdas). A JAX model
        needs a pool started with ``spawn`` or ``forkserver``. None (default): the
        chains run in this process.
    groups : int, optional
        Groups of chains (default 2) with an executor, at most the number of chains;
        each chain keeps its own random stream, and each group warms up on its own chains.
        Without an executor there are no groups: setting it then is refused.
    chains : {"auto", "vectorized", "sequential"}
        On JAX: ``"vectorized"``, one map call on every chain; ``"sequential"``, the
        chains one after another, each a batch of one, on the CPU's cores; ``"auto"``
        times the target's gradient both ways, predicts which runs the kernel faster,
        and chooses, again after warm-up (``trace.backend`` records it;
        ``sample`` without ``executor`` does this). The default here is
        ``"vectorized"``: a measured choice can differ between runs on a loaded
        machine, and the two agree only to rounding, so draws bit for bit from one
        seed need the arrangement fixed.
    threads : int, optional
        Chains one after another run on at most this many threads (default: the CPU's
        cores this process may use; with an executor, each group's process takes its
        own, so groups on one machine share its cores); each chain's call runs on one,
        and the draws do not depend on it. JAX's settings that hold per thread (a default
        device, a matmul precision) are not carried to the threads; float64 is.
    """

    executor: Executor | None = attrs.field(default=None, converter=_as_executor)
    groups: int | None = attrs.field(default=None, converter=_as_groups)
    chains: str = attrs.field(default="vectorized", converter=check_chains)
    threads: int | None = attrs.field(default=None, converter=_as_threads)

    def __attrs_post_init__(self) -> None:
        if self.executor is None and self.groups is not None:
            raise ValueError(
                f"groups={self.groups} needs an executor (the groups run on its workers); "
                "got executor=None"
            )
        if self.executor is not None and self.groups is None:
            object.__setattr__(self, "groups", 2)


def as_warmup(value: Any) -> Warmup:
    """``sample``'s ``warmup``: None (the default), a number of steps, or a :class:`Warmup`."""
    if isinstance(value, Warmup):
        return value
    if value is None or (isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
        return Warmup(value)
    raise ValueError(f"warmup must be None, a number of steps or a Warmup(...), got {value!r}")


def as_checkpoint(value: Any) -> Checkpoint | None:
    """``sample``'s ``checkpoint``: None, a path, or a :class:`Checkpoint`."""
    if value is None or isinstance(value, Checkpoint):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Checkpoint(value)
    raise ValueError(f"checkpoint must be None, a path or a Checkpoint(...), got {value!r}")


def as_parallel(value: Any) -> Parallel | None:
    """``sample``'s ``executor``: None, an executor (two groups), or a :class:`Parallel`
    (with ``executor=None``, the chains' arrangement only)."""
    if value is None or isinstance(value, Parallel):
        return value
    if isinstance(value, Executor):
        return Parallel(value)
    raise ValueError(
        f"executor must be None, a concurrent.futures.Executor or a Parallel(...), got {value!r}"
    )


__all__ = ["Checkpoint", "Parallel", "Warmup", "as_checkpoint", "as_parallel", "as_warmup"]
