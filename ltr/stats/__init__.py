"""Statistics over per-query metric values: bootstrap CIs, paired tests, corrections, effect sizes, power.

Every function takes per-query float64 arrays (NaN = a query skipped by the metric's convention;
dropped pairwise under the default ``nan_policy='omit'``) and, where random, an explicit ``seed``
(int or :class:`numpy.random.Generator`). Formulas and advice: ``docs/statistics.md``.
"""

from ltr.stats.bootstrap import BootstrapResult, bootstrap_ci, paired_bootstrap_ci
from ltr.stats.corrections import adjust_pvalues, benjamini_hochberg, holm
from ltr.stats.effects import EffectSize, WinTieLoss, effect_size, win_tie_loss
from ltr.stats.hsd import HSDResult, tukey_hsd
from ltr.stats.paired import TestResult, paired_t_test, randomization_test, sign_test, wilcoxon_test
from ltr.stats.power import achieved_power, queries_needed

__all__ = [
    "BootstrapResult",
    "EffectSize",
    "HSDResult",
    "TestResult",
    "WinTieLoss",
    "achieved_power",
    "adjust_pvalues",
    "benjamini_hochberg",
    "bootstrap_ci",
    "effect_size",
    "holm",
    "paired_bootstrap_ci",
    "paired_t_test",
    "queries_needed",
    "randomization_test",
    "sign_test",
    "tukey_hsd",
    "wilcoxon_test",
    "win_tie_loss",
]
