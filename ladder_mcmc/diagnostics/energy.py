"""Energy diagnostics: how well the momentum refresh explores the energy levels.

:func:`e_bfmi` is the energy Bayesian fraction of missing information (Betancourt 2016):
per chain, ``Σ_n (E_n − E_{n−1})² / Σ_n (E_n − Ē)²`` over the energies ``E_n`` of
successive steps (``Trace.step_stats["energy"]``: ``−log p`` of the state after each
step and its refresh; for leapfrog the Hamiltonian). Small values (below
:data:`E_BFMI_LOW`, Stan's threshold) say the refresh changes the energy too little from
step to step to explore the target's energy levels: the tails are explored slowly.
"""

from __future__ import annotations

import numpy as np

#: E-BFMI below this warns (Stan's threshold)
E_BFMI_LOW = 0.3


def e_bfmi(energy: np.ndarray) -> np.ndarray:
    """E-BFMI of each chain from energies (steps, chains); NaN for fewer than 3 steps or a
    chain whose energy does not vary (or is not finite).

    Examples
    --------
    >>> import numpy as np
    >>> e = np.random.default_rng(0).standard_normal((1000, 2))  # independent energies
    >>> bool(np.all(np.abs(e_bfmi(e) - 2) < 0.2))
    True
    """
    e = np.asarray(energy, dtype=float)
    if e.ndim != 2:
        raise ValueError(f"energy must have shape (steps, chains), got {e.shape}")
    out = np.full(e.shape[1], np.nan)
    if e.shape[0] < 3:
        return out
    with np.errstate(all="ignore"):
        numerator = np.sum(np.diff(e, axis=0) ** 2, axis=0)
        denominator = np.sum((e - e.mean(axis=0)) ** 2, axis=0)
        ok = np.isfinite(numerator) & np.isfinite(denominator) & (denominator > 0)
        out[ok] = numerator[ok] / denominator[ok]
    return out


__all__ = ["E_BFMI_LOW", "e_bfmi"]
