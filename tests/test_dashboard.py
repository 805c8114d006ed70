"""The MLflow dashboard as a user sees it: a real `mlflow server`, a small comparison logged to it, and the
links ltr prints opened in headless Chromium: the runs table (columns, sort, model-training view) and a
run's page (description, datasets, charts).

The screenshot is kept as ``test-artifacts/dashboard.png`` (gitignored). Needs Debian's ``chromium``
(``.ci/run`` installs it); outside CI the test is skipped when it is absent.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from helpers import PROJECT_ROOT, start_mlflow_server

from ltr.experiment.experiments import load_experiment
from ltr.experiment.systems import run_comparison
from ltr.tracking.store import dashboard_url

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = PROJECT_ROOT / "test-artifacts"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
EXPERIMENT = "dashboard-check"

pytestmark = pytest.mark.slow


def _group_members(pgid: int) -> list[int]:
    """PIDs whose process group is ``pgid`` (the server and every child it started)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    pids.append(int(entry.name))
            except (ProcessLookupError, PermissionError):
                continue
    return pids


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group (its PID), wait, then SIGKILL leftover children by PID."""
    pgid = proc.pid  # started with start_new_session=True: the group id is the server's PID
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in _group_members(pgid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    time.sleep(0.5)
    assert not _group_members(pgid), f"server processes left behind: {_group_members(pgid)}"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not CHROMIUM.exists():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{CHROMIUM} is missing in CI; .ci/run must install Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium); the browser check needs it")
    root = tmp_path_factory.mktemp("server")
    proc, url = start_mlflow_server(root, timeout=120)
    try:
        yield url, root
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def comparison(server):
    url, root = server
    spec = {
        "name": "dashboard",
        "title": "Dashboard check",
        "overrides": ["data=synthetic"],
        "baseline": "feature",
        "metrics": ["err@10", "ndcg@10"],
        "stats": {"B": 1000},
        "systems": {
            "feature": {"model": "feature"},
            "lambdamart": {"model": "lambdamart", "overrides": ["model.params.n_trees=20"]},
        },
    }
    path = root / "dashboard.yaml"
    path.write_text(yaml.safe_dump(spec))
    overrides = [
        f"tracking.uri={url}",
        f"tracking.experiment={EXPERIMENT}",
        f"paths.root={root}",
        "data.n_queries.train=60",
        "data.n_queries.valid=20",
        "data.n_queries.test=30",
        "data.max_docs=30",
        "num_threads=1",
        "eval.bootstrap.B=500",
    ]
    return run_comparison(load_experiment(str(path)), overrides)


def _api(url: str, endpoint: str, payload: dict | None = None) -> dict:
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(
        f"{url}/api/2.0/mlflow/{endpoint}", data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def test_dashboard_shows_the_runs_and_their_test_ndcg(server, comparison):
    from playwright.sync_api import sync_playwright

    url, _ = server
    exp_id = _api(url, f"experiments/get-by-name?experiment_name={EXPERIMENT}")["experiment"]["experiment_id"]
    runs = _api(url, "runs/search", {"experiment_ids": [exp_id]})["runs"]
    values = {
        r["info"]["run_name"]: m["value"]
        for r in runs
        for m in r["data"].get("metrics", [])
        if m["key"] == "test/ndcg_at_10"
    }
    assert set(values) == {"feature", "lambdamart"}
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 2400, "height": 700})
            # the experiment as MLflow opens it by default: its GenAI overview, no training runs
            page.goto(f"{url}/#/experiments/{exp_id}", timeout=90_000)
            page.wait_for_url(re.compile(r".*/overview.*"), timeout=90_000)
            # the link ltr prints: the model-training runs table, test metrics as columns, best first
            page.goto(dashboard_url(url, exp_id), timeout=90_000)
            page.get_by_text("lambdamart", exact=True).first.wait_for(timeout=90_000)
            for value in values.values():
                page.get_by_text(re.compile(re.escape(f"{value}"[:6]))).first.wait_for(timeout=30_000)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(ARTIFACTS / "dashboard.png"))
            text = page.inner_text("body")
            landed = page.url
        finally:
            browser.close()
    assert "/runs" in landed and "workflowType=machine_learning" in landed and "/overview" not in landed
    assert "Model training" in text and "Usage" not in text
    assert "test/ndcg_at_10" in text and "test/err_at_10" in text and "compare-dashboard" in text
    for name, value in values.items():
        assert f"{value}"[:6] in text, f"{name}: test/ndcg_at_10 {value} not visible"
    # sorted by the comparison's primary metric (the first of its metrics: err@10), best first
    primary = {
        r["info"]["run_name"]: m["value"]
        for r in runs
        for m in r["data"].get("metrics", [])
        if m["key"] == "test/err_at_10"
    }
    best, worst = sorted(primary, key=primary.get, reverse=True)
    assert text.index(f"\n{best}\n") < text.index(f"\n{worst}\n"), "not sorted by test/err_at_10, best first"
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 20_000


def test_run_page_shows_datasets_source_and_the_models_charts_first(server, comparison):
    """The lambdamart run's page in Chromium, from the link ltr prints: the Overview's Datasets panel
    lists its splits with the data fingerprint as digest, the Source field names ``ltr.compare``, the
    description states the headline result with its CI, and the Model metrics tab opens on the model's
    charts (the random baseline's group after the model's test group; no chart of a CI bound or count)."""
    from playwright.sync_api import sync_playwright

    from ltr.tracking.writer import DATASET_CONTEXT

    url, _ = server
    run = _api(url, f"runs/get?run_id={comparison.child_run_ids['lambdamart']}")["run"]
    exp_id = run["info"]["experiment_id"]
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert (tags["mlflow.source.name"], tags["mlflow.source.type"]) == ("ltr.compare", "LOCAL")
    inputs = {
        {t["key"]: t["value"] for t in d["tags"]}[DATASET_CONTEXT]: d["dataset"]
        for d in run["inputs"]["dataset_inputs"]
    }
    assert set(inputs) == {"train", "valid", "test"}
    for split, dataset in inputs.items():
        assert dataset["name"] == f"synthetic/{split}"
        assert dataset["digest"] == tags[f"ltr.data.fingerprint.{split}"]
        assert json.loads(dataset["source"])["uri"].endswith(("train.txt", "vali.txt", "test.txt"))
    parent = _api(url, f"runs/get?run_id={comparison.parent_run_id}")["run"]
    assert {t["key"]: t["value"] for t in parent["data"]["tags"]}["mlflow.source.name"] == "ltr.compare"
    assert len(parent["inputs"]["dataset_inputs"]) == 3

    run_page = dashboard_url(url, exp_id, run["info"]["run_id"])  # "this run:" as ltr prints it
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1800, "height": 1000})
            page.goto(run_page, timeout=90_000)
            first = inputs["train"]
            page.get_by_text(f"{first['name']} ({first['digest']})").first.wait_for(timeout=90_000)
            overview = page.inner_text("body")
            page.screenshot(path=str(ARTIFACTS / "run_overview.png"), full_page=True)
            page.goto(run_page.replace("?", "/model-metrics?"), timeout=90_000)
            cards = page.locator("[data-testid=experiment-view-compare-runs-card] h4[title]")
            cards.first.wait_for(timeout=90_000)
            first_chart = cards.first.get_attribute("title")
            titles = cards.evaluate_all("cards => cards.map(c => c.title)")
            headers = page.locator("[data-testid=experiment-view-compare-runs-section-header]")
            sections = [h.split("\n")[0].strip() for h in headers.all_inner_texts()]
            page.screenshot(path=str(ARTIFACTS / "run_model_metrics.png"))
        finally:
            browser.close()
    lines = overview.splitlines()
    assert lines[lines.index("Source") + 1] == "ltr.compare"
    assert "Datasets" in lines and "+2" in overview  # the first split shown, the two others behind "+2"
    assert first_chart is not None and "baseline" not in first_chart, (first_chart, sections)
    assert first_chart.startswith(("test/", "valid/", "curve/")), first_chart
    assert sections.index("test") < sections.index("test/baseline_random"), sections
    # the description states the headline result with its CI; CI bounds and counts are no charts
    description = tags["mlflow.note.content"]
    assert description.startswith("lambdamart on synthetic: test ") and " CI [" in description
    assert description in overview
    assert titles and not [
        t for t in titles if t.endswith(("_ci_low", "_ci_high", "_n_skipped", "n_queries"))
    ]
