"""The target's gradient against finite differences of its energy, before a run.

:func:`check_gradient` compares a target's gradient with central finite
differences of its energy; a clearly wrong gradient (sign, scale, coordinate
order, a missing term) raises ``ValueError`` naming the coordinate and a guess at
what is wrong. ``sample`` runs it (:func:`check_kernel_gradient`) on up to 4
initial points when the kernel's map is a leapfrog with a target, unless
``checks=False``.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

__all__ = ["GradientCounter", "check_gradient", "check_kernel_gradient", "targets_of"]

GRADIENT_RTOL = 1e-3
"""Relative tolerance of :func:`check_gradient` (above the finite differences' rounding floor)."""

_BLOCK_ELEMENTS = 1 << 20  # floats per block of finite-difference points held at once
_STEP_FACTORS = (1.0, 0.1, 10.0, 0.01, 0.001)  # finite-difference steps tried, × the first
_NOISE = 1e3 * np.finfo(float).eps  # relative rounding error allowed in one float64 energy
# a float32 energy: ten of its epsilons, and no step below a tenth of the first, where
# its rounding error would swamp any difference
_NOISE_SINGLE, _STEP_FACTORS_SINGLE = 10.0, (1.0, 0.1, 10.0)


def _epsilon(*values: Any) -> float:
    """The machine epsilon of the least precise floating-point array among ``values``
    (a float32 energy or gradient rounds some 10⁹ times more coarsely than float64)."""
    eps = np.finfo(float).eps
    for value in values:
        dtype = np.asarray(value).dtype
        if np.issubdtype(dtype, np.floating):
            eps = max(eps, float(np.finfo(dtype).eps))
    return eps


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
    energy, x: np.ndarray, h: np.ndarray, coords: np.ndarray, noise: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(E(x + h_i e_i) − E(x − h_i e_i)) / (2 h_i)`` for coordinates ``coords`` of every point.

    Returns the differences (chains, len(coords)) and the rounding floor of each
    (``noise · max|E| / h``), one energy call per displaced copy of the points.
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
        # one call per set of n points, the size of the energy's first call: a compiled
        # target (models.adapters) then compiles no batch size for this check alone
        e = np.empty((2, b, n))
        for side, k in np.ndindex(2, b):
            values = np.asarray(energy(points[side, k]), dtype=float)
            if values.shape != (n,):
                raise _ShapeError(f"the energy returned shape {values.shape} for {n} points")
            e[side, k] = values
        fd[:, lo : lo + b] = ((e[0] - e[1]) / width).T
        floor[:, lo : lo + b] = (2 * noise * np.maximum(np.abs(e[0]), np.abs(e[1])) / width).T
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
        raw = [energy(x)] + [fn(x) for _label, fn in sources]
    # the energy's own precision: a float32 model promoted to float64 rounds as float32
    eps = max(_epsilon(*raw), float(getattr(target, "precision", 0.0)))
    e0 = np.asarray(raw[0], dtype=float)
    grads = [
        (label, np.asarray(g, dtype=float)) for (label, _), g in zip(sources, raw[1:], strict=True)
    ]
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
    h0 = eps ** (1 / 3) * np.maximum(np.abs(x), 1.0)  # per point and coordinate
    double = eps <= np.finfo(float).eps
    noise = _NOISE if double else _NOISE_SINGLE * eps
    factors = _STEP_FACTORS if double else _STEP_FACTORS_SINGLE
    best = [np.full(x.shape, np.inf) for _ in grads]  # smallest error over the steps tried
    best_fd = [np.full(x.shape, np.nan) for _ in grads]  # the differences that gave it
    best_h = [np.full(x.shape, np.nan) for _ in grads]
    first_fd = np.full(x.shape, np.nan)  # with the first step (every coordinate), to report
    try:
        with np.errstate(all="ignore"):
            for factor in factors:
                pending = np.zeros(x.shape[1], dtype=bool)
                for b in best:
                    pending |= (b > 1).any(axis=0)
                coords = np.flatnonzero(pending)
                if coords.size == 0:
                    break
                fd, floor = _central_differences(energy, x, h0 * factor, coords, noise)
                if factor == factors[0]:
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
    ``h_i = ε^{1/3} max(|x_i|, 1)`` (``ε`` the machine epsilon of the least precise
    of the energy and gradient the target returns: float64's, or float32's): two
    energy evaluations per coordinate, batched. The gradient (``target.grad``
    and ``target.energy_and_grad``, whichever the target has) agrees where
    ``|g_i − fd_i| ≤ 10⁻³ max(|g_i|, |fd_i|) + 10³ ε max|E(x ± h_i e_i)| / h_i``
    (``10 ε`` for a float32 target):
    a relative error with a floor at the differences' rounding error, so that
    the small components of an ill-conditioned target pass. Coordinates that
    disagree are tried again with steps ``h_i × 0.1, 10, 0.01, 0.001`` (float32:
    ``0.1, 10``; for
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
    >>> from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian
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


def targets_of(obj: Any, depth: int = 0) -> list[Any]:
    """The targets a kernel's parts hold (``attrs`` fields named ``target``, at any depth),
    outermost first, each once."""
    found: list[Any] = []
    if depth > 6:
        return found
    if isinstance(obj, (tuple, list)):
        for item in obj:
            found += [t for t in targets_of(item, depth + 1) if all(t is not f for f in found)]
        return found
    if not attrs.has(type(obj)):
        return found
    for field in attrs.fields(type(obj)):
        value = getattr(obj, field.name)
        more = [value] if field.name == "target" else targets_of(value, depth + 1)
        found += [t for t in more if all(t is not f for f in found)]
    return found


def check_kernel_gradient(kernel: Any, init: Any, max_points: int = 4) -> None:
    """:func:`check_gradient` on up to ``max_points`` initial points, for every target the
    kernel's parts hold (:func:`targets_of`) that has ``grad`` or ``energy_and_grad`` and
    whose dimension the initial positions have (``init``, or ``init.x`` of a state, or of a
    kernel state's ``state``); silently nothing otherwise, and for initial values the
    kernel itself will refuse (wrong shape, non-finite positions or energies: ``Ladder.init``
    says why). ``sample`` calls this before warm-up and sampling unless ``checks=False``.

    Raises
    ------
    ValueError
        As :func:`check_gradient`, for a gradient that disagrees.
    """
    state = getattr(init, "state", init)
    try:
        x = np.asarray(getattr(state, "x", state), dtype=float)
    except (TypeError, ValueError):
        return
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        return
    rows = np.unique(np.linspace(0, x.shape[0] - 1, min(x.shape[0], max_points)).round())
    x = x[rows.astype(int)]
    x = x[np.isfinite(x).all(axis=1)]
    if x.shape[0] == 0:
        return
    for target in targets_of(kernel):
        dim = getattr(target, "dim", None)
        if not _gradient_sources(target) or (dim is not None and x.shape[1] != dim):
            continue
        status, message = _examine(target, x, every_point=True)
        if status == "wrong":  # other statuses: Ladder.init refuses these points, with its message
            raise ValueError(message)


class GradientCounter:
    """A target that counts the gradients it evaluates: ``rows``, one per point of every
    ``grad`` or ``energy_and_grad`` call; energies alone are not counted.

    To compare a kernel's recorded cost (``Trace.grad_evals``) with the work it did, or
    to hold samplers to one gradient budget.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> counter = GradientCounter(IllConditionedGaussian(2))
    >>> _ = counter.grad(np.zeros((3, 2))), counter.energy(np.zeros((5, 2)))
    >>> counter.rows
    3
    """

    def __init__(self, target: Any) -> None:
        self.target = target
        self.rows = 0

    @property
    def dim(self) -> int | None:
        return getattr(self.target, "dim", None)

    def energy(self, x: np.ndarray) -> np.ndarray:
        return self.target.energy(x)

    def grad(self, x: np.ndarray) -> np.ndarray:
        self.rows += len(x)
        return self.target.grad(x)

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.rows += len(x)
        both = getattr(self.target, "energy_and_grad", None)
        if both is None:
            return self.target.energy(x), self.target.grad(x)
        return both(x)
