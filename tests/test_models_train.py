"""Every single model trains from the Hydra config as `python -m ltr.train +model=NAME` would (run(cfg))."""

from __future__ import annotations

import math

import pytest
from hydra import compose, initialize_config_dir

from ltr.experiment.schemas import register_configs
from ltr.models import available_models, get_ranker_class
from ltr.train import CONF_DIR, run

SINGLE = [m for m in available_models() if not m.startswith("ensemble")]
TINY = [
    "data.n_queries.train=40",
    "data.n_queries.valid=20",
    "data.n_queries.test=20",
    "data.max_docs=30",
    "num_threads=1",
    "tracking=none",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", SINGLE)
def test_model_trains_from_its_config(tmp_path, name):
    overrides = [f"+model={name}", *TINY, f"paths.root={tmp_path}"]
    if "n_trees" in get_ranker_class(name).default_params:
        overrides.append("model.params.n_trees=15")
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    value = run(cfg)
    assert math.isfinite(value) and 0.0 < value <= 1.0
