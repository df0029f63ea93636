"""The code blocks of docs/sampling.md run."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "sampling.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_block_runs(code, capsys):
    exec(compile(code, str(DOC), "exec"), {"__name__": "doc"})
    assert capsys.readouterr().out
