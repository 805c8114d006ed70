"""ltr's Optuna sweeper: a Hydra sweeper that asks an Optuna study for trials and launches them as jobs.

Selected by ``defaults: [override /hydra/sweeper: ltr_optuna]`` (``conf/hparams_search/*.yaml``); Hydra
finds it through ``hydra_plugins/ltr_optuna_sweeper`` (Hydra instantiates plugins only from the
``hydra_plugins`` namespace package), which registers :class:`OptunaSweeperConf` and subclasses
:class:`OptunaSweeper`. The study is opened or continued and recovered first (:mod:`ltr.sweep.study`:
storage, one search per study, interrupted trials failed and retried once); then, per batch of
``n_jobs`` trials until the study holds ``n_trials`` counted trials (finished or running):

1. ``study.ask`` each trial (enqueued ones first) with the search space (:mod:`ltr.sweep.search_space`:
   ``params`` plus the command line), suggesting the parameters in that order; with a seeded sampler
   each trial is sampled by a sampler seeded ``seed + position`` (:class:`ltr.sweep.study.PositionSeededSampler`);
2. compose every trial's config (a bad override fails here, before the batch runs), then launch the
   batch through the configured launcher (``launcher=joblib`` runs it in parallel), telling each job
   its trial through ``hydra.job.env_set`` (:mod:`ltr.sweep.pruning`: the job reports its validation curve
   and is pruned by ``pruner``; :mod:`ltr.sweep.runs`: its MLflow run is a child of the sweep's parent
   run) while a heartbeat marks the batch's trials alive;
3. ``study.tell`` each trial its job's return value, or ``PRUNED`` when the job was pruned; a job that
   raised or returned a non-finite or non-numeric value is told ``FAIL`` and the sweep goes on while
   failed / finished trials ≤ ``max_failure_rate`` (default 0: the first failure stops the sweep
   after its batch, like hydra-optuna-sweeper); a progress line shows the best value so far (a DEBUG
   record under ``ltr.train``, whose :class:`ltr.sweep.summary.SweepSummary` prints a line per trial).

At the end ``<sweep dir>/optimization_results.yaml`` holds the best trial (``best_params``,
``best_value``, its number, overrides and rerun command), the count of trials per state and what
pruning saved; ``multirun.yaml`` holds the multirun's config; the best trial and Optuna's plots are
promoted to the parent MLflow run (:func:`ltr.sweep.runs.promote`).

>>> checked_settings(direction="maximize", n_trials=3, n_jobs=1, max_failure_rate=0.0).direction
'maximize'
>>> checked_settings(direction="up", n_trials=3, n_jobs=1, max_failure_rate=0.0)
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: hydra.sweeper.direction='up': expected 'maximize' or 'minimize'
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import math
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.utils import instantiate
from omegaconf import MISSING, DictConfig, OmegaConf

from ltr.core import interrupts
from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError, LtrError
from ltr.sweep.console import launch_lines
from ltr.sweep.dependencies import check_same_dependencies, trial_dependencies
from ltr.sweep.pruning import (
    ENV_PRUNER,
    ENV_SHARE,
    ENV_STORAGE,
    ENV_STUDY,
    ENV_TRIAL,
    IN_MEMORY,
    LIVE_STUDIES,
    TrainingStopped,
    time_saved,
)
from ltr.sweep.runs import (
    COMMAND_ATTR,
    ENV_PARENT,
    PARENT_ATTR,
    end_parent_run,
    open_parent_run,
    parent_tracker,
    promote,
)
from ltr.sweep.study import (
    FAILURE_ATTR,
    INTERRUPTED,
    OWNER_ATTR,
    Heartbeat,
    check_same_search,
    claimed,
    drop_duplicate,
    drop_waiting_duplicates,
    hand_back,
    is_duplicate,
    is_surplus,
    make_storage,
    owner_id,
    recover,
    search_identity,
    seeded_sampler,
)
from ltr.sweep.summary import SweepSummary, set_sweep_total
from ltr.tracking.store import mask_secrets

if TYPE_CHECKING:
    import optuna
    from hydra.core.utils import JobReturn
    from hydra.types import HydraContext, TaskFunction

    from ltr.sweep.search_space import SearchSpace

log = logging.getLogger(__name__)

PLUGIN_CLASS = "hydra_plugins.ltr_optuna_sweeper.LtrOptunaSweeper"
RESULTS_FILE = "optimization_results.yaml"
DIRECTIONS = ("maximize", "minimize")


@dataclass
class OptunaSweeperConf:
    """``hydra.sweeper`` of ``hydra/sweeper=ltr_optuna``; any other key fails while the config is composed."""

    _target_: str = PLUGIN_CLASS
    _recursive_: bool = False  # the sweeper builds the sampler itself, to report a bad one clearly
    direction: str = MISSING  # maximize | minimize (ltr's configs: ${ltr_direction:<metric>})
    study_name: str | None = None  # None: Optuna names it
    storage: str | None = None  # None: in memory; an Optuna RDB URL keeps and continues the study
    n_trials: int = 20  # size of the study: trials finished (COMPLETE, PRUNED) or running when a run ends
    n_jobs: int = 1  # trials per batch, launched together (in parallel with launcher=joblib)
    max_failure_rate: float = 0.0  # stop once failed / finished trials exceeds this
    sampler: Any = field(default_factory=lambda: {"_target_": "optuna.samplers.TPESampler"})
    pruner: Any = (
        None  # None: no pruning; else an Optuna pruner, e.g. {_target_: optuna.pruners.MedianPruner}
    )
    params: dict[str, str] | None = None  # key → Hydra sweep value, e.g. tag(log, interval(0.01, 0.3))
    enqueue_trials: list[dict[str, Any]] | None = None  # trials to run first ({key: value}), once per study
    heartbeat_interval: int | None = 10  # seconds between a stored trial's heartbeats (None: none)
    grace_period: int | None = None  # a heartbeat older than this fails the trial (None: 2 × interval)
    share_data: bool = True  # trials in one process share the loaded data and the binned matrices
    restart: bool = False  # delete the stored study of this name first (its trials depended on other data)


def checked_settings(**values: Any) -> OptunaSweeperConf:
    """The ``hydra.sweeper`` values over :class:`OptunaSweeperConf`'s defaults, checked.

    A missing direction, an unknown key or a value that cannot work → ConfigError naming it;
    ``sampler`` and ``params`` become plain containers (interpolations resolved).
    """
    accepted = [f.name for f in fields(OptunaSweeperConf) if not f.name.startswith("_")]
    unknown = sorted(set(values) - set(accepted))
    if unknown:  # only reachable with '+hydra.sweeper.KEY=…'; the schema rejects the rest
        raise ConfigError(f"hydra.sweeper: unknown key(s) {unknown}; accepted: {', '.join(accepted)}")
    settings = OptunaSweeperConf(**{k: _plain(v) for k, v in values.items()})
    if settings.direction not in DIRECTIONS:
        raise ConfigError(
            f"hydra.sweeper.direction={settings.direction!r}: expected 'maximize' or 'minimize'"
        )
    for key in ("heartbeat_interval", "grace_period"):
        if getattr(settings, key) is not None:
            setattr(
                settings,
                key,
                check_value(getattr(settings, key), int, Constraint(low=1), f"hydra.sweeper.{key}"),
            )
    for key in ("n_trials", "n_jobs"):
        setattr(
            settings, key, check_value(getattr(settings, key), int, Constraint(low=1), f"hydra.sweeper.{key}")
        )
    settings.max_failure_rate = check_value(
        settings.max_failure_rate, float, Constraint(low=0.0, high=1.0), "hydra.sweeper.max_failure_rate"
    )
    return settings


class TrialFailuresError(LtrError, RuntimeError):
    """More trials failed than ``hydra.sweeper.max_failure_rate`` allows."""


@dataclass(frozen=True)
class TrialFailure:
    """Why a trial failed: a description (trial, job, reason) and the job's exception, if it raised."""

    description: str
    error: BaseException | None = None


@dataclass
class FailureTally:
    """Failed and finished trials of this sweep, against ``max_failure_rate``.

    >>> tally = FailureTally(max_failure_rate=0.25)
    >>> tally.add(finished=4, failures=[TrialFailure("trial 2 (job 2) returned nan")])
    >>> tally.exceeded(), tally.add(finished=1, failures=[TrialFailure("trial 4 (job 4) ...")]), tally.exceeded()
    (False, None, True)
    """

    max_failure_rate: float
    finished: int = 0
    failures: list[TrialFailure] = field(default_factory=list)

    def add(self, *, finished: int, failures: Sequence[TrialFailure]) -> None:
        self.finished += finished
        self.failures.extend(failures)

    def exceeded(self) -> bool:
        return bool(self.failures) and len(self.failures) / self.finished > self.max_failure_rate

    def error(self) -> TrialFailuresError:
        """The error that stops the sweep: every failure named, chained to the last job exception."""
        error = TrialFailuresError(
            f"{len(self.failures)} of {self.finished} trials failed, more than "
            f"hydra.sweeper.max_failure_rate={self.max_failure_rate} allows: "
            + "; ".join(f.description for f in self.failures)
        )
        error.__cause__ = next((f.error for f in reversed(self.failures) if f.error is not None), None)
        error.__suppress_context__ = True
        return error


def was_pruned(job: JobReturn) -> bool:
    """The job stopped because its trial was pruned (it raised :class:`ltr.sweep.pruning.TrainingStopped`)."""
    # the stored exception itself: JobReturn.return_value would log it as an error and re-raise
    return isinstance(getattr(job, "_return_value", None), TrainingStopped)


def trial_value(
    job: JobReturn, *, name_failed_job: bool = True
) -> tuple[float | None, BaseException | str | None]:
    """The job's return as the trial's value, or ``None`` and why not (the job's exception, or a text).

    Hydra names a failed job on stderr (``Error executing job with overrides: [...]``), unless
    ``name_failed_job`` is False (the line per trial names it).
    """
    stored = getattr(job, "_return_value", None)
    if not name_failed_job and isinstance(stored, BaseException):
        return None, stored
    try:
        returned = job.return_value  # re-raises the job's exception (after naming the job on stderr)
    except Exception as exc:
        return None, exc
    try:
        value = float(returned)
    except (TypeError, ValueError):
        return None, f"returned {returned!r}, not a number"
    if not math.isfinite(value):
        return None, f"returned {value}"
    return value, None


class OptunaSweeper(Sweeper):
    """The sweeper (module docstring); Hydra builds it from :class:`OptunaSweeperConf`."""

    def __init__(self, **settings: Any) -> None:
        self.settings = checked_settings(**settings)
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher: Any = None
        self.parent_run: str | None = None  # the sweep's MLflow parent run (ltr.sweep.runs)
        self.chatter = logging.INFO  # level of the progress and best-trial lines (see _sweep)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> None:
        """Run the sweep; an ``ltr`` error (a bad search space or sampler, too many failed trials) ends the
        process as ``ltr.train`` does: one ``error: ...`` line on stderr and exit code 2, no traceback
        (Hydra would print the whole stack of an exception raised by a sweeper). The launchers' lines
        leave out the overrides that tell a job its trial (:func:`ltr.sweep.console.launch_lines`)."""
        try:
            with launch_lines(drop=False):  # the trial's +hydra.job.env_set.LTR_... overrides never shown
                self._sweep(arguments)
        except LtrError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)

    def _sweep(self, arguments: list[str]) -> None:
        # deferred: it imports Optuna, loaded only when a sweep runs (Hydra imports every plugin in every app)
        from ltr.sweep.search_space import parse_search_space

        assert self.config is not None and self.hydra_context is not None, "setup() runs before sweep()"
        settings = self.settings
        space = parse_search_space(settings.params, arguments, config_loader=self.hydra_context.config_loader)
        study = open_study(settings, build_sampler(settings.sampler), build_pruner(settings.pruner))
        where = mask_secrets(settings.storage) if settings.storage else "memory"
        check_same_search(study, search_identity(space.distributions, space.fixed), where)
        check_same_dependencies(study, trial_dependencies(self.config, settings.direction), where)
        retried = recover(study)
        for params in settings.enqueue_trials or []:
            study.enqueue_trial(dict(params), skip_if_exists=True)
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        # the config as Hydra saves it, credentials in URLs masked (ltr.sweep.secrets)
        (sweep_dir / "multirun.yaml").write_text(mask_secrets(OmegaConf.to_yaml(self.config)))
        log.info(
            "Optuna study %r (storage %s), sampler %s, pruner %s, direction %s: %d of %d trials done or "
            "running, batches of %d%s",
            study.study_name,
            mask_secrets(settings.storage) if settings.storage else "in memory",
            type(study.sampler).__name__,
            type(study.pruner).__name__,
            settings.direction,
            claimed(study),
            settings.n_trials,
            settings.n_jobs,
            f"; interrupted trials {retried} enqueued again" if retried else "",
        )
        set_sweep_total(sweep_dir, max(settings.n_trials - claimed(study), 0))  # for the trial lines
        # ltr.train's SweepSummary prints a line per trial and the best one at the end: the sweeper's own
        # progress and best-trial lines are then DEBUG records (hydra.verbose=ltr shows them)
        self.chatter = logging.DEBUG if reports_trials(self.config) else logging.INFO
        tracker = parent_tracker(self.config)
        self.parent_run = open_parent_run(study, tracker, settings.storage) if tracker is not None else None
        try:
            self._run_trials(study, space, sweep_dir, tracker)
        except BaseException as exc:  # Ctrl-C / SIGTERM: KILLED; a failed trial, an error: FAILED
            if tracker is not None and self.parent_run is not None:
                end_parent_run(tracker, self.parent_run, exc, sweep_dir)
            raise

    def _run_trials(self, study: optuna.Study, space: SearchSpace, sweep_dir: Path, tracker: Any) -> None:
        """Ask, launch and tell batches of trials until the study is full; write the results, promote the best."""
        settings = self.settings
        tally = FailureTally(settings.max_failure_rate)
        progress = SweepProgress(settings.n_trials, settings.direction)
        while (size := min(settings.n_jobs, settings.n_trials - claimed(study))) > 0:
            trials = self._ask(study, space, size)
            if not trials:
                continue
            job_idx = trials[0].number  # job folders named by trial number: no clash across reruns/workers
            overrides = self._trial_overrides(study, trials, space, job_idx)
            try:
                with Heartbeat(study, trials, settings.heartbeat_interval if settings.storage else None):
                    jobs = self.launcher.launch(overrides, initial_job_idx=job_idx)
            except BaseException as exc:  # Ctrl-C, a job's sys.exit, a dead worker: no trial stays RUNNING
                why = INTERRUPTED if interrupts.carried_by(exc) else f"launch: {type(exc).__name__}"
                fail_all(study, trials, why)
                raise
            failures = tell_results(study, trials, jobs, reported=self.chatter == logging.DEBUG)
            tally.add(finished=len(jobs), failures=failures)
            log.log(self.chatter, "%s", progress.line(study))
            if tally.exceeded():
                write_results(study, sweep_dir / RESULTS_FILE, chatter=self.chatter)
                raise tally.error()
        drop_waiting_duplicates(study)
        results = write_results(study, sweep_dir / RESULTS_FILE, chatter=self.chatter)
        if tracker is not None and self.parent_run is not None:
            promote(study, tracker, self.parent_run, sweep_dir)
            log.log(self.chatter, "Sweep logged as MLflow parent run %s (%s)", self.parent_run, tracker.uri)
        if results["best_command"]:
            log.log(self.chatter, "Rerun the best trial: %s", results["best_command"])

    def _ask(self, study: optuna.Study, space: SearchSpace, size: int) -> list[optuna.Trial]:
        """Ask up to ``size`` trials (enqueued ones first), each owned by this process; duplicate ones
        dropped, surplus ones handed back."""
        trials = []
        for _ in range(size):
            with warnings.catch_warnings():  # ltr records the heartbeats of asked trials itself (Heartbeat)
                warnings.filterwarnings(
                    "ignore", "Heartbeat of storage is supposed to be used with Study.optimize"
                )
                trial = study.ask(space.distributions)
            trial.set_user_attr(OWNER_ATTR, owner_id())
            if is_duplicate(study, trial):  # its parameters were enqueued twice (two workers at once)
                drop_duplicate(study, trial)
                continue
            if is_surplus(study, trial, self.settings.n_trials):
                hand_back(study, trial)
                break
            trials.append(trial)
        return trials

    def _trial_overrides(
        self, study: optuna.Study, trials: list[optuna.Trial], space: SearchSpace, job_idx: int
    ) -> list[list[str]]:
        """Each trial's overrides (kept as its ``hydra_overrides`` user attribute), composed as a check."""
        overrides = []
        for offset, trial in enumerate(trials):
            trial_overrides = space.trial_overrides(trial.params)
            trial.set_user_attr("hydra_overrides", trial_overrides)
            trial.set_user_attr("hydra_job", job_idx + offset)
            link = trial_link_overrides(
                study, trial, self.settings.storage, self.settings.pruner, self.parent_run
            )
            share = f"+hydra.job.env_set.{ENV_SHARE}={int(bool(self.settings.share_data))}"
            overrides.append([*trial_overrides, *link, share])
        try:
            self.validate_batch_is_legal(overrides)
        except Exception as exc:  # Hydra's composition errors have no common base class
            fail_all(study, trials, "overrides do not compose")
            raise ConfigError(
                f"a trial's overrides do not compose ({' '.join(overrides[0])}): {exc}"
            ) from exc
        return overrides


def trial_link_overrides(
    study: optuna.Study,
    trial: optuna.Trial,
    storage: str | None,
    pruner: dict[str, Any] | None = None,
    parent_run: str | None = None,
) -> list[str]:
    """Hydra overrides that tell the job which trial it runs (environment of that job only; see
    :mod:`ltr.sweep.pruning`), so it can report its curve and be pruned.

    >>> from types import SimpleNamespace
    >>> trial_link_overrides(SimpleNamespace(study_name="s"), SimpleNamespace(_trial_id=4), "sqlite:///o.db")[0]
    "+hydra.job.env_set.LTR_OPTUNA_STORAGE='sqlite:///o.db'"
    """
    values = {
        ENV_STORAGE: storage or IN_MEMORY,
        ENV_STUDY: study.study_name,
        ENV_TRIAL: str(trial._trial_id),
        ENV_PRUNER: json.dumps(pruner),
    }
    if parent_run:
        values[ENV_PARENT] = parent_run
    return [f"+hydra.job.env_set.{key}={_quoted(value)}" for key, value in values.items()]


def _quoted(text: str) -> str:
    """``text`` as a single-quoted Hydra override value (quotes and backslashes escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fail_all(study: optuna.Study, trials: Sequence[optuna.Trial], why: str) -> None:
    """Tell every trial of a batch that did not finish ``FAIL`` with ``ltr.failure=why`` (a stored study
    keeps no RUNNING trial; ``interrupted`` ones are retried once by the next run)."""
    from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs (see sweep)

    for trial in trials:
        if study._storage.get_trial(trial._trial_id).state == TrialState.RUNNING:
            trial.set_user_attr(FAILURE_ATTR, why)
        study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)


def _plain(node: Any) -> Any:
    """A DictConfig (interpolations resolved) as plain containers; anything else unchanged."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


@dataclass
class SweepProgress:
    """The progress line logged after each batch: trials done, their states, the best value so far."""

    n_trials: int
    direction: str
    start: float = field(default_factory=time.monotonic)

    def line(self, study: optuna.Study) -> str:
        """E.g. ``trials 6/20 done (4 complete, 2 pruned, 0 failed); best 0.8506 (trial 3); elapsed 0:01:02``."""
        from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs (see sweep)

        trials = study.get_trials(deepcopy=False)
        count = {state: sum(t.state == state for t in trials) for state in TrialState}
        done = count[TrialState.COMPLETE] + count[TrialState.PRUNED]
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        sign = 1.0 if self.direction == "maximize" else -1.0
        best = max(complete, key=lambda t: sign * t.value, default=None)
        best_text = f"best {best.value:.4f} (trial {best.number})" if best else "no trial complete yet"
        elapsed = datetime.timedelta(seconds=round(time.monotonic() - self.start))
        return (
            f"trials {done}/{self.n_trials} done ({count[TrialState.COMPLETE]} complete, "
            f"{count[TrialState.PRUNED]} pruned, {count[TrialState.FAIL]} failed); {best_text}; elapsed {elapsed}"
        )


def build_sampler(sampler_config: dict[str, Any]) -> optuna.samplers.BaseSampler:
    """The Optuna sampler ``_target_`` with its keyword arguments; a bad one → ConfigError.

    With a ``seed``, each trial is sampled by a fresh sampler seeded ``seed + position``
    (:class:`ltr.sweep.study.PositionSeededSampler`), so resumed and parallel searches propose the same trials.
    """
    import optuna  # deferred: loaded only when a sweep runs (Hydra imports every plugin in every app)

    sampler = _build(sampler_config, "sampler", optuna.samplers.BaseSampler, "optuna.samplers.TPESampler")
    if sampler_config.get("seed") is None:
        return sampler
    return seeded_sampler(sampler_config)  # seed + each trial's position (ltr.sweep.study), checked above


def build_pruner(pruner_config: dict[str, Any] | None) -> optuna.pruners.BasePruner:
    """The Optuna pruner ``_target_`` with its keyword arguments (``None``: ``NopPruner``, no pruning);
    a bad one → ConfigError naming ``hydra.sweeper.pruner``."""
    import optuna  # deferred: loaded only when a sweep runs (Hydra imports every plugin in every app)

    if pruner_config is None:
        return optuna.pruners.NopPruner()
    return _build(pruner_config, "pruner", optuna.pruners.BasePruner, "optuna.pruners.MedianPruner")


def _build(config: Any, key: str, base: type, example: str) -> Any:
    """Instantiate ``hydra.sweeper.<key>`` (a mapping with ``_target_``) and check it is a ``base``."""
    target = config.get("_target_") if isinstance(config, dict) else None
    if not target:
        raise ConfigError(
            f"hydra.sweeper.{key}={config!r}: expected a mapping with _target_ "
            f"(e.g. {example}) and its keyword arguments"
        )
    try:
        built = instantiate(config)
    except Exception as exc:  # Hydra wraps import and signature errors in InstantiationException
        why = " ".join(str(exc).split())  # Hydra's message spans lines: keep the error on one
        raise ConfigError(f"hydra.sweeper.{key}: cannot build {target}: {why}") from exc
    if not isinstance(built, base):
        raise ConfigError(f"hydra.sweeper.{key}._target_={target}: not an Optuna {key}")
    return built


def open_study(
    settings: OptunaSweeperConf, sampler: optuna.samplers.BaseSampler, pruner: optuna.pruners.BasePruner
) -> optuna.Study:
    """Create the study, or continue the one named ``study_name`` in ``storage`` (``restart``: delete
    that stored study first, so it starts again with no trial).

    A study in memory is registered in :data:`ltr.sweep.pruning.LIVE_STUDIES`, where a job of the basic
    launcher (same process) finds its trial to report to.
    """
    import optuna  # deferred: loaded only when a sweep runs (Hydra imports every plugin in every app)
    from sqlalchemy.exc import SQLAlchemyError  # deferred: Optuna's storage layer, loaded with it

    try:
        storage = make_storage(settings.storage, settings.heartbeat_interval, settings.grace_period)
        if settings.restart and storage is not None and settings.study_name is not None:
            with contextlib.suppress(KeyError):  # no stored study of that name: nothing to discard
                optuna.delete_study(study_name=settings.study_name, storage=storage)
                log.warning(
                    "hydra.sweeper.restart=true: the stored study %r and its trials were deleted",
                    settings.study_name,
                )
        study = optuna.create_study(
            study_name=settings.study_name,
            storage=storage,
            sampler=sampler,
            pruner=pruner,
            direction=settings.direction,
            load_if_exists=True,
        )
    except (ValueError, ImportError, optuna.exceptions.OptunaError, SQLAlchemyError) as exc:
        raise ConfigError(
            f"hydra.sweeper.storage={mask_secrets(settings.storage)!r}, study_name={settings.study_name!r}: "
            f"cannot open the study: {exc}"
        ) from exc
    if settings.storage is None:
        LIVE_STUDIES[study.study_name] = study
    return study


def reports_trials(config: DictConfig) -> bool:
    """Whether ltr's :class:`ltr.sweep.summary.SweepSummary` callback prints each trial and the best one
    (``hydra.callbacks`` of ``python -m ltr.train``; another app has its own callbacks, or none)."""
    target = f"{SweepSummary.__module__}.{SweepSummary.__qualname__}"
    callbacks = config.hydra.get("callbacks") or {}
    return any(str((callback or {}).get("_target_", "")) == target for callback in callbacks.values())


def tell_results(
    study: optuna.Study,
    trials: list[optuna.Trial],
    jobs: Sequence[JobReturn],
    *,
    reported: bool = False,
) -> list[TrialFailure]:
    """Tell each trial its job's value, or FAIL; returns the failures.

    A failure is logged as a warning and a pruned trial at INFO, unless each trial is ``reported``
    already (:func:`reports_trials`: the line per trial says it): then both are DEBUG records, and a
    failed job is not named on stderr again (:func:`trial_value`)."""
    from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs (see sweep)

    failures = []
    for trial, job in zip(trials, jobs, strict=True):
        if was_pruned(job):
            study.tell(trial, state=TrialState.PRUNED)
            log.log(
                logging.DEBUG if reported else logging.INFO,
                "Pruned trial %d (job %s)",
                trial.number,
                trial.user_attrs["hydra_job"],
            )
            continue
        value, error = trial_value(job, name_failed_job=not reported)
        if value is not None:
            study.tell(trial, value)
            continue
        reason = f"raised {type(error).__name__}: {error}" if isinstance(error, BaseException) else error
        trial.set_user_attr(FAILURE_ATTR, str(reason)[:2000])
        study.tell(trial, state=TrialState.FAIL)
        failure = TrialFailure(f"trial {trial.number} (job {trial.user_attrs['hydra_job']}) {reason}", error)
        log.log(logging.DEBUG if reported else logging.WARNING, "Failed %s", failure.description)
        failures.append(failure)
    return failures


def write_results(study: optuna.Study, path: Path, *, chatter: int = logging.INFO) -> dict[str, Any]:
    """Write (and return) the best trial and the trials per state to ``path`` (YAML); the best trial and
    what pruning saved are logged at level ``chatter``."""
    from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs (see sweep)

    finished = study.get_trials(deepcopy=False)
    complete = [t for t in finished if t.state == TrialState.COMPLETE]
    best = study.best_trial if complete else None
    results = {
        "name": "optuna",
        "best_params": dict(best.params) if best else None,
        "best_value": best.value if best else None,
        "best_trial": best.number if best else None,
        "best_overrides": list(best.user_attrs.get("hydra_overrides", [])) if best else None,
        "best_command": best.user_attrs.get(COMMAND_ATTR) if best else None,
        "mlflow_parent_run": study.user_attrs.get(PARENT_ATTR),
        "n_trials": {state.name: sum(t.state == state for t in finished) for state in TrialState},
    }
    saved = time_saved((t.state == TrialState.PRUNED, t.user_attrs) for t in finished)
    results["pruning"] = {
        "pruned": saved.pruned,
        "rounds_skipped": saved.rounds_skipped,
        "seconds_saved_estimate": round(saved.seconds, 3),
        "seconds_per_round": saved.seconds_per_round,
        "summary": saved.describe(),
    }
    OmegaConf.save(OmegaConf.create(results), path)
    if saved.pruned:  # an unpruned search has nothing to say about pruning
        log.log(chatter, "Pruning: %s", saved.describe())
    if best:
        log.log(chatter, "Best trial %d: value %s, params %s", best.number, best.value, best.params)
    else:
        log.warning("No trial completed; %s names no best trial", path)
    return results
