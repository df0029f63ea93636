"""Runs that go bad say so: warnings after sampling, a gradient check before.

* :func:`check_trace` — after a run (``sample`` and ``resume`` call it), one
  :class:`SamplingWarning` per problem seen, each with the numbers and what to change:
  most steps ending in a flip, a chain that never moved, chains that disagree
  (rank-normalised split R̂ > 1.01), too few effective draws (bulk or tail ESS
  < 100 per chain; Vehtari et al. 2021), non-finite energies met;
* :func:`check_gradient` — the target's gradient against central finite
  differences of its energy; a clearly wrong gradient (sign, scale, coordinate
  order, a missing term) raises ``ValueError``. ``sample`` runs it on up to 4
  initial points when the kernel's map is a leapfrog with a target.

``sample(..., checks=False)`` (and ``resume(..., checks=False)``) turns both off.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ladder_mcmc.diagnostics import posterior_statistics
from ladder_mcmc.hmc import Leapfrog
from ladder_mcmc.ladder import LadderState
from ladder_mcmc.summary import default_names
from ladder_mcmc.trace import _release_rows

__all__ = [
    "SamplingWarning",
    "check_gradient",
    "check_kernel_gradient",
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
GRADIENT_RTOL = 1e-3
"""Relative tolerance of :func:`check_gradient` (above the finite differences' rounding floor)."""

_SHOW = 3  # parameters or chains named in a message
_BLOCK_ELEMENTS = 1 << 20  # floats per batch of finite-difference points, per energy call
_STEP_FACTORS = (1.0, 0.1, 10.0, 0.01, 0.001)  # finite-difference steps tried, × the first
_NOISE = 1e3 * np.finfo(float).eps  # relative rounding error allowed in one energy value


class SamplingWarning(UserWarning):
    """A run whose draws should not be trusted as they are (see :func:`check_trace`).

    Silence it with ``sample(..., checks=False)`` or
    ``warnings.filterwarnings("ignore", category=SamplingWarning)``.
    """


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
            _release_rows(positions, lo, hi)
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
        names = default_names(positions.shape[2])
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
                "(warmup=..., trajectory_length=...)."
            )
    non_finite = np.asarray(trace.non_finite_rungs)
    count = int(non_finite.sum())
    if count:
        steps_hit = int((non_finite > 0).sum())
        out.append(
            f"{count} rungs in {steps_hit} of {rungs.size} steps ({steps_hit / rungs.size:.1%}) "
            "had a non-finite energy (nan or inf, counted as density zero). The target is "
            "undefined or overflows where the chains go: check the energy's domain (transform "
            "constrained parameters to the real line) and its overflow in the tails, or lower "
            "step_size."
        )
    return out


def check_trace(trace: Any, *, stacklevel: int = 2) -> list[str]:
    """Warn (:class:`SamplingWarning`, one per problem) about a run that went bad.

    Checked, on the kept draws and the per-step statistics:

    * at least 50 % of all steps ended in a flip (rung code 0), or a chain never
      moved (every step a flip or a stay, or its positions never changed) — at
      least 10 steps;
    * rank-normalised split R̂ (bulk and folded) above 1.01 for some parameter;
    * bulk or tail ESS below 100 per chain for some parameter (Vehtari et al.
      2021, as Stan and ArviZ);
    * non-finite energies met (``trace.non_finite_rungs``).

    Nothing for a trace without steps. ``sample`` and ``resume`` call this on
    their result unless ``checks=False`` (outside ``trace.wall_time``).

    Parameters
    ----------
    trace : Trace
    stacklevel : int
        As for ``warnings.warn`` (2: the caller of ``check_trace``).

    Returns
    -------
    list of str
        The messages warned.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from ladder_mcmc import hmc, sample
    >>> from ladder_mcmc.targets import IllConditionedGaussian
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
    for message in messages:
        warnings.warn(message, SamplingWarning, stacklevel=stacklevel)
    return messages


# ------------------------------------------------------------------------ before a run
def _gradient_sources(target: Any) -> list[tuple[str, Any]]:
    """``(label, x -> gradient)`` for each way the target gives its gradient."""
    out = []
    if callable(getattr(target, "grad", None)):
        out.append(("target.grad", target.grad))
    both = getattr(target, "energy_and_grad", None)
    if callable(both):
        out.append(("target.energy_and_grad", lambda x: both(x)[1]))
    return out


def _energy_function(target: Any):
    """The energy the leapfrog uses: ``energy_and_grad``'s if the target has it, else ``energy``."""
    both = getattr(target, "energy_and_grad", None)
    if callable(both):
        return lambda x: both(x)[0]
    return target.energy


def _central_differences(
    energy, x: np.ndarray, h: np.ndarray, coords: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(E(x + h_i e_i) − E(x − h_i e_i)) / (2 h_i)`` for coordinates ``coords`` of every point.

    Returns the differences (chains, len(coords)) and the rounding floor of each
    (``_NOISE · max|E| / h``), in batches of points, one energy call per batch.
    """
    n, dim = x.shape
    per = max(1, _BLOCK_ELEMENTS // (2 * n * dim))
    fd = np.empty((n, coords.size))
    floor = np.empty((n, coords.size))
    chains = np.arange(n)[None, :]
    for lo in range(0, coords.size, per):
        block = coords[lo : lo + per]
        b = block.size
        points = np.broadcast_to(x, (2, b, n, dim)).copy()
        step = h[:, block].T  # (b, n)
        points[0, np.arange(b)[:, None], chains, block[:, None]] += step
        points[1, np.arange(b)[:, None], chains, block[:, None]] -= step
        width = (
            points[0, np.arange(b)[:, None], chains, block[:, None]]
            - points[1, np.arange(b)[:, None], chains, block[:, None]]
        )
        e = np.asarray(energy(points.reshape(2 * b * n, dim)), dtype=float)
        if e.shape != (2 * b * n,):
            raise _ShapeError(f"the energy returned shape {e.shape} for {2 * b * n} points")
        e = e.reshape(2, b, n)
        fd[:, lo : lo + b] = ((e[0] - e[1]) / width).T
        floor[:, lo : lo + b] = (2 * _NOISE * np.maximum(np.abs(e[0]), np.abs(e[1])) / width).T
    return fd, floor


class _ShapeError(ValueError):
    pass


def _gradient_error(analytic: np.ndarray, numeric: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """Disagreement in units of the tolerance: ``|g − fd| / (rtol·max(|g|, |fd|) + floor)``;
    above 1 is a disagreement (NaN if the difference is not finite)."""
    scale = GRADIENT_RTOL * np.maximum(np.abs(analytic), np.abs(numeric)) + floor
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(analytic - numeric) / scale


def _hint(g: np.ndarray, fd: np.ndarray, i: int) -> str:
    """A guess at what is wrong, from one point's gradient ``g`` and differences ``fd``."""
    if fd[i] == 0:
        return "the energy does not change along this coordinate"
    ratio = g[i] / fd[i]
    if abs(ratio + 1) < 0.05:
        return "the sign looks flipped"
    if abs(ratio - 2) < 0.1 or abs(ratio - 0.5) < 0.025:
        return "off by a factor of 2"
    finite = np.isfinite(g) & np.isfinite(fd)
    if finite.sum() > 1 and np.allclose(
        np.sort(g[finite]), np.sort(fd[finite]), rtol=1e-2, atol=1e-8
    ):
        return "the right values in another coordinate order"
    return f"ratio {ratio:.4g}"


def _examine(target: Any, x: np.ndarray, every_point: bool = False) -> tuple[str, str]:
    """``(status, message)`` for the gradient of ``target`` at ``x``.

    ``status``: ``"ok"``; ``"wrong"`` (disagrees with the finite differences);
    ``"non-finite"`` (a gradient not finite where the energy is); ``"unchecked"``
    (nothing could be compared: no gradient, no finite energy, a wrong shape).
    ``every_point``: unchecked unless the energy is finite at every point.
    """
    sources = _gradient_sources(target)
    if not sources:
        return "unchecked", "the target has neither grad nor energy_and_grad"
    energy = _energy_function(target)
    with np.errstate(all="ignore"):
        e0 = np.asarray(energy(x), dtype=float)
        grads = [(label, np.asarray(fn(x), dtype=float)) for label, fn in sources]
    if e0.shape != (x.shape[0],):
        return "unchecked", f"the energy returned shape {e0.shape} for x of shape {x.shape}"
    for label, g in grads:
        if g.shape != x.shape:
            return "unchecked", f"{label} returned shape {g.shape} for x of shape {x.shape}"
    rows = np.isfinite(e0)
    if every_point and not rows.all():
        return "unchecked", "the energy is not finite at every point"
    for label, g in grads:
        bad = rows & ~np.isfinite(g).all(axis=1)
        if bad.any():
            return "non-finite", (
                f"{label} is not finite at points {np.flatnonzero(bad).tolist()} where the "
                "energy is finite"
            )
    if not rows.any():
        return "unchecked", "the energy is not finite at any of the points"
    x = x[rows]
    grads = [(label, g[rows]) for label, g in grads]
    h0 = np.finfo(float).eps ** (1 / 3) * np.maximum(np.abs(x), 1.0)  # per point and coordinate
    best = [np.full(x.shape, np.inf) for _ in grads]  # smallest error over the steps tried
    best_fd = [np.full(x.shape, np.nan) for _ in grads]  # the differences that gave it
    best_h = [np.full(x.shape, np.nan) for _ in grads]
    first_fd = np.full(x.shape, np.nan)  # with the first step (every coordinate), to report
    try:
        with np.errstate(all="ignore"):
            for factor in _STEP_FACTORS:
                pending = np.zeros(x.shape[1], dtype=bool)
                for b in best:
                    pending |= (b > 1).any(axis=0)
                coords = np.flatnonzero(pending)
                if coords.size == 0:
                    break
                fd, floor = _central_differences(energy, x, h0 * factor, coords)
                if factor == _STEP_FACTORS[0]:
                    first_fd[:, coords] = fd
                for k, (_label, g) in enumerate(grads):
                    err = _gradient_error(g[:, coords], fd, floor)
                    sub = best[k][:, coords]
                    better = np.isfinite(err) & (err < sub)
                    sub[better] = err[better]
                    best[k][:, coords] = sub
                    for store, value in ((best_fd[k], fd), (best_h[k], h0[:, coords] * factor)):
                        part = store[:, coords]
                        part[better] = value[better]
                        store[:, coords] = part
    except _ShapeError as err:
        return "unchecked", str(err)
    worst_k, worst_ratio, worst_at = -1, 1.0, (0, 0)
    failing = np.zeros(x.shape[1], dtype=bool)
    for k, b in enumerate(best):
        wrong = np.isfinite(b) & (b > 1)  # inf: no finite difference could be formed
        failing |= wrong.any(axis=0)
        if wrong.any():
            at = np.unravel_index(np.argmax(np.where(wrong, b, -np.inf)), b.shape)
            if b[at] > worst_ratio:
                worst_k, worst_ratio, worst_at = k, float(b[at]), at
    if worst_k < 0:
        return "ok", ""
    label, g = grads[worst_k]
    c, i = int(worst_at[0]), int(worst_at[1])
    # report the first step's differences, unless they were not finite
    fd_row = np.where(np.isfinite(first_fd[c]), first_fd[c], best_fd[worst_k][c])
    h = h0[c, i] if np.isfinite(first_fd[c, i]) else best_h[worst_k][c, i]
    checked_rows = np.flatnonzero(rows)
    return "wrong", (
        f"the gradient of {type(target).__name__} disagrees with finite differences of its "
        f"energy at {int(failing.sum())} of {x.shape[1]} coordinates. Worst: point "
        f"{int(checked_rows[c])}, coordinate {i} (x = {x[c, i]:.6g}): {label} gives "
        f"{g[c, i]:.6g}, the central difference (E(x + h e_{i}) − E(x − h e_{i})) / 2h gives "
        f"{fd_row[i]:.6g} (h = {h:.2g}; {_hint(g[c], fd_row, i)}). The "
        "gradient must be ∂E/∂x of the energy, coordinates in the same order; a wrong one "
        "makes the sampler fail. sample(..., checks=False) skips this check."
    )


def check_gradient(target: Any, x: np.ndarray) -> None:
    """Compare the target's gradient with central finite differences of its energy at ``x``.

    For every point and coordinate ``i``,
    ``fd_i = (E(x + h_i e_i) − E(x − h_i e_i)) / (2 h_i)`` with
    ``h_i = ε^{1/3} max(|x_i|, 1)`` (``ε`` the float64 machine epsilon): two
    energy evaluations per coordinate, batched. The gradient (``target.grad``
    and ``target.energy_and_grad``, whichever the target has) agrees where
    ``|g_i − fd_i| ≤ 10⁻³ max(|g_i|, |fd_i|) + 10³ ε max|E(x ± h_i e_i)| / h_i``:
    a relative error with a floor at the differences' rounding error, so that
    the small components of an ill-conditioned target pass. Coordinates that
    disagree are tried again with steps ``h_i × 0.1, 10, 0.01, 0.001`` (for
    curvature on a smaller scale than ``x``, or a noisy energy); any agreement
    passes. The energy differentiated is the one the leapfrog uses
    (``energy_and_grad``'s if the target has it, else ``energy``).

    Parameters
    ----------
    target : Target
        ``energy`` and ``grad`` (or ``energy_and_grad``) on batches (chains, dim).
    x : array (chains, dim)
        Points at which to compare, e.g. initial positions.

    Raises
    ------
    ValueError
        If the gradient disagrees (wrong sign, scale, coordinate order, a
        missing term): the message shows the analytic and finite-difference
        values at the worst coordinate. Also if ``x`` is not a finite
        (chains, dim) array, the target has no gradient, the energy is finite
        at none of the points, or the gradient is not finite where the energy is.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc.targets import FunctionTarget, IllConditionedGaussian
    >>> target = IllConditionedGaussian(3, log_condition=6)
    >>> check_gradient(target, target.sample(4, np.random.default_rng(0)))  # passes
    >>> wrong = FunctionTarget(target.energy, lambda x: -target.grad(x))
    >>> check_gradient(wrong, np.ones((2, 3)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the gradient of FunctionTarget disagrees ... (h = ...; the sign looks flipped)...
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must be an array of shape (chains, dim), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"x must be finite; points {np.flatnonzero(~np.isfinite(x).all(1))}")
    status, message = _examine(target, x)
    if status == "unchecked":
        raise ValueError(f"cannot check the gradient: {message}")
    if status != "ok":
        raise ValueError(message)


def check_kernel_gradient(kernel: Any, init: Any, max_points: int = 4) -> None:
    """:func:`check_gradient` on up to ``max_points`` initial points, if the kernel has a gradient.

    Only for kernels whose map is a :class:`~ladder_mcmc.hmc.Leapfrog` (or a
    subclass) with a target that has ``grad`` or ``energy_and_grad``; silently
    nothing otherwise, and for initial values the kernel itself will refuse
    (wrong shape, non-finite positions or energies: ``Ladder.init`` says why).
    ``sample`` calls this before warm-up and sampling unless ``checks=False``.

    Raises
    ------
    ValueError
        As :func:`check_gradient`, for a gradient that disagrees.
    """
    map_ = getattr(kernel, "map", None)
    if not isinstance(map_, Leapfrog) or not _gradient_sources(map_.target):
        return
    state = init.state if isinstance(init, LadderState) else init
    try:
        x = np.asarray(getattr(state, "x", state), dtype=float)
    except (TypeError, ValueError):
        return
    dim = getattr(map_.target, "dim", None)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1 or (dim is not None and x.shape[1] != dim):
        return
    rows = np.unique(np.linspace(0, x.shape[0] - 1, min(x.shape[0], max_points)).round())
    x = x[rows.astype(int)]
    x = x[np.isfinite(x).all(axis=1)]
    if x.shape[0] == 0:
        return
    status, message = _examine(map_.target, x, every_point=True)
    if status == "wrong":  # other statuses: Ladder.init refuses these points, with its message
        raise ValueError(message)
