"""The Optuna study of a sweep: opened or continued, recovered after a crash, shared by several workers.

* **Storage.** ``hydra.sweeper.storage`` is any Optuna RDB URL (``sqlite:///…/optuna.db``,
  ``postgresql://user@host/db``); the shipped search configs keep the study in
  ``${paths.root}/optuna.db``. ``null`` keeps it in memory (nothing to resume). A stored study gets
  heartbeats (``heartbeat_interval`` seconds) from the sweeper while its trials run.
* **One search per study.** The first run stores its search (the search space and the fixed overrides)
  as the study's user attribute ``ltr.search``; a later run of another search on the same study name is
  a ConfigError rather than a mix of two searches.
* **Resume.** ``n_trials`` is the size of the study: a run asks trials until the study holds that many
  finished (COMPLETE, PRUNED, or failed by their job) or running ones (:func:`counts`), so rerunning the same command after a crash or Ctrl-C
  continues where it stopped and never repeats a finished trial. At start, :func:`recover` marks FAIL
  (``ltr.failure=interrupted``) every RUNNING trial whose sweeper is gone — its process is dead on this
  machine, or (another machine) its heartbeat is older than the grace period — and enqueues each
  interrupted trial's parameters once more (``ltr.retry_of``); a retry that fails is not retried again.
* **Determinism.** With a ``seed`` in the sampler config, the trial at position *p* (its number minus the
  failed trials before it) is sampled by a fresh sampler seeded ``seed + p``
  (:class:`PositionSeededSampler`; interrupted and surplus trials have no position): an interrupted and resumed search proposes the same trials as one
  that ran through, and two workers sharing a study never use the same seed.
* **Several workers** (processes, ``launcher=joblib``, machines on one RDB) run the same command on one
  study; each asks its trials from the storage (enqueued trials first, see ``enqueue_trials``), and a
  trial asked when the study was already full is handed back (FAIL ``ltr.failure=surplus``, its
  enqueued parameters enqueued again). Optuna's ``enqueue_trial(skip_if_exists=True)`` checks the
  study, then adds the trial: two workers starting at once (or recovering the same interrupted trial)
  can both enqueue one parameter set. Such a copy is dropped when asked (:func:`is_duplicate`: FAIL
  ``ltr.failure=duplicate``, not counted, not enqueued again), so each enqueued parameter set runs once;
  a copy still waiting when the study is full is dropped at the end of the run.

>>> position_of(5, [1, 3, 7])
3
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hydra.utils import instantiate

from ltr.core.errors import ConfigError

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.trial import FrozenTrial

SEARCH_ATTR = "ltr.search"
OWNER_ATTR = "ltr.owner"
FAILURE_ATTR = "ltr.failure"
RETRY_ATTR = "ltr.retry_of"
INTERRUPTED = "interrupted"
SURPLUS = "surplus"
DUPLICATE = "duplicate"


def owner_id() -> str:
    """``host:pid`` of this sweeper process (stored on each trial it runs)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_is_gone(owner: str | None) -> bool:
    """True when ``owner`` (``host:pid``) is a process of this machine that no longer exists.

    >>> owner_is_gone(owner_id()), owner_is_gone("another-host:1"), owner_is_gone(None)
    (False, False, False)
    """
    if not owner or ":" not in owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def position_of(number: int, failed_numbers: Iterable[int]) -> int:
    """A trial's position in the search: its number minus the failed trials numbered before it."""
    return number - sum(1 for failed in failed_numbers if failed < number)


class PositionSeededSampler:
    """An Optuna sampler that samples each trial with a fresh ``config`` sampler seeded ``seed + position``.

    Built by :func:`seeded_sampler` as a subclass of ``optuna.samplers.BaseSampler`` (Optuna is imported
    only when a sweep runs); every sampling call goes to the sampler of the trial asked.
    """

    def __init__(self, config: Mapping[str, Any], seed: int) -> None:
        self.config = dict(config)
        self.seed = int(seed)
        self._by_trial: dict[int, Any] = {}
        self._current: Any = None

    def _for(self, trial: FrozenTrial) -> Any:
        return self._by_trial.get(trial.number, self._current)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs

        failed = [
            t.number for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)) if not counts(t)
        ]
        sampler = instantiate({**self.config, "seed": self.seed + position_of(trial.number, failed)})
        self._by_trial[trial.number] = self._current = sampler
        sampler.before_trial(study, trial)

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, Any]:
        return self._for(trial).infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, space: dict[str, Any]
    ) -> dict[str, Any]:
        return self._for(trial).sample_relative(study, trial, space)

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, name: str, distribution: BaseDistribution
    ) -> Any:
        return self._for(trial).sample_independent(study, trial, name, distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: Any, values: Any) -> None:
        sampler = self._by_trial.pop(trial.number, None)
        if sampler is not None:
            sampler.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        """Nothing to reseed: every trial's sampler is seeded from its position."""


def seeded_sampler(config: Mapping[str, Any]) -> optuna.samplers.BaseSampler:
    """:class:`PositionSeededSampler` over ``config`` (which has a ``seed``), as an Optuna sampler."""
    import optuna  # deferred: Optuna loads only when a sweep runs

    cls = type("PositionSeededSampler", (PositionSeededSampler, optuna.samplers.BaseSampler), {})
    return cls({k: v for k, v in config.items() if k != "seed"}, int(config["seed"]))


def make_storage(
    url: str | None, heartbeat_interval: int | None, grace_period: int | None, *, attempts: int = 5
) -> Any:
    """``url`` as an Optuna RDB storage with heartbeats (``None``: the study stays in memory).

    Workers starting together race to create the tables of a new database; the loser's integrity
    error is retried (up to ``attempts`` times) and then finds the tables made.
    """
    if url is None:
        return None
    import optuna  # deferred: Optuna loads only when a sweep runs
    from sqlalchemy.exc import IntegrityError, OperationalError  # deferred: loaded with Optuna's storage

    for attempt in range(attempts):
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna, and what we need
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    url,
                    heartbeat_interval=heartbeat_interval,
                    grace_period=grace_period,
                    engine_kwargs=None if url.startswith("sqlite") else {"pool_pre_ping": True},
                )
        except (IntegrityError, OperationalError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def search_identity(distributions: Mapping[str, Any], fixed: Mapping[str, str]) -> str:
    """The search as JSON: each searched key's distribution and the fixed overrides (sorted).

    >>> search_identity({}, {"+model": "+model=lambdamart"})
    '{"fixed": ["+model=lambdamart"], "space": {}}'
    """
    import optuna  # deferred: Optuna loads only when a sweep runs

    space = {key: optuna.distributions.distribution_to_json(d) for key, d in distributions.items()}
    return json.dumps({"fixed": sorted(fixed.values()), "space": space}, sort_keys=True)


def check_same_search(study: optuna.Study, identity: str, where: str) -> None:
    """Store the search on a new study; a stored study of another search → ConfigError."""
    stored = study.user_attrs.get(SEARCH_ATTR)
    if stored is None:
        study.set_user_attr(SEARCH_ATTR, identity)
        return
    if stored != identity:
        before, now = json.loads(stored), json.loads(identity)
        differs = sorted(
            {
                k
                for k in set(before["space"]) | set(now["space"])
                if before["space"].get(k) != now["space"].get(k)
            }
            | (set(before["fixed"]) ^ set(now["fixed"]))
        )
        raise ConfigError(
            f"hydra.sweeper.study_name={study.study_name!r} in {where} holds another search "
            f"(differs in: {', '.join(differs)}); continue it with the same command, or name a new study "
            "with hydra.sweeper.study_name=NAME"
        )


def recover(study: optuna.Study) -> list[int]:
    """Fail the RUNNING trials whose sweeper is gone and enqueue every interrupted trial once more.

    Returns the numbers of the trials enqueued again (see the module docstring for the rules).
    """
    import optuna  # deferred: Optuna loads only when a sweep runs
    from optuna.trial import TrialState  # deferred: as above

    storage = study._storage  # the public Study API has no way to set attributes of another's trial
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if owner_is_gone(trial.user_attrs.get(OWNER_ATTR)):
            try:
                storage.set_trial_user_attr(trial._trial_id, FAILURE_ATTR, INTERRUPTED)
                study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            except optuna.exceptions.UpdateFinishedTrialError:
                pass  # another worker recovered it first
    with warnings.catch_warnings():  # "experimental" in Optuna, and what we need
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)  # heartbeat older than the grace period (any machine)
    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get(RETRY_ATTR) for t in trials}
    again = []
    for trial in trials:
        interrupted = trial.user_attrs.get(FAILURE_ATTR, INTERRUPTED) == INTERRUPTED
        is_retry = trial.user_attrs.get(RETRY_ATTR) is not None
        if trial.state == TrialState.FAIL and interrupted and not is_retry and trial.number not in retried:
            study.enqueue_trial(dict(trial.params), user_attrs={RETRY_ATTR: trial.number})
            again.append(trial.number)
    return again


def counts(trial: FrozenTrial) -> bool:
    """Whether a trial counts towards ``n_trials``: finished (COMPLETE, PRUNED), running, or failed for
    good (its job failed, or it was the retry of an interrupted trial). An interrupted trial (retried
    instead), a surplus one (handed back) and a duplicate one (dropped) do not count."""
    from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs

    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING):
        return True
    if trial.state != TrialState.FAIL:
        return False
    failure = trial.user_attrs.get(FAILURE_ATTR, INTERRUPTED)
    if failure in (SURPLUS, DUPLICATE):
        return False
    return failure != INTERRUPTED or trial.user_attrs.get(RETRY_ATTR) is not None


def claimed(study: optuna.Study) -> int:
    """Trials of the study that count towards ``n_trials`` (:func:`counts`)."""
    return sum(counts(t) for t in study.get_trials(deepcopy=False))


def is_surplus(study: optuna.Study, trial: optuna.Trial, n_trials: int) -> bool:
    """True when ``n_trials`` counted trials were numbered before ``trial`` (another worker filled the
    study between the count and the ask)."""
    return sum(counts(t) for t in study.get_trials(deepcopy=False) if t.number < trial.number) >= n_trials


def is_duplicate(study: optuna.Study, trial: optuna.Trial | FrozenTrial) -> bool:
    """True when ``trial`` was enqueued and a trial numbered before it holds the same parameters and is
    waiting, running, or counts (:func:`counts`): the same parameter set was enqueued twice, by two
    workers at once. The lowest-numbered live copy is the one kept; a copy is dropped only while an
    earlier one is live, and an earlier copy that stops being live without counting (surplus,
    interrupted) is enqueued again, so each enqueued parameter set still runs."""
    from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs

    fixed = study._storage.get_trial_system_attrs(trial._trial_id).get("fixed_params")
    if not fixed:
        return False
    return any(
        t.number < trial.number
        and (t.state == TrialState.WAITING or counts(t))
        and t.system_attrs.get("fixed_params", t.params) == fixed
        for t in study.get_trials(deepcopy=False)
    )


def drop_duplicate(study: optuna.Study, trial: optuna.Trial | FrozenTrial) -> None:
    """End a duplicate trial (:func:`is_duplicate`) this process holds RUNNING: FAIL
    (``ltr.failure=duplicate``), not enqueued again."""
    from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs

    study._storage.set_trial_user_attr(trial._trial_id, FAILURE_ATTR, DUPLICATE)
    study.tell(trial.number, state=TrialState.FAIL)


def drop_waiting_duplicates(study: optuna.Study) -> int:
    """Drop the duplicate trials still WAITING (a full study never asks them); returns how many."""
    import optuna  # deferred: Optuna loads only when a sweep runs
    from optuna.trial import TrialState  # deferred: as above

    dropped = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        if not is_duplicate(study, trial):
            continue
        try:  # claimed like Optuna's own pop of a waiting trial: False when another process took it
            if not study._storage.set_trial_state_values(trial._trial_id, state=TrialState.RUNNING):
                continue
        except optuna.exceptions.UpdateFinishedTrialError:
            continue
        study._storage.set_trial_user_attr(trial._trial_id, OWNER_ATTR, owner_id())
        drop_duplicate(study, trial)
        dropped += 1
    return dropped


def hand_back(study: optuna.Study, trial: optuna.Trial) -> None:
    """Give back a surplus trial: FAIL (``ltr.failure=surplus``), its enqueued parameters enqueued again."""
    from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs

    fixed = study._storage.get_trial_system_attrs(trial._trial_id).get("fixed_params")
    trial.set_user_attr(FAILURE_ATTR, SURPLUS)
    study.tell(trial, state=TrialState.FAIL)
    if fixed:
        study.enqueue_trial(
            dict(fixed), user_attrs={k: v for k, v in trial.user_attrs.items() if k == RETRY_ATTR}
        )


class Heartbeat:
    """``with Heartbeat(study, trials, interval):`` records the trials' heartbeats every ``interval`` s."""

    def __init__(self, study: optuna.Study, trials: Sequence[optuna.Trial], interval: int | None) -> None:
        self.storage = study._storage  # RDBStorage.record_heartbeat: the public heartbeat API
        self.ids = [t._trial_id for t in trials]
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="ltr-heartbeat")

    def _beat(self) -> None:
        while True:
            for trial_id in self.ids:
                # a lost connection must not end the sweep; the next beat retries
                with contextlib.suppress(Exception):
                    self.storage.record_heartbeat(trial_id)
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> Heartbeat:
        if self.interval and hasattr(self.storage, "record_heartbeat"):
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
