"""The import graph of ``ltr`` keeps the layers of docs/architecture.md.

Every module of the package is parsed with :mod:`ast` (nothing is imported), and every import is
collected: module level and inside functions, ``import ltr.x``, ``from ltr.x import y`` and relative
imports (``from . import y``). ``from P import n`` is an edge to the submodule ``P.n`` when that is a
module, else to ``P`` itself; the implicit import of a parent package is not an edge; imports under
``if TYPE_CHECKING:`` count (they name a dependency). Three rules:

(a) no import cycle between modules, counting function-local imports (a deferred import still runs);
(b) a module imports only from its own layer or lower ones (:data:`LAYERS`, lowest first), and no
    entry point imports another entry point;
(c) an import inside a function needs a one-line reason, ``# deferred: <why>`` on the import's
    line(s) or on the comment line just above it, when it imports ``ltr`` itself or a heavy
    third-party package (:data:`HEAVY`). ``ltr``'s own modules are cheap: import them at the top.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "ltr"

#: Layers, lowest first: (name, module prefixes). A module belongs to the layer of its longest
#: matching prefix (``ltr.data.__main__`` is an entry point although it lives in ``ltr.data``).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("ltr", "ltr.core")),
    ("file formats", ("ltr.io",)),
    ("data", ("ltr.data",)),
    ("metrics", ("ltr.metrics",)),
    ("statistics", ("ltr.stats",)),
    ("click logs", ("ltr.clicks",)),
    ("models", ("ltr.models",)),
    ("distributed", ("ltr.distributed",)),
    ("analysis", ("ltr.analysis",)),
    ("attribution", ("ltr.attribution",)),
    ("reports", ("ltr.report",)),
    ("tracking", ("ltr.tracking",)),
    ("export", ("ltr.export",)),
    ("command plumbing", ("ltr.cli",)),
    ("sweeps", ("ltr.sweep",)),
    ("experiments", ("ltr.experiment",)),
    (
        "commands",
        (
            "ltr.train",
            "ltr.compare",
            "ltr.evaluate",
            "ltr.explain",
            "ltr.labelnext",
            "ltr.warmup",
            "ltr.data.__main__",
            "ltr.clicks.__main__",
            "ltr.export.__main__",
            "ltr.tracking.__main__",
        ),
    ),
)
#: Commands (``python -m ltr.…``): none may import another.
ENTRY_POINTS = frozenset(LAYERS[-1][1])
#: Third-party packages too slow to import (or optional) to load at module level where they are
#: not needed; a function-local import of one needs a ``# deferred:`` reason.
HEAVY = frozenset(
    {"lightgbm", "xgboost", "catboost", "mlflow", "dask", "distributed", "matplotlib", "optuna", "hydra",
     "pandas", "sklearn", "skops", "onnx", "onnxruntime", "jax", "optax", "rax"}
)  # fmt: skip
REASON = re.compile(r"#\s*deferred:\s*\S")

CYCLE = "import cycle"
UPWARD = "imports a higher layer"
ENTRY = "entry point imports an entry point"
LOCAL = "function-local import without a '# deferred: <why>' comment"


@dataclass(frozen=True)
class Import:
    """One imported module: who imports it, where, and whether from inside a function."""

    importer: str
    imported: str
    line: int
    local: bool
    explained: bool  # carries a '# deferred: <why>' comment


def module_name(path: Path, package_dir: Path) -> str:
    """Dotted name of the module in ``path`` (``pkg/a/__init__.py`` → ``pkg.a``)."""
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, modules: set[str]
) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: level 1 is the importer's own package
        base = importer.split(".") if is_package else importer.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        out.append(sub if sub in modules else source)
    return out


def _explained(lines: Sequence[str], node: ast.stmt) -> bool:
    own = lines[node.lineno - 1 : node.end_lineno]
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    return any(REASON.search(text) for text in own) or (above.startswith("#") and bool(REASON.search(above)))


def collect_imports(package_dir: Path) -> tuple[set[str], list[Import]]:
    """All modules of the package in ``package_dir`` and every import statement's targets."""
    files = sorted(package_dir.rglob("*.py"))
    modules = {module_name(p, package_dir) for p in files}
    found: list[Import] = []
    for path in files:
        importer = module_name(path, package_dir)
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, local: bool, importer: str = importer, lines: list[str] = lines,
                  is_package: bool = is_package) -> None:  # fmt: skip
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Import | ast.ImportFrom):
                    why = _explained(lines, child)
                    for target in dict.fromkeys(_targets(child, importer, is_package, modules)):
                        found.append(Import(importer, target, child.lineno, local, why))
                inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                visit(child, inner)

        visit(ast.parse(source, filename=str(path)), False)
    return modules, found


def import_graph(modules: set[str], imports: Iterable[Import]) -> dict[str, set[str]]:
    """Module → the package's modules it imports (any level; self-imports dropped)."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports:
        if imp.imported in modules and imp.imported != imp.importer:
            graph[imp.importer].add(imp.imported)
    return graph


def find_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle path ``[a, b, ..., a]`` per strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            components.append(component)

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    cycles = []
    for component in components:
        if len(component) < 2:
            continue
        start = min(component)
        parent: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in parent:  # breadth-first back to start: a shortest cycle
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & component):
                    if w not in parent:
                        parent[w] = v
                        nxt.append(w)
            frontier = nxt
        path = [start]
        v = parent[start]
        while v != start:
            path.append(v)
            v = parent[v]
        cycles.append([start, *reversed(path[1:]), start])
    return sorted(cycles)


def layer_of(module: str, layers: Sequence[tuple[str, Sequence[str]]]) -> int | None:
    """Index of the layer whose prefix matches ``module`` longest; None when no layer claims it."""
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), i)
    return None if best is None else best[1]


@dataclass(frozen=True)
class Violation:
    """One broken rule: its kind, the importing module, what it imports, and a readable message."""

    kind: str
    importer: str
    imported: str
    message: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.importer, self.imported)


def check(
    package_dir: Path,
    layers: Sequence[tuple[str, Sequence[str]]] = LAYERS,
    entry_points: frozenset[str] = ENTRY_POINTS,
    heavy: frozenset[str] = HEAVY,
) -> list[Violation]:
    """Every violation of rules (a)–(c) in the package in ``package_dir``, in a stable order."""
    modules, imports = collect_imports(package_dir)
    root = package_dir.name
    out = []
    for cycle in find_cycles(import_graph(modules, imports)):
        path = " -> ".join(cycle)
        out.append(Violation(CYCLE, cycle[0], path, f"{CYCLE}: {path}"))
    for imp in imports:
        own = imp.imported in modules or imp.imported == root
        where = f"{imp.importer} (line {imp.line}) -> {imp.imported}"
        if own and imp.imported != imp.importer:
            a, b = layer_of(imp.importer, layers), layer_of(imp.imported, layers)
            if imp.importer in entry_points and imp.imported in entry_points:
                out.append(Violation(ENTRY, imp.importer, imp.imported, f"{ENTRY}: {where}"))
            elif a is not None and b is not None and b > a:
                message = f"{UPWARD}: {where} ({layers[a][0]} < {layers[b][0]})"
                out.append(Violation(UPWARD, imp.importer, imp.imported, message))
        top = imp.imported.split(".")[0]
        if imp.local and not imp.explained and (own or top in heavy):
            out.append(Violation(LOCAL, imp.importer, imp.imported if own else top, f"{LOCAL}: {where}"))
    return out


def counts(violations: Iterable[Violation]) -> Counter[tuple[str, str, str]]:
    """How often each (kind, importer, imported) occurs."""
    return Counter(v.key for v in violations)


# --- the rules on ltr itself ---------------------------------------------------------------------
def test_every_module_has_a_layer() -> None:
    modules, _ = collect_imports(PACKAGE_DIR)
    assert {"ltr.data.cache", "ltr.metrics.compute", "ltr.train"} <= modules  # the walk found the package
    unplaced = sorted(m for m in modules if layer_of(m, LAYERS) is None)
    assert not unplaced, f"modules in no layer (add them to LAYERS and docs/architecture.md): {unplaced}"


def test_docs_architecture_lists_every_layer_in_this_order() -> None:
    doc = (PACKAGE_DIR.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == len(LAYERS), rows
    for row, (name, prefixes) in zip(rows, LAYERS, strict=True):
        for prefix in prefixes:
            path = prefix.replace(".", "/")
            shown = (
                "`ltr`"
                if prefix == "ltr"
                else f"`{path}/`"
                if (PACKAGE_DIR.parent / path).is_dir()
                else f"`{path}.py`"
            )
            assert shown in row, f"docs/architecture.md layer row for {name!r} does not show {shown}: {row}"


def test_import_graph_keeps_the_layers() -> None:
    messages = [v.message for v in check(PACKAGE_DIR)]
    assert not messages, "layering violations (see docs/architecture.md):\n" + "\n".join(messages)


#: What importing a lower stage may load besides numpy/scipy (``numba``: compiled kernels). The data
#: stage stays free of numba until a file is parsed with the fast engine or cached.
IMPORT_ALLOWS: dict[str, frozenset[str]] = {
    "ltr.io.trec": frozenset(),
    "ltr.io.predictions": frozenset(),
    "ltr.data": frozenset(),
    "ltr.metrics": frozenset({"numba"}),
    "ltr.stats": frozenset({"numba"}),
    "ltr.clicks": frozenset({"numba"}),
    "ltr.models": frozenset({"numba"}),  # engines load when a model is fitted (below)
    "ltr.analysis.comparison": frozenset({"numba", "pandas"}),
    "ltr.analysis.agreement": frozenset({"numba", "pandas"}),
    "ltr.analysis.segments": frozenset({"numba", "pandas"}),
    "ltr.report.tables": frozenset(),
    "ltr.report.plots": frozenset(),
    "ltr.report.progress": frozenset(),
    "ltr.tracking.store": frozenset(),
    "ltr.evaluate": frozenset({"numba"}),
    "ltr.export": frozenset(),
    "ltr.export.__main__": frozenset({"numba"}),  # ONNX, MLflow and the engines load only when used
}


#: One interpreter for every import check: it imports numpy and scipy (allowed everywhere), then forks a
#: child per group of allowed packages, which imports them (loading an allowed package first hides
#: nothing: whatever it loads is in ``sys.modules`` too), and that child forks a grandchild per module,
#: which imports the module and reports the watched packages in ``sys.modules``. Each module is imported
#: into a process that has never imported any other ltr module.
_FORKED_CHECKS = """
import json, os, sys
plan, watched, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]

def forked(body):
    pid = os.fork()
    if pid == 0:
        try:
            body()
            code = 0
        except BaseException as exc:
            sys.stderr.write(repr(exc) + "\\n")
            code = 1
        sys.stdout.flush()
        os._exit(code)
    return os.waitpid(pid, 0)[1]

def check(module):
    def body():
        __import__(module)
        with open(os.path.join(out, module), "w") as f:
            f.write(" ".join(m for m in watched if m in sys.modules))
    return body

def group(preload, modules):
    def body():
        for name in preload:
            __import__(name)
        for module in modules:
            forked(check(module))
    return body

import numpy, scipy.special, scipy.stats  # allowed everywhere (numpy/scipy), and scipy.stats takes ~1 s
for preload, modules in plan:
    forked(group(preload, modules))
"""


@pytest.fixture(scope="module")
def loaded_by_import(tmp_path_factory) -> dict[str, Any]:
    """What importing each module of :data:`IMPORT_ALLOWS` into a fresh process loads, of the watched
    packages (:data:`_FORKED_CHECKS`: one interpreter, a forked process per module); ``"stderr"``: what
    the failed imports said."""
    import json

    watched = sorted(HEAVY | {"numba"})
    groups: dict[tuple[str, ...], list[str]] = {}
    for module, allowed in sorted(IMPORT_ALLOWS.items()):
        groups.setdefault(tuple(sorted(allowed)), []).append(module)
    out = tmp_path_factory.mktemp("imports")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_DIR.parent)}
    args = [json.dumps(list(groups.items())), json.dumps(watched), str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", _FORKED_CHECKS, *args], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = {f.name: set(f.read_text().split()) for f in out.iterdir()}
    return loaded | {"stderr": proc.stderr}


@pytest.mark.parametrize("module", sorted(IMPORT_ALLOWS))
def test_importing_a_stage_leaves_heavy_packages_unloaded(module: str, loaded_by_import) -> None:
    assert module in loaded_by_import, f"import {module} failed: {loaded_by_import['stderr'][-3000:]}"
    loaded = loaded_by_import[module] - IMPORT_ALLOWS[module]
    assert not loaded, f"import {module} loads {sorted(loaded)}: defer them ('# deferred: <why>')"


#: Engine packages: fitting a model loads its own engine and no other.
ENGINES = ("lightgbm", "xgboost", "catboost", "dask", "distributed")


FIT_CASES = [
    ("lambdamart_unbiased", {"n_trees": 2}, {"lightgbm"}),  # click-trained LightGBM: no XGBoost
    ("lambdamart_xgb_clicks", {"n_trees": 2}, {"xgboost"}),  # click-trained XGBoost: no LightGBM
    ("linear", {}, set()),  # scikit-learn only
    ("feature", {}, set()),  # no engine at all
]

#: One interpreter imports ltr.data and ltr.models (which load no engine: see the import checks above),
#: then forks a child per model, which fits it and reports the engines in ``sys.modules``.
_FORKED_FITS = """
import json, os, sys
import numpy as np
from ltr.data import RankingData
from ltr.models import build_ranker
cases, engines, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
for model, params in cases:
    pid = os.fork()
    if pid == 0:
        try:
            rng = np.random.default_rng(0)
            data = RankingData(X=rng.random((40, 3)).astype(np.float32), y=rng.integers(0, 3, 40),
                               qid=np.repeat(np.arange(8), 5))
            ranker = build_ranker({"name": model, "params": params}, seed=0, num_threads=1)
            ranker.fit(data, data)
            with open(os.path.join(out, model), "w") as f:
                f.write(" ".join(m for m in engines if m in sys.modules))
            code = 0
        except BaseException as exc:
            sys.stderr.write(f"{model}: {exc!r}\\n")
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def engines_after_fit(tmp_path_factory) -> dict[str, Any]:
    """The engine packages loaded by fitting each model of :data:`FIT_CASES` in a process that had
    loaded none (:data:`_FORKED_FITS`); ``"stderr"``: what failed fits said."""
    import json

    out = tmp_path_factory.mktemp("fits")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_DIR.parent)}
    args = [json.dumps([[m, p] for m, p, _ in FIT_CASES]), json.dumps(ENGINES), str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", _FORKED_FITS, *args], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {f.name: set(f.read_text().split()) for f in out.iterdir()} | {"stderr": proc.stderr}


@pytest.mark.parametrize(("model", "params", "engines"), FIT_CASES)
def test_fitting_a_model_loads_only_its_engine(
    model: str, params: dict, engines: set[str], engines_after_fit
) -> None:
    assert model in engines_after_fit, engines_after_fit["stderr"][-2000:]
    assert engines_after_fit[model] == engines


# --- the checker on a synthetic package (it must be able to fail) --------------------------------
def _write(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


TOY_LAYERS = (("low", ("pkg", "pkg.base")), ("mid", ("pkg.mid",)), ("top", ("pkg.cli", "pkg.other_cli")))
TOY_ENTRY = frozenset({"pkg.cli", "pkg.other_cli"})


def test_checker_finds_a_cycle_through_a_function_local_import(tmp_path: Path) -> None:
    pkg = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/mid/__init__.py": "",
            "pkg/mid/a.py": "from pkg.mid.b import f\n",
            "pkg/mid/b.py": "def f():\n    from . import c  # deferred: test\n",
            "pkg/mid/c.py": "import pkg.mid.a\n",
        },
    )
    violations = check(pkg, TOY_LAYERS, TOY_ENTRY)
    assert [v.message for v in violations] == [f"{CYCLE}: pkg.mid.a -> pkg.mid.b -> pkg.mid.c -> pkg.mid.a"]


def test_checker_finds_upward_and_entry_point_imports(tmp_path: Path) -> None:
    pkg = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/base.py": "from .mid import helper\n",  # low -> mid: upward (relative import)
            "pkg/mid/__init__.py": "import numpy\nfrom pkg import base\n\ndef helper():\n    pass\n",
            "pkg/cli.py": "from pkg.other_cli import main\nfrom pkg.mid import helper\n",
            "pkg/other_cli.py": "def main():\n    pass\n",
        },
    )
    violations = check(pkg, TOY_LAYERS, TOY_ENTRY)
    assert counts(violations) == Counter(
        {
            (UPWARD, "pkg.base", "pkg.mid"): 1,
            (ENTRY, "pkg.cli", "pkg.other_cli"): 1,
            (CYCLE, "pkg.base", "pkg.base -> pkg.mid -> pkg.base"): 1,
        }
    )
    assert f"{UPWARD}: pkg.base (line 1) -> pkg.mid (low < mid)" in [v.message for v in violations]


def test_checker_wants_a_reason_for_local_imports_of_own_and_heavy_modules(tmp_path: Path) -> None:
    pkg = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/base.py": "X = 1\n",
            "pkg/mid/__init__.py": (
                "import json\n\n"
                "def a():\n    from pkg.base import X\n    return X\n\n"  # unexplained own import
                "def b():\n    import lightgbm\n\n"  # unexplained heavy import
                "def c():\n    import os\n\n"  # cheap standard library: no reason needed
                "def d():\n    # deferred: optional engine\n    import xgboost\n\n"  # reason above
                "def e():\n    from pkg.base import (  # deferred: keeps the CLI fast\n        X,\n    )\n"
                "class K:\n    def m(self):\n        from pkg import base\n"  # a method is a function
                "F = lambda: __import__('json')\n"
            ),
        },
    )
    violations = check(pkg, TOY_LAYERS, TOY_ENTRY, frozenset({"lightgbm", "xgboost"}))
    assert counts(violations) == Counter(
        {(LOCAL, "pkg.mid", "pkg.base"): 2, (LOCAL, "pkg.mid", "lightgbm"): 1}
    )


def test_layer_of_takes_the_longest_prefix_and_none_for_a_stray_module() -> None:
    layers = (("low", ("pkg",)), ("top", ("pkg.data.__main__",)))
    assert [layer_of(m, layers) for m in ("pkg", "pkg.data", "pkg.data.__main__", "pkgx", "other")] == [
        0,
        0,
        1,
        None,
        None,
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("import x  # deferred: heavy optional dependency", True),
        ("import x  # deferred:", False),  # a marker without a reason
        ("import x  # noqa: F401", False),
    ],
)
def test_reason_comment_needs_text_after_the_marker(line: str, expected: bool) -> None:
    node = ast.parse(line).body[0]
    assert _explained([line], node) is expected
