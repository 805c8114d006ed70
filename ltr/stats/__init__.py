"""Statistics over per-query metric values: bootstrap CIs, paired tests, corrections, effect sizes, power.

Every function takes per-query float64 arrays (NaN = a query skipped by the metric's convention) and,
where random, an explicit ``seed`` (int or :class:`numpy.random.Generator`). See ``docs/statistics.md``.
"""

from ltr.stats.bootstrap import BootstrapResult, bootstrap_ci, paired_bootstrap_ci

__all__ = [
    "BootstrapResult",
    "bootstrap_ci",
    "paired_bootstrap_ci",
]
