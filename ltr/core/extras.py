"""The optional extras: which package brings which module, and the one error when one is missing.

``ltr`` is distributed as :data:`DISTRIBUTION` (the name ``ltr`` on the public package index belongs to
another project); the import name and the commands (``python -m ltr.…``) stay ``ltr``. Three features
need packages the base install leaves out:

==========  ===============================  =========================================
extra       modules                          needed for
==========  ===============================  =========================================
export      ``onnx``, ``onnxruntime``        ``python -m ltr.export --format onnx`` (and ``--check``)
catboost    ``catboost``                     ``+model=catboost`` (YetiRank)
neural      ``jax``, ``optax``, ``rax``      ``+model=neural_*`` (neural listwise rankers)
==========  ===============================  =========================================

>>> install_hint("export")
"pip install 'ltr-workbench[export]'"
>>> import_optional("json", extra="export", needed_for="--format onnx").__name__
'json'
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from ltr.core.errors import ConfigError

#: the distribution name on the package index (``pip install ltr-workbench``); the import name is ``ltr``
DISTRIBUTION = "ltr-workbench"
#: extra → the modules it brings (pyproject.toml's [project.optional-dependencies]; a test keeps them equal)
EXTRAS: dict[str, tuple[str, ...]] = {
    "export": ("onnx", "onnxruntime"),
    "catboost": ("catboost",),
    "neural": ("jax", "optax", "rax"),
}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``pip install '<distribution>[<extra>]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def import_optional(module: str, *, extra: str, needed_for: str) -> ModuleType:
    """Import ``module`` of the optional ``extra``; missing: one ConfigError line naming it and the install.

    ``needed_for`` is what the user asked for, in their spelling (``--format onnx``, ``model catboost``):
    ``--format onnx needs the optional package onnx: pip install 'ltr-workbench[export]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(getattr(exc, "name", None) or module, extra, needed_for) from None


def missing_extra(module: str, extra: str, needed_for: str) -> ConfigError:
    """The one error for a missing optional package: what needed it, the package, the install command."""
    return ConfigError(
        f"{needed_for} needs the optional package {module} (extra '{extra}'): {install_hint(extra)}"
        f" (in this checkout: uv sync --extra {extra})"
    )


def require_extra(extra: str, *, needed_for: str) -> None:
    """Every module of ``extra`` (:data:`EXTRAS`) is installed, found without importing it (a model's
    config check must not start JAX: its thread settings are read when it starts); the first missing
    one is the ConfigError of :func:`import_optional`.

    >>> require_extra("export", needed_for="--format onnx")
    """
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package missing, or a half-imported module
            found = False
        if not found:
            raise missing_extra(module, extra, needed_for)
