"""ltr: learning-to-rank experiments with explicit metric conventions.

Stages (each importable on its own; a stage imports only from the ones before it, see
docs/architecture.md): ``ltr.data`` (parse, cache, synthetic data) → ``ltr.metrics`` (per-query
metric values) → ``ltr.stats`` (CIs, tests) → ``ltr.models`` (rankers) → ``ltr.comparison`` /
``ltr.report`` / ``ltr.plots`` → ``ltr.tracking`` (MLflow). ``python -m ltr.train`` is the Hydra entry point.
"""

__version__ = "0.1.0"
