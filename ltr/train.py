"""``python -m ltr.train +model=NAME``: train one ranker, evaluate it, log everything to MLflow.

A thin command line over the pipeline core. :func:`run` is a function of the resolved config that
returns the optimised validation metric (so sweepers such as Optuna can use it); the Hydra task
function of ``python -m ltr.train`` calls :func:`execute` and writes ``ltr_result.json`` into its job
folder for the sweep summary (:mod:`ltr.sweep.summary`).

Flow: check the config (:mod:`ltr.experiment.schemas`) → connect to the tracking store (an unreachable server
fails here) → load the dataset (``data`` group) → :func:`ltr.experiment.record.train_and_record`, which opens the
MLflow run, fits and evaluates with :func:`ltr.experiment.pipeline.fit_and_evaluate` (curves logged live) and
logs the outcome → console table (:mod:`ltr.experiment.console`).

Several folds (``data.fold=all`` / ``data.fold=[1,3]`` on a LETOR-layout dataset, ``data.cv.folds=K``
on your own file) run the fold protocol of :mod:`ltr.experiment.folds` instead: one child run per fold under a
parent run holding the summary (per-fold values, mean ± sd over folds, pooled CI).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ltr.cli.train_help import help_requested, train_help
from ltr.core.resources import config_dir

if TYPE_CHECKING:
    from rich.console import Console

    from ltr.experiment.folds import FoldsRun
    from ltr.experiment.record import RecordedRun

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


def execute(cfg: Any, console: Console | None = None) -> RecordedRun | FoldsRun:
    """Check, train, evaluate, log and print one configured run (:class:`ltr.experiment.record.RecordedRun`), or
    every fold of a fold protocol (:class:`ltr.experiment.folds.FoldsRun`).

    It prints to ``console`` (a sweep's job: its log file, :func:`ltr.sweep.console.job_console`), by
    default to standard output."""
    # deferred (each): `--help` prints before Hydra, rich and ltr's layers load (ltr.cli.train_help);
    # the engines load after configure_process_environment() (see __main__)
    from hydra.core.hydra_config import HydraConfig  # deferred: as above

    from ltr.cli.spelling import config_spelling, spelled_as  # deferred: as above
    from ltr.core.errors import ConfigError  # deferred: as above
    from ltr.experiment.pipeline import (  # deferred: imports the engines
        check_run_config,
        follow_engine_dtype,
        make_ranker,
    )
    from ltr.experiment.schemas import validate_config  # deferred: as above
    from ltr.models.ensembles.members import member_search_path  # deferred: imports the models

    if cfg.get("model") is None:
        raise ConfigError(missing_model_message())
    searchpath = list(HydraConfig.get().searchpath) if HydraConfig.initialized() else []
    # library messages name options as Python does (zero_based=True): here as the command line does
    with spelled_as(config_spelling(cfg.get("data"))), member_search_path(searchpath):
        validate_config(cfg)
        check_run_config(cfg)  # seed, metrics, conventions vs the data config, the model: before the data
        follow_engine_dtype([cfg], make_ranker(cfg).input_dtype)  # as the engine's own loader reads them
        # deferred (each): a bad config fails above, before these load pandas, rich and MLflow
        from rich.console import Console  # deferred: as above

        from ltr.cli.running import interrupted_run  # deferred: as above
        from ltr.experiment.console import print_label_scale  # deferred: as above
        from ltr.experiment.conventions import check_data_fits  # deferred: as above
        from ltr.experiment.folds import fold_plan, run_folds  # deferred: as above
        from ltr.experiment.provenance import command_line, run_name, run_tags  # deferred: as above
        from ltr.experiment.record import connect_and_load, train_and_record  # deferred: as above
        from ltr.experiment.splits import data_cluster  # deferred: as above
        from ltr.sweep.pruning import ENV_SHARE, ENV_TRIAL, hook_from_environment  # deferred: as above
        from ltr.sweep.runs import COMMAND_ATTR, ENV_PARENT, RUN_ATTR  # deferred: as above
        from ltr.sweep.shared_data import share_binned_datasets  # deferred: as above
        from ltr.sweep.summary import grid_parent_run_id  # deferred: as above

        console = console or Console(highlight=False)
        plan = fold_plan(cfg.data)
        if plan is not None:
            with data_cluster(cfg) as client:  # backend=dask: the workers parse every fold's files
                return run_folds(cfg, plan, console, client=client)
        with data_cluster(cfg) as client:  # backend=dask: the workers parse the files and hold the splits
            # a trial of ltr's Optuna sweeper (hydra.sweeper.share_data): data and binned Datasets shared
            in_sweep = ENV_TRIAL in os.environ and os.environ.get(ENV_SHARE) == "1"
            binned = share_binned_datasets() if in_sweep else None
            # an unreachable server fails here, before the data
            tracker, splits = connect_and_load(cfg, console, client, shared=in_sweep)
            print_label_scale(console, check_data_fits(cfg, splits))  # labels vs conventions, before training
            pruning = hook_from_environment(cfg)  # a trial of ltr's Optuna sweeper: report, maybe prune
            with interrupted_run(tracker):  # Ctrl-C: the tracker ends the run KILLED; one line says so
                recorded = train_and_record(
                    cfg,
                    splits,
                    tracker,
                    run_name=run_name(cfg),
                    tags=run_tags(cfg, splits),
                    console=console,
                    stop=pruning,
                    # a trial of ltr's Optuna search, or a job of a grid sweep: a child of the sweep's run
                    parent_run_id=os.environ.get(ENV_PARENT)
                    if pruning is not None
                    else grid_parent_run_id(tracker.uri if tracker.enabled else None),
                )
            if pruning is not None:
                built = binned.built if binned is not None else None  # binned matrices this process built
                pruning.record(
                    **{
                        RUN_ATTR: recorded.run_id,
                        COMMAND_ATTR: command_line()[0],
                        "ltr.datasets_built": built,
                    }
                )
    from ltr.experiment.console import print_run_summary, print_tracker_location  # deferred: as above

    print_run_summary(console, recorded.outcome, str(cfg.model.name))
    if tracker.enabled:
        where = f"run {tracker.run_id} in experiment '{cfg.tracking.experiment}'"
        print_tracker_location(console, where, tracker.uri, tracker.experiment_id, tracker.run_id)
    return recorded


def run(cfg: Any) -> float:
    """Train, evaluate and log one configured run; return the mean validation value of the optimised metric."""
    return optimised_value(execute(cfg))


def optimised_value(recorded: RecordedRun | FoldsRun) -> float:
    """The optimised validation value of a run, or its mean over the folds of a fold protocol."""
    return recorded.value if hasattr(recorded, "summary") else recorded.outcome.value


def write_job_result(recorded: RecordedRun | FoldsRun, folder: Path) -> Path:
    """``ltr_result.json`` in a Hydra job folder: what a sweep summary needs to pick the best job.

    For a fold protocol: the parent run, and the means over folds.
    """
    from ltr.experiment.provenance import command_line  # deferred: `--help` loads nothing (execute)
    from ltr.sweep.summary import RESULT_FILE  # deferred: as above

    command, overrides = command_line()
    value = optimised_value(recorded)
    if hasattr(recorded, "summary"):  # a FoldsRun
        target = recorded.target
        means = {split: recorded.split_means(split) for split in ("valid", "test")}
    else:
        outcome = recorded.outcome
        target = outcome.target
        means = {split: {m: r.mean(m) for m in r.per_query} for split, r in outcome.results.items()}
    record = {
        "value": value,
        "target": target,
        "run_id": recorded.run_id,
        "command": command,
        "overrides": overrides,
        "valid": means.get("valid", {}),
        "test": means.get("test", {}),
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RESULT_FILE
    path.write_text(json.dumps(record, indent=2, allow_nan=True))
    return path


def _hydra_entry() -> None:
    import hydra  # deferred: `--help` loads nothing (execute)
    from hydra.core.hydra_config import HydraConfig  # deferred: as above

    from ltr.cli.running import exit_with_error, mark_reported, run_hydra_app  # deferred: as above
    from ltr.core.errors import LtrError  # deferred: as above
    from ltr.experiment.schemas import register_configs  # deferred: as above
    from ltr.sweep.console import job_console  # deferred: as above
    from ltr.sweep.summary import end_open_grid_parents  # deferred: as above

    register_configs()

    @hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
    def main(cfg: Any) -> float:
        register_configs()  # again: joblib worker processes start without ltr's resolvers
        with job_console() as console:  # a sweep's job prints to its log file (ltr.sweep.console)
            try:
                recorded = execute(cfg, console)
            except LtrError as exc:
                if HydraConfig.get().mode.name != "MULTIRUN":
                    exit_with_error(exc)  # one line, exit 2 (raised, Hydra would add its own line)
                print(f"error: {exc}", file=sys.stderr)  # a failed job, not the end of the sweep: say it now
                mark_reported(exc)
                raise  # the sweeper decides (Optuna: a FAIL trial); run_hydra_app ends a basic sweep with exit 2
        write_job_result(recorded, Path(HydraConfig.get().runtime.output_dir))
        return optimised_value(recorded)

    # a grid sweep stopped by a failed job, Ctrl-C or SIGTERM: its parent run ends FAILED / KILLED
    run_hydra_app(main, on_abort=end_open_grid_parents)


if __name__ == "__main__":
    if help_requested(sys.argv[1:]):  # ltr's own page, in milliseconds (Hydra's took 5 CPU-s)
        sys.stdout.write(train_help())
        sys.exit(0)
    from ltr.cli.running import configure_process_environment  # deferred: as in execute

    configure_process_environment()
    _hydra_entry()
