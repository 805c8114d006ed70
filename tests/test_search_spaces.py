"""The shipped search spaces (conf/hparams_search/*.yaml): one per model family, each composes with its
models, searches keys the model's config has, and proposes trials whose overrides compose."""

from __future__ import annotations

import optuna
import pytest
from helpers import compose_config
from omegaconf import OmegaConf

from ltr.core.resources import config_dir
from ltr.experiment.pipeline import check_run_config
from ltr.experiment.schemas import validate_config
from ltr.sweep.search_space import parse_search_space
from ltr.sweep.sweeper import build_pruner, checked_settings

optuna.logging.set_verbosity(optuna.logging.WARNING)

SEARCHES = {
    "lambdamart_optuna": ["lambdamart", "xendcg"],
    "xgboost_optuna": ["lambdamart_xgb"],
    "catboost_optuna": ["catboost"],
    "pointwise_optuna": ["regression", "classification"],
    "ensemble_blend_optuna": ["ensemble_blend"],
    "ensemble_stack_optuna": ["ensemble_stack"],
    "neural_optuna": ["neural_softmax", "neural_listmle", "neural_approxndcg", "neural_pairwise",
                      "neural_lambdaloss", "neural_attention"],
}  # fmt: skip
CASES = [(search, model) for search, models in SEARCHES.items() for model in models]


def test_every_search_file_is_listed_here():
    shipped = {p.stem for p in (config_dir() / "hparams_search").glob("*.yaml")}
    assert shipped == set(SEARCHES)


@pytest.mark.parametrize(("search", "model"), CASES)
def test_a_search_composes_searches_existing_keys_and_its_trials_compose(search, model):
    cfg = compose_config([f"+model={model}", f"hparams_search={search}"], return_hydra_config=True)
    sweeper = OmegaConf.to_container(cfg.hydra.sweeper, resolve=True)
    settings = checked_settings(**{k: v for k, v in sweeper.items() if not k.startswith("_")})
    assert settings.direction == "maximize" and settings.storage.endswith("/optuna.db")
    assert settings.study_name == f"{model}-{cfg.data.name}"
    # no shipped search prunes by default (docs/experiments.md, "Pruning": it killed the best trials)
    assert isinstance(build_pruner(settings.pruner), optuna.pruners.NopPruner)
    space = parse_search_space(settings.params, [])
    assert space.distributions
    for key in space.distributions:
        assert OmegaConf.select(cfg, key, default="<missing>") != "<missing>", (
            f"{search}: {key} not in +model={model}"
        )
    # two trials of a seeded sampler: their overrides compose into a valid run config
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0), direction="maximize")
    for _ in range(2):
        trial = study.ask(space.distributions)
        composed = compose_config([f"+model={model}", *space.trial_overrides(trial.params)])
        for key, value in trial.params.items():
            assert OmegaConf.select(composed, key) == value
        validate_config(composed)
        check_run_config(composed)  # ltr's own checks: the model builds with these values
        study.tell(trial, 0.5)
