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

__all__ = ["declared_jacobian_violations", "fd_log_det_jacobian"]


def _xv_state(state: Any) -> bool:
    return attrs.has(type(state)) and {"x", "v"} <= {f.name for f in attrs.fields(type(state))}


def fd_log_det_jacobian(
    fn: Callable[[Any], Any], state: Any, rebuild: Callable[[Any], Any], step: float
) -> np.ndarray | None:
    """``log |det ∂fn(ζ)/∂ζ|`` per chain by central differences of step ``step``.

    Over every entry of a float array state, or over ``x`` and ``v`` of an attrs state
    with those fields (other fields recomputed by ``rebuild``). ``None`` for other
    states (integers, other structures).
    """
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
