"""Verification toolkit: Hypothesis strategies and assertions for ladder kernels and maps.

Three kinds of check (docs/design.md §7; ``docs/verification.md`` has the recipes):

* **exact**, on finite ladders, in rational arithmetic —
  :func:`assert_stochastic`, :func:`assert_fixed_point`,
  :func:`assert_generalized_detailed_balance` (and :func:`assert_exact`, all
  three at once), fed by the strategy :func:`finite_ladders`;
* **map contracts**, numerically — :func:`check_map` / :func:`assert_map`:
  inverse, flip, volume preservation, determinism, fed by
  :func:`phase_states` for leapfrog-like maps;
* **statistical**, for continuous kernels — :func:`assert_one_step_invariance`:
  start many chains at exact draws of the extended target, take one step, and
  test that the law did not change (the model is TensorFlow Probability's
  target-conservation test).

Every assertion raises :class:`AssertionError` naming the state (or chain, or
feature) and the size of the discrepancy, so it can be used inside pytest and
inside Hypothesis properties alike.

``hypothesis`` is needed only for the strategies (imported lazily); ``scipy``
only for :func:`assert_one_step_invariance`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Literal

import attrs
import numpy as np

from ladder_mcmc import batch
from ladder_mcmc.finite import (
    FiniteLadder,
    IntegerKernel,
    _kernel_parts,
    ladder_kernel,
    refresh_kernel,
)
from ladder_mcmc.ladder import Ladder
from ladder_mcmc.maps import ReversibleMap
from ladder_mcmc.rules import Rule

# =============================================================== strategies


def finite_ladders(
    min_states: int = 1,
    max_states: int = 12,
    max_weight: int = 10,
    construction: Literal["both", "permutation", "involutions"] = "both",
):
    """Hypothesis strategy for random finite ladders (docs/design.md §7.1).

    Parameters
    ----------
    min_states, max_states : int
        Range of the number of base states ``n`` (the extended space has ``2n``).
    max_weight : int
        Weights are integers in ``1 .. max_weight``; small values make ties
        (``p(ζ_a) = p(ζ)``), the edge cases of ``min``/``max`` rules, common.
    construction : {"both", "permutation", "involutions"}
        ``"permutation"``: construction (a), any permutation, any weights
        (:class:`~ladder_mcmc.finite.FiniteLadder`). ``"involutions"``:
        construction (b), ``L = F ∘ G`` with weights constant on ``F``-orbits
        (:meth:`~ladder_mcmc.finite.FiniteLadder.from_involutions`; the map has
        a flip). ``"both"``: either.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of FiniteLadder

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(finite_ladders(max_states=4))
    ... def test(ladder):
    ...     assert 1 <= ladder.n <= 4
    >>> test()
    """
    from hypothesis import strategies as st

    if not 1 <= min_states <= max_states:
        raise ValueError(f"need 1 <= min_states <= max_states, got {min_states}, {max_states}")
    if max_weight < 1:
        raise ValueError(f"max_weight must be >= 1, got {max_weight!r}")
    if construction not in ("both", "permutation", "involutions"):
        raise ValueError(
            f"construction must be 'both', 'permutation' or 'involutions', got {construction!r}"
        )
    # Each structure is drawn as ONE integer and decoded (a permutation by its
    # Lehmer rank, weights as base-``max_weight`` digits): a few draws per example
    # keep Hypothesis's overhead low, and shrinking an integer towards 0 shrinks
    # towards the identity permutation and all-ones weights.

    def permutation(draw, n):
        return _unrank(draw(st.integers(0, math.factorial(n) - 1)), n)

    def digits(draw, count):
        code = draw(st.integers(0, max_weight**count - 1))
        out = []
        for _ in range(count):
            code, r = divmod(code, max_weight)
            out.append(r + 1)
        return out

    def involution(draw, n):
        order = permutation(draw, n)
        pairs = draw(st.integers(0, n // 2))
        inv = list(range(n))
        for k in range(pairs):
            a, b = order[2 * k], order[2 * k + 1]
            inv[a], inv[b] = b, a
        return inv

    @st.composite
    def by_permutation(draw):
        n = draw(st.integers(min_states, max_states))
        return FiniteLadder(permutation(draw, n), digits(draw, n))

    @st.composite
    def by_involutions(draw):
        n = draw(st.integers(min_states, max_states))
        f, g = involution(draw, n), involution(draw, n)
        reps = sorted({min(i, f[i]) for i in range(n)})
        orbit_weight = dict(zip(reps, digits(draw, len(reps)), strict=True))
        weights = [orbit_weight[min(i, f[i])] for i in range(n)]
        return FiniteLadder.from_involutions(f, g, weights)

    if construction == "permutation":
        return by_permutation()
    if construction == "involutions":
        return by_involutions()
    return st.one_of(by_permutation(), by_involutions())


def _unrank(index: int, n: int) -> list[int]:
    """The permutation of ``0 .. n-1`` with Lehmer rank ``index`` (0 = identity)."""
    items, out = list(range(n)), []
    for k in range(n, 0, -1):
        q, index = divmod(index, math.factorial(k - 1))
        out.append(items.pop(q))
    return out


def phase_states(dim: int, n_chains: int = 4, target: Any = None, max_abs: float = 5.0):
    """Hypothesis strategy for random :class:`~ladder_mcmc.hmc.PhaseState` batches.

    Parameters
    ----------
    dim : int
        Dimension of ``x`` and ``v``.
    n_chains : int
        Chains per example.
    target : Target, optional
        If given, ``energy`` and ``grad`` are computed from it (a state ready
        for :class:`~ladder_mcmc.hmc.Leapfrog`). Otherwise they are NaN: fill
        them with ``Leapfrog.prepare(state, rng)``.
    max_abs : float
        ``x`` and ``v`` entries lie in ``[-max_abs, max_abs]``.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of PhaseState
    """
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    from ladder_mcmc.hmc import PhaseState

    coords = arrays(
        np.float64,
        (n_chains, dim),
        elements=st.floats(-max_abs, max_abs, allow_nan=False, allow_infinity=False, width=64),
    )

    @st.composite
    def build(draw):
        x, v = draw(coords), draw(coords)
        if target is None:
            return PhaseState(
                x=x, v=v, energy=np.full(n_chains, np.nan), grad=np.full_like(x, np.nan)
            )
        e = np.asarray(target.energy(x), dtype=float)
        g = np.asarray(target.grad(x), dtype=float)
        return PhaseState(x=x, v=v, energy=e, grad=g)

    return build()


# =============================================================== exact checks


def _name(k: int, n: int) -> str:
    return f"(i={k % n}, d={'+1' if k < n else '-1'})"


def _flip_index(k: int, n: int) -> int:
    return (k + n) % (2 * n)


def _integer_weights(weights: tuple[Fraction, ...]) -> list[int]:
    """Weights times the lcm of their denominators: exact integers, same ratios."""
    scale = math.lcm(*(w.denominator for w in weights))
    return [int(w * scale) for w in weights]


def _check_stochastic(kernel: IntegerKernel, n: int, what: str) -> None:
    den = kernel.denominator
    for k, row in enumerate(kernel.rows):
        for j, p in row.items():
            if p < 0:
                raise AssertionError(
                    f"{what}: negative transition probability T[{_name(k, n)} -> {_name(j, n)}] "
                    f"= {Fraction(p, den)} (the rule's cumulative probabilities must be "
                    "non-decreasing and within [0, 1])"
                )
        total = sum(row.values())
        if total != den:
            raise AssertionError(
                f"{what}: row of state {_name(k, n)} sums to {Fraction(total, den)}, not 1 "
                f"(off by {Fraction(total - den, den)})"
            )


def _check_fixed_point(kernel: IntegerKernel, weights: list[int], what: str) -> None:
    n = len(weights)
    w = weights + weights
    den = kernel.denominator
    inflow = [0] * (2 * n)
    for k, row in enumerate(kernel.rows):
        wk = w[k]
        for j, p in row.items():
            inflow[j] += wk * p
    for j in range(2 * n):
        if inflow[j] != w[j] * den:
            total = 2 * sum(weights)
            got, want = Fraction(inflow[j], den * total), Fraction(w[j], total)
            raise AssertionError(
                f"{what}: πT ≠ π at state {_name(j, n)}: (πT) = {got}, π = {want}, "
                f"difference {got - want}"
            )


def _check_gdb(kernel: IntegerKernel, weights: list[int], what: str) -> None:
    n = len(weights)
    w = weights + weights
    rows = kernel.rows
    for k, row in enumerate(rows):
        fx = _flip_index(k, n)
        for j, p in row.items():
            fy = _flip_index(j, n)
            lhs = w[k] * p
            rhs = w[fy] * rows[fy].get(fx, 0)
            if lhs != rhs:
                scale = 2 * sum(weights) * kernel.denominator
                raise AssertionError(
                    f"{what}: generalized detailed balance fails for x = {_name(k, n)}, "
                    f"y = {_name(j, n)}: p(x) T(x, y) = {Fraction(lhs, scale)} but "
                    f"p(F y) T(F y, F x) = {Fraction(rhs, scale)} "
                    f"(difference {Fraction(lhs - rhs, scale)})"
                )


def assert_stochastic(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> None:
    """Exact: every transition probability is ``≥ 0`` and every row sums to exactly 1.

    Checked on the ladder move and, if ``include_refresh`` and the kernel has a
    refresh, on the whole step. Negative entries come from a rule whose
    cumulative probabilities decrease or leave ``[0, 1]`` (the rule contract).

    Parameters
    ----------
    kernel : Ladder or Rule
        The kernel to check (a bare rule is a kernel without refresh).
    ladder : FiniteLadder, optional
        Defaults to ``kernel.map``.
    include_refresh : bool
        Also check the whole step (ladder move, then refresh).

    Raises
    ------
    AssertionError
        Naming the state (``(i, d)``) and the offending value.

    Examples
    --------
    >>> from ladder_mcmc import LookAhead
    >>> from ladder_mcmc.finite import FiniteLadder
    >>> assert_stochastic(LookAhead(FiniteLadder([1, 2, 0], [1, 2, 3]), max_rungs=3))
    """
    rule, refresh, ladder = _kernel_parts(kernel, ladder)
    move = ladder_kernel(rule, ladder)
    _check_stochastic(move, ladder.n, "ladder move")
    if include_refresh and refresh is not None:
        _check_stochastic(move.then(refresh_kernel(refresh, ladder.n)), ladder.n, "full step")


def assert_fixed_point(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> None:
    """Exact: ``π T = π`` for ``π(i, d) = w_i / (2 Σ w)``, the extended target.

    Checked on the ladder move alone and, if ``include_refresh`` and the kernel
    has a refresh, on the whole step.

    Raises
    ------
    AssertionError
        Naming the first state ``(i, d)`` where ``(πT)`` and ``π`` differ, with
        both values and the difference.

    Examples
    --------
    >>> from ladder_mcmc import LookAhead
    >>> from ladder_mcmc.finite import FiniteLadder
    >>> assert_fixed_point(LookAhead(FiniteLadder([1, 2, 0], [1, 2, 3]), max_rungs=3))
    """
    rule, refresh, ladder = _kernel_parts(kernel, ladder)
    weights = _integer_weights(ladder.weights)
    move = ladder_kernel(rule, ladder)
    _check_fixed_point(move, weights, "ladder move")
    if include_refresh and refresh is not None:
        full = move.then(refresh_kernel(refresh, ladder.n))
        _check_fixed_point(full, weights, "full step")


def assert_generalized_detailed_balance(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None
) -> None:
    """Exact: ``p(x) T(x, y) = p(F y) T(F y, F x)`` for the ladder move, ``F(i, d) = (i, −d)``.

    The paper's generalized detailed balance (section 4.3: ``p(ζ) π_a(ζ) =
    p(F L^a ζ) π_a(F L^a ζ)``), summed over the rungs that reach the same state.
    Summed over ``x`` it gives ``πT = π`` (because ``p(F y) = p(y)`` and rows
    sum to 1), so it is the stronger, more local check.

    It is checked on the ladder move only, **refresh excluded**: the property is
    not preserved by composition (if ``A`` and ``B`` each satisfy it, ``A B``
    satisfies ``p(x)(AB)(x, y) = p(F y)(AB)(F y, F x)`` only if
    ``p(x)(AB)(x, y) = p(x)(BA)(x, y)``, i.e. when they commute), so a correct
    kernel "ladder move then refresh" generally fails it. The refresh is
    covered by :func:`assert_fixed_point`.

    Raises
    ------
    AssertionError
        Naming ``x`` and ``y`` and both sides.

    Examples
    --------
    >>> from ladder_mcmc.finite import FiniteLadder
    >>> from ladder_mcmc.rules import LookAheadRule
    >>> assert_generalized_detailed_balance(LookAheadRule(4), FiniteLadder([1, 2, 0], [1, 2, 3]))
    """
    rule, _, ladder = _kernel_parts(kernel, ladder)
    _check_gdb(ladder_kernel(rule, ladder), _integer_weights(ladder.weights), "ladder move")


def assert_exact(
    kernel: Ladder | Rule, ladder: FiniteLadder | None = None, include_refresh: bool = True
) -> None:
    """All three exact checks, sharing one computation of the matrix (the fast path).

    :func:`assert_stochastic` and :func:`assert_fixed_point` on the ladder move
    and on the full step, :func:`assert_generalized_detailed_balance` on the
    ladder move.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from ladder_mcmc import DirectionRefresh, LookAhead
    >>> from ladder_mcmc.finite import FiniteLadder
    >>> ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    >>> assert_exact(LookAhead(ladder, max_rungs=2, refresh=DirectionRefresh(Fraction(1, 3))))
    """
    rule, refresh, ladder = _kernel_parts(kernel, ladder)
    weights = _integer_weights(ladder.weights)
    move = ladder_kernel(rule, ladder)
    _check_stochastic(move, ladder.n, "ladder move")
    _check_gdb(move, weights, "ladder move")
    _check_fixed_point(move, weights, "ladder move")
    if include_refresh and refresh is not None:
        full = move.then(refresh_kernel(refresh, ladder.n))
        _check_stochastic(full, ladder.n, "full step")
        _check_fixed_point(full, weights, "full step")


def assert_transition_frequencies(
    kernel: Ladder,
    reference: Ladder | np.ndarray | None = None,
    n_per_state: int = 2000,
    n_steps: int = 1,
    schedule: Literal["ragged", "synchronous"] = "ragged",
    seed: int = 0,
    false_alarm: float = 1e-6,
) -> np.ndarray:
    """Statistical: sampled transitions on a finite ladder agree with the exact matrix.

    Starts ``n_per_state`` chains at every extended state ``(i, d)``, runs
    ``n_steps`` steps with :func:`ladder_mcmc.sample` (either driver), and
    compares the counts of final extended states with the exact
    ``T^{n_steps}``: a transition of exact probability 0 must never be seen,
    and every other count must pass an exact two-sided binomial test at level
    ``false_alarm / m`` (Bonferroni over the ``m`` non-zero entries), so a
    correct sampler fails with probability at most ``false_alarm``.

    Parameters
    ----------
    kernel : Ladder
        A kernel on a :class:`~ladder_mcmc.finite.FiniteLadder`, sampled.
    reference : Ladder or array (2n, 2n), optional
        Where the exact matrix comes from: another kernel (e.g. the correct one,
        when ``kernel`` is a suspect variant) or a matrix of Fractions;
        default ``kernel`` itself.
    n_per_state : int
        Chains started at each extended state.
    n_steps : int
        Steps per chain.
    schedule : {"ragged", "synchronous"}
        The driver.
    seed : int
        Seeds the run.
    false_alarm : float
        Total probability that a correct sampler fails.

    Returns
    -------
    counts : int array (2n, 2n)

    Raises
    ------
    AssertionError
        Naming the transition, its count, its expected count and p-value.
    """
    from scipy.stats import binomtest

    from ladder_mcmc.finite import exact_transition_matrix, extended_index
    from ladder_mcmc.sampling import sample

    ladder = kernel.map
    if not isinstance(ladder, FiniteLadder):
        raise TypeError(f"kernel.map must be a FiniteLadder, got {type(ladder).__name__}")
    n = ladder.n
    if reference is None or isinstance(reference, Ladder):
        exact = exact_transition_matrix(kernel if reference is None else reference, ladder)
    else:
        exact = np.asarray(reference, dtype=object)
    power = exact
    for _ in range(n_steps - 1):
        power = power.dot(exact)
    start = np.repeat(np.arange(2 * n), n_per_state)
    rng = np.random.default_rng([seed, 7])
    ks = kernel.init(start % n, rng, direction=np.where(start < n, 1, -1))
    trace = sample(kernel, ks, n_steps, seed=seed, schedule=schedule)
    end = extended_index(trace.final.state, trace.final.direction, n)
    counts = np.zeros((2 * n, 2 * n), dtype=np.int64)
    np.add.at(counts, (start, end), 1)
    for x, y in np.argwhere((power == 0) & (counts > 0)):
        raise AssertionError(
            f"{counts[x, y]} of {n_per_state} chains went {_name(x, n)} -> {_name(y, n)} "
            f"in {n_steps} step(s), a transition of exact probability 0"
        )
    nonzero = np.argwhere(power != 0)
    level = false_alarm / max(1, len(nonzero))
    worst = (1.0, None)
    for x, y in nonzero:
        p = float(power[x, y])
        # p = 1: any shortfall lands on a probability-0 entry, caught above
        pval = binomtest(int(counts[x, y]), n_per_state, p).pvalue if p < 1 else 1.0
        if pval < worst[0]:
            worst = (pval, (x, y, p))
    if worst[0] < level:
        x, y, p = worst[1]
        raise AssertionError(
            f"{_name(x, n)} -> {_name(y, n)} in {n_steps} step(s) ({schedule}): "
            f"{counts[x, y]} of {n_per_state} chains, expected {p * n_per_state:.1f} "
            f"(exact probability {power[x, y]}); binomial p-value {worst[0]:.3g} < "
            f"{level:.3g} (= false_alarm {false_alarm:g} / {len(nonzero)} entries)"
        )
    return counts


# =============================================================== map contracts


@attrs.frozen(eq=False)
class MapReport:
    """What :func:`check_map` measured.

    Errors are maxima over chains of ``max |a − b| / max(1, max |b|)`` per state
    field (0 for exact agreement of integer states). ``None`` = not applicable.

    Attributes
    ----------
    n_chains : int
        Chains checked.
    deterministic : bool
        Two calls of ``forward`` and of ``log_density`` on the same input gave
        bit-identical output.
    roundtrip_error : float
        ``backward(forward(ζ))`` vs ``ζ``, and ``forward(backward(ζ))`` vs ``ζ``.
    move_roundtrip_error : float
        ``move(move(ζ, d), −d)`` vs ``ζ`` for random ``d`` (the path samplers use).
    flip_error, flip_density_error, conjugacy_error : float or None
        ``F F ζ`` vs ``ζ``; ``|log p(F ζ) − log p(ζ)| / max(1, |log p(ζ)|)``;
        ``F L F ζ`` vs ``backward(ζ)``. ``None`` if the map has no flip.
    log_det_jacobian : array (chains,) or None
        ``log |det ∂Lζ/∂ζ|`` by central finite differences (float states).
    volume_tolerance : float or None
        The bound ``|log det J|`` was held to.
    bijective : bool or None
        For integer states: ``forward`` is injective on the given states.
    tolerance : float
        The bound the errors were held to.
    violations : tuple of str
        Every failed property, in the order checked (empty = all good).
    seconds : float
        Time the check took.
    """

    n_chains: int
    deterministic: bool
    roundtrip_error: float
    move_roundtrip_error: float
    flip_error: float | None
    flip_density_error: float | None
    conjugacy_error: float | None
    log_det_jacobian: np.ndarray | None
    volume_tolerance: float | None
    bijective: bool | None
    tolerance: float
    violations: tuple[str, ...]
    seconds: float

    @property
    def ok(self) -> bool:
        """No violation."""
        return not self.violations


def _leaf_error(a: Any, b: Any) -> np.ndarray:
    """Per-chain max scaled difference between two states of the same structure."""
    la, lb = batch.leaves(a), batch.leaves(b)
    n = batch.n_chains(b)
    err = np.zeros(n)
    if len(la) != len(lb):
        return np.full(n, np.inf)
    for x, y in zip(la, lb, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return np.full(n, np.inf)
        if np.issubdtype(y.dtype, np.inexact):
            xf, yf = x.reshape(n, -1).astype(float), y.reshape(n, -1).astype(float)
            with np.errstate(all="ignore"):
                scale = np.maximum(1.0, np.abs(yf).max(axis=1, initial=0.0))
                e = np.abs(xf - yf).max(axis=1, initial=0.0) / scale
            e = np.where(np.isnan(e), np.inf, e)
        else:
            e = np.where((x.reshape(n, -1) == y.reshape(n, -1)).all(axis=1), 0.0, np.inf)
        err = np.maximum(err, e)
    return err


def _identical(a: Any, b: Any) -> bool:
    la, lb = batch.leaves(a), batch.leaves(b)
    return len(la) == len(lb) and all(
        np.array_equal(
            np.asarray(x), np.asarray(y), equal_nan=np.issubdtype(np.asarray(x).dtype, np.inexact)
        )
        for x, y in zip(la, lb, strict=True)
    )


def _xv_state(state: Any) -> bool:
    return attrs.has(type(state)) and {"x", "v"} <= {f.name for f in attrs.fields(type(state))}


def _log_det_jacobian(
    map_: ReversibleMap, state: Any, rebuild: Callable[[Any], Any], step: float
) -> np.ndarray | None:
    """``log |det J|`` per chain by central differences, or None if states are not float."""
    if _xv_state(state):
        x, v = np.asarray(state.x, dtype=float), np.asarray(state.v, dtype=float)
        n = x.shape[0]
        dx = x[0].size

        def make(z):
            return rebuild(
                attrs.evolve(state, x=z[:, :dx].reshape(x.shape), v=z[:, dx:].reshape(v.shape))
            )

        def coords(s):
            return np.concatenate(
                [
                    np.asarray(s.x, dtype=float).reshape(n, -1),
                    np.asarray(s.v, dtype=float).reshape(n, -1),
                ],
                axis=1,
            )

        z = np.concatenate([x.reshape(n, -1), v.reshape(n, -1)], axis=1)
    elif isinstance(state, np.ndarray) and np.issubdtype(state.dtype, np.floating):
        n = state.shape[0]
        shape = state.shape

        def make(z):
            return z.reshape(shape)

        def coords(s):
            return np.asarray(s, dtype=float).reshape(n, -1)

        z = state.reshape(n, -1).astype(float)
    else:
        return None
    dim = z.shape[1]
    h = np.full_like(z, step)
    jac = np.empty((n, dim, dim))
    for k in range(dim):
        zp, zm = z.copy(), z.copy()
        zp[:, k] += h[:, k]
        zm[:, k] -= h[:, k]
        with np.errstate(all="ignore"):
            fp, fm = coords(map_.forward(make(zp))), coords(map_.forward(make(zm)))
        jac[:, :, k] = (fp - fm) / (2 * h[:, k : k + 1])
    sign, logdet = np.linalg.slogdet(jac)
    return np.where(sign == 0, -np.inf, logdet)


def check_map(
    map: ReversibleMap,  # noqa: A002 - the paper's word
    states: Any,
    rng: np.random.Generator | None = None,
    *,
    rtol: float = 1e-12,
    fd_step: float = 1e-6,
    volume_tol: float | None = None,
    rebuild: Callable[[Any], Any] | None = None,
) -> MapReport:
    """Check the :class:`~ladder_mcmc.maps.ReversibleMap` contract on a batch of states.

    Properties (docs/design.md §7.2, "map contracts"), each a violation if it fails:

    1. determinism: ``forward`` and ``log_density`` twice on the same input give
       bit-identical output;
    2. inverse: ``backward(forward(ζ)) = ζ`` and ``forward(backward(ζ)) = ζ``;
       and ``move(move(ζ, d), −d) = ζ`` for random directions (maps may override
       ``move``, as leapfrog does);
    3. flip (only if the map defines one): ``F F ζ = ζ``, ``p(F ζ) = p(ζ)``,
       ``F L F ζ = L⁻¹ ζ``;
    4. volume preservation, by the kind of state:

       * **integer arrays** (finite ladders): ``forward`` is injective on the
         given states (on a finite set, "volume preserving" = bijective);
       * **float arrays**: ``log |det ∂Lζ/∂ζ| = 0`` over all entries;
       * **attrs states with fields** ``x`` **and** ``v`` (``PhaseState``-like):
         the Jacobian is over ``(x, v)`` only — other fields (cached energy and
         gradient) are functions of ``x``, recomputed by ``rebuild``
         (default: ``map.prepare(state, rng)``, which does that for
         :class:`~ladder_mcmc.hmc.Leapfrog`);
       * other states: not checked (``log_det_jacobian`` is ``None``).

       The Jacobian is by central differences with step ``h = fd_step`` (in the
       units of the state) per coordinate; its error is ``O(h²)`` (truncation) plus
       ``O(ε_mach/h)`` (round-off). The check is repeated with step ``2h``: if
       the two estimates differ by more than the tolerance, the finite
       differences cannot decide (a strongly expanding, chaotic map such as a
       long leapfrog trajectory on a rough target) and that is reported as a
       violation rather than passed. The default bound on ``|log det J|`` is
       ``D · (10⁻⁷ + 100 ε_mach · S / fd_step)`` for ``D`` coordinates of
       largest magnitude ``S = max(1, max |z|)`` (``≈ 1.2e-7·D`` for states of
       order 1 at the default step): round-off in ``L(z ± h)`` is ``ε_mach·S``.

    Differences of float states are scaled by ``max(1, max|ζ|)`` per field and
    chain and held to ``rtol · max(1, map.cost)`` (round-off grows with the
    number of integration steps per map application). A chaotic map amplifies
    round-off along the trajectory (leapfrog on the paper's rough well at
    ``ε = 1, M = 10``: ``backward(forward(ζ))`` is off by ~6e-11): pass a
    larger ``rtol`` for such maps, or check shorter trajectories.

    Parameters
    ----------
    map : ReversibleMap
        The map to check.
    states : State
        A batch of states (chains first), e.g. from :func:`phase_states` or
        ``map.prepare``.
    rng : numpy Generator, optional
        For the random directions and ``rebuild``; ``default_rng(0)`` if omitted.
    rtol : float
        Relative tolerance of the exact-in-exact-arithmetic identities.
    fd_step : float
        Finite-difference step, in the units of the state.
    volume_tol : float, optional
        Override the bound on ``|log det J|``.
    rebuild : callable, optional
        ``state -> state`` recomputing derived fields after ``x``, ``v`` changed.

    Returns
    -------
    MapReport

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc.finite import FiniteLadder
    >>> report = check_map(FiniteLadder([1, 2, 0], [1, 2, 3]), np.array([0, 1, 2]))
    >>> report.ok, report.bijective
    (True, True)
    """
    start = time.perf_counter()
    rng = np.random.default_rng(0) if rng is None else rng
    n = batch.n_chains(states)
    tol = rtol * max(1, int(getattr(map, "cost", 1)))
    violations: list[str] = []

    def worst(err: np.ndarray) -> tuple[float, int]:
        k = int(np.argmax(err))
        return float(err[k]), k

    # 1. determinism
    f1, f2 = map.forward(states), map.forward(states)
    lp1, lp2 = np.asarray(map.log_density(states)), np.asarray(map.log_density(states))
    deterministic = _identical(f1, f2) and np.array_equal(lp1, lp2, equal_nan=True)
    if not deterministic:
        violations.append(
            "not deterministic: forward or log_density gave different output on the same input"
        )

    # 2. inverse
    err_bf = _leaf_error(map.backward(f1), states)
    err_fb = _leaf_error(map.forward(map.backward(states)), states)
    roundtrip, chain = worst(np.maximum(err_bf, err_fb))
    if not roundtrip <= tol:
        which = "backward(forward(ζ))" if err_bf[chain] >= err_fb[chain] else "forward(backward(ζ))"
        violations.append(
            f"inverse: {which} differs from ζ at chain {chain} by {roundtrip:.3g} "
            f"(relative; tolerance {tol:.3g})"
        )
    direction = np.where(rng.random(n) < 0.5, 1, -1)
    with np.errstate(all="ignore"):
        there = map.move(states, direction)
        back = map.move(there, -direction)
    move_rt, chain = worst(_leaf_error(back, states))
    if not move_rt <= tol:
        violations.append(
            f"inverse: move(move(ζ, d), -d) differs from ζ at chain {chain} "
            f"(d = {direction[chain]:+d}) by {move_rt:.3g} (relative; tolerance {tol:.3g})"
        )

    # 3. flip
    flip_err = flip_density = conjugacy = None
    if map.has_flip:
        ff = map.flip(map.flip(states))
        flip_err, chain = worst(_leaf_error(ff, states))
        if not flip_err <= tol:
            violations.append(f"flip: F(F(ζ)) differs from ζ at chain {chain} by {flip_err:.3g}")
        lpf = np.asarray(map.log_density(map.flip(states)), dtype=float)
        with np.errstate(all="ignore"):
            dens = np.abs(lpf - lp1) / np.maximum(1.0, np.abs(lp1))
        dens = np.where(np.isnan(dens), np.where(lpf == lp1, 0.0, np.inf), dens)
        flip_density, chain = worst(dens)
        if not flip_density <= tol:
            violations.append(
                f"flip: p(F ζ) ≠ p(ζ) at chain {chain}: log p(F ζ) = {lpf[chain]!r}, "
                f"log p(ζ) = {lp1[chain]!r}"
            )
        flf = map.flip(map.forward(map.flip(states)))
        conjugacy, chain = worst(_leaf_error(flf, map.backward(states)))
        if not conjugacy <= tol:
            violations.append(
                f"flip: F L F ζ differs from backward(ζ) at chain {chain} by {conjugacy:.3g}"
            )

    # 4. volume
    log_det = vol_tol = bijective = None
    leaves = batch.leaves(states)
    if isinstance(states, np.ndarray) and np.issubdtype(states.dtype, np.integer):
        flat = states.reshape(n, -1)
        _, first = np.unique(flat, axis=0, return_index=True)
        images = np.asarray(f1).reshape(n, -1)[first]
        bijective = len(np.unique(images, axis=0)) == len(first)
        if not bijective:
            violations.append(
                "volume: forward maps two distinct states to the same state (not a bijection)"
            )
    elif leaves and all(np.issubdtype(np.asarray(x).dtype, np.inexact) for x in leaves):
        if rebuild is None:

            def rebuild(s):
                return map.prepare(s, rng)

        log_det = _log_det_jacobian(map, states, rebuild, fd_step)
        if log_det is not None:
            # the same with twice the step: the difference estimates the
            # finite-difference error (Richardson: error(h) ≈ (J_2h − J_h)/3)
            coarse = _log_det_jacobian(map, states, rebuild, 2 * fd_step)
            with np.errstate(invalid="ignore"):
                fd_error = np.abs(coarse - log_det) / 3
            fd_error = np.where(np.isnan(fd_error), np.inf, fd_error)
            if _xv_state(states):
                coords = [np.asarray(states.x, dtype=float), np.asarray(states.v, dtype=float)]
            else:
                coords = [np.asarray(states, dtype=float)]
            dim = sum(c[0].size for c in coords)
            size = max(1.0, *(float(np.abs(c).max()) for c in coords))
            vol_tol = (
                float(volume_tol)
                if volume_tol is not None
                else dim * (1e-7 + 100 * np.finfo(float).eps * size / fd_step)
            )
            worst_err, chain = worst(fd_error)
            worst_ld, chain_ld = worst(np.abs(log_det))
            if not worst_err <= vol_tol:
                violations.append(
                    f"volume: not verifiable by finite differences at chain {chain}: log|det J| "
                    f"is {log_det[chain]:.3g} with step {fd_step:g} and {coarse[chain]:.3g} "
                    f"with step {2 * fd_step:g} (tolerance {vol_tol:.3g}); the map is too "
                    "expanding or curved at this step — use shorter trajectories or fd_step"
                )
            elif not worst_ld <= vol_tol:
                violations.append(
                    f"volume: log|det J| = {log_det[chain_ld]:.3g} at chain {chain_ld} "
                    f"(finite differences; tolerance {vol_tol:.3g})"
                )
    return MapReport(
        n_chains=n,
        deterministic=bool(deterministic),
        roundtrip_error=roundtrip,
        move_roundtrip_error=move_rt,
        flip_error=flip_err,
        flip_density_error=flip_density,
        conjugacy_error=conjugacy,
        log_det_jacobian=log_det,
        volume_tolerance=vol_tol,
        bijective=bijective,
        tolerance=tol,
        violations=tuple(violations),
        seconds=time.perf_counter() - start,
    )


def assert_map(
    map: ReversibleMap, states: Any, rng: np.random.Generator | None = None, **kw
) -> MapReport:  # noqa: A002
    """:func:`check_map`, raising :class:`AssertionError` on the first violation.

    Keyword arguments are passed to :func:`check_map`. Returns the report when
    every property holds.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import Leapfrog
    >>> from ladder_mcmc.targets import IllConditionedGaussian
    >>> target = IllConditionedGaussian(3, log_condition=2)
    >>> leapfrog = Leapfrog(target, step_size=0.5, n_steps=5)
    >>> rng = np.random.default_rng(1)
    >>> states = leapfrog.prepare(target.sample(4, rng), rng)
    >>> assert_map(leapfrog, states).ok
    True
    """
    report = check_map(map, states, rng, **kw)
    if report.violations:
        more = len(report.violations) - 1
        extra = f" (and {more} more: {'; '.join(report.violations[1:])})" if more else ""
        raise AssertionError(f"{type(map).__name__}: {report.violations[0]}{extra}")
    return report


# =============================================================== one-step invariance


@attrs.frozen(eq=False)
class InvarianceReport:
    """What :func:`assert_one_step_invariance` measured.

    Attributes
    ----------
    n_chains : int
    features : tuple of str
        Names of the tested features (coordinates, then projections).
    statistics, p_values : arrays (features,)
        Two-sample Kolmogorov–Smirnov statistic and p-value per feature.
    threshold : float
        Per-test level ``false_alarm / n_tests`` (Bonferroni).
    moved_fraction : float
        Fraction of chains whose draw changed in the step.
    seconds : float
    """

    n_chains: int
    features: tuple[str, ...]
    statistics: np.ndarray
    p_values: np.ndarray
    threshold: float
    moved_fraction: float
    seconds: float

    @property
    def ok(self) -> bool:
        return bool(np.all(self.p_values >= self.threshold))


def default_features(map_: ReversibleMap, ks: Any) -> tuple[list[str], np.ndarray]:
    """The features one-step invariance tests, from a kernel state.

    ``PhaseState``-like states (fields ``x``, ``v``): every coordinate of the
    position ``x`` and of the physical momentum ``d·v``. Array states: every
    entry. Other states: every entry of every array field.
    """
    state, d = ks.state, np.asarray(ks.direction, dtype=float)
    n = len(d)
    if _xv_state(state):
        x = np.asarray(state.x, dtype=float).reshape(n, -1)
        pv = d[:, None] * np.asarray(state.v, dtype=float).reshape(n, -1)
        names = [f"x[{k}]" for k in range(x.shape[1])] + [f"d·v[{k}]" for k in range(pv.shape[1])]
        return names, np.concatenate([x, pv], axis=1)
    cols, names = [], []
    for li, leaf in enumerate(batch.leaves(state)):
        arr = np.asarray(leaf, dtype=float).reshape(n, -1)
        cols.append(arr)
        names += [f"leaf{li}[{k}]" for k in range(arr.shape[1])]
    return names, np.concatenate(cols, axis=1)


def assert_one_step_invariance(
    kernel: Ladder,
    draw_exact: Callable[[int, np.random.Generator], Any],
    n_chains: int = 50_000,
    seed: int = 0,
    false_alarm: float = 1e-6,
    features: Callable[[Any], np.ndarray] | None = None,
    n_projections: int = 4,
    min_moved: float = 0.01,
) -> InvarianceReport:
    """Statistical: one kernel step from the target leaves the target unchanged.

    Starts ``n_chains`` chains at exact draws of the extended target
    ``p(ζ, d)``, applies one synchronous :meth:`Ladder.step`, and compares the
    result with ``n_chains`` fresh exact draws by two-sample Kolmogorov–Smirnov
    tests (:func:`scipy.stats.ks_2samp`) on every feature — for
    ``PhaseState``-like states every coordinate of the position ``x`` and of the
    physical momentum ``d·v`` — and on ``n_projections`` random projections of
    the standardised features. This needs no detailed balance: it is valid for
    every kernel that should keep ``p`` invariant (the test of TensorFlow
    Probability's MCMC suite).

    The tests are Bonferroni-corrected: each at level ``false_alarm / m`` for
    ``m`` tests, so a correct kernel fails with probability at most
    ``false_alarm`` (with a fixed seed the outcome is deterministic). The
    kernel must also *move*: at least ``min_moved`` of the chains must change
    their draw, so the identity kernel cannot pass.

    Power (measured, ``docs/verification.md``): on a 2-d Gaussian, a kernel
    that leaves the variance of one coordinate wrong by 15% (σ by 7%) is caught
    in 10 of 10 seeds at the default 50 000 chains, 10% in 0 of 10 (at 20 000
    chains: 30% caught 10/10, 20% 5/10). Bugs of the acceptance rule or a
    missing leapfrog half-kick are far below that (docs/design.md §7: about 10⁶
    chains): use the exact checks and :func:`assert_map` for those.

    Parameters
    ----------
    kernel : Ladder
        The kernel (its ``init`` and ``step`` are used).
    draw_exact : callable
        ``(n, rng) -> init`` such that ``kernel.init(init, rng)`` is an exact
        draw of ``p(ζ, d)``. For leapfrog kernels exact draws of the positions
        suffice (``target.sample``): ``init`` draws ``v ~ N(0, M)`` and ``d``
        uniformly.
    n_chains : int
        Chains in each sample.
    seed : int
        Seeds everything.
    false_alarm : float
        Total probability that a correct kernel fails.
    features : callable, optional
        ``kernel_state -> array (chains, m)``; default :func:`default_features`.
    n_projections : int
        Random projections tested besides the coordinates.
    min_moved : float
        Smallest fraction of chains whose draw must change.

    Returns
    -------
    InvarianceReport

    Raises
    ------
    AssertionError
        Naming the feature with the smallest p-value, its KS statistic and the
        threshold; or saying the kernel did not move.
    """
    from scipy.stats import ks_2samp

    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    ks0 = kernel.init(draw_exact(n_chains, rng), rng)
    ks1, _ = kernel.step(ks0, rng)
    ref = kernel.init(draw_exact(n_chains, rng), rng)

    before, after = kernel.map.draw(ks0.state), kernel.map.draw(ks1.state)
    changed = np.zeros(n_chains, dtype=bool)
    for a, b in zip(batch.leaves(before), batch.leaves(after), strict=True):
        changed |= ~(
            np.asarray(a).reshape(n_chains, -1) == np.asarray(b).reshape(n_chains, -1)
        ).all(axis=1)
    moved = float(changed.mean())
    if moved < min_moved:
        raise AssertionError(
            f"the kernel moved only {moved:.2%} of the chains (need at least {min_moved:.2%}): "
            "a kernel that does not move passes any invariance test"
        )

    if features is None:
        names, f_after = default_features(kernel.map, ks1)
        _, f_ref = default_features(kernel.map, ref)
    else:
        f_after = np.asarray(features(ks1), dtype=float).reshape(n_chains, -1)
        f_ref = np.asarray(features(ref), dtype=float).reshape(n_chains, -1)
        names = [f"f[{k}]" for k in range(f_after.shape[1])]
    mean, std = f_ref.mean(axis=0), f_ref.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    directions = np.random.default_rng([seed, 1]).standard_normal((f_ref.shape[1], n_projections))
    directions /= np.linalg.norm(directions, axis=0, keepdims=True)
    f_after = np.concatenate([f_after, ((f_after - mean) / std) @ directions], axis=1)
    f_ref = np.concatenate([f_ref, ((f_ref - mean) / std) @ directions], axis=1)
    names = [*names, *(f"projection[{k}]" for k in range(n_projections))]

    stats, pvals = np.empty(len(names)), np.empty(len(names))
    for k in range(len(names)):
        res = ks_2samp(f_after[:, k], f_ref[:, k])
        stats[k], pvals[k] = res.statistic, res.pvalue
    threshold = false_alarm / len(names)
    report = InvarianceReport(
        n_chains=n_chains,
        features=tuple(names),
        statistics=stats,
        p_values=pvals,
        threshold=threshold,
        moved_fraction=moved,
        seconds=time.perf_counter() - start,
    )
    if not report.ok:
        k = int(np.argmin(pvals))
        bad = int((pvals < threshold).sum())
        raise AssertionError(
            f"one step changed the distribution of {names[k]}: KS statistic {stats[k]:.4f}, "
            f"p-value {pvals[k]:.3g} < {threshold:.3g} (= false_alarm {false_alarm:g} / "
            f"{len(names)} tests; {bad} feature(s) rejected, {n_chains} chains)"
        )
    return report


__all__ = [
    "InvarianceReport",
    "MapReport",
    "assert_exact",
    "assert_fixed_point",
    "assert_generalized_detailed_balance",
    "assert_map",
    "assert_one_step_invariance",
    "assert_stochastic",
    "assert_transition_frequencies",
    "check_map",
    "default_features",
    "finite_ladders",
    "phase_states",
]
