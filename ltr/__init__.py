"""ltr: learning-to-rank experiments with explicit metric conventions.

Layers (lowest first; a module imports only from its own layer or lower ones, see
docs/architecture.md): foundation (``ltr.errors``, ``ltr.ranking``, ``ltr.arrays``, ``ltr.config_check``,
``ltr.resources``) → ``ltr.data`` → ``ltr.metrics`` → ``ltr.stats`` → ``ltr.clicks`` →
``ltr.models`` → ``ltr.comparison`` / ``ltr.report`` / ``ltr.plots`` / ``ltr.progress`` →
``ltr.tracking`` (MLflow) → the application (``ltr.pipeline`` fits and evaluates, ``ltr.record``
logs the outcome, ``ltr.schemas``, …) → the entry points ``python -m ltr.train``, ``ltr.compare``,
``ltr.evaluate``, ``ltr.data``.
"""

__version__ = "0.1.0"
