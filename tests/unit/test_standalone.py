"""The package stands alone: no path outside the repository, design citations that resolve.

* nothing under ``ladder_mcmc/``, ``tests/``, ``docs/``, ``benchmarks/``, ``examples/``
  or ``README.md`` points at the ``shared`` folder beside the repository or at the
  design notes it used to hold;
* every "docs/design.md §n" citation names a numbered section of ``docs/design.md``;
* the posteriordb reference data ship inside the package (and are declared as
  package data), and load from a copy of the package alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest

import ladder_mcmc
from ladder_mcmc.models import posteriors
from ladder_mcmc.models.posteriors import references

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(ladder_mcmc.__file__).resolve().parent
DESIGN = ROOT / "docs" / "design.md"
# spelled in pieces, so that this file does not contain what it looks for
FORBIDDEN = ("../" + "shared", "shared/" + "benchmarks", "DESIGN" + " §")
HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.MULTILINE)
CITATION = re.compile(r"docs/design\.md ((?:§\d+(?:\.\d+)*(?:, )?)+)")
SECTION = re.compile(r"§(\d+(?:\.\d+)*)")


def _product_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in ("ladder_mcmc", "tests", "docs", "benchmarks", "examples"):
        files += [
            p
            for p in sorted((ROOT / folder).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and ".hypothesis" not in p.parts
        ]
    this = Path(__file__).resolve()
    return [p for p in files if p.resolve() != this]


def _sections() -> set[str]:
    return set(HEADING.findall(DESIGN.read_text(encoding="utf-8")))


def test_no_file_points_outside_the_repository():
    offenders = []
    for path in _product_files():
        content = path.read_bytes()
        offenders += [
            f"{path.relative_to(ROOT)}: {needle!r}"
            for needle in FORBIDDEN
            if needle.encode() in content
        ]
    assert not offenders, "\n".join(offenders)


def test_design_citations_name_existing_sections():
    sections = _sections()
    assert {"1", "4", "7.1"} <= sections
    cited, broken = 0, []
    for path in _product_files():
        if path.suffix not in (".py", ".md", ".toml", ".txt"):
            continue
        for group in CITATION.findall(path.read_text(encoding="utf-8")):
            for number in SECTION.findall(group):
                cited += 1
                if number not in sections:
                    broken.append(f"{path.relative_to(ROOT)}: §{number}")
    # and the notes' references to themselves
    for number in SECTION.findall(DESIGN.read_text(encoding="utf-8")):
        if number not in sections:
            broken.append(f"docs/design.md: §{number}")
    assert not broken, "\n".join(broken)
    assert cited >= 20  # the citations are found at all


def test_reference_data_live_in_the_package(monkeypatch):
    monkeypatch.delenv(references.ENV_VAR, raising=False)
    found = posteriors.find_database().resolve()
    assert found == references.DEFAULT_PATH.resolve()
    assert found.is_relative_to(PACKAGE) and "shared" not in found.parts
    assert (found.parent / "NOTICE.txt").is_file()
    assert posteriors.load("arK-arK").dim == 7


def test_reference_data_are_package_data():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["ladder_mcmc.models.posteriors"]
    data = PACKAGE / "models" / "posteriors" / "data"
    for path in data.iterdir():
        name = path.relative_to(PACKAGE / "models" / "posteriors").as_posix()
        assert any(fnmatch(name, pattern) for pattern in patterns), name


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_a_copy_of_the_package_alone_loads_every_posterior(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "ladder_mcmc", ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import ladder_mcmc, ladder_mcmc.models.posteriors as p; "
        "print(ladder_mcmc.__file__); print(p.find_database()); "
        "print(sorted(p.load(n).dim for n in p.names()))"
    )
    env = {k: v for k, v in os.environ.items() if k != references.ENV_VAR}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    package_file, database, dims = out.stdout.splitlines()
    assert Path(package_file).is_relative_to(site)
    assert Path(database).is_relative_to(site)
    assert dims == "[3, 4, 4, 5, 6, 7, 10]"
