"""``python -m ltr.train +model=NAME``: train one ranker, evaluate it, log everything to MLflow.

A thin command line over the pipeline core. :func:`run` is a function of the resolved config that
returns the optimised validation metric (so sweepers such as Optuna can use it); the Hydra task
function of ``python -m ltr.train`` calls :func:`execute` and writes ``ltr_result.json`` into its job
folder for the sweep summary (:mod:`ltr.sweep`).

Flow: check the config (:mod:`ltr.schemas`) → connect to the tracking store (an unreachable server
fails here) → load the dataset (``data`` group) → :func:`ltr.record.train_and_record`, which opens the
MLflow run, fits and evaluates with :func:`ltr.pipeline.fit_and_evaluate` (curves logged live) and
logs the outcome → console table (:mod:`ltr.console`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from rich.console import Console

from ltr.console import print_run_summary, print_tracker_location
from ltr.entry import configure_process_environment
from ltr.errors import ConfigError, LtrError
from ltr.provenance import command_line, run_tags
from ltr.pruning import ENV_SHARE, ENV_TRIAL, hook_from_environment
from ltr.resources import config_dir
from ltr.schemas import register_configs, validate_config
from ltr.shared_data import share_binned_datasets
from ltr.sweep_runs import COMMAND_ATTR, ENV_PARENT, RUN_ATTR

if TYPE_CHECKING:
    from ltr.record import RecordedRun

CONF_DIR = config_dir()


def available_models() -> list[str]:
    """Model names, one per ``conf/model/*.yaml`` (the single source of truth)."""
    return sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))


def missing_model_message() -> str:
    """The error shown when no ``+model=NAME`` was given: one example command per available model."""
    models = available_models()
    lines = ["No model chosen. Append one with +model=NAME, for example:", ""]
    lines += [f"    python -m ltr.train +model={name}" for name in models]
    lines += ["", f"Available models ({len(models)}): {', '.join(models)} (conf/model/*.yaml)."]
    return "\n".join(lines)


def execute(cfg: Any) -> RecordedRun:
    """Check, train, evaluate, log and print one configured run; returns its :class:`ltr.record.RecordedRun`."""
    # deferred (each): the engines load after configure_process_environment() (see __main__)
    from ltr.pipeline import check_run_config, member_search_path  # deferred: imports the engines
    from ltr.record import connect_and_load, train_and_record  # deferred: imports the pipeline

    if cfg.get("model") is None:
        raise ConfigError(missing_model_message())
    validate_config(cfg)
    searchpath = list(HydraConfig.get().searchpath) if HydraConfig.initialized() else []
    with member_search_path(searchpath):  # ensemble members from the user's hydra.searchpath too
        check_run_config(cfg)  # metric names and the model (every ensemble member) before the data is read
        console = Console(highlight=False)
        # a trial of ltr's Optuna sweeper (hydra.sweeper.share_data): data and binned Datasets shared
        in_sweep = ENV_TRIAL in os.environ and os.environ.get(ENV_SHARE) == "1"
        binned = share_binned_datasets() if in_sweep else None
        # an unreachable server fails here, before the data
        tracker, splits = connect_and_load(cfg, console, shared=in_sweep)
        run_name = cfg.tracking.get("run_name") or f"{cfg.model.name}-{cfg.data.name}"
        pruning = hook_from_environment(cfg)  # a trial of ltr's Optuna sweeper: report, maybe prune
        recorded = train_and_record(
            cfg,
            splits,
            tracker,
            run_name=run_name,
            tags=run_tags(cfg, splits),
            console=console,
            stop=pruning,
            parent_run_id=os.environ.get(ENV_PARENT) if pruning is not None else None,
        )
        if pruning is not None:
            built = binned.built if binned is not None else None  # LightGBM Datasets this process built
            pruning.record(
                **{RUN_ATTR: recorded.run_id, COMMAND_ATTR: command_line()[0], "ltr.datasets_built": built}
            )
    print_run_summary(console, recorded.outcome, str(cfg.model.name))
    if tracker.enabled:
        where = f"run {tracker.run_id} in experiment '{cfg.tracking.experiment}'"
        print_tracker_location(console, where, tracker.uri)
    return recorded


def run(cfg: Any) -> float:
    """Train, evaluate and log one configured run; return the mean validation value of the optimised metric."""
    return execute(cfg).outcome.value


def write_job_result(recorded: RecordedRun, folder: Path) -> Path:
    """``ltr_result.json`` in a Hydra job folder: what a sweep summary needs to pick the best job."""
    command, overrides = command_line()
    outcome = recorded.outcome
    means = {split: {m: r.mean(m) for m in r.per_query} for split, r in outcome.results.items()}
    record = {
        "value": outcome.value,
        "target": outcome.target,
        "run_id": recorded.run_id,
        "command": command,
        "overrides": overrides,
        "valid": means.get("valid", {}),
        "test": means.get("test", {}),
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ltr_result.json"  # ltr.sweep.RESULT_FILE (an entry point: not imported here)
    path.write_text(json.dumps(record, indent=2, allow_nan=True))
    return path


def _hydra_entry() -> None:
    register_configs()

    @hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
    def main(cfg: Any) -> float:
        register_configs()  # again: joblib worker processes start without ltr's resolvers
        try:
            recorded = execute(cfg)
        except LtrError as exc:
            print(f"error: {exc}", file=sys.stderr)
            if HydraConfig.get().mode.name == "MULTIRUN":
                raise  # a failed job of a sweep, not the end of it: the sweeper decides (Optuna: a FAIL trial)
            sys.exit(2)
        write_job_result(recorded, Path(HydraConfig.get().runtime.output_dir))
        return recorded.outcome.value

    main()


if __name__ == "__main__":
    configure_process_environment()
    _hydra_entry()
