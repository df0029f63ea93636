"""A trajectory length jittered per chain and per step: the leapfrog ladder with an auxiliary ``n``.

A fixed leapfrog map ``L(ε, M)`` can resonate with the target (``εM`` close to a period
of its dynamics; :mod:`ladder_mcmc.hamiltonian.jitter`). Drawing the number of leapfrog
steps afresh each iteration breaks the resonance, as ChEES-HMC's jittered trajectory
length does, without changing the step size the warm-up adapted.

On the ladder the length must be the same for every rung of one step (the rungs are
the orbit ``L ζ, L² ζ, …`` of one map), so ``n`` is carried in the state as an
auxiliary variable, one integer per chain (the pattern of
:mod:`~ladder_mcmc.hamiltonian.jitter`, with ``n`` for the step factor ``s``):

* the extended target is ``p(x, v) · q(n) · ½`` (``d`` uniform), ``q`` any law on the
  positive integers that does not depend on ``(x, v, d)``;
* :class:`JitteredLengthLeapfrog` is the leapfrog ``L(ε, n)`` on ``(x, v)`` with ``n``
  unchanged: for each fixed ``n`` a deterministic, reversible (``F L F = L⁻¹``),
  volume-preserving map, so the ladder step keeps ``p(x, v | n) = p(x, v)`` for every
  ``n`` (docs/design.md §2, §6), hence the extended target;
* :class:`LengthJitter` redraws ``n`` from ``q``, independently of the state: a Gibbs
  update of ``n``, which keeps the extended target too.

The ``x``-marginal is the target, whatever ``q``. ``n`` does not enter the log density,
so redrawing it needs no new energy evaluation. The law lives in the refresh
(``LengthJitter(M, j)``: uniform on ``{M − w, …, M + w}``, ``w = ⌊j (M − 1)⌋``, mean
``M``); the map's ``n_steps`` only sets the initial ``n`` of every chain. One
application costs ``n`` gradient evaluations for that chain (:meth:`cost_of
<JitteredLengthLeapfrog.cost_of>`, which the engine records per step: ``Trace.grad_evals``
is exact). Per-chain lengths are integrated by :func:`integrate_lengths`, a loop masked
by chain, which runs on numpy arrays and inside the compiled loop alike.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import TRACED, fori_loop, is_jax, is_traced, namespace
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.ladder.refresh import Refresh
from ladder_mcmc.models.targets import energy_and_grad, gradient
from ladder_mcmc.validation import (
    attrs_converter,
    jitter_fraction,
    positive_int,
    state_field,
)

_FLOAT = np.dtype(float)


@attrs.frozen(eq=False)
class JitteredLengthState(PhaseState):
    """A :class:`~ladder_mcmc.hamiltonian.leapfrog.PhaseState` with one trajectory length per chain.

    Attributes
    ----------
    n_leapfrog : int64 array (chains,)
        ``n``: the leapfrog steps of every rung of this chain's current ladder step.
        Drawn from the refresh's law, independent of ``(x, v, d)`` under the extended
        target.
    """

    n_leapfrog: np.ndarray


def integrate_lengths(
    target: Any,
    velocity: Any,
    eps: Any,
    x: np.ndarray,
    v: np.ndarray,
    grad: np.ndarray,
    n: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Leapfrog from ``(x, v)`` with ``n[i]`` steps of size ``eps`` for chain ``i``.

    Row ``i`` gets exactly the arithmetic of
    :meth:`Leapfrog.integrate <ladder_mcmc.hamiltonian.leapfrog.Leapfrog.integrate>`
    with ``n_steps = n[i]`` on that row alone (for a target that computes rows
    independently: docs/design.md §11): kick ``ε/2``, then ``n[i]`` drifts with the
    ``n[i] − 1`` inner kicks, then ``E`` and ``∂E/∂x`` at the end point and the last
    half kick. ``eps``: a number, or one step per chain as a (chains, 1) column.
    ``velocity``: ``M⁻¹ v`` (None: the identity). Returns ``(x, v, E, ∂E/∂x)`` at the
    end points. ``n[i]`` gradient evaluations for chain ``i`` on numpy (the rows still
    integrating are sorted into a leading slice, the gradient evaluated on it alone); on
    JAX values a loop of ``max n`` steps, every row masked once its own are done.
    """
    if is_jax(x) or is_jax(v) or is_jax(grad) or is_jax(n) or is_jax(eps):
        return _integrate_masked(target, velocity, eps, x, v, grad, n)
    if np.ndim(eps) != 0:  # one step per chain (numpy): the same masked loop
        return _integrate_masked(target, velocity, eps, x, v, grad, n)
    half = 0.5 * eps
    grad_fn = target.grad
    rows = x.shape[0]
    top, low = int(n.max()), int(n.min())
    if top == low:  # one length for every chain: no sorting
        order = None
        active = [rows] * top + [0]
    else:
        order = np.argsort(-n, kind="stable")
        n, x, v, grad = n[order], x[order], v[order], grad[order]
        # active[i]: the rows still integrating at their (i+1)-th drift, a leading slice
        active = np.count_nonzero(n[:, None] > np.arange(top + 1), axis=0).tolist()
    v = v - half * grad
    for i in range(top):
        # rows [:k] make their (i+1)-th drift; rows [:kg] evaluate a gradient after it
        k, kg = active[i], active[i + 1]
        if k == rows:
            x = x + eps * (v if velocity is None else velocity(v))
        else:  # (x is a copy here: in place, the same rounding)
            x[:k] += eps * (v[:k] if velocity is None else velocity(v[:k]))
        if kg == rows:
            g = grad_fn(x)
            if type(g) is not np.ndarray or g.dtype is not _FLOAT:
                g = np.asarray(g, dtype=float)
            v = v - eps * g
        elif kg:
            v[:kg] -= eps * np.asarray(grad_fn(x[:kg]), dtype=float)
    e, g = energy_and_grad(target, x)
    v = v - half * g
    if order is None:
        return x, v, e, g
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    return x[back], v[back], e[back], g[back]


def _integrate_masked(target, velocity, eps, x, v, grad, n):
    """:func:`integrate_lengths` as one loop of ``max n`` steps on every row, each row's
    drift and kick masked off once its own ``n[i]`` are done (any namespace; the bound
    may be traced)."""
    xp = namespace(x, v, grad, n, eps)
    n = xp.asarray(n)
    vel = (lambda w: w) if velocity is None else velocity
    v = v - (0.5 * eps) * grad

    def step(i, xv):
        x, v = xv
        x = xp.where((n > i)[:, None], x + eps * vel(v), x)
        kick = (n > i + 1)[:, None]  # an inner kick: the row drifts again after it
        return x, xp.where(kick, v - eps * gradient(target, x), v)

    # max n − 1 drifts each followed by a gradient, then the last drift of the longest
    # rows: no gradient is evaluated that no row uses (max n in all, as counted)
    top = xp.max(n)
    x, v = fori_loop(0, top - 1, step, (x, v))
    x = xp.where((n >= top)[:, None], x + eps * vel(v), x)
    e, g = energy_and_grad(target, x)
    return x, v - (0.5 * eps) * g, e, g


def _as_lengths(value: Any, n_chains: int, name: str) -> np.ndarray:
    """``value`` as an int64 vector of positive lengths, one per chain, or ``ValueError``."""
    arr = np.asarray(value)
    ok = arr.shape == (n_chains,) and arr.dtype.kind in "iu" and bool(np.all(arr >= 1))
    if not ok and arr.shape == (n_chains,) and arr.dtype.kind == "f":
        ok = bool(np.all(np.isfinite(arr) & (arr >= 1) & (arr == np.floor(arr))))
    if not ok:
        raise ValueError(
            f"{name} must be positive integers with shape {(n_chains,)}, got {value!r}"
        )
    return arr.astype(np.int64)


@attrs.frozen(eq=False)
class JitteredLengthLeapfrog(Leapfrog):
    """:class:`~.leapfrog.Leapfrog` with each chain's own number of steps ``n`` (from the state).

    The map ``L(ε, n)`` on ``(x, v)`` for each chain's ``n = state.n_leapfrog``, with
    ``n`` unchanged by ``forward``, ``move`` and ``flip``: reversible and volume
    preserving on the extended state exactly when the leapfrog is. ``log_density`` is
    the leapfrog's (the law of ``n`` does not depend on ``(x, v, d)``). Use it with
    :class:`LengthJitter` in the refresh, which holds the law of ``n``.

    Parameters
    ----------
    target, step_size, metric
        As for :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog`.
    n_steps : int
        The initial ``n`` of every chain (``prepare``), unless the initial state
        carries ``n_leapfrog``. Also :attr:`cost`, the fixed cost of maps without
        :meth:`cost_of`; the exact count is :meth:`cost_of`.
    """

    def cost_of(self, state: JitteredLengthState) -> np.ndarray:
        """Gradient evaluations of one application from ``state``, per chain: ``n``."""
        xp = namespace(state.n_leapfrog)
        return xp.asarray(state.n_leapfrog, dtype=xp.int64)

    def advance(self, state: JitteredLengthState, v: np.ndarray) -> PhaseState:
        """The leapfrog with each chain's own ``n`` (:func:`integrate_lengths`); ``forward``
        and ``move`` carry ``n_leapfrog`` over unchanged."""
        x, v, e, g = integrate_lengths(
            self.target,
            self.metric.velocity,
            self.step_size,
            state.x,
            v,
            state.grad,
            state.n_leapfrog,
        )
        return PhaseState(x=x, v=v, energy=e, grad=g)

    def prepare(self, init, rng: np.random.Generator) -> JitteredLengthState:
        """As :meth:`Leapfrog.prepare`, plus ``n_leapfrog`` (``n_steps`` unless ``init`` has one).

        Raises
        ------
        ValueError
            As :meth:`Leapfrog.prepare`; or if ``init.n_leapfrog`` is not a vector of
            positive integers with one entry per chain.
        """
        lengths = getattr(init, "n_leapfrog", None)
        state = super().prepare(init, rng)
        n = state.x.shape[0]
        if lengths is None:
            lengths = np.full(n, int(self.n_steps), dtype=np.int64)
        else:
            lengths = _as_lengths(lengths, n, "init.n_leapfrog")
        return JitteredLengthState(state.x, state.v, state.energy, state.grad, lengths)

    def describe(self) -> dict:
        return {**super().describe(), "map": "JitteredLengthLeapfrog"}


@attrs.frozen
class LengthJitter(Refresh):
    """Redraw each chain's trajectory length ``n`` uniformly on ``{M − w, …, M + w}``.

    ``w = ⌊j (M − 1)⌋``, so the mean is exactly ``M`` and ``n ≥ 1`` (``M = 1``: always 1).
    ``n = M − w + ⌊u (2w + 1)⌋`` from one uniform ``u`` per chain (``rng.random``,
    drawn also when ``w = 0``, so that a stream's consumption does not depend on ``M``).
    A Gibbs update of the auxiliary ``n`` of :class:`JitteredLengthLeapfrog`, independent
    of the state, so it keeps the extended target; ``n`` does not enter the log density.

    Parameters
    ----------
    n_leapfrog : int
        ``M ≥ 1``, the centre (and mean) of the lengths.
    jitter : float in (0, 1]
        ``j``: the half-width ``w`` is ``⌊j (M − 1)⌋``; ``1`` draws from ``1 … 2M − 1``.

    Raises
    ------
    ValueError
        If ``n_leapfrog`` is not an integer ≥ 1 or ``jitter`` not in (0, 1]; at call
        time, a state without ``n_leapfrog`` (use :class:`JitteredLengthLeapfrog`).

    Notes
    -----
    ``M`` is a traced leaf of a compiled kernel (warm-up adapts it); ``j`` is static.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import Ladder, LookAheadRule, MomentumRefresh, sample
    >>> from ladder_mcmc.hamiltonian import JitteredLengthLeapfrog, LengthJitter
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2, log_condition=1)
    >>> kernel = Ladder(
    ...     JitteredLengthLeapfrog(target, 0.3, 10), LookAheadRule(4),
    ...     MomentumRefresh(1.0) + LengthJitter(10),
    ... )
    >>> trace = sample(kernel, np.zeros((4, 2)), 100, seed=0)
    >>> trace.positions.shape
    (100, 4, 2)
    """

    n_leapfrog: int = attrs.field(
        converter=attrs_converter(positive_int, "n_leapfrog"), metadata=TRACED
    )
    jitter: float = attrs.field(
        default=1.0,
        converter=partial(
            jitter_fraction,
            zero=False,
            one=True,
            why=" (the half-width of the lengths' range, a fraction of M − 1)",
        ),
    )
    changes_state = False  # the length does not enter log p

    @property
    def half_width(self) -> Any:
        """``w = ⌊j (M − 1)⌋`` (:func:`half_width`)."""
        return half_width(self.n_leapfrog, self.jitter)

    @property
    def length_law(self) -> tuple[np.ndarray, np.ndarray]:
        """``n`` uniform on ``{M − w, …, M + w}``: one map call costs ``n`` gradients."""
        centre, w = int(self.n_leapfrog), int(self.half_width)
        values = np.arange(centre - w, centre + w + 1, dtype=float)
        return values, np.full(values.size, 1.0 / values.size)

    def __call__(self, state, direction, rng):
        state_field(state, "n_leapfrog", "LengthJitter", "JitteredLengthLeapfrog's state")
        u = rng.random(len(direction))
        lengths = lengths_of(u, self.n_leapfrog, self.half_width)
        return attrs.evolve(state, n_leapfrog=lengths), direction

    def describe(self) -> dict:
        return {
            "refresh": "LengthJitter",
            "n_leapfrog": int(self.n_leapfrog),
            "jitter": float(self.jitter),
        }


def half_width(n_leapfrog, jitter: float):
    """``w = ⌊j (M − 1)⌋``: the lengths of centre ``M`` and jitter ``j`` are ``M − w … M + w``.

    ``n_leapfrog``: an int (returns an int), an int array (returns an int64 array), or a
    traced value (returns one); the one definition of the law's width, for
    :class:`LengthJitter` and warm-up's criterion (:mod:`ladder_mcmc.run.trajectory`).
    """
    if is_traced(n_leapfrog) or is_jax(n_leapfrog):
        xp = namespace(n_leapfrog)
        return xp.floor(float(jitter) * (xp.asarray(n_leapfrog) - 1)).astype(xp.int64)
    w = np.floor(float(jitter) * (np.asarray(n_leapfrog) - 1)).astype(np.int64)
    return int(w) if w.ndim == 0 else w


def lengths_of(u: np.ndarray, centre: Any, half_width: Any) -> np.ndarray:
    """``n = M − w + ⌊u (2w + 1)⌋`` (int64) from uniforms ``u`` on ``[0, 1)``: uniform on
    ``{M − w, …, M + w}`` (``u (2w + 1)`` rounds below ``2w + 1`` for every ``u < 1``)."""
    xp = namespace(u, centre, half_width)
    return (centre - half_width) + xp.floor(u * (2 * half_width + 1)).astype(xp.int64)


__all__ = [
    "JitteredLengthLeapfrog",
    "JitteredLengthState",
    "LengthJitter",
    "half_width",
    "integrate_lengths",
    "lengths_of",
]
