"""Every page of the docs runs: its Python blocks, in order, as one script.

The README and every Markdown page under ``docs/``: what a reader pastes block after
block must work as written (documentation that cannot rot silently). Each page with
blocks prints something, or defines tests that other tests run. A page that needs an
optional extra (``jax``, ``pymc``) is skipped where the extra is missing (the test
command installs them); blocks fenced as ``py`` rather than ``python`` are shown, not
run.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from ladder_mcmc.validation import SamplingWarning

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCKS = {p: re.findall(r"```python\n(.*?)```", p.read_text(), flags=re.S) for p in PAGES}
RUN = [p for p in PAGES if BLOCKS[p]]


def test_the_guides_have_runnable_blocks():
    named = {str(p.relative_to(ROOT)) for p in RUN}
    assert {"README.md", "docs/quickstart.md", "docs/tutorials/custom-map.md"} <= named


#: pages whose examples show a run that warns on purpose (too short, or a resonant
#: length), each saying so beside the example; every other page must run without a
#: SamplingWarning (issue 28: a page prints no warning it does not explain)
WARNS_ON_PURPOSE = {
    "docs/how-to/multiscale.md",
    "docs/how-to/rough-targets.md",
    "docs/how-to/warmup.md",
    "docs/tutorials/custom-map.md",
}


#: pages whose examples compile a PyMC model (seconds of PyTensor compilation): in the
#: slow run; the adapter itself is tested by tests/unit/models/test_pymc_adapter.py
SLOW_PAGES = {"docs/models.md"}


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, marks=pytest.mark.slow) if str(p.relative_to(ROOT)) in SLOW_PAGES else p
        for p in RUN
    ],
    ids=[str(p.relative_to(ROOT)) for p in RUN],
)
def test_the_page_runs_as_one_script(page, capsys, monkeypatch, tmp_path):
    code = "\n".join(BLOCKS[page])
    for module in sorted(set(re.findall(r"^\s*(?:import|from) (jax|pymc|torch)\b", code, re.M))):
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)  # files a page writes land here
    namespace = {"__name__": "__doc__"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SamplingWarning)
        for i, block in enumerate(BLOCKS[page]):
            exec(compile(block, f"{page.name} (block {i})", "exec"), namespace)
    shown = [str(w.message) for w in caught if issubclass(w.category, SamplingWarning)]
    name = str(page.relative_to(ROOT))
    if name in WARNS_ON_PURPOSE:
        assert "warn" in page.read_text(), f"{name} warns without saying why"
    else:
        assert not shown, f"{name} prints warnings it does not explain: {shown}"
    # it shows something, or it writes tests (run by tests/unit/ladder/test_rules_docs.py
    # and tests/exact/test_verification_doc.py)
    assert capsys.readouterr().out or any(name.startswith("test_") for name in namespace)
