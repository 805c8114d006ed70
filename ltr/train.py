"""``python -m ltr.train +model=NAME``: train one ranker, evaluate it, log everything to MLflow.

The Hydra entry point is a thin wrapper over :func:`run`, a pure function of the resolved config
that returns the optimised validation metric (so sweepers such as Optuna can use it).

Flow: load the dataset (``data`` group) → build the ranker (``model`` group) → fit with early
stopping on the validation split → score every split → per-query metrics with explicit
conventions (``eval`` group) → a random-scores baseline on the same queries → console table →
MLflow (``tracking`` group).
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


def run_tags(cfg: Any, splits: Mapping[str, Any]) -> dict[str, str]:
    """What a run must record beyond its params: provenance, data identity, library versions."""
    from importlib.metadata import PackageNotFoundError, version

    tags: dict[str, str] = {
        "ltr.command": " ".join(shlex.quote(a) for a in [sys.executable, "-m", "ltr.train", *sys.argv[1:]]),
        "ltr.model": str(cfg.model.name),
        "ltr.data": str(cfg.data.name),
        "ltr.data.synthetic": str(bool(cfg.data.get("synthetic", False))).lower(),
        "ltr.metric_preset": str(cfg.eval.preset),
        "python": platform.python_version(),
    }
    for split, data in splits.items():
        tags[f"ltr.data.fingerprint.{split}"] = data.fingerprint()
    for package in ("ltr", "numpy", "lightgbm", "xgboost-cpu", "scikit-learn", "mlflow", "hydra-core"):
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
    """The configured dataset's splits (``train``/``valid``/``test``) as RankingData."""
    if data_cfg.get("kind") == "synthetic":
        from ltr.data.synthetic import load_synthetic

        return load_synthetic(data_cfg)
    from ltr.data.registry import load_dataset

    return load_dataset(data_cfg)


def optimised_metric(cfg: Any) -> str:
    """The validation metric a sweep optimises: the early-stopping metric, else the first eval metric."""
    early = cfg.model.get("early_stopping") or {}
    return str(early.get("metric") or cfg.eval.metrics[0])


def run(cfg: Any) -> float:
    """Train, evaluate and log one configured run; return the mean validation value of the optimised metric."""
    from omegaconf import OmegaConf
    from rich.console import Console

    from ltr.metrics import describe_conventions
    from ltr.models import build_ranker
    from ltr.report import conventions_note, results_table
    from ltr.tracking import dashboard_command, flatten_params, make_tracker, mlflow_metric_name

    if cfg.get("model") is None:
        raise ConfigError(missing_model_message())
    console = Console(highlight=False)
    root = Path(cfg.paths.root).resolve()
    resolved = OmegaConf.to_container(cfg, resolve=True)

    tracker = make_tracker(cfg.tracking, root)  # an unreachable server fails here, before any work
    splits = load_splits(cfg.data)
    if "train" not in splits:
        raise ConfigError(f"data '{cfg.data.name}' has no train split (got {sorted(splits)})")
    synthetic = bool(cfg.data.get("synthetic", False))
    note = " — SYNTHETIC data generated by ltr, not a real collection" if synthetic else ""
    console.print(f"[bold]Data[/bold] {cfg.data.name}{note}")
    for split, data in splits.items():
        console.print(
            f"  {split:<5} {data.n_queries:>6,} queries {data.n_docs:>9,} docs {data.n_features} features"
        )

    conventions = describe_conventions(cfg.eval.preset, **dict(cfg.eval.get("conventions") or {}))
    ranker = build_ranker(cfg.model, seed=int(cfg.seed), num_threads=int(cfg.num_threads))
    target = optimised_metric(cfg)
    run_name = cfg.tracking.get("run_name") or f"{cfg.model.name}-{cfg.data.name}"

    with tracker.start(run_name=run_name, tags=run_tags(cfg, splits)):
        tracker.log_params(flatten_params(resolved))
        tracker.log_params({f"metric_conventions.{k}": v for k, v in conventions.items()})
        tracker.log_dict(resolved, "config/resolved.yaml")

        console.print(f"[bold]Training[/bold] {cfg.model.name} (seed {cfg.seed}, {cfg.num_threads} threads)")
        ranker.fit(splits["train"], splits.get("valid"))
        tracker.log_history(getattr(ranker, "evals_result_", {}) or {})
        best = getattr(ranker, "best_iteration_", None)
        if best is not None:
            tracker.log_metrics({"best_iteration": best})
            console.print(f"  best iteration {best}")
        engine_params = getattr(ranker, "engine_params_", None)
        if engine_params:
            tracker.log_params({f"engine.{k}": v for k, v in flatten_params(engine_params).items()})

        results: dict[str, SplitResult] = {}
        for split in cfg.eval.splits:
            if split not in splits:
                continue
            data = splits[split]
            results[split] = evaluate_split(split, data, ranker.predict(data), cfg.eval)
            tracker.log_metrics(
                {mlflow_metric_name(split, m): results[split].mean(m) for m in cfg.eval.metrics}
                | {f"{split}/n_queries": data.n_queries}
                | {
                    mlflow_metric_name(split, m, "_n_skipped"): results[split].n_skipped(m)
                    for m in cfg.eval.metrics
                }
            )

        report_split = "test" if "test" in results else next(reversed(results))
        data = splits[report_split]
        baseline = evaluate_split(report_split, data, random_scores(data.n_docs, int(cfg.seed)), cfg.eval)
        tracker.log_metrics(
            {
                mlflow_metric_name(f"baseline_random/{report_split}", m): baseline.mean(m)
                for m in cfg.eval.metrics
            }
        )
        console.print(results_table(results[report_split], baseline, model_name=str(cfg.model.name)))
        console.print(conventions_note(results[report_split], conventions), soft_wrap=True)

        if cfg.tracking.get("log_model", True):
            example = data.dense()[:5] if data.n_docs else None
            tracker.log_ranker(ranker, example=example)

    value_split = "valid" if "valid" in results else report_split
    value = results[value_split].mean(target) if target in results[value_split].per_query else float("nan")
    if tracker.enabled:
        console.print(
            f"[bold]MLflow[/bold] run {tracker.run_id} in experiment '{cfg.tracking.experiment}' at {tracker.uri}",
            soft_wrap=True,
        )
        console.print(f"  dashboard: {dashboard_command(tracker.uri)}", soft_wrap=True)
    return value


def _hydra_entry() -> None:
    import hydra

    @hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
    def main(cfg: Any) -> float:
        try:
            return run(cfg)
        except LtrError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)

    main()


def configure_process_environment() -> None:
    """Environment for the engines, set before they load (only by entry points, never on import).

    ``OMP_WAIT_POLICY=PASSIVE`` stops OpenMP threads (LightGBM, XGBoost) from busy-waiting: on a
    shared or oversubscribed machine busy-waiting made a 2-thread LightGBM fit ~5× slower than
    1 thread (measured here: 62 s vs 12 s for 100 rounds; 8–12 s with PASSIVE).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


if __name__ == "__main__":
    configure_process_environment()
    _hydra_entry()
