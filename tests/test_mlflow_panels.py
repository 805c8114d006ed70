"""MLflow's own run-page panels, filled in by every run (issue 11 item 12).

* Datasets: one dataset input per split, digest = ltr's data fingerprint, source = the file read;
* Source: ``mlflow.source.name`` = the entry point (``ltr.train``, ``ltr.compare``, ``ltr.sweep``);
* metric charts: MLflow 3.x groups a run's charts by the name before the last ``/`` and sorts the
  groups alphabetically (``RunsChartsCardConfig.getBaseChartAndSectionConfigs`` in mlflow/server/js);
  the random baseline is named ``<split>/baseline_random/<metric>`` so its group follows the model's.

The browser check of the same run page is in tests/test_dashboard.py (a real server and Chromium).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    PAUSED_RUN,
    PROJECT_ROOT,
    TINY_DATA,
    ForwardingProxy,
    cli_env,
    run_train_cli,
    store_client,
)
from mlflow.tracking import MlflowClient

from ltr.data.svmlight import load_svmlight
from ltr.tracking.fallback import import_fallback
from ltr.tracking.store import HTTP_LIMITS
from ltr.tracking.writer import SplitDataset, Tracker


def chart_order(metric_keys: list[str]) -> list[str]:
    """The order MLflow 3.17's run page shows a run's model-metric charts in (first chart first).

    Mirrors ``getBaseChartAndSectionConfigs``: a chart's section is its key up to the last ``/``;
    named sections sorted alphabetically come first, then the unnamed "Model metrics" section; the
    charts keep their alphabetical order inside each section.
    """
    section = {k: k.rsplit("/", 1)[0] if "/" in k else "" for k in metric_keys}
    named = sorted({s for s in section.values() if s})
    order = [*named, ""]
    return sorted(metric_keys, key=lambda k: (order.index(section[k]), k))


def test_chart_order_mirror_puts_named_sections_first():
    keys = ["best_iteration", "baseline_random/test/ndcg_at_10", "test/ndcg_at_10", "curve/valid/ndcg_at_10"]
    assert chart_order(keys) == [
        "baseline_random/test/ndcg_at_10",  # what a run showed first before the rename
        "curve/valid/ndcg_at_10",
        "test/ndcg_at_10",
        "best_iteration",
    ]


@pytest.fixture(scope="module")
def train_run(tmp_path_factory):
    """One ``python -m ltr.train`` process on the local SQLite store."""
    root = tmp_path_factory.mktemp("panels")
    proc = run_train_cli(["+model=lambdamart", *TINY_DATA, "num_threads=1", "model.params.n_trees=5"], root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = store_client(root)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    return root, run


def test_every_split_is_a_dataset_input_with_the_fingerprint_as_digest(train_run):
    root, run = train_run
    inputs = {
        {t.key: t.value for t in d.tags}["mlflow.data.context"]: d.dataset for d in run.inputs.dataset_inputs
    }
    assert set(inputs) == {"train", "valid", "test"}
    files = {"train": "train.txt", "valid": "vali.txt", "test": "test.txt"}
    for split, dataset in inputs.items():
        path = (root / "data" / "synthetic" / files[split]).resolve()
        fingerprint = load_svmlight(path).fingerprint()  # computed here, from the file the run read
        assert dataset.name == f"synthetic/{split}"
        assert dataset.digest == fingerprint == run.data.tags[f"ltr.data.fingerprint.{split}"]
        assert dataset.source_type == "local" and json.loads(dataset.source) == {"uri": str(path)}
        profile = json.loads(dataset.profile)
        assert profile["n_queries"] == {"train": 60, "valid": 20, "test": 20}[split]


def test_the_source_field_names_the_entry_point(train_run):
    _, run = train_run
    assert run.data.tags["mlflow.source.name"] == "ltr.train"
    assert run.data.tags["mlflow.source.type"] == "LOCAL"


def test_the_first_charts_are_the_models_and_the_baseline_follows_its_split(train_run):
    _, run = train_run
    keys = list(run.data.metrics)
    assert "test/baseline_random/ndcg_at_10" in keys and not any(
        k.startswith("baseline_random/") for k in keys
    )
    order = chart_order(keys)
    assert not order[0].startswith(("test/baseline_random", "baseline_random")), order[:5]
    first_test = order.index("test/ndcg_at_10")
    assert first_test < order.index("test/baseline_random/ndcg_at_10")
    assert all("baseline" not in k for k in order[: first_test + 1])


def test_the_digest_is_the_given_fingerprint_not_one_mlflow_computes(tmp_path):
    """The digest is the given fingerprint, also for a split MLflow could hash (no arrays are passed)."""
    tracker = Tracker(f"sqlite:///{tmp_path}/mlflow.db", "exp", artifact_root=tmp_path / "art")
    split = SplitDataset(
        "mine/test", "0123456789abcdef", str(tmp_path / "test.txt"), "test", {"n_queries": 3}
    )
    with tracker.start(run_name="r"):
        tracker.log_datasets([split])
    (given,) = MlflowClient(tracker.uri).get_run(tracker.run_id).inputs.dataset_inputs
    assert (given.dataset.name, given.dataset.digest) == ("mine/test", "0123456789abcdef")
    assert [(t.key, t.value) for t in given.tags] == [("mlflow.data.context", "test")]


# --- a server that dies under a comparison: the fallback keeps the parent link and the datasets -------


def _split(name: str, digest: str) -> SplitDataset:
    return SplitDataset(f"d/{name}", digest, f"/data/{name}.txt", name, {"n_queries": 2})


@pytest.mark.slow  # ~10 s: bounded retries against the dead server (the session's server, a killed proxy)
@pytest.mark.parametrize("dies", ["before the child", "inside the child"])
def test_children_in_the_fallback_store_keep_their_parent_and_datasets(
    tmp_path, mlflow_server, monkeypatch, dies, experiment_name
):
    """A comparison-shaped run (parent + spawned children, as ``ltr.compare`` logs them) whose server
    dies: the parent moves to the fallback store with its child, the children name the fallback parent,
    and ``import-fallback`` restores parent links and dataset inputs on the target."""
    for name, value in HTTP_LIMITS.items():
        monkeypatch.setenv(name, value)
    server, url = mlflow_server
    parent = Tracker(url, experiment_name, fallback_root=tmp_path / "work")
    t0 = time.monotonic()
    with parent.start(run_name="compare-x", tags={"ltr.compare.role": "parent"}):
        parent.log_datasets([_split("test", "a" * 16)])
        parent.log_params({"seed": 1})
        for i, system in enumerate(["one", "two"]):
            child = parent.spawn()
            if i == 0 and dies == "before the child":
                server.kill()
            with child.start(run_name=system, parent_run_id=parent.run_id):
                child.log_datasets([_split("train", "b" * 16), _split("test", "a" * 16)])
                if i == 0 and dies == "inside the child":
                    server.kill()
                child.log_metrics({"test/ndcg_at_10": 0.5 + i / 10})
        parent.log_metrics({"leaderboard/one/ndcg_at_10": 0.5})
    assert time.monotonic() - t0 < 120
    store = tmp_path / "work" / "mlflow-fallback.db"
    fallback = MlflowClient(f"sqlite:///{store}")
    runs = {r.info.run_name: r for r in fallback.search_runs([parent.experiment_id])}
    assert set(runs) == {"compare-x", "one", "two"}
    fallback_parent = runs["compare-x"]
    assert fallback_parent.info.status == "FINISHED" and fallback_parent.data.params == {"seed": "1"}
    assert fallback_parent.data.metrics == {"leaderboard/one/ndcg_at_10": 0.5}
    for system in ("one", "two"):
        run = runs[system]
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == fallback_parent.info.run_id
        assert [d.dataset.digest for d in run.inputs.dataset_inputs] == ["b" * 16, "a" * 16]
    assert [d.dataset.name for d in fallback_parent.inputs.dataset_inputs] == ["d/test"]

    target = f"sqlite:///{tmp_path}/imported.db"
    pairs = dict(import_fallback(store, target))
    client = MlflowClient(target)
    copies = {
        r.info.run_name: r
        for r in client.search_runs([client.get_experiment_by_name(experiment_name).experiment_id])
    }
    new_parent = copies["compare-x"].info.run_id
    assert pairs[fallback_parent.info.run_id] == new_parent
    for system in ("one", "two"):
        assert copies[system].data.tags["mlflow.parentRunId"] == new_parent
        assert [d.dataset.digest for d in copies[system].inputs.dataset_inputs] == ["b" * 16, "a" * 16]
        assert {t.value for d in copies[system].inputs.dataset_inputs for t in d.tags} == {"train", "test"}


# --- import-fallback into a server that is gone or dies part-way -------------------------------------


class DyingProxy(ForwardingProxy):
    """A real HTTP proxy in front of an MLflow server that dies (stops accepting connections) at the
    first request after the ``runs/create`` number ``die_after_create``: the import is cut part-way,
    inside a run it has just created on the server."""

    def __init__(self, upstream: str, die_after_create: int) -> None:
        import threading

        state = {"creates": 0, "dead": False}

        def gate(handler: Any, body: bytes | None) -> bool:
            if state["dead"] or state["creates"] >= die_after_create and "runs/create" not in handler.path:
                state["dead"] = True
                handler.close_connection = True
                threading.Thread(target=self.close, daemon=True).start()
                return True  # no answer: the connection drops, then nothing listens any more
            state["creates"] += "runs/create" in handler.path
            return False

        super().__init__(upstream, gate)


def _fallback_store(path: Path, experiment: str = "exp") -> list[str]:
    """A fallback store as a comparison leaves it: a parent and two children with dataset inputs."""
    tracker = Tracker(f"sqlite:///{path}", experiment, artifact_root=path.parent / "art")
    ids = []
    with tracker.start(run_name="compare-x"):
        tracker.log_params({"seed": 1})
        ids.append(tracker.run_id)
        for system in ("one", "two"):
            child = tracker.spawn()
            with child.start(run_name=system, parent_run_id=tracker.run_id):
                child.log_datasets([_split("test", "a" * 16)])
                child.log_params({"system": system})
                child.log_metrics({"test/ndcg_at_10": 0.5})
                ids.append(child.run_id)
    return ids


def _import_cli(store: Path, target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ltr.tracking", "import-fallback", str(store), "--to", target],
        cwd=PROJECT_ROOT, env=cli_env(PROJECT_ROOT), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_imported_children_name_the_imported_parent(tmp_path):
    """A fallback store holding a parent and two children (as a comparison leaves it), imported into another
    store: each child's ``mlflow.parentRunId`` names the parent's *new* id there, not its id in the fallback
    store (the slow server tests check this too; this one needs no server, ~10 s).

    Kills mutant #4 (``_import_run`` dropping the translation of the parent tag: children kept the old id).
    """
    store = tmp_path / "mlflow-fallback.db"
    parent, *children = _fallback_store(store)
    target = f"sqlite:///{tmp_path}/imported.db"
    pairs = dict(import_fallback(store, target))
    assert set(pairs) == {parent, *children}
    client = MlflowClient(target)
    for child in children:
        copy = client.get_run(pairs[child])
        assert copy.data.tags["mlflow.parentRunId"] == pairs[parent] != parent


def test_import_into_an_unreachable_server_is_one_line_naming_the_option(tmp_path):
    from helpers import free_port

    store = tmp_path / "mlflow-fallback.db"
    _fallback_store(store)
    target = f"http://127.0.0.1:{free_port()}"
    proc = _import_cli(store, target)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: import-fallback --to={target}: the MLflow server is unreachable")
    assert len(proc.stderr.strip().splitlines()) == 1
    client = MlflowClient(f"sqlite:///{store}")
    assert not [r for r in client.search_runs([client.get_experiment_by_name("exp").experiment_id])
                if "ltr.fallback.imported_as" in r.data.tags]  # fmt: skip


@pytest.mark.slow  # ~12 s: two real import processes, bounded retries against the dead proxy
def test_import_into_a_server_that_dies_part_way_is_one_line_and_a_rerun_completes_it(
    tmp_path, mlflow_session_server, experiment_name
):
    """``python -m ltr.tracking import-fallback`` (a real process) into a server that dies while the
    second run is being copied: exit 2 with one line, no traceback, the first run marked imported;
    the same command once the server answers again copies the rest, each run exactly once (the
    half-copied run is replaced), with the parent links."""
    url = mlflow_session_server
    store = tmp_path / "mlflow-fallback.db"
    parent, one, two = _fallback_store(store, experiment_name)
    proxy = DyingProxy(url, die_after_create=2)
    try:
        cut = _import_cli(store, proxy.url)
    finally:
        proxy.close()
    assert cut.returncode == 2, cut.stderr[-3000:]
    assert "Traceback" not in cut.stderr
    (line,) = cut.stderr.strip().splitlines()  # no retry warnings, no traceback: one line
    assert line.startswith(
        f"error: import-fallback: the MLflow server {proxy.url} stopped answering after 1 of 3"
    )
    assert f"nothing is lost: the runs not imported stay in {store}" in line
    server = MlflowClient(url)
    exp = server.get_experiment_by_name(experiment_name).experiment_id
    assert len(server.search_runs([exp])) == 2  # the parent, and the child the server died on (half-copied)

    again = _import_cli(store, url)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2 run(s) imported" in again.stdout
    copies = {r.info.run_name: r for r in server.search_runs([exp])}
    assert sorted(copies) == ["compare-x", "one", "two"]  # each once: the half copy was replaced
    for system in ("one", "two"):
        assert copies[system].data.tags["mlflow.parentRunId"] == copies["compare-x"].info.run_id
        assert copies[system].data.params == {"system": system}
        assert [d.dataset.digest for d in copies[system].inputs.dataset_inputs] == ["a" * 16]


@pytest.mark.slow  # ~40 s: a two-job multirun in a real process
def test_sweep_jobs_and_their_summary_name_their_entry_points(tmp_path):
    """``python -m ltr.train -m``: each job's Source is ``ltr.train`` of type JOB (a job of a sweep),
    the summary run's is ``ltr.sweep.summary``; the jobs have their dataset inputs too."""
    proc = run_train_cli(["-m", "+model=linear", *TINY_DATA, "num_threads=1", "seed=1,2"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = store_client(tmp_path)
    runs = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    sources = sorted(
        (r.data.tags["mlflow.source.name"], r.data.tags["mlflow.source.type"], len(r.inputs.dataset_inputs))
        for r in runs
    )
    assert sources == [("ltr.sweep", "JOB", 0), ("ltr.train", "JOB", 3), ("ltr.train", "JOB", 3)]


@pytest.mark.slow  # ~30 s: a real comparison, the server killed under it, an import
def test_a_comparison_whose_server_dies_keeps_its_tree_in_the_fallback_store(
    tmp_path, mlflow_server, experiment_name
):
    """``python -m ltr.compare`` (a real process) while its server is killed during the second system's
    training: exit 0; the fallback store holds the parent (with all it logged) and the second system
    under it, with its datasets; the first system's run stays on the server. ``import-fallback`` into
    the server once it is back (the same store) gives one tree again: the imported parent holds both
    systems. The comparison pauses in the second system's round 10 of 40 (tests/paused_run.py) with its
    first curve points on the server; the server dies there, then training resumes."""
    import yaml

    server_proxy, url = mlflow_server
    spec = {
        "name": "dies",
        "overrides": ["data=synthetic"],
        "baseline": "feature",
        "metrics": ["ndcg@10"],
        "stats": {"B": 200},
        "systems": {
            "feature": {"model": "feature"},
            "slow": {"model": "lambdamart", "overrides": ["model.params.n_trees=40",
                     "model.params.learning_rate=0.001", "model.early_stopping.patience=null"]},
        },
    }  # fmt: skip
    path = tmp_path / "dies.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    root = tmp_path / "work"
    handshake = tmp_path / "handshake"
    handshake.mkdir()
    args = [f"experiment={path}", *TINY_DATA, "num_threads=1", "eval.bootstrap.B=200", f"tracking.uri={url}",
            f"tracking.experiment={experiment_name}"]  # fmt: skip
    compare = subprocess.Popen(
        [sys.executable, PAUSED_RUN, str(handshake), "10", "ltr.compare", *args], cwd=PROJECT_ROOT,
        env=cli_env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not (handshake / "paused").exists() and compare.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if not (handshake / "paused").exists():
            compare.kill()
            pytest.fail("the slow system never reached round 10:\n" + compare.communicate()[1][-3000:])
        server = MlflowClient(url)
        exp = server.get_experiment_by_name(experiment_name)
        (slow,) = server.search_runs([exp.experiment_id], "tags.`ltr.compare.system` = 'slow'")
        assert server.get_metric_history(slow.info.run_id, "curve/valid/ndcg_at_10")  # training in progress
        server_proxy.kill()
        (handshake / "resume").touch()
        _, err = compare.communicate(timeout=600)
    finally:
        if compare.poll() is None:
            compare.kill()
            compare.wait()
    assert compare.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    store = root / "mlflow-fallback.db"
    fallback = MlflowClient(f"sqlite:///{store}")
    runs = {
        r.info.run_name: r
        for r in fallback.search_runs([fallback.get_experiment_by_name(experiment_name).experiment_id])
    }
    assert set(runs) == {"compare-dies", "slow"}
    parent = runs["compare-dies"]
    assert parent.data.tags["mlflow.source.name"] == "ltr.compare"
    assert {"leaderboard/feature/ndcg_at_10", "leaderboard/slow/ndcg_at_10"} <= set(parent.data.metrics)
    assert runs["slow"].info.status == "FINISHED"
    assert runs["slow"].data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert len(runs["slow"].inputs.dataset_inputs) == 3

    url_again = server_proxy.upstream  # the same store, back (the real server behind the killed proxy)
    imported = _import_cli(store, url_again)
    assert imported.returncode == 0, imported.stderr[-3000:]
    client = MlflowClient(url_again)
    tree = client.search_runs([client.get_experiment_by_name(experiment_name).experiment_id])
    new_parent = next(r for r in tree if r.data.tags.get("ltr.fallback.source_run_id") == parent.info.run_id)
    children = {
        r.info.run_name: r for r in tree if r.data.tags.get("mlflow.parentRunId") == new_parent.info.run_id
    }
    assert set(children) == {"feature", "slow"}  # one tree: the server's first system joined the import
    assert [d.dataset.digest for d in children["slow"].inputs.dataset_inputs] == [
        d.dataset.digest for d in runs["slow"].inputs.dataset_inputs
    ]
    half = parent.data.tags["ltr.fallback.server_run_id"]
    assert (
        next(r for r in tree if r.info.run_id == half).data.tags["ltr.fallback.superseded_by"]
        == new_parent.info.run_id
    )
