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
        missing = getattr(exc, "name", None) or module
        raise ConfigError(
            f"{needed_for} needs the optional package {missing} (extra '{extra}'): {install_hint(extra)}"
            f" (in this checkout: uv sync --extra {extra})"
        ) from None


def require_extra(extra: str, *, needed_for: str) -> None:
    """Import every module of ``extra`` (:data:`EXTRAS`): the first missing one is the ConfigError of
    :func:`import_optional`."""
    for module in EXTRAS[extra]:
        import_optional(module, extra=extra, needed_for=needed_for)
