"""Every docstring example in the ``ltr`` package runs and gives the output it shows.

One test per module (found by walking the package, so a new module is covered without editing
this file); modules without examples pass trivially. ``__main__`` modules are skipped: importing
them runs a command line.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

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
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed in {module}"
