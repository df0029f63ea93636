"""The compiled loop's operations per iteration, read from its optimised HLO (issue 29, aim 2).

:func:`loop_operations` counts the top-level instructions of the compiled sampling loop's
``while`` body; :func:`map_operations` those of a bare loop of the map on the same batch;
their difference is what an iteration spends besides the map
(``tests/unit/engine/test_hlo_budget.py`` holds it to a budget).
"""

from __future__ import annotations

import re

import numpy as np

from ladder_mcmc.engine.block_draws import consumption
from ladder_mcmc.engine.jax_loop import BLOCK, _loop, _numbers, prepare
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder.kernel import Ladder, LadderState


def loop_operations(kernel: Ladder, ks: LadderState) -> dict[str, int]:
    """The operations XLA runs per iteration of the compiled loop, by kind: the top-level
    instructions of the compiled ``while`` body (fusions, copies, scatters, a nested loop
    counted once) but tuple plumbing, parameters and constants. Freshly traced, so that it
    counts the sources as they are now."""
    import jax

    prepare(kernel, ks)
    with jax.enable_x64(True):
        n = int(ks.direction.shape[0])
        steps = np.full(n, BLOCK)
        numbers = _numbers(ChainStreams.for_chains(1, n), steps, consumption(kernel, ks))
        fn = jax.jit(lambda *a, **k: _loop(*a, **k), static_argnames=("width", "adaptation"))
        lowered = fn.lower(kernel, ks, None, (), *numbers, steps, 0, width=BLOCK, adaptation=None)
        return _body_operations(lowered.compile().as_text())


def map_operations(kernel: Ladder, ks: LadderState) -> dict[str, int]:
    """:func:`loop_operations` of a bare loop of the map on the same batch (``move``, then
    ``log_density`` of the rung): what one iteration spends on the map itself."""
    import jax

    prepare(kernel, ks)

    def bare(kernel, state, direction, log_density, calls):
        def body(carry):
            i, state, _ = carry
            state = kernel.map.move(state, direction)
            return i + 1, state, kernel.map.log_density(state)

        return jax.lax.while_loop(lambda c: c[0] < calls, body, (0, state, log_density))

    with jax.enable_x64(True):
        lowered = jax.jit(bare).lower(kernel, ks.state, ks.direction, ks.log_density, BLOCK)
        return _body_operations(lowered.compile().as_text())


def _body_operations(text: str) -> dict[str, int]:
    """Operations by kind in the body of the entry computation's first ``while``."""
    computations: dict[str, list[str]] = {}
    current: list[str] | None = None
    entry = None
    for line in text.splitlines():
        head = re.match(r"^(ENTRY )?(%[\w.\-]+) .*\{$", line)
        if head:
            current = computations.setdefault(head.group(2), [])
            entry = head.group(2) if head.group(1) else entry
        elif line.startswith("}"):
            current = None
        elif current is not None:
            current.append(line)
    loops = [re.search(r"body=(%[\w.\-]+)", line) for line in computations[entry]]
    body = next(m.group(1) for m in loops if m)
    kinds: dict[str, int] = {}
    for line in computations[body]:
        op = re.search(r" ([a-z][\w\-]*)\((?:%|\))", line.split("metadata=")[0])
        if op and op.group(1) not in ("get-tuple-element", "tuple", "constant", "parameter"):
            kinds[op.group(1)] = kinds.get(op.group(1), 0) + 1
    return kinds


__all__ = ["loop_operations", "map_operations"]
