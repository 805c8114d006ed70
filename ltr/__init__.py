"""ltr: learning-to-rank experiments with explicit metric conventions.

Stages (each importable on its own): ``ltr.data`` (parse, cache, synthetic data) → ``ltr.models``
(rankers) → ``ltr.metrics`` (per-query metric values) → ``ltr.stats`` (CIs, tests) →
``ltr.report`` / ``ltr.tracking`` (tables, MLflow). ``python -m ltr.train`` is the Hydra entry point.
"""

__version__ = "0.1.0"
