"""Jacobians of maps, by finite differences and as declared (docs/design.md §7.2, §13).

Helpers of :func:`~ladder_mcmc.verify.map_contract.check_map`:
:func:`fd_log_det_jacobian` estimates ``log |det ∂f(ζ)/∂ζ|`` of a map of float states
by central differences, and :func:`declared_jacobian_violations` checks that the
Jacobians a map declares agree with each other (forward, inverse and flip).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.maps import ReversibleMap, log_det_jacobian_of

__all__ = ["coordinates", "declared_jacobian_violations", "fd_log_det_jacobian"]


def _xv_state(state: Any) -> bool:
    return attrs.has(type(state)) and {"x", "v"} <= {f.name for f in attrs.fields(type(state))}


def _pair_state(state: Any) -> bool:
    """A state ``(ζ, α)`` of a map with a parameter (``AuxiliaryState``: ``inner``, ``alpha``)."""
    return attrs.has(type(state)) and {"inner", "alpha"} <= {
        f.name for f in attrs.fields(type(state))
    }


def coordinates(state: Any) -> tuple[list[np.ndarray], Callable[[list], Any]] | None:
    """The float arrays a Jacobian is taken over, and how to put new values back.

    ``x`` and ``v`` of an attrs state with those fields (its other fields are functions of
    ``x``, recomputed by the caller's ``rebuild``); a float array itself; for a pair
    ``(ζ, α)`` (fields ``inner`` and ``alpha``), the coordinates of ``ζ`` and ``α`` if it
    is a float (an integer ``α`` is kept). ``None`` for other states.
    """
    if _xv_state(state):
        arrays = [np.asarray(state.x, dtype=float), np.asarray(state.v, dtype=float)]
        return arrays, lambda a: attrs.evolve(state, x=a[0], v=a[1])
    if isinstance(state, np.ndarray) and np.issubdtype(state.dtype, np.floating):
        return [state], lambda a: a[0]
    if _pair_state(state):
        inner = coordinates(state.inner)
        if inner is None:
            return None
        arrays, put_inner = inner
        alpha = np.asarray(state.alpha)
        if np.issubdtype(alpha.dtype, np.floating):
            k = len(arrays)
            return [*arrays, alpha], lambda a: attrs.evolve(
                state, inner=put_inner(a[:k]), alpha=a[k]
            )
        return arrays, lambda a: attrs.evolve(state, inner=put_inner(a))
    return None


def fd_log_det_jacobian(
    fn: Callable[[Any], Any], state: Any, rebuild: Callable[[Any], Any], step: float
) -> np.ndarray | None:
    """``log |det ∂fn(ζ)/∂ζ|`` per chain by central differences of step ``step``.

    Over the :func:`coordinates` of the state (every entry of a float array; ``x`` and
    ``v`` of an attrs state with those fields, other fields recomputed by ``rebuild``;
    ``ζ`` and a float ``α`` of a pair). ``None`` for other states (integers, other
    structures).
    """
    found = coordinates(state)
    if found is None:
        return None
    arrays, put = found
    n = arrays[0].shape[0]
    shapes = [a.shape for a in arrays]
    bounds = np.cumsum([0] + [a[0].size for a in arrays])

    def make(z):
        pieces = [
            z[:, lo:hi].reshape(sh)
            for lo, hi, sh in zip(bounds[:-1], bounds[1:], shapes, strict=True)
        ]
        # an array state has nothing to recompute
        return put(pieces) if isinstance(state, np.ndarray) else rebuild(put(pieces))

    def coords(s):
        out = coordinates(s)
        return np.concatenate([np.asarray(a, dtype=float).reshape(n, -1) for a in out[0]], axis=1)

    z = np.concatenate([a.reshape(n, -1).astype(float) for a in arrays], axis=1)
    dim = z.shape[1]
    jac = np.empty((n, dim, dim))
    for k in range(dim):
        zp, zm = z.copy(), z.copy()
        zp[:, k] += step
        zm[:, k] -= step
        with np.errstate(all="ignore"):
            fp, fm = coords(fn(make(zp))), coords(fn(make(zm)))
        jac[:, :, k] = (fp - fm) / (2 * step)
    sign, logdet = np.linalg.slogdet(jac)
    return np.where(sign == 0, -np.inf, logdet)


def declared_jacobian_violations(
    map_: ReversibleMap, states: Any, declared: np.ndarray, forward: Any, tol: float
) -> tuple[float, list[str]]:
    """Check a declared ``log_det_jacobian`` against itself along the ladder (§13).

    With ``J = log_det_jacobian``, ``J⁻ = move_log_det_jacobian`` and ``ζ⁻ = L⁻¹ ζ``:
    ``J⁻(ζ, L ζ, +1) = J(ζ)``; ``J⁻(ζ, ζ⁻, −1) = −J(ζ⁻)`` (the chain rule for
    ``L⁻¹ ∘ L = id``); and, with a flip, ``J(F ζ) = −J(ζ⁻)`` (``L⁻¹ = F L F`` and ``F``
    preserves volume). Each is held to ``tol · max(1, |values|)``.

    Returns
    -------
    error, violations
        The largest scaled discrepancy and a message per failed identity.
    """
    n = batch.n_chains(states)
    ones = np.ones(n, dtype=np.int64)
    back = map_.backward(states)
    j_back = log_det_jacobian_of(map_, back)
    pairs = {
        "move_log_det_jacobian(ζ, L ζ, +1) = log_det_jacobian(ζ)": (
            np.asarray(map_.move_log_det_jacobian(states, forward, ones), dtype=float),
            declared,
        ),
        "move_log_det_jacobian(ζ, L⁻¹ ζ, −1) = −log_det_jacobian(L⁻¹ ζ)": (
            np.asarray(map_.move_log_det_jacobian(states, back, -ones), dtype=float),
            -j_back,
        ),
    }
    if map_.has_flip:
        pairs["log_det_jacobian(F ζ) = −log_det_jacobian(L⁻¹ ζ) (F preserves volume)"] = (
            log_det_jacobian_of(map_, map_.flip(states)),
            -j_back,
        )
    worst, violations = 0.0, []
    for name, (got, want) in pairs.items():
        with np.errstate(invalid="ignore"):
            err = np.abs(got - want) / np.maximum(1.0, np.maximum(np.abs(got), np.abs(want)))
        err = np.where(got == want, 0.0, np.where(np.isnan(err), np.inf, err))
        k = int(np.argmax(err))
        worst = max(worst, float(err[k]))
        if not err[k] <= tol:
            violations.append(
                f"jacobian: {name} fails at chain {k}: {got[k]:.6g} against {want[k]:.6g} "
                f"(tolerance {tol:.3g})"
            )
    return worst, violations
