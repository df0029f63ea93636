"""Runs that go bad say so: warnings after sampling.

:func:`check_trace` — after a run (``sample`` and ``resume`` call it), one
:class:`SamplingWarning` per problem seen, each with the numbers and what to change:
most steps ending in a flip, a chain that never moved, chains that disagree
(rank-normalised split R̂ > 1.01), too few effective draws (bulk or tail ESS
< 100 per chain; Vehtari et al. 2021), a low E-BFMI (below 0.3, where a Gaussian
momentum refresh makes it apply: docs/design.md §6.1), non-finite energies met.
Before sampling, the target's gradient is checked
(:mod:`ladder_mcmc.diagnostics.gradient`).

``sample(..., checks=False)`` (and ``resume(..., checks=False)``) turns both off.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ladder_mcmc.arrays import release_rows
from ladder_mcmc.diagnostics.energy import E_BFMI_LOW, trace_e_bfmi, trace_refresh_fraction
from ladder_mcmc.diagnostics.ess import posterior_statistics
from ladder_mcmc.diagnostics.summary import summarised_values
from ladder_mcmc.validation import SamplingWarning, user_stacklevel

__all__ = [
    "SamplingWarning",
    "check_trace",
    "trace_problems",
]

FLIP_FRACTION = 0.5
"""Warn when at least this fraction of all steps ended in a flip (rung code 0)."""
RHAT_MAX = 1.01
"""Warn when the rank-normalised split R̂ of a parameter exceeds this (Vehtari et al. 2021)."""
ESS_PER_CHAIN = 100
"""Warn when the bulk or tail ESS of a parameter is below this many per chain (Vehtari et al.
2021: 100 per chain, 400 for 4 chains, as Stan and ArviZ)."""
MIN_STEPS = 10
"""Steps a run needs before the flip and never-moved checks speak."""
CHECKED_DRAWS = 1 << 23
"""Positions (kept steps × chains × dim) the R̂, ESS and never-moved checks read at most: a
longer run is checked on every ``t``-th kept step (the smallest ``t`` that fits, keeping
at least 1000 steps per chain), so that the check stays cheap beside the run and a run
streamed to a draws file is not read whole into memory."""
MIN_CHECKED_STEPS = 1000
"""Kept steps per chain the checks read at least (all of them, for a shorter run)."""

_SHOW = 3  # parameters or chains named in a message


# ---------------------------------------------------------------------------- after a run
def _checked_positions(positions: np.ndarray) -> tuple[np.ndarray, int]:
    """The positions the checks read, in memory, and the step between the kept rows used.

    Every ``t``-th row, ``t`` the smallest that keeps at most :data:`CHECKED_DRAWS`
    values (never fewer than :data:`MIN_CHECKED_STEPS` rows). A memory map is copied
    a block of rows at a time and its pages released behind, so a draws file is
    never resident whole.
    """
    n, m, d = positions.shape
    t = 1
    if n * m * d > CHECKED_DRAWS:
        t = max(1, min(-(-n * m * d // CHECKED_DRAWS), n // MIN_CHECKED_STEPS))
    mapped = isinstance(positions, np.memmap)
    if t == 1 and not mapped:
        return positions, 1
    rows = np.arange(0, n, t)
    out = np.empty((rows.size, m, d), dtype=positions.dtype)
    per = max(1, (1 << 22) // max(1, m * d * t))  # kept rows per block: ~32 MiB of file
    for j in range(0, rows.size, per):
        lo, hi = int(rows[j]), int(rows[min(j + per, rows.size) - 1]) + 1
        out[j : j + per] = positions[lo:hi:t]
        if mapped:
            release_rows(positions, lo, hi)
    return out, t


def _stuck_chains(trace: Any, positions: np.ndarray | None) -> np.ndarray:
    """Chains whose every step was a flip or a stay, or whose positions never changed."""
    moved = (np.asarray(trace.rungs) > 0).any(axis=0)
    if positions is not None and positions.shape[0] >= 2:
        moved &= (positions[1:] != positions[0]).any(axis=(0, 2))
    return np.flatnonzero(~moved)


def _listing(items: list[str], total: int) -> str:
    more = f", … ({total - len(items)} more)" if total > len(items) else ""
    return ", ".join(items) + more


def trace_problems(trace: Any) -> list[str]:
    """What :func:`check_trace` warns about, as messages (empty for a healthy run).

    Parameters
    ----------
    trace : Trace
        A finished (or interrupted) run. R̂ and ESS are computed when its draws
        are positions (steps, chains, dim) with at least 4 kept steps; R̂ needs
        2 chains.
    """
    rungs = np.asarray(trace.rungs)
    n_steps, n_chains = rungs.shape
    out: list[str] = []
    if n_steps == 0:
        return out
    states = trace.states
    positions, every = None, 1
    if isinstance(states, np.ndarray) and states.ndim == 3 and states.shape[0] >= 1:
        positions, every = _checked_positions(states)
    subset = "" if every == 1 else f"; computed on one kept step in {every}"
    advice = (
        "The step size is too large, or the gradient is wrong: lower step_size (or adapt it, "
        "sample(..., warmup=...)) and check the gradient with "
        "ladder_mcmc.check_gradient(target, x)."
    )
    if n_steps >= MIN_STEPS:
        flips = float(np.mean(rungs == 0))
        if flips >= FLIP_FRACTION:
            out.append(
                f"{flips:.0%} of the {rungs.size} steps ({n_steps} steps × {n_chains} chains) "
                f"ended in a flip (rung code 0: no rung accepted). {advice}"
            )
        stuck = _stuck_chains(trace, positions)
        if stuck.size:
            shown = [str(c) for c in stuck[:10]]
            out.append(
                f"{stuck.size} of {n_chains} chains never moved in {n_steps} steps (chains "
                f"{_listing(shown, stuck.size)}): every step a flip or a stay, or the positions "
                f"never changed. {advice}"
            )
    if positions is not None and positions.shape[0] >= 4 and positions.shape[2] >= 1:
        stats = posterior_statistics(positions, ("r_hat", "ess_bulk", "ess_tail"))
        names = summarised_values(trace, constrained=False)[1]  # the positions' names
        r_hat = stats["r_hat"]
        high = np.flatnonzero(r_hat > RHAT_MAX)
        if high.size:
            worst = high[np.argsort(-r_hat[high], kind="stable")][:_SHOW]
            shown = [f"{names[i]} {r_hat[i]:.4g}" for i in worst]
            out.append(
                f"rank-normalised split R-hat above {RHAT_MAX} for {high.size} of "
                f"{r_hat.size} parameters (worst: {_listing(shown, high.size)}{subset}): the "
                "chains disagree (Vehtari et al. 2021). Run longer (n_steps, warmup), start the "
                "chains from dispersed points, and look for several modes or a chain stuck in one "
                "region."
            )
        threshold = ESS_PER_CHAIN * positions.shape[1]
        ess = np.fmin(stats["ess_bulk"], stats["ess_tail"])
        low = np.flatnonzero(ess < threshold)
        if low.size:
            worst = low[np.argsort(ess[low], kind="stable")][:_SHOW]
            shown = [
                f"{names[i]} bulk {stats['ess_bulk'][i]:.0f} / tail {stats['ess_tail'][i]:.0f}"
                for i in worst
            ]
            out.append(
                f"effective sample size below {ESS_PER_CHAIN} per chain ({threshold} for "
                f"{positions.shape[1]} chains) for {low.size} of {ess.size} parameters "
                f"(worst: {_listing(shown, low.size)}{subset}): means and quantiles are not "
                "reliable yet (Vehtari et al. 2021). Run more steps (n_steps), or mix faster "
                "(a longer warm-up, or Warmup(trajectory_length=...))."
            )
    bfmi = trace_e_bfmi(trace) if n_steps >= MIN_STEPS else None
    if bfmi is not None:
        low = np.flatnonzero(bfmi < E_BFMI_LOW)
        if low.size:
            shown = [f"chain {c} {bfmi[c]:.2f}" for c in low[:_SHOW]]
            beta = trace_refresh_fraction(trace)
            scaled = "" if np.all(beta == 1) else ", divided by the partial refresh's beta"
            out.append(
                f"E-BFMI below {E_BFMI_LOW} for {low.size} of {n_chains} chains "
                f"({_listing(shown, low.size)}{scaled}): the momentum refresh moves the energy "
                "too little, against its spread over the target, to explore the target's "
                "energy levels, so the tails are explored slowly (Betancourt 2016; "
                "docs/design.md §6.1). A reparametrisation (e.g. non-centred) or a better "
                "mass may help."
            )
    non_finite = np.asarray(trace.non_finite_rungs)
    count = int(non_finite.sum())
    if count:
        steps_hit = int((non_finite > 0).sum())
        out.append(
            f"{count} rungs in {steps_hit} of {rungs.size} steps ({steps_hit / rungs.size:.1%}) "
            "met a non-finite energy (nan or inf) and were rejected as density zero: the "
            "trajectory diverged, or left the target's domain. A few cost little; many waste "
            "gradients and slow mixing: lower step_size (or raise warm-up's target_prob), and "
            "check the energy's domain (transform constrained parameters to the real line) and "
            "its overflow in the tails."
        )
    return out


def check_trace(trace: Any, *, stacklevel: int | None = None) -> list[str]:
    """Warn (:class:`SamplingWarning`, one per problem) about a run that went bad.

    Checked, on the kept draws and the per-step statistics:

    * at least 50 % of all steps ended in a flip (rung code 0), or a chain never
      moved (every step a flip or a stay, or its positions never changed) — at
      least 10 steps;
    * rank-normalised split R̂ (bulk and folded) above 1.01 for some parameter;
    * bulk or tail ESS below 100 per chain for some parameter (Vehtari et al.
      2021, as Stan and ArviZ);
    * E-BFMI below 0.3 for some chain, divided by ``β`` for a partial refresh — only for
      a kernel that refreshes a Gaussian momentum (docs/design.md §6.1);
    * non-finite energies met (``trace.non_finite_rungs``).

    Nothing for a trace without steps. ``sample`` and ``resume`` call this on
    their result unless ``checks=False`` (outside ``trace.wall_time``).

    Parameters
    ----------
    trace : Trace
    stacklevel : int, optional
        As for ``warnings.warn``; by default the first caller outside ``ladder_mcmc``
        (the line that called ``check_trace``, ``sample`` or ``resume``).

    Returns
    -------
    list of str
        The messages warned.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from ladder_mcmc import hmc, sample
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> t = IllConditionedGaussian(2, log_condition=0)
    >>> trace = sample(hmc(t, 4.0, 10, 1.0), t.sample(4, np.random.default_rng(0)), 200,
    ...                seed=1, checks=False)  # step size far too large
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     messages = check_trace(trace)
    >>> messages[0].split(" (")[0]
    '100% of the 800 steps'
    """
    messages = trace_problems(trace)
    if stacklevel is None:
        stacklevel = user_stacklevel()
    for message in messages:
        warnings.warn(message, SamplingWarning, stacklevel=stacklevel)
    return messages
