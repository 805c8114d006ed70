"""Every docstring example in the ``ltr`` package runs and gives the output it shows.

One test per module (found by walking the package, so a new module is covered without editing
this file); modules without examples pass trivially. ``__main__`` modules are skipped: importing
them runs a command line.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import ltr

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(ltr.__path__, prefix="ltr.")
    if not info.name.endswith("__main__")
)


def test_the_package_walk_finds_the_modules() -> None:
    assert {"ltr.metrics.compute", "ltr.models.pyfunc", "ltr.data._fastparse", "ltr.stats.bootstrap"} <= set(
        MODULES
    )


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed in {module}"
    # a module whose source shows examples must have them found (and run), not silently skipped
    source = Path(mod.__file__).read_text(encoding="utf-8")
    if ">>> " in source:
        assert result.attempted > 0, f"{module} shows '>>>' examples but doctest found none"
