"""``python -m ltr.train +model=NAME``: train one ranker, evaluate it, log everything to MLflow.

The Hydra entry point is a thin wrapper over :func:`run`, a pure function of the resolved config
that returns the optimised validation metric (so sweepers such as Optuna can use it).

Flow: check the config (:mod:`ltr.schemas`) → connect to the tracking store (an unreachable server
fails here) → load the dataset (``data`` group) → build the ranker (``model`` group; ``backend=dask``
→ LightGBM on Dask) → fit with early stopping on the validation split, curves logged live →
score every split → per-query metrics with explicit conventions (``eval`` group) and bootstrap CI
bounds → a random-scores baseline on the same queries → console table → MLflow (``tracking``
group): params, provenance tags, metrics, per-query Parquet, plots, resolved config, model.
:func:`train_and_log` is the reusable core (``ltr.compare`` calls it once per system).
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr.errors import ConfigError, LtrError

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def available_models() -> list[str]:
    """Model names, one per ``conf/model/*.yaml`` (the single source of truth)."""
    return sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))


def missing_model_message() -> str:
    models = available_models()
    lines = ["No model chosen. Append one with +model=NAME, for example:", ""]
    lines += [f"    python -m ltr.train +model={name}" for name in models]
    lines += ["", f"Available models ({len(models)}): {', '.join(models)} (conf/model/*.yaml)."]
    return "\n".join(lines)


@dataclass(frozen=True)
class SplitResult:
    """Per-query metric values of one split, plus the summary the console and MLflow show."""

    split: str
    n_queries: int
    per_query: dict[str, np.ndarray]

    def mean(self, metric: str) -> float:
        values = self.per_query[metric]
        return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")

    def n_skipped(self, metric: str) -> int:
        return int(np.isnan(self.per_query[metric]).sum())


def evaluate_split(split: str, data: Any, scores: np.ndarray, eval_cfg: Mapping[str, Any]) -> SplitResult:
    """Per-query values of every configured metric on one split, with the configured conventions."""
    from ltr.metrics import evaluate

    conventions = dict(eval_cfg.get("conventions") or {})
    per_query = evaluate(
        list(eval_cfg["metrics"]), data.y, scores, data.offsets, preset=eval_cfg["preset"], **conventions
    )
    return SplitResult(split=split, n_queries=data.n_queries, per_query=per_query)


def random_scores(n_docs: int, seed: int) -> np.ndarray:
    """The random baseline: i.i.d. Uniform(0, 1) scores from a seeded generator."""
    return np.random.default_rng(seed).random(n_docs)


def command_line(entry: str = "ltr.train") -> tuple[str, list[str]]:
    """The command that reruns this run, and the Hydra overrides it carries.

    Under Hydra the overrides of *this job* (``hydra.overrides.task``: for a sweep job, its own
    values, not the sweep's comma lists) follow ``python -m ENTRY``; outside Hydra, ``sys.argv``.
    """
    overrides: list[str] | None = None
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            overrides = [str(o) for o in HydraConfig.get().overrides.task]
    except (ImportError, ValueError):
        overrides = None
    if overrides is None:
        overrides = list(sys.argv[1:])
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", entry, *overrides])
    return command, overrides


def sweep_tags() -> dict[str, str]:
    """``ltr.sweep.id`` (the sweep folder) and ``ltr.sweep.job`` when this is a Hydra multirun job."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
            return {}
        hc = HydraConfig.get()
        return {"ltr.sweep.id": str(Path(hc.sweep.dir).resolve()), "ltr.sweep.job": str(hc.job.num)}
    except (ImportError, ValueError):
        return {}


def run_tags(cfg: Any, splits: Mapping[str, Any], *, entry: str = "ltr.train") -> dict[str, str]:
    """What a run must record beyond its params: provenance, data identity, library versions."""
    import json
    from importlib.metadata import PackageNotFoundError, version

    command, overrides = command_line(entry)
    tags: dict[str, str] = {
        "ltr.command": command,
        "ltr.overrides": json.dumps(overrides),
        "ltr.argv": " ".join(shlex.quote(a) for a in sys.argv),
        "ltr.cwd": str(Path.cwd()),
        "ltr.model": str(cfg.model.name),
        "ltr.data": str(cfg.data.name),
        "ltr.data.synthetic": str(bool(cfg.data.get("synthetic", False))).lower(),
        "ltr.metric_preset": str(cfg.eval.preset),
        "ltr.seed": str(cfg.seed),
        "python": platform.python_version(),
    }
    tags.update(sweep_tags())
    for split, data in splits.items():
        tags[f"ltr.data.fingerprint.{split}"] = data.fingerprint()
    for package in (
        "ltr",
        "numpy",
        "scipy",
        "pandas",
        "lightgbm",
        "xgboost-cpu",
        "scikit-learn",
        "catboost",
        "mlflow",
        "hydra-core",
        "optuna",
    ):
        try:
            tags[f"version.{package}"] = version(package)
        except PackageNotFoundError:
            continue
    tags.update(git_state(Path(__file__).resolve().parents[1]))
    return tags


def git_state(repo: Path) -> dict[str, str]:
    """``{"git.commit": sha, "git.dirty": "true"|"false"}`` when ``repo`` is a git checkout."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"git.commit": sha, "git.dirty": str(bool(dirty)).lower()}


def load_splits(data_cfg: Any) -> dict[str, Any]:
    """The configured dataset's splits (``train``/``valid``/``test``) as RankingData (via the registry)."""
    from ltr.data.registry import load_dataset

    return load_dataset(data_cfg)


def make_ranker(cfg: Any) -> Any:
    """The configured ranker: ``backend=dask`` → LightGBM on a Dask cluster, otherwise a local engine."""
    backend = cfg.get("backend")
    if backend is not None and str(backend.get("name", "local")) == "dask":
        from ltr.models.dask_lightgbm import build_dask_ranker

        return build_dask_ranker(cfg.model, backend, seed=int(cfg.seed), num_threads=int(cfg.num_threads))
    from ltr.models import build_ranker

    return build_ranker(cfg.model, seed=int(cfg.seed), num_threads=int(cfg.num_threads))


def optimised_metric(cfg: Any) -> str:
    """The validation metric a sweep optimises: the early-stopping metric, else the first eval metric."""
    early = cfg.model.get("early_stopping") or {}
    return str(early.get("metric") or cfg.eval.metrics[0])


class CurveBuffer:
    """Collects ``on_iteration`` values and logs them as ``curve/<split>/<metric>`` (step = iteration).

    Flushes at most once per ``interval`` seconds and on exit, so curves appear live in the
    dashboard and survive a crash or Ctrl-C (the tracker marks the run afterwards).
    """

    def __init__(self, tracker: Any, interval: float = 2.0) -> None:
        import threading

        self.tracker, self.interval = tracker, interval
        self.rows: list[tuple[int, dict[str, float]]] = []
        self.seen = 0
        self._last = 0.0
        self._lock = threading.Lock()  # ensembles report from member threads

    def __call__(self, iteration: int, values: dict[str, float]) -> None:
        import time

        with self._lock:
            self.rows.append((int(iteration), dict(values)))
            self.seen += 1
            if time.monotonic() - self._last >= self.interval:
                self._flush()

    def _flush(self) -> None:
        import time

        rows, self.rows = self.rows, []
        if rows:
            self.tracker.log_iteration_values(rows)
        self._last = time.monotonic()

    def __enter__(self) -> CurveBuffer:
        import time

        self._last = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._flush()


@dataclass
class RunOutcome:
    """Everything one trained-and-evaluated system produced (what :func:`run` returns the value of)."""

    name: str
    run_id: str | None
    value: float
    target: str
    results: dict[str, SplitResult]
    query_ids: dict[str, np.ndarray]
    baseline: SplitResult
    history: dict[str, dict[str, list[float]]]
    ranker: Any
    frames: dict[str, Any]  # split → per-query DataFrame (as logged to per_query/<split>.parquet)


def per_query_frame(result: SplitResult, data: Any, extra: Mapping[str, np.ndarray] | None = None) -> Any:
    """One row per query: ``qid``, ``n_docs``, then one column per metric (NaN = skipped query)."""
    import pandas as pd

    columns: dict[str, Any] = {"qid": np.asarray(data.query_ids), "n_docs": np.asarray(data.group_sizes)}
    columns.update({m: np.asarray(v, dtype=float) for m, v in result.per_query.items()})
    columns.update({m: np.asarray(v, dtype=float) for m, v in (extra or {}).items() if m not in columns})
    return pd.DataFrame(columns)


def curve_metrics(eval_cfg: Mapping[str, Any]) -> list[str]:
    """The ``metric@k`` names (k = 1..max_k) stored per query for the @k plot (``eval.curve``)."""
    curve = eval_cfg.get("curve") or {}
    max_k = int(curve.get("max_k", 0) or 0)
    return [f"{curve.get('metric', 'ndcg')}@{k}" for k in range(1, max_k + 1)]


def robust_bootstrap_ci(values: np.ndarray, *, method: str, B: int, confidence: float, seed: int) -> Any:
    """:func:`ltr.stats.bootstrap_ci`; where BCa is undefined (e.g. nearly constant values) the percentile CI."""
    from ltr.errors import DataError
    from ltr.stats import bootstrap_ci

    try:
        return bootstrap_ci(values, method=method, B=B, confidence=confidence, seed=seed)
    except DataError:
        if method != "bca":
            raise
        return bootstrap_ci(values, method="percentile", B=B, confidence=confidence, seed=seed)


def ci_metrics(
    result: SplitResult, metrics: list[str], eval_cfg: Mapping[str, Any], seed: int
) -> dict[str, tuple[float, float]]:
    """``{metric: (low, high)}``: bootstrap CI of the mean over queries (``eval.bootstrap``; run seed)."""
    boot = eval_cfg.get("bootstrap") or {}
    if not boot or int(boot.get("B", 0) or 0) == 0:
        return {}
    out: dict[str, tuple[float, float]] = {}
    for metric in metrics:
        values = result.per_query[metric]
        if int(np.isfinite(values).sum()) < 2:
            continue
        ci = robust_bootstrap_ci(
            values,
            method=str(boot.get("method", "bca")),
            B=int(boot["B"]),
            confidence=float(boot.get("confidence", 0.95)),
            seed=int(seed),
        )
        out[metric] = (ci.low, ci.high)
    return out


def split_metrics(
    split: str, result: SplitResult, metrics: list[str], cis: Mapping[str, tuple[float, float]]
) -> dict[str, float]:
    """The MLflow metrics of one split: means, CI bounds, skipped-query counts, number of queries."""
    from ltr.tracking import mlflow_metric_name

    out: dict[str, float] = {f"{split}/n_queries": result.n_queries}
    for m in metrics:
        out[mlflow_metric_name(split, m)] = result.mean(m)
        out[mlflow_metric_name(split, m, "_n_skipped")] = result.n_skipped(m)
        if m in cis:
            out[mlflow_metric_name(split, m, "_ci_low")] = cis[m][0]
            out[mlflow_metric_name(split, m, "_ci_high")] = cis[m][1]
    return out


def log_run_plots(
    tracker: Any, ranker: Any, history: Mapping[str, Any], data: Any, out_dir: Path | None, name: str
) -> list[Path]:
    """Learning curves and feature importance (gain) as PNG artifacts under ``plots/`` (and in ``out_dir``)."""
    import tempfile

    from ltr.plots import feature_importance, plot_feature_importance, plot_learning_curves

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(out_dir) if out_dir is not None else Path(tmp)
        written: list[Path] = []
        if history:
            written.append(
                plot_learning_curves(
                    history,
                    folder / f"learning_curves_{name}.png",
                    best_iteration=getattr(ranker, "best_iteration_", None),
                    title=f"{name}: learning curves",
                )
            )
        importance = feature_importance(ranker, data.n_features)
        if importance is not None and importance.size:
            written.append(
                plot_feature_importance(
                    importance,
                    folder / f"feature_importance_{name}.png",
                    title=f"{name}: feature importance (gain)",
                )
            )
        for path in written:
            tracker.log_artifact(path, "plots")
        return written if out_dir is not None else []


def train_and_log(
    cfg: Any,
    splits: Mapping[str, Any],
    tracker: Any,
    *,
    run_name: str,
    tags: Mapping[str, str],
    parent_run_id: str | None = None,
    console: Any = None,
    plots_dir: Path | None = None,
    label: str | None = None,
) -> RunOutcome:
    """Fit ``cfg.model`` on ``splits``, evaluate every split, and log the complete run (see module docstring)."""
    from omegaconf import OmegaConf
    from rich.console import Console

    from ltr.metrics import describe_conventions, evaluate
    from ltr.progress import iteration_progress
    from ltr.tracking import flatten_params, mlflow_metric_name

    console = console or Console(highlight=False)
    resolved = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    conventions = describe_conventions(cfg.eval.preset, **dict(cfg.eval.get("conventions") or {}))
    ranker = make_ranker(cfg)
    target = optimised_metric(cfg)
    metrics = list(cfg.eval.metrics)
    results: dict[str, SplitResult] = {}

    with tracker.start(run_name=run_name, tags=tags, parent_run_id=parent_run_id):
        tracker.log_params(flatten_params(resolved))
        tracker.log_params({f"metric_conventions.{k}": v for k, v in conventions.items()})
        tracker.log_dict(resolved, "config/resolved.yaml")

        console.print(f"[bold]Training[/bold] {cfg.model.name} (seed {cfg.seed}, {cfg.num_threads} threads)")
        total = (cfg.model.get("params") or {}).get("n_trees")
        with (
            iteration_progress(int(total) if total else None, f"training {cfg.model.name}") as tick,
            CurveBuffer(tracker) as curves,
        ):

            def on_iteration(i: int, values: dict[str, float]) -> None:
                curves(i, values)
                tick(i, values)

            ranker.fit(splits["train"], splits.get("valid"), on_iteration=on_iteration)
        history = getattr(ranker, "evals_result_", {}) or {}
        if not curves.seen:
            tracker.log_history(history)
        best = getattr(ranker, "best_iteration_", None)
        if best is not None:
            tracker.log_metrics({"best_iteration": best})
            console.print(f"  best iteration {best}")
        engine_params = getattr(ranker, "engine_params_", None)
        if engine_params:
            tracker.log_params({f"engine.{k}": v for k, v in flatten_params(engine_params).items()})

        curve_names = curve_metrics(cfg.eval)
        scores: dict[str, np.ndarray] = {}
        frames: dict[str, Any] = {}
        for split in cfg.eval.splits:
            if split not in splits:
                continue
            data = splits[split]
            scores[split] = ranker.predict(data)
            results[split] = evaluate_split(split, data, scores[split], cfg.eval)
            cis = ci_metrics(results[split], metrics, cfg.eval, int(cfg.seed))
            tracker.log_metrics(split_metrics(split, results[split], metrics, cis))
            extra = {}
            if split == "test" and curve_names:
                extra = evaluate(
                    curve_names,
                    data.y,
                    scores[split],
                    data.offsets,
                    preset=cfg.eval.preset,
                    **dict(cfg.eval.get("conventions") or {}),
                )
            frames[split] = per_query_frame(results[split], data, extra)
            tracker.log_frame(frames[split], f"per_query/{split}.parquet")

        report_split = "test" if "test" in results else next(reversed(results))
        data = splits[report_split]
        baseline = evaluate_split(report_split, data, random_scores(data.n_docs, int(cfg.seed)), cfg.eval)
        tracker.log_metrics(
            {mlflow_metric_name(f"baseline_random/{report_split}", m): baseline.mean(m) for m in metrics}
        )
        if cfg.tracking.get("log_plots", True) or plots_dir is not None:
            log_run_plots(tracker, ranker, history, data, plots_dir, label or str(cfg.model.name))
        if cfg.tracking.get("log_model", True):
            example = data.dense()[:5] if data.n_docs else None
            tracker.log_ranker(ranker, example=example)

    value_split = "valid" if "valid" in results else report_split
    value = results[value_split].mean(target) if target in results[value_split].per_query else float("nan")
    return RunOutcome(
        name=label or str(cfg.model.name),
        run_id=tracker.run_id,
        value=value,
        target=target,
        results=results,
        query_ids={s: np.asarray(splits[s].query_ids) for s in results},
        baseline=baseline,
        history={k: dict(v) for k, v in history.items()},
        ranker=ranker,
        frames=frames,
    )


def print_data_summary(console: Any, data_cfg: Any, splits: Mapping[str, Any]) -> None:
    """The dataset name (with a SYNTHETIC notice for the built-in data) and the size of each split."""
    synthetic = bool(data_cfg.get("synthetic", False))
    note = " — SYNTHETIC data generated by ltr, not a real collection" if synthetic else ""
    console.print(f"[bold]Data[/bold] {data_cfg.name}{note}")
    for split, data in splits.items():
        console.print(
            f"  {split:<5} {data.n_queries:>6,} queries {data.n_docs:>9,} docs {data.n_features} features"
        )


def execute(cfg: Any) -> RunOutcome:
    """Train, evaluate and log one configured run (the work behind :func:`run`)."""
    from rich.console import Console

    from ltr.metrics import describe_conventions
    from ltr.report import conventions_note, results_table
    from ltr.schemas import validate_config
    from ltr.tracking import dashboard_command, make_tracker

    if cfg.get("model") is None:
        raise ConfigError(missing_model_message())
    validate_config(cfg)
    console = Console(highlight=False)
    root = Path(cfg.paths.root).resolve()

    tracker = make_tracker(cfg.tracking, root)  # an unreachable server fails here, before any work
    splits = load_splits(cfg.data)
    if "train" not in splits:
        raise ConfigError(f"data '{cfg.data.name}' has no train split (got {sorted(splits)})")
    print_data_summary(console, cfg.data, splits)
    run_name = cfg.tracking.get("run_name") or f"{cfg.model.name}-{cfg.data.name}"
    outcome = train_and_log(
        cfg, splits, tracker, run_name=run_name, tags=run_tags(cfg, splits), console=console
    )

    report_split = "test" if "test" in outcome.results else next(reversed(outcome.results))
    conventions = describe_conventions(cfg.eval.preset, **dict(cfg.eval.get("conventions") or {}))
    console.print(
        results_table(outcome.results[report_split], outcome.baseline, model_name=str(cfg.model.name))
    )
    console.print(conventions_note(outcome.results[report_split], conventions), soft_wrap=True)
    if tracker.enabled:
        console.print(
            f"[bold]MLflow[/bold] run {tracker.run_id} in experiment '{cfg.tracking.experiment}' at {tracker.uri}",
            soft_wrap=True,
        )
        console.print(f"  dashboard: {dashboard_command(tracker.uri)}", soft_wrap=True)
    return outcome


def run(cfg: Any) -> float:
    """Train, evaluate and log one configured run; return the mean validation value of the optimised metric."""
    return execute(cfg).value


def write_job_result(outcome: RunOutcome, folder: Path) -> Path:
    """``ltr_result.json`` in a Hydra job folder: what a sweep summary needs to pick the best job."""
    import json

    command, overrides = command_line()
    test = outcome.results.get("test")
    valid = outcome.results.get("valid")
    record = {
        "value": outcome.value,
        "target": outcome.target,
        "run_id": outcome.run_id,
        "command": command,
        "overrides": overrides,
        "valid": {m: valid.mean(m) for m in valid.per_query} if valid else {},
        "test": {m: test.mean(m) for m in test.per_query} if test else {},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ltr_result.json"
    path.write_text(json.dumps(record, indent=2, allow_nan=True))
    return path


def _hydra_entry() -> None:
    import hydra

    from ltr.schemas import register_configs

    register_configs()

    @hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
    def main(cfg: Any) -> float:
        from hydra.core.hydra_config import HydraConfig

        register_configs()  # again: joblib worker processes start without ltr's resolvers
        try:
            outcome = execute(cfg)
        except LtrError as exc:
            print(f"error: {exc}", file=sys.stderr)
            if HydraConfig.get().mode.name == "MULTIRUN":
                raise  # a failed job of a sweep, not the end of it: the sweeper decides (Optuna: a FAIL trial)
            sys.exit(2)
        write_job_result(outcome, Path(HydraConfig.get().runtime.output_dir))
        return outcome.value

    main()


def configure_process_environment() -> None:
    """Environment for the engines, set before they load (only by entry points, never on import).

    ``OMP_WAIT_POLICY=PASSIVE`` stops OpenMP threads (LightGBM, XGBoost) from busy-waiting: on a
    shared or oversubscribed machine busy-waiting made a 2-thread LightGBM fit ~5× slower than
    1 thread (measured here: 62 s vs 12 s for 100 rounds; 8–12 s with PASSIVE).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


if __name__ == "__main__":
    configure_process_environment()
    _hydra_entry()
