"""Mutation sensitivity of the sequential chains' test: every broken driver is caught.

Each mutant changes one line of ``engine/sequential.py`` (:func:`mutants.source_mutant`)
and runs in place of ``run_sequential``; the check that the chains run one after another
give the batched loop's draws to rounding (``tests/unit/engine/test_sequential.py``)
must fail on it: a chain handed another chain's numbers, a chain restarted from its
first state each block, a block's outputs recorded for the wrong chain (also
from a worker thread).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from mutants import source_mutant

pytest.importorskip("jax")

from ladder_mcmc.engine import sequential  # noqa: E402

SEQUENTIAL_MUTANTS = {
    "a chain handed the next chain's numbers": [
        ("row = slice(i, i + 1)", "row = slice((i + 1) % n, (i + 1) % n + 1)")
    ],
    "a chain restarted from its first state each block": [
        ("states[i], calls[i] = state, outputs", "calls[i] = outputs"),
        ("states[chains[0]], calls[chains[0]] = block(chains[0])",
         "_, calls[chains[0]] = block(chains[0])"),
    ],
    "a thread's block recorded for the next chain": [
        ("for i, (state, outputs) in zip(chains, done_here, strict=True):",
         "for i, (state, outputs) in zip(np.roll(chains, 1), done_here):"),
    ],
    "a block's outputs recorded in reverse chain order": [
        ("rows = [calls.get(i, blank) for i in range(n)]",
         "rows = [calls.get(i, blank) for i in reversed(range(n))]")
    ],
}  # fmt: skip


def _check():
    """The draws check of ``tests/unit/engine/test_sequential.py`` (loaded by its path)."""
    path = Path(__file__).parents[1] / "unit" / "engine" / "test_sequential.py"
    spec = importlib.util.spec_from_file_location("sequential_checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.test_sequential_chains_give_the_batched_draws_to_rounding()


def test_the_check_passes_through_the_unmutated_harness(monkeypatch):
    monkeypatch.setattr(sequential, "run_sequential", source_mutant(sequential, []).run_sequential)
    _check()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if i else n  # one in the default run
        for i, n in enumerate(sorted(SEQUENTIAL_MUTANTS))
    ],
)
def test_the_draws_check_catches_a_broken_sequential_driver(name, monkeypatch):
    mutant = source_mutant(sequential, SEQUENTIAL_MUTANTS[name])
    monkeypatch.setattr(sequential, "run_sequential", mutant.run_sequential)
    with pytest.raises(AssertionError):
        _check()
