"""Experiment files: ``experiments/NAME.yaml`` (or your own path) checked and composed into each system's config.

An experiment file names the data (overrides shared by every system), a list of systems (a model
config plus overrides each), the baseline, the primary metric and the statistics
(:class:`ltr.experiment.schemas.ExperimentSchema`; docs/experiments.md). :func:`compose_system` gives a
system's full train config exactly as ``python -m ltr.train`` would compose it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ltr.cli.running import hydra_error_message
from ltr.core.config_check import defaults
from ltr.core.errors import ConfigError
from ltr.core.resources import config_dir, experiments_dir
from ltr.experiment.ablation import expand_ablation
from ltr.experiment.schemas import (
    DEFAULT_METRICS,
    StatsSchema,
    check_experiment_block,
    register_configs,
)

CONF_DIR = config_dir()


EXPERIMENTS_DIR = experiments_dir()


DEFAULT_STATS = defaults(StatsSchema)


#: the experiment settings of ``--from-mlflow`` without ``experiment=NAME``
FROM_MLFLOW = {
    "name": "from_mlflow",
    "title": "Comparison rebuilt from MLflow runs",
    "baseline": None,
    "primary": DEFAULT_METRICS[0],
    "metrics": DEFAULT_METRICS,
    "stats": DEFAULT_STATS,
}


def available_experiments() -> list[str]:
    """Experiment names, one per ``experiments/*.yaml``."""
    return sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))


def load_experiment(name_or_path: str) -> Any:
    """Load and check ``experiments/NAME.yaml`` (or a path to a YAML file) as an OmegaConf node."""
    path = Path(name_or_path)
    if not path.suffix:
        path = EXPERIMENTS_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(
            f"experiment={name_or_path}: no file {path}; available: {', '.join(available_experiments())}"
        )
    try:
        exp = OmegaConf.load(path)
    except (OmegaConfBaseException, OSError, ValueError, yaml.YAMLError) as exc:  # YAMLError: a syntax error
        raise ConfigError(f"{path}: not a valid experiment YAML ({' '.join(str(exc).split())})") from exc
    return check_experiment(exp, str(path))


def check_experiment(exp: Any, where: str) -> Any:
    """The experiment checked against :class:`ltr.experiment.schemas.ExperimentSchema` (defaults filled, errors naming
    the file and field, e.g. ``experiments/x.yaml: stats.B``), as an OmegaConf node. An ``ablation:`` block is
    first expanded into its systems (:func:`ltr.experiment.ablation.expand_ablation`)."""
    given = OmegaConf.to_container(exp, resolve=False) if OmegaConf.is_config(exp) else exp
    if isinstance(given, dict) and given.get("ablation") is not None:
        given = expand_ablation(given, where, lambda overrides: _compose(overrides, "ablation baseline").data)
    return OmegaConf.create(check_experiment_block(given, where))


def _quoted_list(values: Sequence[str]) -> str:
    return "[" + ",".join(f"'{v}'" for v in values) + "]"


def system_overrides(exp: Any, system: str, cli_overrides: Sequence[str]) -> list[str]:
    """The ``ltr.train`` overrides that define one system: shared, model, per-system, then the command line's."""
    spec = exp.systems[system]
    return [
        *map(str, exp.overrides),
        f"+model={spec.model}",
        f"eval.metrics={_quoted_list(list(exp.metrics))}",
        *map(str, spec.get("overrides") or []),
        *cli_overrides,
    ]


def compose_system(exp: Any, system: str, cli_overrides: Sequence[str]) -> Any:
    """The full train config of one system, composed from ``conf/`` exactly as ``ltr.train`` would."""
    return _compose(system_overrides(exp, system, cli_overrides), f"system {system!r}")


def _compose(overrides: list[str], what: str) -> Any:
    """``ltr.train``'s config with ``overrides``; a Hydra error is a ConfigError naming ``what``."""
    register_configs()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose(config_name="config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(f"{what}: {hydra_error_message(exc) or exc} (overrides {overrides})") from exc


def system_search_path(exp: Any, system: str, cli_overrides: Sequence[str]) -> list[str]:
    """The ``hydra.searchpath`` of one system's config: where its ensemble members are composed from too."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=system_overrides(exp, system, cli_overrides),
            return_hydra_config=True,
        )
    return [str(entry) for entry in cfg.hydra.searchpath]


def data_label(data_cfg: Any) -> str:
    """What the data is called in titles: its config name, or for your own files ``svmlight <train file>``.

    >>> data_label({"name": "synthetic", "kind": "synthetic"})
    'synthetic'
    >>> data_label({"name": "svmlight", "kind": "svmlight", "train": "/data/rank.train"})
    'svmlight rank.train'
    """
    name = str(data_cfg.get("name"))
    if str(data_cfg.get("kind")) == "svmlight" and data_cfg.get("train"):
        return f"{name} {Path(str(data_cfg.get('train'))).name}"
    return name


def titled_for_data(exp: Any, used: str, own: str) -> tuple[Any, str]:
    """The experiment with a title true to the data ``used``, and the parent run's name.

    On the experiment's ``own`` data its title and ``compare-NAME`` stand; on other data (a command-line
    override) the title is ``NAME on <used>`` and the run ``compare-NAME-<used>``, since the experiment's
    own title describes other data.

    >>> from omegaconf import OmegaConf
    >>> exp = OmegaConf.create({"name": "synthetic_challenge", "title": "Comparison on synthetic data"})
    >>> titled_for_data(exp, "synthetic", "synthetic")[0].title, titled_for_data(exp, "synthetic", "synthetic")[1]
    ('Comparison on synthetic data', 'compare-synthetic_challenge')
    >>> e, run = titled_for_data(exp, "svmlight rank.train", "synthetic")
    >>> e.title, run, exp.title
    ('synthetic_challenge on svmlight rank.train', 'compare-synthetic_challenge-svmlight_rank.train', 'Comparison on synthetic data')
    """
    if used == own:
        return exp, f"compare-{exp.name}"
    out = exp.copy()
    out.title = f"{exp.name} on {used}"
    return out, f"compare-{exp.name}-{used.replace(' ', '_')}"
