"""The reversible-map contract, checked numerically on a batch of states.

:func:`check_map` measures, and :func:`assert_map` asserts, what every
:class:`~ladder_mcmc.ladder.maps.ReversibleMap` must be (docs/design.md §7.2):
deterministic, inverted by its backward map and by ``move`` in the opposite
direction, conjugated to its inverse by a volume-preserving flip, and volume
preserving or changing volume by the Jacobian it declares (docs/design.md §13). Feed
leapfrog-like maps with :func:`~ladder_mcmc.verify.strategies.phase_states`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.maps import ReversibleMap, log_det_jacobian_of
from ladder_mcmc.verify.jacobian import (
    _pair_state,
    coordinates,
    declared_jacobian_violations,
    fd_log_det_jacobian,
)

__all__ = ["MapReport", "assert_map", "check_map"]


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
        The bound ``|log det J|`` (or its distance to the declared value) was held to.
    declared_log_det_jacobian : array (chains,) or None
        What the map declares (``map.log_det_jacobian``); ``None`` for a
        volume-preserving map.
    law_flip_error : float or None
        ``|log p(α | F ζ) − log p(α | ζ)| / max(1, |log p(α | ζ)|)``, the largest over
        chains, for a map with a flip that carries a law (docs/design.md §14); else ``None``.
    flip_log_det_jacobian : array (chains,) or None
        ``log |det ∂Fζ/∂ζ|`` by finite differences (float states with a flip).
    jacobian_error : float or None
        The largest discrepancy among the declared Jacobian's identities
        (forward, inverse, flip; relative to ``max(1, |value|)``).
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
    declared_log_det_jacobian: np.ndarray | None = None
    flip_log_det_jacobian: np.ndarray | None = None
    jacobian_error: float | None = None
    law_flip_error: float | None = None

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


def _law_flip_violation(map_: Any, states: Any, tol: float, violations: list[str]) -> float:
    """``p(α | F ζ) = p(α | ζ)`` for a map carrying a law (docs/design.md §14): the error."""
    lq = np.asarray(map_.auxiliary_log_prob(states), dtype=float)
    lqf = np.asarray(map_.auxiliary_log_prob(map_.flip(states)), dtype=float)
    with np.errstate(all="ignore"):
        err = np.abs(lqf - lq) / np.maximum(1.0, np.abs(lq))
    err = np.where(np.isnan(err), np.where(lqf == lq, 0.0, np.inf), err)
    chain = int(np.argmax(err))
    if not err[chain] <= tol:
        violations.append(
            f"law: p(α | F ζ) ≠ p(α | ζ) at chain {chain}: log p(α | F ζ) = {lqf[chain]:.6g}, "
            f"log p(α | ζ) = {lq[chain]:.6g}; the law of the map's parameter must be invariant "
            "under its flip (docs/design.md §14)"
        )
    return float(err[chain])


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
    """Check the :class:`~ladder_mcmc.ladder.maps.ReversibleMap` contract on a batch of states.

    Properties (docs/design.md §7.2, "map contracts"), each a violation if it fails:

    1. determinism: ``forward`` and ``log_density`` twice on the same input give
       bit-identical output;
    2. inverse: ``backward(forward(ζ)) = ζ`` and ``forward(backward(ζ)) = ζ``;
       and ``move(move(ζ, d), −d) = ζ`` for random directions (maps may override
       ``move``, as leapfrog does);
    3. flip (only if the map defines one): ``F F ζ = ζ``, ``p(F ζ) = p(ζ)``,
       ``F L F ζ = L⁻¹ ζ``; for a map that carries a parameter ``α ~ p(α | ζ)``
       (``auxiliary_law``, :class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap`), also
       ``p(α | F ζ) = p(α | ζ)`` on the given states (docs/design.md §14), a violation
       naming both log probabilities;
    4. volume: ``log |det ∂Lζ/∂ζ|`` is 0, or the map's declared
       ``log_det_jacobian`` (docs/design.md §13), by the kind of state:

       * **integer arrays** (finite ladders): ``forward`` is injective on the
         given states (on a finite set, "volume preserving" = bijective);
       * **float arrays**: ``log |det ∂Lζ/∂ζ|`` over all entries; and, if the map
         has a flip, ``log |det ∂Fζ/∂ζ| = 0``;
       * **attrs states with fields** ``x`` **and** ``v`` (``PhaseState``-like):
         the Jacobian is over ``(x, v)`` only — other fields (cached energy and
         gradient) are functions of ``x``, recomputed by ``rebuild``
         (default: ``map.prepare(state, rng)``, which does that for
         :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog`);
       * **pairs** ``(ζ, α)`` (:class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryState`):
         over the coordinates of ``ζ`` (by the rules above) and ``α`` if it is a float;
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
       A declared Jacobian is held to the same bound, and the message names both
       numbers when they disagree;
    5. a declared Jacobian, for any state: ``move_log_det_jacobian`` agrees with it
       forward and backward (``−log_det_jacobian(L⁻¹ ζ)``), and with a flip
       ``log_det_jacobian(F ζ) = −log_det_jacobian(L⁻¹ ζ)``
       (:func:`~ladder_mcmc.verify.jacobian.declared_jacobian_violations`).

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

    Raises
    ------
    ValueError
        If the map's ``log_det_jacobian`` is not one value per chain.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc.verify import FiniteLadder
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
    flip_err = flip_density = conjugacy = law_flip = None
    if map.has_flip:
        ff = map.flip(map.flip(states))
        flip_err, chain = worst(_leaf_error(ff, states))
        if not flip_err <= tol:
            violations.append(f"flip: F(F(ζ)) differs from ζ at chain {chain} by {flip_err:.3g}")
        if getattr(map, "auxiliary_law", None) is not None:
            law_flip = _law_flip_violation(map, states, tol, violations)
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

    # 4. volume: preserved, or the declared Jacobian (docs/design.md §13)
    declared = None if map.volume_preserving else log_det_jacobian_of(map, states)
    log_det = vol_tol = bijective = flip_log_det = jac_error = None
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
    elif (leaves and all(np.issubdtype(np.asarray(x).dtype, np.inexact) for x in leaves)) or (
        _pair_state(states) and coordinates(states) is not None
    ):
        if rebuild is None:

            def rebuild(s):
                return map.prepare(s, rng)

        log_det = fd_log_det_jacobian(map.forward, states, rebuild, fd_step)
        if log_det is not None:
            # the same with twice the step: the difference estimates the
            # finite-difference error (Richardson: error(h) ≈ (J_2h − J_h)/3)
            coarse = fd_log_det_jacobian(map.forward, states, rebuild, 2 * fd_step)
            with np.errstate(invalid="ignore"):
                fd_error = np.abs(coarse - log_det) / 3
            fd_error = np.where(np.isnan(fd_error), np.inf, fd_error)
            coords = [np.asarray(c, dtype=float) for c in coordinates(states)[0]]
            dim = sum(c[0].size for c in coords)
            size = max(1.0, *(float(np.abs(c).max()) for c in coords))
            vol_tol = (
                float(volume_tol)
                if volume_tol is not None
                else dim * (1e-7 + 100 * np.finfo(float).eps * size / fd_step)
            )
            expected = np.zeros(n) if declared is None else declared
            with np.errstate(invalid="ignore"):
                off = np.abs(log_det - expected)
            worst_err, chain = worst(fd_error)
            worst_ld, chain_ld = worst(np.where(np.isnan(off), np.inf, off))
            if not worst_err <= vol_tol:
                violations.append(
                    f"volume: not verifiable by finite differences at chain {chain}: log|det J| "
                    f"is {log_det[chain]:.3g} with step {fd_step:g} and {coarse[chain]:.3g} "
                    f"with step {2 * fd_step:g} (tolerance {vol_tol:.3g}); the map is too "
                    "expanding or curved at this step — use shorter trajectories or fd_step"
                )
            elif declared is not None and not worst_ld <= vol_tol:
                violations.append(
                    f"volume: declared log_det_jacobian {declared[chain_ld]:.6g} but finite "
                    f"differences give {log_det[chain_ld]:.6g} at chain {chain_ld} "
                    f"(tolerance {vol_tol:.3g})"
                )
            elif not worst_ld <= vol_tol:
                violations.append(
                    f"volume: log|det J| = {log_det[chain_ld]:.3g} at chain {chain_ld} "
                    f"(finite differences; tolerance {vol_tol:.3g})"
                )
            if map.has_flip:
                flip_log_det = fd_log_det_jacobian(map.flip, states, rebuild, fd_step)
                flip_off = np.abs(flip_log_det)
                worst_flip, chain = worst(np.where(np.isnan(flip_off), np.inf, flip_off))
                if not worst_flip <= vol_tol:
                    violations.append(
                        f"flip: log|det ∂(F ζ)/∂ζ| = {flip_log_det[chain]:.3g} at chain {chain} "
                        f"(finite differences; tolerance {vol_tol:.3g}): F must preserve volume"
                    )
    if declared is not None:
        jac_error, found = declared_jacobian_violations(map, states, declared, f1, tol)
        violations.extend(found)
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
        declared_log_det_jacobian=declared,
        flip_log_det_jacobian=flip_log_det,
        jacobian_error=jac_error,
        law_flip_error=law_flip,
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
    >>> from ladder_mcmc.models import IllConditionedGaussian
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
