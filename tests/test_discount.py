"""The discount the users imply (issue 27 item 3): ``ltr.clicks discount`` and ``ltr.clicks.discount``.

Truths: the textbook example (clicks halving by position: the geometric user, p = 0.5, exactly), scipy's
binomial likelihood and a root of the score equation for the scale, the χ² cut of the profile likelihood,
and simulated logs whose examination curve is known.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.special import gammaln
from scipy.stats import binom, chi2, norm

from ltr.clicks.__main__ import main as clicks_main
from ltr.clicks.discount import (
    FAMILIES,
    ExaminationEstimates,
    PositionCounts,
    fit_discounts,
    fit_family,
    segment_test,
)
from ltr.clicks.simulation import simulate_log_table
from ltr.core.errors import DataError
from ltr.data.synthetic import generate
from ltr.evaluate import main as evaluate_main
from ltr.metrics import evaluate
from ltr.metrics.conventions import Conventions, resolve_conventions

TEXTBOOK = "# position clicks impressions\n1 120 200\n2 60 200\n3 30 200\n"


def _error(argv: list[str], capsys) -> str:
    assert clicks_main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("error: "), captured
    return lines[0]


def _counts_of_simulated_log(n_queries: int, eta: float, seed: int, epsilon: float = 0.1) -> PositionCounts:
    """Clicks and impressions per position of a RandTop-10 log simulated under PBM, examination (1/r)^eta."""
    table = simulate_log_table(
        generate(n_queries, seed=seed), rounds=20, rand_top=10, eta=eta, epsilon=epsilon, seed=seed
    )
    pos, click = np.asarray(table["position"]), np.asarray(table["click"], dtype=float)
    top = int(pos.max())
    return PositionCounts.of(
        np.arange(1, top + 1), np.bincount(pos, click, top + 1)[1:], np.bincount(pos, minlength=top + 1)[1:]
    )


def test_the_textbook_example_is_the_geometric_user_with_p_one_half(tmp_path, capsys):
    """Positions 1-3 clicked 120, 60, 30 of 200 impressions: D(r) = 0.5^(r-1), c = 0.6, a perfect fit."""
    path = tmp_path / "counts.txt"
    path.write_text(TEXTBOOK)
    assert clicks_main(["discount", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["best"]["family"] == "geometric"
    assert out["best"]["params"]["p"] == pytest.approx(0.5, abs=1e-6)
    geometric = out["families"][0]
    assert geometric["scale"] == pytest.approx(0.6, abs=1e-6)
    assert geometric["deviance"] == pytest.approx(0.0, abs=1e-8)
    assert geometric["conventions"]["discount"] == "geometric"
    by_name = {f["family"]: f for f in out["families"]}
    assert set(by_name) == set(FAMILIES)
    assert by_name["log2"]["p_value"] < 1e-3  # NDCG's default discount does not describe these users
    # the text output names the overrides that make a metric use the fitted discount
    assert clicks_main(["discount", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.rstrip().endswith(
        "metrics with the best discount: eval.conventions.discount=geometric eval.conventions.discount_persistence=0.5"
    )


@pytest.mark.parametrize("family", ["log2", "letor", "power", "geometric", "linear"])
def test_the_likelihood_and_the_scale_match_scipy(family):
    """ℓ + Σ log C(n, k) is scipy's binomial log-pmf at the fitted (c, θ); c is the root of the score
    Σ k/c − Σ (n − k)·D/(1 − c·D) = 0 for the fitted curve; no θ on a grid does better."""
    counts = PositionCounts.of([1, 2, 3, 4, 5], [180, 95, 70, 41, 40], [400, 380, 390, 300, 410])
    fit = fit_family(counts, FAMILIES[family])
    theta = next(iter(fit.params.values()), math.nan)
    d = FAMILIES[family].discounts(counts.position, theta)
    k, n = counts.clicks, counts.impressions
    log_choose = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    scipy_ll = binom.logpmf(k, n, fit.scale * d).sum()
    assert fit.log_likelihood + log_choose.sum() == pytest.approx(scipy_ll, abs=1e-6)
    score = lambda c: np.sum(k / c) - np.sum((n - k) * d / (1 - c * d))  # noqa: E731
    assert fit.scale == pytest.approx(brentq(score, 1e-6, 1 / d.max() - 1e-9), rel=1e-6)
    if fit.params:
        spec = FAMILIES[family]
        for t in np.linspace(spec.low, spec.high, 101)[1:-1]:
            dt = spec.discounts(counts.position, t)
            if np.any(dt <= 0):
                continue  # nobody looks where clicks were seen: ℓ = −∞
            best_c = minimize_scalar(
                lambda c, dt=dt: -binom.logpmf(k, n, c * dt).sum(),
                bounds=(1e-9, 1 / dt.max()),
                method="bounded",
            )
            assert -best_c.fun <= scipy_ll + 1e-6


def test_the_parameter_ci_is_the_chi_square_cut_of_the_profile_likelihood():
    counts = PositionCounts.of([1, 2, 3], [120, 60, 30], [200, 200, 200])
    fit = fit_family(counts, FAMILIES["geometric"], confidence=0.9)
    k, n = counts.clicks, counts.impressions

    def profile(p: float) -> float:  # scipy's optimiser over c, for this p
        d = p ** (counts.position - 1.0)
        return -minimize_scalar(
            lambda c: -binom.logpmf(k, n, c * d).sum(), bounds=(1e-9, 1.0), method="bounded",
            options={"xatol": 1e-12},
        ).fun  # fmt: skip

    top = profile(fit.params["p"])
    for bound in fit.ci["p"]:
        assert 2 * (top - profile(bound)) == pytest.approx(chi2.ppf(0.9, 1), abs=1e-4)
    assert fit.ci["p"][0] < 0.5 < fit.ci["p"][1]


@pytest.mark.slow  # 40 simulated logs: 4 s quiet, 14 s on a loaded machine
def test_simulated_users_recover_their_exponent_with_nominal_coverage():
    """PBM users with examination (1/r)^0.7 on 40 seeded RandTop-10 logs: the power family's 95 % CI
    holds 0.7 in at least 34 of them (binomial 5 % tail at 40 × 0.95), and power is the best family
    on a larger log."""
    hits = 0
    for seed in range(40):
        fit = fit_family(_counts_of_simulated_log(100, 0.7, seed), FAMILIES["power"])
        low, high = fit.ci["eta"]
        hits += low <= 0.7 <= high
    assert hits >= 34, hits
    best = fit_discounts(_counts_of_simulated_log(300, 0.7, 99)).best
    assert best.family == "power" and abs(best.params["eta"] - 0.7) < 0.06


def test_segments_with_different_users_are_told_apart_and_same_users_are_not():
    steep, shallow = _counts_of_simulated_log(200, 1.2, 1), _counts_of_simulated_log(200, 0.4, 2)
    differ = segment_test({"mobile": steep, "desktop": shallow}, "power")
    assert differ.df == 1 and differ.p_value < 1e-6
    assert differ.by_segment["mobile"].params["eta"] > differ.by_segment["desktop"].params["eta"]
    # the same users on documents that attract more clicks (click noise 0.4 vs 0.1): only c differs
    alike = segment_test(
        {"a": _counts_of_simulated_log(200, 0.7, 3), "b": _counts_of_simulated_log(200, 0.7, 4, epsilon=0.4)},
        "power",
    )
    assert alike.p_value > 0.01
    # G: twice the per-segment log-likelihoods minus the best shared-η one, found here by scipy on a grid
    k = {name: (c.clicks, c.impressions, c.position) for name, c in {"m": steep, "d": shallow}.items()}

    def shared(eta: float) -> float:
        total = 0.0
        for clicks, shown, pos in k.values():
            d = pos**-eta
            total += -minimize_scalar(
                lambda c, d=d, k=clicks, n=shown: -(k * np.log(c * d) + (n - k) * np.log1p(-c * d)).sum(),
                bounds=(1e-9, 1.0), method="bounded", options={"xatol": 1e-12},
            ).fun  # fmt: skip
        return total

    best_shared = max(shared(eta) for eta in np.linspace(0.6, 1.0, 401))
    assert differ.shared_log_likelihood == pytest.approx(best_shared, abs=1e-3)
    parts = sum(f.log_likelihood for f in differ.by_segment.values())
    assert differ.statistic == pytest.approx(2 * (parts - differ.shared_log_likelihood))
    with pytest.raises(DataError, match="no parameter"):
        segment_test({"mobile": steep, "desktop": shallow}, "log2")


def test_a_counts_file_with_a_segment_column_reports_each_segment_and_the_test(tmp_path, capsys):
    lines = [f"{r} {c} 200 phone" for r, c in zip([1, 2, 3], [120, 60, 30], strict=True)]
    lines += [f"{r} {c} 200 desk" for r, c in zip([1, 2, 3], [120, 100, 84], strict=True)]
    path = tmp_path / "counts.txt"
    path.write_text("\n".join(lines) + "\n")
    assert clicks_main(["discount", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["segments"]) == {"phone", "desk"}
    assert out["segments"]["phone"]["best"]["family"] == "geometric"
    assert out["segment_test"]["p_value"] < 1e-3
    assert out["observed"]["clicks"] == [240.0, 160.0, 114.0]  # the pooled counts


def test_a_propensity_file_is_fitted_with_standard_errors_from_its_ci(tmp_path, capsys):
    """θ_r = r^-0.7 exactly, CIs of ±0.05 at 90 %: the power family fits with η = 0.7 and deviance 0;
    the weights are se = 0.1 / (2·z₀.₉₅)."""
    theta = [r**-0.7 for r in range(1, 7)]
    path = tmp_path / "p.json"
    path.write_text(json.dumps({
        "position": list(range(1, 7)), "examination": theta, "confidence": 0.9,
        "ci_low": [None] + [t - 0.05 for t in theta[1:]], "ci_high": [None] + [t + 0.05 for t in theta[1:]],
    }))  # fmt: skip
    assert clicks_main(["discount", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    power = next(f for f in out["families"] if f["family"] == "power")
    assert power["params"]["eta"] == pytest.approx(0.7, abs=1e-5)
    assert power["deviance"] == pytest.approx(0.0, abs=1e-8)
    se = 0.1 / (2 * norm.ppf(0.95))
    assert out["observed"]["se"][1] == pytest.approx(se)
    log2 = next(f for f in out["families"] if f["family"] == "log2")
    d = 1 / np.log2(np.arange(2, 7) + 1.0)
    assert log2["deviance"] == pytest.approx(np.sum(((np.array(theta[1:]) - d) / se) ** 2))
    est = ExaminationEstimates.from_json(json.loads(path.read_text()), "p.json")
    assert est.confidence == 0.9


def test_a_metric_uses_the_fitted_discount():
    """NDCG with the geometric discount p = 0.5 is the hand-worked value; the conventions record it."""
    labels, scores = np.array([1, 0, 2]), np.array([3.0, 2.0, 1.0])
    c = resolve_conventions("ltr", discount="geometric", discount_persistence=0.5, gain="linear")
    dcg = 1 * 1 + 0 * 0.5 + 2 * 0.25
    ideal = 2 * 1 + 1 * 0.5
    value = evaluate(["ndcg"], labels, scores, np.array([0, 3]), preset=c)["ndcg"][0]
    assert value == pytest.approx(dcg / ideal)
    assert Conventions(discount="power", discount_exponent=0.5).discounts(4).tolist() == pytest.approx(
        [1, 2**-0.5, 3**-0.5, 0.5]
    )


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"discount": "geometric", "discount_persistence": 0.0}, "discount_persistence"),
        ({"discount": "linear", "discount_slope": 1.0}, "discount_slope"),
        ({"discount": "power", "discount_exponent": -1.0}, "discount_exponent"),
    ],
)
def test_bad_discount_parameters_are_named(overrides, named):
    with pytest.raises(Exception, match=named):
        resolve_conventions("ltr", **overrides)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 120 200\n2 260 200\n", "counts.txt:2: 260 clicks out of 200 impressions"),
        ("1 120 200\n2 60\n", "counts.txt:2: 2 fields, expected 3"),
        ("1 1_000 2000\n2 6 20\n", "counts.txt:1: clicks '1_000' is not a number in [0, 1e+15]"),
        ("1 5e300 1e308\n2 6 20\n", "counts.txt:1: clicks '5e300' is not a number in [0, 1e+15]"),
        ("0 10 20\n2 6 20\n", "counts.txt:1: position '0' is not a whole number"),
        ("1 10 20\n1 6 20\n", "counts.txt:2: position 1 is given twice"),
        ("1 0 20\n2 0 20\n", "no clicks at any position"),
        ("1 10 20\n", "impressions at 1 position(s); a discount needs at least two"),
        ("# nothing\n", "no counts"),
    ],
)
def test_bad_counts_get_one_error_naming_the_file_and_line(tmp_path, capsys, monkeypatch, text, expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "counts.txt").write_text(text)
    assert expected in _error(["discount", "counts.txt"], capsys)


def test_bad_options_are_refused_before_reading(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "counts.txt").write_text(TEXTBOOK)
    assert "--families: unknown family 'cubic'" in _error(
        ["discount", "counts.txt", "--families", "cubic"], capsys
    )
    assert "--segment applies to a click log" in _error(
        ["discount", "counts.txt", "--segment", "device"], capsys
    )
    assert "--plot" in _error(["discount", "counts.txt", "--plot", "counts.txt"], capsys)
    assert "--confidence" in _error(["discount", "counts.txt", "--confidence", "1.5"], capsys)
    (tmp_path / "p.json").write_text('{"position": [1, 2]}')
    assert "p.json: needs the lists" in _error(["discount", "p.json"], capsys)


def test_a_click_log_is_counted_per_position_and_the_plot_is_drawn(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    table = simulate_log_table(generate(60, seed=5), rounds=10, rand_top=10, eta=1.0, seed=5)
    import pandas as pd

    frame = pd.DataFrame(table)
    frame["device"] = np.where(frame["session"].astype(int) % 2 == 0, "phone", "desk")
    frame.to_csv(tmp_path / "log.csv", index=False)
    assert clicks_main(["discount", "log.csv", "--json", "--segment", "device", "--plot", "fit.png"]) == 0
    out = json.loads(capsys.readouterr().out)
    clicks = frame.groupby("position")["click"].sum().to_numpy(dtype=float)
    shown = frame.groupby("position")["click"].size().to_numpy(dtype=float)
    assert out["observed"]["clicks"] == clicks.tolist() and out["observed"]["impressions"] == shown.tolist()
    assert set(out["segments"]) == {"phone", "desk"}
    assert (tmp_path / "fit.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "no such column" in _error(["discount", "log.csv", "--segment", "browser"], capsys)


def test_each_query_can_use_its_segments_fitted_discount(tmp_path, capsys, monkeypatch):
    """From a log with two devices to NDCG where each query uses its device's discount: ltr.evaluate's
    per-query values equal evaluate() run by hand on each device's queries with that device's conventions."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "counts.txt").write_text(
        "".join(f"{r} {c} 200 phone\n" for r, c in zip([1, 2, 3], [120, 60, 30], strict=True))
        + "".join(f"{r} {c} 200 desk\n" for r, c in zip([1, 2, 3], [120, 100, 84], strict=True))
    )
    assert clicks_main(["discount", "counts.txt", "--families", "geometric", "--json"]) == 0
    (tmp_path / "fit.json").write_text(capsys.readouterr().out)
    rng = np.random.default_rng(0)
    lines = [
        f"{int(rng.integers(0, 3))} qid:{q} 1:{rng.random():.3f}\n" for q in range(1, 11) for _ in range(6)
    ]
    (tmp_path / "data.txt").write_text("".join(lines))
    np.savetxt(tmp_path / "s.txt", rng.random(60))
    (tmp_path / "seg.txt").write_text("".join(f"{q} {'phone' if q % 2 else 'desk'}\n" for q in range(1, 11)))
    argv = ["--data", "data.txt", "--scores", "s.txt", "-m", "ndcg@5", "--json"]
    assert evaluate_main([*argv, "--segment-discounts", "fit.json", "--query-segments", "seg.txt"]) == 0
    got = json.loads(capsys.readouterr().out)["per_query"]
    fit = json.loads((tmp_path / "fit.json").read_text())["segment_test"]["by_segment"]
    labels = np.array([int(line.split()[0]) for line in lines])
    scores = np.loadtxt(tmp_path / "s.txt")
    for q in range(1, 11):
        c = resolve_conventions("ltr", **fit["phone" if q % 2 else "desk"]["conventions"])
        rows = slice(6 * (q - 1), 6 * q)
        expected = evaluate(["ndcg@5"], labels[rows], scores[rows], np.array([0, 6]), preset=c)["ndcg@5"][0]
        assert got[str(q)]["ndcg@5"] == pytest.approx(expected)
    assert fit["phone"]["conventions"]["discount_persistence"] == pytest.approx(0.5, abs=1e-6)
    (tmp_path / "twice.txt").write_text((tmp_path / "seg.txt").read_text() + "1 desk\n")
    assert evaluate_main([*argv, "--segment-discounts", "fit.json", "--query-segments", "twice.txt"]) == 2
    assert "twice.txt:11: qid 1 is already in segment 'phone', now 'desk'" in capsys.readouterr().err
    (tmp_path / "bad.txt").write_text("1 tablet\n")
    assert evaluate_main([*argv, "--segment-discounts", "fit.json", "--query-segments", "bad.txt"]) == 2
    assert "bad.txt:1: segment 'tablet' has no fitted discount" in capsys.readouterr().err
    assert evaluate_main([*argv, "--segment-discounts", "fit.json"]) == 2
    assert "--segment-discounts needs --query-segments" in capsys.readouterr().err


def test_a_counts_file_with_a_byte_order_mark_reads_like_one_without(tmp_path, capsys):
    (tmp_path / "bom.txt").write_text("\ufeff" + TEXTBOOK, encoding="utf-8")
    assert clicks_main(["discount", str(tmp_path / "bom.txt"), "--json", "--families", "geometric"]) == 0
    assert json.loads(capsys.readouterr().out)["best"]["params"]["p"] == pytest.approx(0.5, abs=1e-6)
