"""The ragged schedule's fast path for leapfrog look-ahead kernels: LAHMC and HMC (private).

:func:`ladder_mcmc.drivers.ragged.run_ragged` works for any map, rule and refresh, and
pays for that generality with Python and numpy calls on every iteration: state
trees, a rule object, a refresh object, a finite check on every leaf. On the
paper's 2-d targets a whole leapfrog step costs a few microseconds, so those
calls dominate. This module runs the *same* algorithm for the kernels most
users run, ``Ladder(Leapfrog, LookAheadRule(K), MomentumRefresh | None)`` on a
:class:`~ladder_mcmc.hamiltonian.metrics.Metric` (what
:func:`~ladder_mcmc.hamiltonian.samplers.lahmc` and
:func:`~ladder_mcmc.hamiltonian.samplers.hmc` build), on plain arrays. It recognises
them by what their parts declare, never by their types (:func:`applies_to`):

* the momentum is kept *physical*, ``p = d·v``: moving by ``L^d`` integrates
  ``(x, p)`` forward, a flip negates ``p``, and ``d`` itself is carried only to
  hand the state back (multiplying by ``d = ±1`` is exact, so this is the same
  arithmetic as :meth:`Leapfrog.move`);
* the look-ahead decision needs no running maximum: a chain still undecided at
  rung ``a`` has ``u ≥ p(L^j ζ)/p(ζ)`` for every earlier ``j``, so
  ``u < min(1, max_{j≤a} p_j/p_0)`` (docs/design.md §4) holds exactly when
  ``u < p_a/p_0``;
* each chain's step origin is one row of a packed float array,
  ``[x | -p | ∂E/∂x | E | log p | u]`` (stored as the flipped state ``F ζ``,
  the only form in which it is ever used), and choosing between origin and
  rung, or restarting the chains that decided, is one ``np.where`` on rows
  viewed as ``np.void`` records;
* the stage is the iteration minus the iteration the step started on; the
  number of map applications is the stage plus one (the rungs ``1..K`` are
  consecutive); the non-finite counter is kept only once a non-finite rung has
  been seen; the steps go to the trace through an
  :class:`~ladder_mcmc.drivers._iteration_buffer.IterationBuffer`, written also
  when a ``KeyboardInterrupt`` stops the run. HMC (``K = 1``) runs on the same
  loop (every chain decides on every iteration);
* a jittered-length map (``map.jittered_length``, with a refresh made of a
  ``MomentumRefresh`` and a ``LengthJitter``, ``length_law``) carries each chain's
  ``n`` as one more column of its origin: a rung integrates each chain's own ``n``,
  the gradient evaluated only on the rows still integrating, and the decided
  chains draw their next ``n`` from their next uniform after their momentum's
  normals (:mod:`ladder_mcmc.hamiltonian.jittered_length`).

It draws the same random numbers in the same order as the generic driver and
does the same floating-point operations, so it returns the generic driver's
trace *draw for draw* (tested bit for bit in
``tests/unit/drivers/test_ragged_leapfrog.py``);
:func:`~ladder_mcmc.drivers.contract.driver_for` picks it whenever :func:`applies_to`
the kernel. With numba installed, :func:`run` hands long runs to
:mod:`ladder_mcmc.drivers._leapfrog_numba`, the same loop with this bookkeeping
compiled (:func:`compiled` says when; the same draws again). The measured gain is
in ``benchmarks/results/overhead.md``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs
import numpy as np

from ladder_mcmc.drivers._iteration_buffer import IterationBuffer
from ladder_mcmc.drivers._leapfrog_origin import finish, initial_origin
from ladder_mcmc.drivers.streams import ChainStreams
from ladder_mcmc.hamiltonian.jittered_length import integrate_lengths, lengths_of
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.hamiltonian.metrics import Metric, row_dot
from ladder_mcmc.ladder.kernel import Ladder, LadderState
from ladder_mcmc.ladder.refresh import same_kinetic_energy
from ladder_mcmc.models.targets import energy_and_grad

if TYPE_CHECKING:
    from ladder_mcmc.drivers.recording import StepRecorder

#: with ``COMPILED = None``, runs of at least this many steps per chain use the
#: compiled bookkeeping (importing numba and loading its cache is paid once per
#: process, compiling once per installation; what each costs and saves:
#: benchmarks/results/overhead.md)
COMPILE_FROM_STEPS = 10_000


#: why numba could not be imported, once it failed (then the numpy bookkeeping runs)
_NUMBA_ERROR: str | None = None


def _import_compiled():
    """:mod:`ladder_mcmc.drivers._leapfrog_numba`, or None (with one warning) if numba
    fails to import.

    numba often lags numpy releases: installed is not the same as importable.
    """
    global _NUMBA_ERROR
    try:
        from ladder_mcmc.drivers import _leapfrog_numba
    except ImportError as err:
        _NUMBA_ERROR = f"{type(err).__name__}: {err}"
        warnings.warn(
            f"numba is installed but could not be imported ({_NUMBA_ERROR}); the ragged "
            "leapfrog driver uses its numpy bookkeeping (the same draws, slower)",
            RuntimeWarning,
            stacklevel=4,
        )
        return None
    return _leapfrog_numba


def compiled(n_steps: int = COMPILE_FROM_STEPS) -> bool:
    """Whether :func:`run` uses the numba-compiled bookkeeping for a run of ``n_steps`` steps.

    Never without numba (nor once importing it has failed). With numba:
    :data:`ladder_mcmc.drivers.COMPILED` if set; else the
    environment variable ``LADDER_MCMC_NUMBA`` (``"1"``: always, ``"0"``:
    never) if set; else when the run has at least :data:`COMPILE_FROM_STEPS`
    steps or the compiled module is loaded already (its cost paid).
    """
    from ladder_mcmc import drivers  # the switch, read when a run starts

    if _NUMBA_ERROR is not None:
        return False
    if drivers.COMPILED is not None:
        return drivers.COMPILED and importlib.util.find_spec("numba") is not None
    env = os.environ.get("LADDER_MCMC_NUMBA")
    if env in ("0", "1"):
        return env == "1" and importlib.util.find_spec("numba") is not None
    if "ladder_mcmc.drivers._leapfrog_numba" in sys.modules:
        return True
    return n_steps >= COMPILE_FROM_STEPS and importlib.util.find_spec("numba") is not None


def applies_to(kernel: Ladder) -> bool:
    """Whether :func:`run` can drive ``kernel``, from what its parts declare (never their types).

    See :func:`declared`. A part that declares nothing — a subclass that does not
    re-declare, another integrator, rule or refresh — leaves the kernel to the
    generic :func:`~ladder_mcmc.drivers.ragged.run_ragged`.
    """
    return declared(kernel) is not None


class Declared(NamedTuple):
    """What the parts of a kernel the fast path runs declare (:func:`declared`)."""

    metric: Metric  # the map's Gaussian metric
    rungs: int  # K, of the look-ahead rule
    partial: tuple[Any, Metric] | None  # (β, metric) of the momentum refresh, or None
    lengths: tuple[int, int] | None = None  # (M, w) of a LengthJitter part, or None
    jittered: bool = False  # the map runs each chain's own n (jittered_length)


def declared(kernel: Ladder) -> Declared | None:
    """``(metric, K, (β, refresh metric) or None, (M, w) or None, jittered)`` of a leapfrog
    look-ahead kernel, else None.

    The map declares itself the plain leapfrog (``map.plain_leapfrog``) of a kinetic
    energy that declares its Gaussian metric (``map.kinetic_energy.gaussian_metric``);
    the rule declares its ``K`` (``rule.look_ahead_rungs``); the refresh is ``None``
    or declares the Gaussian partial refresh ``(β, metric)``
    (``refresh.gaussian_partial_refresh``) on the same metric
    (:func:`~ladder_mcmc.ladder.refresh.same_kinetic_energy`). Or the map declares a
    jittered length (``map.jittered_length``: each chain's ``n_leapfrog``), and the
    refresh is made of at most one such Gaussian partial refresh and at most one
    ``LengthJitter`` (``length_law``), alone or as the parts of a composition
    (``refresh.composed_parts``): :func:`_declared_jittered`. Never for a map that
    changes volume (``map.volume_preserving`` false), whatever else it declares.
    """
    if not getattr(kernel.map, "volume_preserving", True):
        return None  # a Jacobian to weigh rungs by, which the loops here do not
    jittered = bool(getattr(kernel.map, "jittered_length", False))
    if not getattr(kernel.map, "plain_leapfrog", False) and not jittered:
        return None
    metric = getattr(getattr(kernel.map, "kinetic_energy", None), "gaussian_metric", None)
    rungs = getattr(kernel.rule, "look_ahead_rungs", None)
    if metric is None or rungs is None:
        return None
    if jittered:
        return _declared_jittered(kernel, metric, rungs)
    if kernel.refresh is None:
        return Declared(metric, rungs, None)
    partial = getattr(kernel.refresh, "gaussian_partial_refresh", None)
    if partial is None or not same_kinetic_energy(partial[1], metric):
        return None
    return Declared(metric, rungs, partial)


def _declared_jittered(kernel: Ladder, metric: Metric, rungs: int) -> Declared | None:
    """:func:`declared` for a map that declares ``jittered_length`` (``metric``, ``rungs``:
    what the map's kinetic energy and the rule declared).

    Every part of the refresh (the refresh itself, or a composition's
    ``composed_parts``) must declare a Gaussian partial refresh on the map's metric or
    a length law, each at most once, in either order: they draw from separate streams
    (normals, uniforms) and change separate fields (``v``, ``n_leapfrog``). Without a
    length law each chain keeps its ``n``.
    """
    refresh = kernel.refresh
    parts = () if refresh is None else (refresh.composed_parts or (refresh,))
    partial = lengths = None
    for part in parts:
        momentum = getattr(part, "gaussian_partial_refresh", None)
        law = getattr(part, "length_law", None)
        if momentum is not None and partial is None and same_kinetic_energy(momentum[1], metric):
            partial = momentum
        elif law is not None and lengths is None:
            lengths = law
        else:
            return None
    return Declared(metric, rungs, partial, lengths, jittered=True)


def run(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """Advance every chain of ``ks`` until the recorder holds ``until`` steps per chain.

    The :class:`~ladder_mcmc.drivers.contract.Driver` contract, for a kernel
    :func:`applies_to`: the ragged schedule of
    :func:`~ladder_mcmc.drivers.ragged.run_ragged`, draw for draw, with its
    bookkeeping compiled (:mod:`ladder_mcmc.drivers._leapfrog_numba`) when
    :func:`compiled` says so, in numpy (:func:`_run`) otherwise.
    """
    try:
        # one errstate for the whole run, as in run_ragged: a rung may overflow or
        # be NaN, and that is handled as density zero
        with np.errstate(all="ignore"):
            if compiled(recorder.n_steps - int(recorder.completed())):
                compiled_loop = _import_compiled()
                # (jittered lengths: the numpy bookkeeping; see _leapfrog_numba)
                if compiled_loop is not None and not declared(kernel).jittered:
                    return compiled_loop.run(kernel, ks, recorder, streams, on_progress, until)
            return _run(kernel, ks, recorder, streams, on_progress, until)
    finally:
        recorder.flush()


def _run(kernel, ks, recorder, streams, on_progress, until):
    """:func:`run` with the bookkeeping in numpy.

    Layout: each chain's step origin is one row of ``origin``, columns
    ``[x | -p | ∂E/∂x | E | log p | u]`` (the momentum stored negated: the
    origin is only ever needed as the flipped state ``F ζ``, the step's
    uniform ``u`` rides along), so that choosing between origin and rung, or
    restarting a chain, is one ``np.where`` on the whole batch. A jittered-length
    map adds the column ``n``, the step's leapfrog steps: each chain's rungs
    integrate its own ``n`` (:func:`~ladder_mcmc.hamiltonian.jittered_length.integrate_lengths`),
    its steps are recorded with their cost ``n``, and a ``LengthJitter`` part of the
    refresh redraws it, from the chain's next uniform, after the momentum's normals
    and before the next step's uniform (the generic driver's order).
    """
    steps_done = recorder.steps_done.astype(np.int64)
    kp = _Parameters.of(kernel, declared(kernel))
    last = kp.rungs - 1

    n_steps = recorder.n_steps if until is None else min(until, recorder.n_steps)
    chain_id = np.arange(len(steps_done))
    state: PhaseState = ks.state
    n, dim = state.x.shape
    cx, cp, cg = slice(0, dim), slice(dim, 2 * dim), slice(2 * dim, 3 * dim)
    ce, clp, cu = 3 * dim, 3 * dim + 1, 3 * dim + 2
    jittered = kp.jittered
    cn = slice(3 * dim + 3, 3 * dim + 3 + jittered)  # the step's n (a jittered length)
    direction = np.asarray(ks.direction, dtype=np.int8)
    # a chain's row as one record: `np.where` on (chains, 1) records copies
    # whole rows, several times faster than element by element
    row = np.dtype((np.void, 8 * (3 * dim + 3 + jittered)))
    origin, p_start = initial_origin(ks, streams, steps_done < n_steps, jittered)
    # the state the next rung starts from ("current"): views of `origin` or of
    # the last iteration's rows, and the physical momentum
    xc, gc, pc = origin[:, cx], origin[:, cg], p_start
    final_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    # the iteration on which each chain's current step started (its stage is
    # `iteration - start`)
    start = np.ones(n, dtype=np.int64)
    non_finite = None  # per-chain counter, kept once a non-finite rung is seen
    window = IterationBuffer(recorder, dim, costs=jittered)
    lengths = None  # each chain's n in this step (jittered lengths)
    all_done = np.ones(n, dtype=bool)
    steps_now = None  # each chain's finished steps, kept up to date near the end

    columns = None  # the batch's chains, once some have left it

    def retire(finished: np.ndarray) -> None:
        """Move the chains in ``finished`` (a mask) out of the batch."""
        nonlocal chain_id, start, direction, origin, xc, gc, pc, non_finite, steps_now, all_done
        nonlocal columns
        fin = np.flatnonzero(finished)
        final_parts.append((chain_id[fin], origin[fin], direction[fin]))
        keep = np.flatnonzero(~finished)
        chain_id, start, direction = chain_id[keep], start[keep], direction[keep]
        origin, xc, gc, pc = origin[keep], xc[keep], gc[keep], pc[keep]
        if non_finite is not None:
            non_finite = non_finite[keep]
        if steps_now is not None:
            steps_now = steps_now[keep]
        all_done = all_done[keep]
        columns = chain_id

    if np.any(steps_done >= n_steps):
        retire(steps_done >= n_steps)
    # a step takes at least one iteration: no chain can finish before this one
    iteration, check_from = 0, n_steps - (int(steps_done.max()) if steps_done.size else 0)

    try:
        while chain_id.size:
            iteration += 1
            # ---- one rung for every chain: Leapfrog.integrate on (x, d·v) -------
            if jittered:  # each chain's own n, the origin's (integers: exact)
                lengths = origin[:, cn.start].astype(np.int64)
                x, p, e, g = kp.rung_lengths(xc, pc, gc, lengths)
            else:
                x, p, e, g = kp.rung(xc, pc, gc)
            # log p of the rung, -(E + ½pᵀM⁻¹p) computed as (-½pᵀM⁻¹p) - E
            lp = kp.minus_half_pp(p) - e
            # (the n column, if any, is the origin's: the rung's step is the origin's)
            parts = (x, p, g, e[:, None], lp[:, None], lp[:, None], origin[:, cn])
            rung = np.concatenate(parts if jittered else parts[:6], axis=1)
            # ---- density zero for a non-finite rung (quiet_log_density_of) -------
            if math.isfinite(np.add.reduce(rung, None)):
                if non_finite is not None:
                    non_finite = np.where(start == iteration, 0, non_finite)
            else:
                bad = ~np.isfinite(rung[:, : 3 * dim + 2]).all(axis=1)
                lp = np.where(bad, -np.inf, lp)
                rung[:, clp] = lp
                if non_finite is None:
                    non_finite = np.zeros(chain_id.size, dtype=np.int64)
                non_finite = np.where(start == iteration, 0, non_finite) + bad
            # ---- the look-ahead rule: take this rung if u < p_a / p_0 -----------
            stop = origin[:, cu] < np.exp(lp - origin[:, clp])
            if last == 0:
                done, everyone = all_done, True
            else:
                done = stop | (start == iteration - last)
                n_done = int(np.count_nonzero(done))
                if n_done == 0:
                    xc, gc, pc = x, g, p
                    continue
                everyone = n_done == chain_id.size
            # the decided chains' next state (the flipped origin, or the rung); the
            # rung on the others
            flip = ~stop if everyone else done > stop
            nxt = np.where(flip[:, None], origin.view(row), rung.view(row)).view(np.float64)
            # ---- MomentumRefresh on the physical momentum -----------------------
            p_nxt = nxt[:, cp]
            ids = None if columns is None else chain_id
            advance = None if everyone else done  # the decided chains' streams move on
            if kp.refresh:
                p_ref = kp.refreshed(p_nxt, streams.normals.take(ids, dim, advance))
                np.subtract(kp.minus_half_pp(p_ref), nxt[:, ce], out=nxt[:, clp])
            else:
                p_ref = p_nxt.copy()
            if kp.lengths is not None:  # ---- LengthJitter: the decided chains' next n
                u_length = streams.uniforms.take(ids, 1, advance)
                nxt[:, cn.start] = lengths_of(u_length, *kp.lengths)
            xc, gc = nxt[:, cx], nxt[:, cg]
            full = window.push(iteration, done, start, stop, xc, non_finite, columns, lengths)
            # the next step's uniform, drawn by the chains that go on to one
            if iteration >= check_from:
                if steps_now is None:
                    steps_now = window.pending_steps()[chain_id]
                else:
                    steps_now = steps_now + done
                advance = done & (steps_now < n_steps)
            u_next = streams.uniforms.take(ids, 1, advance)
            if everyone:
                pc = p_ref
                np.negative(p_ref, out=nxt[:, cp])
                nxt[:, cu] = u_next
                origin = nxt
                start.fill(iteration + 1)  # in place: the window copied it
            else:
                pc = np.where(done[:, None], p_ref, p_nxt)
                np.negative(p_ref, out=nxt[:, cp])
                nxt[:, cu] = u_next
                origin = np.where(done[:, None], nxt.view(row), origin.view(row)).view(np.float64)
                start = np.where(done, iteration + 1, start)
            if full:
                window.write()
                if on_progress is not None:
                    on_progress(recorder.completed())
            if steps_now is not None:
                finished = steps_now >= n_steps
                if finished.any():
                    retire(finished)
    except BaseException:
        # Ctrl-C (or an error in the target) keeps every step finished so far
        window.write()
        raise
    return finish(window, on_progress, ks, final_parts)


_FLOAT = np.dtype(float)


@attrs.frozen
class _Parameters:
    """What the loops need of a leapfrog look-ahead kernel (as :func:`declared`), with its
    operations."""

    target: Any
    eps: float
    n_leapfrog: int
    velocity: Any  # the metric's M⁻¹p, None for the identity
    momentum_of: Any  # the refresh metric's M^{1/2} z
    refresh: bool
    keep_coef: float | None  # √(1−β), None for a full refresh
    noise_coef: float | None  # √β
    rungs: int  # K
    jittered: bool = False  # each chain's own n (a jittered-length map)
    lengths: tuple[int, int] | None = None  # (M, w) of the refresh's LengthJitter

    @classmethod
    def of(cls, kernel: Ladder, kind: Declared) -> _Parameters:
        """The parameters of ``kernel``, whose parts declared ``kind`` (:func:`declared`)."""
        map_: Leapfrog = kernel.map
        metric, rungs, partial, lengths, jittered = kind
        keep = noise = None
        momentum_of = metric.momentum_of
        if partial is not None:
            beta, momentum_of = partial[0], partial[1].momentum_of
            if beta != 1:
                keep, noise = math.sqrt(1.0 - beta), math.sqrt(beta)
        return cls(
            map_.target,
            float(map_.step_size),
            int(map_.n_steps),
            None if metric.inverse_mass is None else metric.velocity,
            momentum_of,
            partial is not None,
            keep,
            noise,
            int(rungs),
            bool(jittered),
            None if lengths is None else (int(lengths[0]), int(lengths[1])),
        )

    def rung(self, x, p, g):
        """``Leapfrog.integrate`` on ``(x, p, ∂E/∂x)``, operation for operation.

        ``p = d·v`` is the physical momentum. Returns the rung's ``(x, p, E, ∂E/∂x)``.
        """
        eps, velocity, grad = self.eps, self.velocity, self.target.grad
        half = 0.5 * eps
        p = p - half * g
        for _ in range(self.n_leapfrog - 1):
            x = x + eps * (p if velocity is None else velocity(p))
            g = grad(x)
            if type(g) is not np.ndarray or g.dtype is not _FLOAT:
                g = np.asarray(g, dtype=float)
            p = p - eps * g
        x = x + eps * (p if velocity is None else velocity(p))
        e, g = energy_and_grad(self.target, x)
        return x, p - half * g, e, g

    def rung_lengths(self, x, p, g, lengths):
        """:meth:`rung` with ``lengths[i]`` leapfrog steps for chain ``i``: the map's
        :func:`~ladder_mcmc.hamiltonian.jittered_length.integrate_lengths`, gradients
        only on the rows still integrating."""
        return integrate_lengths(self.target, self.velocity, self.eps, x, p, g, lengths)

    def minus_half_pp(self, p: np.ndarray) -> np.ndarray:
        """``-½ pᵀM⁻¹p`` per chain: the operations of ``-Metric.kinetic(p)``."""
        return row_dot(p, p if self.velocity is None else self.velocity(p)) * -0.5

    def refreshed(self, p: np.ndarray, normals: np.ndarray) -> np.ndarray:
        """``MomentumRefresh`` on the physical momentum: ``√(1−β) p + √β n``.

        ``normals``: the chains' next standard normals, shape of ``p`` (what
        ``Metric.sample_momentum`` draws, taken from the streams directly).
        """
        noise = self.momentum_of(normals.reshape(p.shape))
        return noise if self.keep_coef is None else self.keep_coef * p + self.noise_coef * noise
