"""The paper's table 1 for one run: the fraction of steps taking each rung, with errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladder_mcmc.validation import positive_int

__all__ = ["transition_table"]


def transition_table(trace: Any, n_batches: int = 20) -> dict[str, dict[str, float]]:
    """The paper's table 1 for one run: fraction of steps taking each rung, with standard errors.

    Standard errors by batch means: the steps are cut into ``n_batches``
    consecutive batches, each batch's fraction is averaged over all chains,
    and ``se = sd(batch fractions) / sqrt(n_batches)``. This accounts for
    correlation between successive steps of a chain (e.g. with ``β < 1``) as
    long as a batch is much longer than that correlation.

    Parameters
    ----------
    trace : Trace
        Any run (only ``trace.rungs`` and ``trace.max_rung`` are used).
    n_batches : int
        Number of batches (at least 2; reduced to the number of steps if larger).

    Returns
    -------
    dict
        ``{"fractions": {"F": …, "L1": …, …}, "stderr": {"F": …, …}}``, keys as
        in :meth:`Trace.transition_fractions` (``"stay"`` added for rules that
        can stay).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import lahmc, sample
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2)
    >>> x0 = target.sample(20, np.random.default_rng(0))
    >>> table = transition_table(sample(lahmc(target, 1.0, 10, beta=1.0), x0, 100, seed=1))
    >>> sorted(table["fractions"])
    ['F', 'L1', 'L2', 'L3', 'L4']
    """
    n_batches = positive_int("n_batches", n_batches, minimum=2)
    rungs = np.asarray(trace.rungs)
    n_steps = rungs.shape[0]
    if n_steps < 2:
        raise ValueError(f"transition_table needs at least 2 steps, got {n_steps}")
    b = min(n_batches, n_steps)
    edges = np.linspace(0, n_steps, b + 1).astype(int)
    codes = {"F": 0, **{f"L{a}": a for a in range(1, int(trace.max_rung) + 1)}}
    if np.any(rungs == -1):
        codes["stay"] = -1
    fractions, stderr = {}, {}
    for name, code in codes.items():
        hit = rungs == code
        per_batch = np.array(
            [hit[lo:hi].mean() for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
        )
        # batches of unequal length (n_steps not divisible) get weights by length
        weights = np.diff(edges) / n_steps
        fractions[name] = float(hit.mean())
        centred = per_batch - fractions[name]
        var_mean = float((weights**2 * centred**2).sum() * b / (b - 1))
        stderr[name] = math.sqrt(var_mean)
    return {"fractions": fractions, "stderr": stderr}
