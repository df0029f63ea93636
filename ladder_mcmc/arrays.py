"""One source for two array libraries: the namespace of a part's inputs, and its loops.

Every built-in part (maps, rules, refreshes, kinetic energies, targets) is written once
against the *namespace* of its inputs: ``xp = namespace(x)`` is :mod:`numpy` for numpy
arrays and :mod:`jax.numpy` for JAX arrays (and the tracers of a function JAX compiles),
and the part calls ``xp.where``, ``xp.exp``, … (docs/design-engine.md). What differs
between the two libraries beyond their functions is here:

* :func:`fori_loop`, :func:`while_loop` — a Python loop on numpy values, ``jax.lax``'s
  loop on JAX ones (a loop whose bound is a traced value must be JAX's);
* :func:`known` — a mask's truth on the host (numpy), ``None`` inside a compiled
  function: a shortcut a part may take on numpy and must not need;
* :func:`set_rows` — ``a[index] = b`` without mutation;
* :func:`special` — the special functions (``erf``, ``ndtri``, the incomplete gamma and
  their inverses), from :mod:`scipy.special` or :mod:`jax.scipy.special`, with the
  inverses JAX lacks, and a faster incomplete gamma, written here.

JAX is never imported by this module: a JAX array can only exist once the user (or the
JAX backend) has imported it.
"""

from __future__ import annotations

import math
import mmap
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import attrs
import numpy as np


def _jax() -> ModuleType | None:
    return sys.modules.get("jax")


def is_jax(value: Any) -> bool:
    """Whether ``value`` is a JAX array or a tracer of one."""
    jax = _jax()
    return jax is not None and isinstance(value, jax.Array)


def is_traced(value: Any) -> bool:
    """Whether ``value`` is a tracer: an abstract value inside a function JAX transforms.

    Validators let tracers through unchecked (they were checked on the host when the
    kernel was built; inside a compiled warm-up the new values are computed, not given).
    """
    jax = _jax()
    return jax is not None and isinstance(value, jax.core.Tracer)


def namespace(*values: Any) -> ModuleType:
    """:mod:`jax.numpy` if any of ``values`` is a JAX array, else :mod:`numpy`."""
    jax = _jax()
    if jax is not None:
        array = jax.Array
        for value in values:
            if isinstance(value, array):
                return jax.numpy
    return np


def known(mask: Any) -> bool | None:
    """The Python truth of a numpy boolean (scalar or 0-d array), or ``None`` for a JAX
    value, unknown until the compiled function runs: ``known(mask.any()) is False`` lets
    the numpy loop skip work that a compiled loop does and discards."""
    if is_jax(mask):
        return None
    return bool(mask)


def _leaves_are_jax(values: Any) -> bool:
    """Whether any leaf of ``values`` (tuples, lists, dicts and attrs instances of arrays)
    is a JAX value."""
    if is_jax(values):
        return True
    if isinstance(values, (tuple, list)):
        return any(_leaves_are_jax(v) for v in values)
    if isinstance(values, dict):
        return any(_leaves_are_jax(v) for v in values.values())
    if attrs.has(type(values)):
        return any(_leaves_are_jax(getattr(values, f.name)) for f in attrs.fields(type(values)))
    return False


def holds_traced(values: Any) -> bool:
    """Whether any leaf of ``values`` (tuples, lists, dicts and attrs instances) is a
    tracer: a part rebuilt inside a compiled function, whose host checks have run."""
    if is_traced(values):
        return True
    if isinstance(values, (tuple, list)):
        return any(holds_traced(v) for v in values)
    if isinstance(values, dict):
        return any(holds_traced(v) for v in values.values())
    if attrs.has(type(values)):
        return any(holds_traced(getattr(values, f.name)) for f in attrs.fields(type(values)))
    return False


def fori_loop(lower: Any, upper: Any, body: Callable[[Any, Any], Any], init: Any) -> Any:
    """``for i in range(lower, upper): init = body(i, init)``; ``jax.lax.fori_loop`` when a
    bound or a leaf of ``init`` is a JAX value (then ``body`` must keep the shapes)."""
    on_host = type(upper) is int and type(init) is tuple  # the common case, checked fast
    if on_host:
        on_host = all(type(v) is np.ndarray for v in init)
    if not on_host and _leaves_are_jax((lower, upper, init)):
        return _jax().lax.fori_loop(lower, upper, body, init)
    value = init
    for i in range(int(lower), int(upper)):
        value = body(i, value)
    return value


def while_loop(cond: Callable[[Any], Any], body: Callable[[Any], Any], init: Any) -> Any:
    """``while cond(value): value = body(value)``; ``jax.lax.while_loop`` for JAX values."""
    if _leaves_are_jax(init):
        return _jax().lax.while_loop(cond, body, init)
    value = init
    while bool(cond(value)):
        value = body(value)
    return value


def set_rows(array: Any, index: Any, values: Any) -> Any:
    """A copy of ``array`` with ``array[index] = values`` (``.at[].set`` for JAX)."""
    if is_jax(array) or is_jax(values):
        xp = namespace(array, values)
        return xp.asarray(array).at[index].set(values)
    out = np.array(array, copy=True)
    out[index] = values
    return out


#: the widest row XLA on CPU reduces in one operation fused with what it reads (a wider
#: one it splits into a reduce-window and a reduce, each an operation of its own)
FOLD_WIDTH = 32


def fold_columns(xp: ModuleType, x: Any) -> Any:
    """``x`` (rows, m) with its columns added :data:`FOLD_WIDTH` at a time (elementwise,
    zero-padded): the same row sums (up to rounding), at most ``FOLD_WIDTH`` columns
    wide, so that a compiled reduction over them is one fused operation (up to
    ``FOLD_WIDTH²`` columns; wider rows as they are)."""
    m = x.shape[1]
    pieces = -(-m // FOLD_WIDTH)
    if pieces <= 1 or pieces > FOLD_WIDTH:
        return x
    out = x[:, :FOLD_WIDTH]
    for i in range(1, pieces):
        piece = x[:, i * FOLD_WIDTH : (i + 1) * FOLD_WIDTH]
        if piece.shape[1] < FOLD_WIDTH:
            piece = xp.pad(piece, ((0, 0), (0, FOLD_WIDTH - piece.shape[1])))
        out = out + piece
    return out


def float_dtype(xp: ModuleType) -> Any:
    """The float type of a namespace's computations: float64 (JAX runs under x64)."""
    return xp.float64


# ---- special functions -----------------------------------------------------------------


#: the shapes the inverse incomplete gamma functions on JAX values are checked for: within
#: ``1e-10`` of SciPy's, relative, for ``p`` in ``[2⁻⁵³, 1 − 2⁻⁵³]`` (below the smallest,
#: ``P⁻¹(a, 2⁻⁵³)`` is below float64's smallest normal number)
MIN_GAMMA_SHAPE = 0.06
MAX_GAMMA_SHAPE = 5.0
#: Halley steps of the upper inversion (float64 rounding for shapes up to 5)
HALLEY_STEPS = 8
#: below this shape the upper inversion is used only for ``q`` below :data:`SMALL_SHAPE_Q`
#: (above it the root is tiny, Halley's start poor, and ``log P`` of ``p = 1 − q``
#: inverts it); from it on, for ``q ≤ ½``
SMALL_SHAPE = 0.5
SMALL_SHAPE_Q = 0.05
#: terms of the series (``P``, below ``x = a + 1``) and of the continued fraction (``Q``,
#: above) of the incomplete gamma functions on JAX values: a fixed number, so that XLA
#: fuses them into one operation (within ``1e-12`` of SciPy's, relative, over the shapes
#: above and every ``x``); fewer, :data:`FEW_TERMS`, for a known shape in ``[0.5, 2]``
SERIES_TERMS = 40
FRACTION_TERMS = 80
FEW_TERMS = (25, 50)


class _JaxSpecial:
    """The special functions of :mod:`scipy.special` the package uses, for JAX values.

    ``erfcinv``, ``gammaincinv`` and ``gammainccinv`` are not in :mod:`jax.scipy.special`;
    they are computed here (a few Newton or Halley steps from good starting points), with
    ``gammainc`` and ``gammaincc`` of a fixed number of terms (JAX's own loop until every
    value converges), to float64 rounding: within ``1e-10`` of SciPy's, relative
    (``2e-13`` seen), for ``p`` in ``[2⁻⁵³, 1 − 2⁻⁵³]`` and shapes from
    :data:`MIN_GAMMA_SHAPE` to :data:`MAX_GAMMA_SHAPE` (the package's: ``1/a`` of a power
    kinetic energy, in ``[0.5, 1)``); other shapes are refused (:func:`check_gamma_shape`).
    """

    def __init__(self, jax: ModuleType) -> None:
        self._s = jax.scipy.special
        self._np = jax.numpy
        self._lax = jax.lax

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)

    def gammainc(self, a: Any, x: Any) -> Any:
        """``P(a, x)``, the regularised lower incomplete gamma function."""
        return self._incomplete(a, x)[0]

    def gammaincc(self, a: Any, x: Any) -> Any:
        """``Q(a, x) = 1 − P(a, x)``, computed apart where it is the smaller."""
        return self._incomplete(a, x)[1]

    def _incomplete(self, a: Any, x: Any) -> tuple[Any, Any]:
        """``(P(a, x), Q(a, x))`` with a fixed number of terms (no loop: XLA fuses it; its own
        ``igamma`` loops until every value has converged): for
        ``x < a + 1`` the series ``P = xᵃe⁻ˣ/Γ(a) · Σₙ xⁿ/(a(a+1)…(a+n))``, else the
        continued fraction of ``Q`` (Legendre's), both summed from their last term back; the
        other as one minus it (above ``10⁻²`` there, so two digits at most are lost). A
        known shape outside ``[MIN_GAMMA_SHAPE, MAX_GAMMA_SHAPE]`` takes JAX's functions; a
        traced one is not checked (beyond the range the sums are too short)."""
        xp, s = self._np, self._s
        if not is_traced(a) and _out_of_range(a) is not None:
            return s.gammainc(a, x), s.gammaincc(a, x)
        terms = _steps(a, FEW_TERMS[0], SERIES_TERMS)
        depth = _steps(a, FEW_TERMS[1], FRACTION_TERMS)
        a, x = xp.broadcast_arrays(xp.asarray(a, dtype=xp.float64), xp.asarray(x, dtype=xp.float64))
        below = x < a + 1.0
        # both evaluated from their last term back, each a chain of operations with one
        # consumer apiece, which XLA fuses (Lentz's forward evaluation it cannot)
        series_x = xp.where(below, x, 0.0)
        total = xp.ones_like(x)
        for n in range(terms, 0, -1):  # 1 + x/(a+1) (1 + x/(a+2) (1 + …))
            total = 1.0 + series_x / (a + n) * total
        total = total / a
        fraction_x = xp.where(below, a + 2.0, x)  # (a point where the fraction converges)
        h = fraction_x + (2 * depth + 1) - a
        for i in range(depth, 0, -1):  # b₀ + a₁/(b₁ + a₂/(b₂ + …))
            h = fraction_x + (2 * i - 1) - a - i * (i - a) / h
        h = 1.0 / h
        log_gamma = s.gammaln(a)
        p = xp.exp(a * xp.log(x) - x - log_gamma) * total
        q = xp.exp(a * xp.log(fraction_x) - fraction_x - log_gamma) * h
        p, q = xp.where(below, p, 1.0 - q), xp.where(below, 1.0 - p, q)
        p = xp.where(x == 0.0, 0.0, xp.where(x == xp.inf, 1.0, p))
        q = xp.where(x == 0.0, 1.0, xp.where(x == xp.inf, 0.0, q))
        return p, q

    def erfcinv(self, q: Any) -> Any:
        """``erfc⁻¹(q) = −Φ⁻¹(q/2)/√2``."""
        return -self._s.ndtri(0.5 * q) / math.sqrt(2.0)

    def gammaincinv(self, a: Any, p: Any) -> Any:
        """``y`` with ``P(a, y) = p`` (regularised lower incomplete gamma)."""
        check_gamma_shape(a)
        xp = self._np
        p = xp.asarray(p, dtype=xp.float64)
        q = 1.0 - p  # exact where the upper inversion takes it (p ≥ ½)
        upper = q < _upper_below(xp, a)
        return self._inverse(a, p, q, upper)

    def gammainccinv(self, a: Any, q: Any) -> Any:
        """``y`` with ``Q(a, y) = q`` (regularised upper incomplete gamma)."""
        check_gamma_shape(a)
        xp = self._np
        q = xp.asarray(q, dtype=xp.float64)
        upper = q < _upper_below(xp, a)
        return self._inverse(a, 1.0 - q, q, upper)

    def _inverse(self, a: Any, p: Any, q: Any, upper: Any) -> Any:
        """``y`` with ``Q(a, y) = q`` where ``upper``, else with ``P(a, y) = p`` (the other of
        the two read as ½ there): one loop of both iterations, each value's ``(P, Q)``
        evaluated once a step at its own iterate.

        * lower: Newton's method on ``log P`` against ``log y`` (concave: it never
          overshoots), from the series root ``y^a/Γ(a+1) = p``, which lies below the root
          (``P(a, y) ≤ y^a/Γ(a+1)``);
        * upper: Halley's method from Wilson–Hilferty's start (for small ``q`` at least the
          tail's ``y ≈ −log(q Γ(a)) + (a − 1) log y``).

        Four steps reach float64 rounding for a known shape in ``[0.5, 2]``; elsewhere both
        tails take :data:`HALLEY_STEPS` (Newton's needs six). The steps are a loop, each
        one fused operation: its code once, small enough to stay in the CPU's caches
        (unrolled, it did not: ``benchmarks/results/engine.md``)."""
        xp, s = self._np, self._s
        shape = a  # (as given: a number known here takes fewer steps and terms)
        steps = max(_steps(shape, 4, 6), _steps(shape, 4, HALLEY_STEPS))
        a = xp.asarray(a, dtype=xp.float64)
        p = xp.where(upper, 0.5, xp.asarray(p, dtype=xp.float64))
        q = xp.where(upper, xp.asarray(q, dtype=xp.float64), 0.5)
        log_gamma = s.gammaln(a)
        log_p = xp.log(xp.clip(p, 1e-300, 1.0))
        u = (log_p + s.gammaln(a + 1.0)) / a  # the lower iterate, log y
        z = s.ndtri(xp.clip(1.0 - q, 1e-300, 1.0 - 1e-16))
        t = 1.0 / (9.0 * a)
        wilson = a * (1.0 - t + z * xp.sqrt(t)) ** 3
        tail = -xp.log(xp.clip(q, 1e-300, 1.0)) - log_gamma
        tail = tail + (a - 1.0) * xp.log(xp.maximum(tail, 1.0))
        series = xp.exp((xp.log(xp.clip(1.0 - q, 1e-300, 1.0)) + s.gammaln(a + 1.0)) / a)
        y = xp.where(wilson > 0, wilson, series)
        y = xp.where((q < 0.05) & (tail > a), tail, y)  # the tail's, well beyond the mode
        y = xp.maximum(y, 1e-300)  # the upper iterate

        def step(_, uy):
            u, y = uy
            at = xp.where(upper, y, xp.exp(u))
            lower, upper_q = self._incomplete(shape, at)
            slope = xp.exp(a * u - at - log_gamma) / lower  # d log P / d log y
            u = xp.where(upper, u, u - (xp.log(lower) - log_p) / slope)
            ratio = (q - upper_q) / xp.exp((a - 1.0) * xp.log(y) - y - log_gamma)
            bend = 1.0 - 0.5 * ratio * ((a - 1.0) / y - 1.0)
            y_new = y - ratio / xp.where(xp.abs(bend) > 0.5, bend, 1.0)
            return u, xp.where(upper, xp.where(y_new > 0, y_new, 0.5 * y), y)

        u, y = self._lax.fori_loop(0, steps, step, (u, y))
        y_lower = xp.where(p >= 1.0, xp.inf, xp.where(p <= 0.0, 0.0, xp.exp(u)))
        y_upper = xp.where(q <= 0.0, xp.inf, xp.where(q >= 1.0, 0.0, y))
        return xp.where(upper, y_upper, y_lower)


def _steps(a: Any, few: int, many: int) -> int:
    """``few`` (iterations, or terms of a sum) for a known shape in ``[0.5, 2]``, else
    ``many``."""
    if is_traced(a):
        return many
    values = np.asarray(a)
    return few if bool(np.all((values >= 0.5) & (values <= 2.0))) else many


def _upper_below(xp: ModuleType, a: Any) -> Any:
    """The ``q = 1 − p`` below which the upper inversion is used: ½, or
    :data:`SMALL_SHAPE_Q` for shapes below :data:`SMALL_SHAPE`."""
    return xp.where(xp.asarray(a) < SMALL_SHAPE, SMALL_SHAPE_Q, 0.5)


def inverse_gamma_tails(xp: ModuleType, a: Any, p: Any, q: Any) -> Any:
    """``y`` with ``P(a, y) = p`` where ``p ≤ ½``, else with ``Q(a, y) = q`` (``q = 1 − p``
    given apart, accurate in the upper tail): each tail inverted where it is accurate,
    one inversion per value on JAX (there ``p`` up to ``1 −`` :data:`SMALL_SHAPE_Q` for a
    shape below :data:`SMALL_SHAPE`)."""
    functions = special(xp)
    if xp is np:
        with np.errstate(all="ignore"):
            small = functions.gammaincinv(a, np.minimum(p, 0.5))
            large = functions.gammainccinv(a, np.minimum(q, 0.5))
        return xp.where(p <= 0.5, small, large)
    check_gamma_shape(a)
    upper = (p > 0.5) & (q < _upper_below(xp, a))
    return functions._inverse(a, p, q, upper)


def check_gamma_shape(a: Any) -> None:
    """Refuse (``ValueError``) a known shape outside ``[MIN_GAMMA_SHAPE, MAX_GAMMA_SHAPE]``
    for the inverse incomplete gamma functions on JAX values (a traced shape is not
    checked)."""
    bad = None if is_traced(a) else _out_of_range(a)
    if bad is not None:
        raise ValueError(
            f"shape must be in [{MIN_GAMMA_SHAPE}, {MAX_GAMMA_SHAPE}] for the inverse incomplete "
            f"gamma function on the JAX backend, got {bad!r}: sample on the numpy "
            "backend (backend='numpy')"
        )


def _out_of_range(a: Any) -> float | None:
    """A known shape's first value outside ``[MIN_GAMMA_SHAPE, MAX_GAMMA_SHAPE]``, or None."""
    values = np.asarray(a, dtype=np.float64).reshape(-1)
    bad = values[~((values >= MIN_GAMMA_SHAPE) & (values <= MAX_GAMMA_SHAPE))]
    return float(bad[0]) if bad.size else None


_SPECIAL: dict[str, Any] = {}


def special(xp: ModuleType) -> Any:
    """The special functions for namespace ``xp``: :mod:`scipy.special` for numpy; for
    :mod:`jax.numpy`, :mod:`jax.scipy.special` with ``erfcinv``, ``gammaincinv`` and
    ``gammainccinv`` added, and ``gammainc`` and ``gammaincc`` replaced: accurate for the
    shapes from :data:`MIN_GAMMA_SHAPE` to :data:`MAX_GAMMA_SHAPE` (a traced shape is not
    checked), and not meant to be differentiated."""
    if xp is np:
        found = _SPECIAL.get("numpy")
        if found is None:
            from scipy import special as scipy_special  # imported when first needed

            found = _SPECIAL["numpy"] = scipy_special
        return found
    found = _SPECIAL.get("jax")
    if found is None:
        found = _SPECIAL["jax"] = _JaxSpecial(_jax())
    return found


#: ``attrs.field(metadata=TRACED)``: a number field a compiled loop takes as an argument (a
#: traced value) rather than a constant, so that a warm-up may change it without a new
#: compilation (a step size, a number of leapfrog steps). Array fields always are.
TRACED: dict[str, bool] = {"traced": True}


def release_rows(store: np.memmap, row_lo: int, row_hi: int) -> None:
    """Write rows ``[row_lo, row_hi)`` of a memory-mapped store to disk and unmap their pages.

    Only whole pages inside the rows' bytes (and before them) are released; a
    page shared with a later row stays. Released pages are read back from the
    file if ever touched again, so this never loses data.
    """
    mm = getattr(store, "_mmap", None)
    if mm is None or row_hi <= row_lo:
        return
    row_bytes = store.strides[0]
    start_of_data = store.offset % mmap.ALLOCATIONGRANULARITY  # see numpy.memmap.__new__
    page = mmap.PAGESIZE
    lo = (start_of_data + row_lo * row_bytes) // page * page
    hi = (start_of_data + row_hi * row_bytes) // page * page
    if hi <= lo:
        return
    mm.flush(lo, hi - lo)
    if hasattr(mm, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


__all__ = [
    "FOLD_WIDTH",
    "TRACED",
    "float_dtype",
    "fold_columns",
    "fori_loop",
    "holds_traced",
    "inverse_gamma_tails",
    "is_jax",
    "is_traced",
    "known",
    "release_rows",
    "namespace",
    "set_rows",
    "special",
    "while_loop",
]
