"""``warmup``: a kernel's warm-up on its own, for a run that samples afterwards itself.

:func:`~ladder_mcmc.sample` warms a kernel up before sampling; :func:`warmup` does only
that, and returns the adapted kernel, the chains' state and what warm-up found, as
:func:`sample` would have used them.
"""

from __future__ import annotations

from typing import Any

from ladder_mcmc.engine.backend import choose_backend
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.engine.warmup import Warmup, adaptation_for, run_warmup
from ladder_mcmc.ladder.kernel import Ladder, LadderState
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.validation import positive_int


def warmup(
    kernel: Ladder,
    ks: LadderState,
    n_warmup: int,
    seed: Any = None,
    *,
    target_prob: float = 0.8,
    adapt_mass: bool = True,
    dense_mass: bool = False,
    trajectory_length: float | None = None,
    schedule: str = "ragged",
    backend: str | None = None,
    checks: bool = True,
) -> tuple[Ladder, LadderState, Any]:
    """Adapt what ``kernel`` leaves unset, in ``n_warmup`` steps from the chains ``ks``.

    Parameters
    ----------
    kernel : Ladder
        A kernel whose map has a warm-up (``lahmc(target)`` and its kin).
    ks : LadderState
        The chains' state (``kernel.init(x0, rng)``).
    n_warmup : int
        Warm-up steps.
    seed : int, SeedSequence, Generator, ChainStreams or None
        The chains' random streams (as :func:`~ladder_mcmc.sample`'s ``seed``).
    target_prob, adapt_mass, dense_mass, trajectory_length
        As :class:`~ladder_mcmc.engine.warmup.Warmup`.
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
    n_warmup = positive_int("n_warmup", n_warmup)
    settings = Warmup(n_warmup, target_prob, adapt_mass, dense_mass, trajectory_length)
    adaptation = adaptation_for(kernel, settings, ks, checks)
    if adaptation is None:
        raise ValueError(f"the kernel leaves nothing to adapt in {n_warmup} warm-up steps")
    n = len(ks.direction)
    streams = seed if isinstance(seed, ChainStreams) else ChainStreams.for_chains(seed, n)
    chosen = "numpy" if schedule == "synchronous" else choose_backend(kernel, ks, backend).name
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
