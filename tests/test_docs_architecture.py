"""docs/architecture.md says which lower layers each layer imports today; the import graph agrees.

The "imports today" column of the Layers table is read back and compared with the layers the code's
imports reach (module level and function level, as :mod:`test_architecture` collects them), so the
page cannot keep a dependency the code dropped or miss one it added.
"""

from __future__ import annotations

from pathlib import Path

from test_architecture import LAYERS, PACKAGE_DIR, collect_imports, import_graph, layer_of

DOC = PACKAGE_DIR.parent / "docs" / "architecture.md"
NOTHING = "nothing of ltr"


def layer_imports_today(package_dir: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    """Layer name → names of the other layers its modules import."""
    modules, imports = collect_imports(package_dir)
    out: dict[str, set[str]] = {name: set() for name, _ in LAYERS}
    for importer, imported in import_graph(modules, imports).items():
        a = layer_of(importer, LAYERS)
        for target in imported:
            b = layer_of(target, LAYERS)
            if a is not None and b is not None and a != b:
                out[LAYERS[a][0]].add(LAYERS[b][0])
    return out


def documented_imports(doc: str) -> dict[str, set[str]]:
    """Layer name → the layers its row's last column names (``nothing of ltr …`` = none)."""
    section = doc.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    out = {}
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        last = cells[-1]
        out[cells[0]] = set() if last.startswith(NOTHING) else {n.strip() for n in last.split(",")}
    return out


def test_the_imports_today_column_matches_the_import_graph() -> None:
    documented = documented_imports(DOC.read_text(encoding="utf-8"))
    actual = layer_imports_today()
    assert set(documented) == set(actual)  # one row per layer, named as in LAYERS
    wrong = {
        name: f"docs say {sorted(documented[name])}, code imports {sorted(actual[name])}"
        for name in actual
        if documented[name] != actual[name]
    }
    assert not wrong, f"update the 'imports today' column of docs/architecture.md: {wrong}"


def test_the_column_is_read_as_written() -> None:
    doc = (
        "## Layers\n\n| layer | modules | imports today |\n|---|---|---|\n"
        "| low | `a` | nothing of ltr (numpy) |\n| top | `b` | low, mid |\n\n## Next\n| x | `y` | z |\n"
    )
    assert documented_imports(doc) == {"low": set(), "top": {"low", "mid"}}
