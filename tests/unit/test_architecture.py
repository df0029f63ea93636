"""``docs/architecture.md`` against the tree: the layers it states hold in the import graph,
and the modules it names are exactly the package's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ladder_mcmc"
PAGE = (ROOT / "docs" / "architecture.md").read_text()
FOUNDATION = {"arrays", "validation"}


def layers(page: str) -> dict[str, set[str]]:
    """``{subpackage: the layers it may import}`` from the page's table."""
    allowed = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`[a-z_]+`", cells[0]):
            names = {n.strip() for n in cells[2].split(",")}
            if "foundation" in names:
                names = (names - {"foundation"}) | FOUNDATION
            allowed[cells[0].strip("`")] = names
    return allowed


def named_modules(page: str) -> set[str]:
    """The module paths the page's module list names (``sub/module.py``)."""
    section = page.split("## The modules", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`([a-z0-9_/]+\.py)`", section))


def imports(path: Path) -> set[str]:
    """The ``ladder_mcmc`` subpackages or foundation modules a module imports, lazily too."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "ladder_mcmc" and len(parts) > 1:
                found.add(parts[1])
    return found


def subpackage_of(path: Path) -> str | None:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else None


def edges(page_layers: dict[str, set[str]]) -> list[str]:
    """Every import that leaves a module's subpackage for a layer the page does not allow."""
    wrong = []
    known = set(page_layers) | FOUNDATION
    for path in sorted(PACKAGE.rglob("*.py")):
        own = subpackage_of(path)
        if own is None:  # the foundation and the top level
            stem = path.stem
            if stem in FOUNDATION:
                bad = imports(path) - FOUNDATION
                wrong += [f"{path.name} imports {b}" for b in sorted(bad)]
            continue
        for target in sorted(imports(path) & known - {own}):
            if target not in page_layers[own]:
                wrong.append(f"{path.relative_to(PACKAGE)} ({own}) imports {target}")
    return wrong


def test_the_import_graph_follows_the_layers_of_the_page():
    page_layers = layers(PAGE)
    assert set(page_layers) == {
        "diagnostics",
        "models",
        "ladder",
        "hamiltonian",
        "engine",
        "run",
        "verify",
        "bench",
        "paper",
    }
    assert edges(page_layers) == []


def test_the_layers_have_no_cycle():
    page_layers = layers(PAGE)
    order = list(page_layers)  # the table lists them lowest first
    for i, name in enumerate(order):
        assert page_layers[name] - FOUNDATION <= set(order[:i]), name


def test_every_module_is_named_and_every_named_module_exists():
    named = named_modules(PAGE)
    actual = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")}
    assert sorted(named - actual) == [], "named on the page but missing"
    assert sorted(actual - named) == [], "in the package but not on the page"


def test_a_forbidden_import_is_caught():
    """The check fails on a page that forbids an import the code makes (engine may not
    import diagnostics), and on a module missing from the list."""
    narrowed = PAGE.replace("| foundation, diagnostics, ladder |", "| foundation, ladder |")
    assert narrowed != PAGE
    assert any("engine" in e and "diagnostics" in e for e in edges(layers(narrowed)))
    missing = PAGE.replace("* `engine/ragged.py`", "* `engine/ragged_gone.py`")
    named = named_modules(missing)
    assert "engine/ragged.py" not in named and "engine/ragged_gone.py" in named
