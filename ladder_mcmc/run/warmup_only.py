"""``warmup``: a kernel's warm-up on its own, for a run that samples afterwards itself.

:func:`~ladder_mcmc.sample` warms a kernel up before sampling; :func:`warmup` does only
that, and returns the adapted kernel, the chains' state and what warm-up found, as
:func:`sample` would have used them.
"""

from __future__ import annotations

from typing import Any

from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.engine.warmup import Warmup, adaptation_for, run_warmup
from ladder_mcmc.ladder.kernel import Ladder, LadderState
from ladder_mcmc.run.execution import backend_for
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.validation import positive_int


def warmup(
    kernel: Ladder,
    ks: LadderState,
    steps: int | Warmup,
    seed: Any = None,
    *,
    schedule: str = "ragged",
    backend: str | None = None,
    checks: bool = True,
) -> tuple[Ladder, LadderState, Any]:
    """Adapt what ``kernel`` leaves unset, in ``steps`` warm-up steps from the chains ``ks``.

    Parameters
    ----------
    kernel : Ladder
        A kernel whose map has a warm-up (``lahmc(target)`` and its kin).
    ks : LadderState
        The chains' state (``kernel.init(x0, rng)``).
    steps : int or Warmup
        Warm-up steps, or a :class:`~ladder_mcmc.Warmup` (its ``steps`` set) with its
        settings.
    seed : int, SeedSequence, Generator, ChainStreams or None
        The chains' random streams (as :func:`~ladder_mcmc.sample`'s ``seed``).
    schedule, backend, checks
        As :func:`~ladder_mcmc.sample`.

    Returns
    -------
    kernel, ks, found
        The adapted kernel (nothing left to adapt), the chains' state after warm-up, and
        what warm-up found (a ``WarmupResult`` for the Hamiltonian kernels).

    Raises
    ------
    ValueError
        Bad settings, or a kernel whose map has no warm-up.
    """
    settings = steps if isinstance(steps, Warmup) else Warmup(positive_int("steps", steps))
    if settings.steps is None or settings.steps == 0:
        raise ValueError(f"steps must be a positive number of warm-up steps, got {steps!r}")
    adaptation = adaptation_for(kernel, settings, ks, checks)
    if adaptation is None:
        raise ValueError(f"the kernel leaves nothing to adapt in {settings.steps} warm-up steps")
    n = len(ks.direction)
    streams = seed if isinstance(seed, ChainStreams) else ChainStreams.for_chains(seed, n)
    chosen = backend_for(kernel, ks, schedule, backend).name
    return run_warmup(
        kernel,
        ks,
        adaptation,
        adaptation.n_warmup,
        streams,
        recorder=Recorder,
        schedule=schedule,
        backend=chosen,
    )


__all__ = ["warmup"]
