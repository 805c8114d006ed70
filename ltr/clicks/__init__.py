"""Click logs: seeded simulation of position-biased users, and examination propensities estimated from a log.

``simulation`` turns a labelled dataset into click logs under the position-based or the cascade
model (:func:`simulate_clicks`, :func:`simulate_log_table`); ``propensity`` reads a click log
(:func:`read_click_log`) and estimates the examination probability per position with bootstrap CIs
(:func:`estimate_propensities`: randomisation, EM, regression EM — the last in ``regression_em``).
Rankers trained on such logs are in :mod:`ltr.models.clicks`; the command line is
``python -m ltr.clicks`` (docs/position_bias.md).
"""

from ltr.clicks.logs import Propensities, read_click_log
from ltr.clicks.propensity import estimate_propensities
from ltr.clicks.simulation import (
    CLICK_MODELS,
    ClickConfig,
    ClickLog,
    click_probabilities,
    clicks_from_config,
    examination_probabilities,
    noisy_feature_scores,
    resolve_click_config,
    simulate_clicks,
    simulate_log_table,
)

__all__ = [
    "CLICK_MODELS",
    "ClickConfig",
    "ClickLog",
    "Propensities",
    "click_probabilities",
    "clicks_from_config",
    "estimate_propensities",
    "examination_probabilities",
    "noisy_feature_scores",
    "read_click_log",
    "resolve_click_config",
    "simulate_clicks",
    "simulate_log_table",
]
