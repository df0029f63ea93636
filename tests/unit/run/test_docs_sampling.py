"""The code blocks of the quickstart, the own-model tutorial and the how-to guides run."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[3] / "docs"
FILES = ["quickstart.md", "tutorials/own-model.md"] + [
    f"how-to/{p.name}" for p in sorted((DOCS / "how-to").glob("*.md"))
]
BLOCKS = [
    (name, code)
    for name in FILES
    for code in re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), flags=re.S)
]


@pytest.mark.parametrize(
    "name, code", BLOCKS, ids=[f"{name}-block{i}" for i, (name, _) in enumerate(BLOCKS)]
)
def test_doc_block_runs(name, code, capsys):
    exec(compile(code, str(DOCS / name), "exec"), {"__name__": "doc"})
    assert capsys.readouterr().out


def test_every_guide_has_a_runnable_block():
    assert {name for name, _ in BLOCKS} >= {"quickstart.md", "tutorials/own-model.md"}
