"""A target whose energy raises ``KeyboardInterrupt`` at a chosen call (Ctrl-C in user code)."""

from __future__ import annotations

from ladder_mcmc.models import FunctionTarget


def interrupting(target, dim: int, limit: int | None = None) -> tuple[FunctionTarget, dict]:
    """``target`` as a :class:`FunctionTarget` that counts its energy calls.

    Returns the target and its counter ``{"n": calls so far, "limit": limit}``;
    the call numbered ``limit`` (and any later one) raises ``KeyboardInterrupt``,
    never while ``limit`` is None. Tests set ``n`` and ``limit`` between runs.
    """
    calls = {"n": 0, "limit": limit}

    def energy(x):
        calls["n"] += 1
        if calls["limit"] is not None and calls["n"] >= calls["limit"]:
            raise KeyboardInterrupt
        return target.energy(x)

    return FunctionTarget(energy, target.grad, dim=dim), calls
