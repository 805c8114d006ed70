"""ltr: learning-to-rank experiments with explicit metric conventions.

Layers (lowest first; a module imports only from its own layer or lower ones, see
docs/architecture.md): foundation (``ltr.core.errors``, ``ltr.core.ranking``, ``ltr.core.arrays``, ``ltr.core.config_check``,
``ltr.core.resources``) → ``ltr.data`` → ``ltr.metrics`` → ``ltr.stats`` → ``ltr.clicks`` →
``ltr.models`` → ``ltr.analysis.comparison`` / ``ltr.report.tables`` / ``ltr.report.plots`` / ``ltr.report.progress`` →
``ltr.tracking`` (MLflow) → the application (``ltr.experiment.pipeline`` fits and evaluates, ``ltr.experiment.record``
logs the outcome, ``ltr.experiment.schemas``, …) → the entry points ``python -m ltr.train``, ``ltr.compare``,
``ltr.evaluate``, ``ltr.data``.
"""

__version__ = "0.1.0"
