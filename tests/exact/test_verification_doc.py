"""Runs the "Verify your own sampler" code of ``docs/tutorials/verify.md``.

The Python blocks of that section are extracted, executed as one module, and
every ``test_*`` function they define is run, so the documentation cannot drift
from the library. The breakages the section suggests are run too, and must fail.
"""

from __future__ import annotations

import linecache
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "verify.md"


def _snippet() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Verify your own sampler", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert blocks, "no python block in the 'Verify your own sampler' section"
    return "\n".join(blocks)


def _run(source: str) -> dict:
    namespace: dict = {"__name__": "verification_doc"}
    # a name of its own, with the snippet's lines in linecache: tools that read
    # source (inspect, Hypothesis) see the snippet, not the doc's own lines
    name = f"<docs/tutorials/verify.md snippet {abs(hash(source))}>"
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    exec(compile(source, name, "exec"), namespace)  # noqa: S102 - our own doc
    return namespace


def test_doc_snippet_defines_tests_and_they_pass():
    namespace = _run(_snippet())
    tests = {k: v for k, v in namespace.items() if k.startswith("test_") and callable(v)}
    assert {
        "test_barker_rule_keeps_the_target",
        "test_rotation_is_a_reversible_map",
        "test_rotation_ladder_keeps_the_target",
    } <= set(tests)
    for test in tests.values():
        test()


def test_the_breakages_the_doc_suggests_are_caught():
    source = _snippet()
    wrong_rule = source.replace("ratio / (1 + ratio)", "ratio / (2 + ratio)")
    assert wrong_rule != source
    with pytest.raises(AssertionError, match="πT ≠ π|generalized detailed balance"):
        _run(wrong_rule)["test_barker_rule_keeps_the_target"]()
    wrong_map = source.replace("return x @ self.matrix\n", "return x @ self.matrix.T\n")
    assert wrong_map != source
    with pytest.raises(AssertionError, match=r"inverse: backward\(forward\(ζ\)\) differs"):
        _run(wrong_map)["test_rotation_is_a_reversible_map"]()
