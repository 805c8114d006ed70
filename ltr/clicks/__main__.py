"""``python -m ltr.clicks``: estimate examination propensities from a click log; simulate one.

    python -m ltr.clicks propensity LOG --method randomization|em|regression-em [--json]
                                        [--features FEATURES.txt] [--iterations 30] [--max-position K]
                                        [--bootstrap B] [--confidence 0.95] [--seed 0] [--output OUT.json]
    python -m ltr.clicks simulate OUT.csv [--queries 300] [--rounds 20] [--sessions 1] [--rand-top N]
                                          [--eta 1.0] [--epsilon 0.1] [--top-k 10] [--seed 0]
                                          [--features-out FEATURES.txt]

``propensity`` reads a CSV (header row) or Parquet click log with the columns ``session, qid, doc,
position (1-based), click (0/1)`` and prints a table (position, θ_r/θ_1, CI), or with ``--json``
``{"position": [1, 2, …], "examination": [1.0, …], "ci_low": […], "ci_high": […]}``;
``--output`` also writes that JSON to a file (the input of ``model.clicks.propensities``). A position
whose uncertainty the bootstrap cannot measure (a log of one query, one replicate, replicates that all
agree) has no CI: the table says ``no CI: <reason>``, the JSON has ``null`` bounds and a ``no_ci``
object (position → reason). A log that cannot identify examination (no clicks, no non-clicks, one
position) is refused with the reason.

Before any work: ``--output`` (``simulate``: ``OUT`` and ``--features-out``) must not be the same file
as an input or another output, and its folder must exist and be writable (:mod:`ltr.io.outputs`, which
also writes them atomically); options with no effect (``--iterations`` or ``--features`` without
``--method regression-em``) and out-of-range options are refused, named as this command spells them. Methods
and the bootstrap (over queries, seeded; ``--bootstrap`` defaults to 200 replicates, 20 for
``regression-em``) are described in :mod:`ltr.clicks.propensity`; ``regression-em`` needs
``--features``, an SVMlight/LETOR file whose rows end with ``# docid = X`` (the log's ``doc``), see
:mod:`ltr.clicks.regression_em`.

``propensity`` shows its progress on a terminal (not in CI: :mod:`ltr.report.progress`), two bars in
turn with an ETA each: the point estimate's EM iterations (up to the method's maximum; the plain EM
ends early once it converges), then the bootstrap replicates (:class:`EstimateProgress`).

``simulate`` writes such a log from the synthetic dataset under the position-based click model with
examination ``(1/r)^η`` (:func:`ltr.clicks.simulate_log_table`): ``--rand-top N`` shuffles the top N
of every session (a RandTop-n randomization experiment, for ``--method randomization``); without it
each round's production ranker is redrawn, so documents move between positions (for ``--method em``).
``--features-out`` also writes the simulated queries as a LETOR file with ``# docid = <doc>`` on
every row, the ``--features`` input of ``--method regression-em``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

import numpy as np

from ltr.cli.numbers import OneLineParser, integer_option, real_option
from ltr.cli.parse_flags import add_parse_flags, given_parse_flags, parse_options
from ltr.cli.running import print_result, run_cli
from ltr.cli.spelling import Spelling, spelled_as
from ltr.clicks.discount import (
    FAMILIES,
    DiscountFit,
    PositionCounts,
    SegmentTest,
    fit_discounts,
    read_discount_input,
    segment_test,
)
from ltr.clicks.logs import Propensities, read_click_log, read_propensities, write_propensities
from ltr.clicks.offpolicy import (
    ESTIMATORS,
    METRICS,
    OffPolicyEstimate,
    candidate_rows,
    estimate_offpolicy,
    fit_reward_model,
)
from ltr.clicks.propensity import (
    DEFAULT_BOOTSTRAP,
    MAX_ITER,
    METHODS,
    check_estimate_options,
    estimate_propensities,
)
from ltr.clicks.regression_em import ITERATIONS
from ltr.clicks.simulation import simulate_log_table
from ltr.core.errors import ConfigError
from ltr.data.svmlight import write_svmlight
from ltr.data.synthetic import generate
from ltr.io.outputs import check_outputs, replacing
from ltr.report.plots import plot_discount_curves
from ltr.report.progress import iteration_progress, task_progress

#: the parse options of a ``--features`` file with a flag here (not ``--regroup``: rows are matched by docid
#: anyway; not ``--n-features``: the file's width is taken as it is)
FEATURE_PARSE_FLAGS = ("zero_based", "allow_unsorted", "nonfinite")


#: the numeric options of ``simulate`` and their defaults; all but ``queries`` are passed on to
#: :func:`ltr.clicks.simulate_log_table` under the same names
SIMULATE_DEFAULTS = {
    "queries": 300, "rounds": 20, "sessions": 1, "rand_top": 0, "eta": 1.0, "epsilon": 0.1, "top_k": 10, "seed": 0,
}  # fmt: skip
SIMULATE_OPTIONS = tuple(name for name in SIMULATE_DEFAULTS if name != "queries")

#: ``evaluate``: the fewest bootstrap resamples whose percentile CI means something (0 = no CI)
MIN_BOOTSTRAP = 100
CLIP_DEFAULT = 0.1


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m ltr.clicks", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("propensity", help="examination propensity per position from a click log")
    p.add_argument("log", help="CSV or Parquet click log: session, qid, doc, position, click")
    p.add_argument("--method", choices=METHODS, required=True)
    p.add_argument("--json", action="store_true", help="print the estimate as JSON")
    p.add_argument(
        "--max-position", type=integer_option, default=None, help="deepest position (default: the log's)"
    )
    p.add_argument("--features", default=None, help="regression-em: LETOR file, rows ending '# docid = DOC'")
    add_parse_flags(
        p.add_argument_group("parse options of --features (as in python -m ltr.data info)"),
        FEATURE_PARSE_FLAGS,
    )
    p.add_argument(
        "--iterations", type=integer_option, help=f"regression-em: EM iterations (default {ITERATIONS})"
    )
    p.add_argument(
        "--bootstrap",
        type=integer_option,
        default=None,
        help="bootstrap replicates over queries (default: 200, regression-em 20)",
    )
    p.add_argument("--confidence", type=real_option, default=0.95)
    p.add_argument("--seed", type=integer_option, default=0)
    p.add_argument("--output", default=None, help="also write the JSON estimate here")
    d = sub.add_parser("discount", help="fit discount families to examination by position; the best by AIC")
    d.add_argument(
        "input", help="counts (position clicks impressions [segment]), a click log, or propensity JSON"
    )
    d.add_argument("--json", action="store_true", help="print the fits as JSON")
    d.add_argument(
        "--families", default=None, help=f"comma-separated (default: all of {', '.join(FAMILIES)})"
    )
    d.add_argument("--segment", default=None, help="a click log's column: fit and compare each value's curve")
    d.add_argument("--confidence", type=real_option, default=0.95, help="level of the parameters' CIs")
    d.add_argument("--plot", default=None, help="also draw the estimates and the fitted curves (PNG)")
    e = sub.add_parser("evaluate", help="a new ranker's clicks estimated from a click log (off-policy)")
    e.add_argument("log", help="CSV or Parquet click log: session, qid, doc, position, click")
    e.add_argument(
        "--propensities", required=True, help="examination per position (propensity --output JSON)"
    )
    e.add_argument(
        "--features", required=True, help="LETOR file of every candidate, rows ending '# docid = DOC'"
    )
    add_parse_flags(e.add_argument_group("parse options of --features"), FEATURE_PARSE_FLAGS)
    ranker = e.add_mutually_exclusive_group(required=True)
    ranker.add_argument("--scores", help="the new ranker's score of every --features row, one per line")
    ranker.add_argument(
        "--model", help="the new ranker: runs:/ID/model, models:/NAME/VERSION or a saved folder"
    )
    e.add_argument("--tracking-uri", default=None, help="where --model's runs:/ and models:/ are")
    e.add_argument("--k", type=integer_option, default=10, help="the top k of the new ranking (default 10)")
    e.add_argument("--metric", choices=METRICS, default="clicks", help="expected clicks@k or click-DCG@k")
    e.add_argument(
        "--estimators", default=",".join(ESTIMATORS), help=f"comma-separated: {', '.join(ESTIMATORS)}"
    )
    e.add_argument(
        "--clip", type=real_option, default=0.1, help="clipped_ips: examination floor (default 0.1)"
    )
    e.add_argument(
        "--bootstrap",
        type=integer_option,
        default=1000,
        help=f"resamples of the CI over queries (0: none; else >= {MIN_BOOTSTRAP})",
    )
    e.add_argument("--confidence", type=real_option, default=0.95)
    e.add_argument("--seed", type=integer_option, default=0)
    e.add_argument("--json", action="store_true", help="print the estimates as JSON")
    s = sub.add_parser("simulate", help="write a simulated PBM click log (CSV) of the synthetic data")
    s.add_argument("output")
    for name, default in SIMULATE_DEFAULTS.items():  # plain ASCII numbers, as in the files (ltr.cli.numbers)
        kind = real_option if isinstance(default, float) else integer_option
        s.add_argument("--" + name.replace("_", "-"), type=kind, default=default)
    s.add_argument("--features-out", default=None, help="also write the features, rows '# docid = DOC'")
    return parser


def format_table(p: Propensities) -> str:
    """The estimate as a table; a position without a CI says why (``no CI: <reason>``) instead of bounds."""
    level = f"{100 * p.confidence:g}%"
    lines = [
        f"method {p.method}, {level} CI: bootstrap over queries ({p.n_bootstrap} replicates, seed {p.seed})",
        f"{'position':>8}  {'examination':>11}  {'ci_low':>8}  {'ci_high':>8}",
    ]
    reasons = p.no_ci or ("",) * len(p.position)
    for r, e, lo, hi, why in zip(p.position, p.examination, p.ci_low, p.ci_high, reasons, strict=True):
        bounds = f"no CI: {why}" if why else f"{lo:>8.4f}  {hi:>8.4f}"
        lines.append(f"{r:>8}  {e:>11.4f}  {bounds}")
    return "\n".join(lines) + "\n"


def plot_discount_fit(fit: DiscountFit, path: str, confidence: float) -> None:
    """The observed examination per position with its CI and every family's fitted curve (PNG).

    Counts: the click rate k_r/n_r divided by the best family's c, with a Wilson interval; examination
    estimates: θ̂_r ± z·se_r."""
    from scipy.stats import norm  # deferred: scipy.stats loads in ~0.5 s

    z = float(norm.ppf(0.5 + confidence / 2))
    data = fit.data
    if isinstance(data, PositionCounts):
        n, rate = data.impressions, data.clicks / data.impressions
        centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        scale = fit.best.scale
        value, low, high = rate / scale, (centre - half) / scale, (centre + half) / scale
    else:
        value = data.examination
        low, high = value - z * data.se, value + z * data.se
    curves = {
        f"{f.family} (AIC {f.aic:.1f})": FAMILIES[f.family].discounts(data.position, *f.params.values())
        for f in fit.families
    }
    plot_discount_curves(data.position, value, low, high, curves, path, confidence=confidence)


def format_discount_fits(
    fits: dict[str, DiscountFit], test: SegmentTest | None, confidence: float, *, source: str
) -> str:
    """Each input's families, best (lowest AIC) first, and the overrides that make metrics use the best;
    with segments, the pooled fit, each segment's and the likelihood-ratio test of one curve for all."""
    level = f"{100 * confidence:g}%"
    lines: list[str] = []
    for name, fit in fits.items():
        data = fit.data
        if isinstance(data, PositionCounts):
            what = (
                f"{data.position.size} positions, {data.impressions.sum():g} impressions, {data.clicks.sum():g} "
                "clicks; clicks ~ Binomial(impressions, c·D(r)), relevance equal across positions"
            )
        else:
            what = f"{data.position.size} positions; examination ~ Normal(D(r), se from the {100 * data.confidence:g}% CI)"
        title = (
            "all segments pooled"
            if name == "" and test is not None
            else (f"segment {name}" if name else source)
        )
        lines += [f"{title}: {what}", ""]
        rows = [
            (
                "family",
                "D(r)",
                f"parameter [{level} CI]",
                "c",
                "log-lik",
                "AIC",
                "ΔAIC",
                "fit: deviance (df) p",
            )
        ]
        for f in fit.families:
            param = ", ".join(
                f"{k}={v:.4g} [{f.ci[k][0]:.4g}, {f.ci[k][1]:.4g}]" for k, v in f.params.items()
            )
            gof = f"{f.deviance:.2f} ({f.df})" + ("" if math.isnan(f.p_value) else f" {f.p_value:.3g}")
            rows.append((
                f.family, f.formula, param or "-", f"{f.scale:.4g}", f"{f.log_likelihood:.2f}", f"{f.aic:.2f}",
                f"{f.aic - fit.best.aic:.2f}", gof,
            ))  # fmt: skip
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines += [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
        ]
        best = fit.best
        params = ", ".join(f"{k}={v:.4g}" for k, v in best.params.items())
        lines += [f"best (lowest AIC): {best.family}" + (f" ({params})" if params else ""), ""]
    if test is not None:
        shared = ", ".join(f"{k}={v:.4g}" for k, v in test.shared.items())
        lines.append(
            f"do the segments' users examine differently? {test.family} with one parameter per segment "
            f"against one for all ({shared}): G = {test.statistic:.2f}, df {test.df}, p = {test.p_value:.3g}"
        )
        for name, f in test.by_segment.items():
            params = ", ".join(
                f"{k}={v:.4g} [{f.ci[k][0]:.4g}, {f.ci[k][1]:.4g}]" for k, v in f.params.items()
            )
            lines.append(f"  {name}: {params or 'no parameter'}; {f.overrides()}")
        lines.append("")
    overall = fits[""] if "" in fits else next(iter(fits.values()))
    lines.append(f"metrics with the best discount: {overall.best.overrides()}")
    return "\n".join(lines) + "\n"


#: how this command spells the options library messages name (``n_bootstrap`` → ``--bootstrap``,
#: ``clicks.eta`` → ``--eta``, ``n_queries`` → ``--queries``)
SPELLING = Spelling.flags(
    ("method", "max_position", "features", "iterations", "confidence", "seed", "rounds", "rand_top", "eta",
     "epsilon", "top_k", "sessions", *FEATURE_PARSE_FLAGS),
    {"n_bootstrap": "--bootstrap", "n_queries": "--queries", "clicks.eta": "--eta", "clicks.epsilon": "--epsilon",
     "clicks.top_k": "--top-k", "clicks.sessions": "--sessions", "clicks.model": "the click model"},
)  # fmt: skip


def check_arguments(args: argparse.Namespace) -> None:
    """Before any work: outputs against inputs and their folders (:func:`ltr.io.outputs.check_outputs`),
    and options that would change nothing."""
    if args.command == "simulate":
        check_outputs({"OUT": args.output, "--features-out": args.features_out}, {})
        if args.rand_top == 1:
            raise ConfigError(
                "--rand-top 1 shuffles one document, which changes nothing; 0 (off) or 2 and more"
            )
        return
    if args.command == "evaluate":
        for flag, path in (("LOG", args.log), ("--propensities", args.propensities), ("--features", args.features),
                           ("--scores", args.scores)):  # fmt: skip
            if path is not None and not Path(path).is_file():
                raise ConfigError(
                    f"{flag} {path}: {'is a folder' if Path(path).is_dir() else 'no such file'}"
                )
        if args.tracking_uri is not None and args.model is None:
            raise ConfigError(
                "--tracking-uri is where --model finds runs:/ and models:/ sources; no --model was given"
            )
        unknown = [e for e in args.estimators.split(",") if e.strip() not in ESTIMATORS]
        if unknown:
            raise ConfigError(
                f"--estimators: unknown estimator {unknown[0]!r}; estimators: {', '.join(ESTIMATORS)}"
            )
        if args.k < 1:
            raise ConfigError(f"--k must be >= 1, got {args.k}")
        if not 0 < args.clip <= 1:
            raise ConfigError(f"--clip must be in (0, 1], got {args.clip:g}")
        if args.bootstrap != 0 and args.bootstrap < MIN_BOOTSTRAP:
            raise ConfigError(
                f"--bootstrap must be 0 (no CI) or >= {MIN_BOOTSTRAP} resamples, got {args.bootstrap}"
            )
        chosen = [e.strip() for e in args.estimators.split(",") if e.strip()]
        if args.clip != CLIP_DEFAULT and "clipped_ips" not in chosen:
            raise ConfigError("--clip applies to the clipped_ips estimator, which --estimators leaves out")
        if not 0 < args.confidence < 1:
            raise ConfigError(f"--confidence must be in (0, 1), got {args.confidence:g}")
        return
    if args.command == "discount":
        check_outputs({"--plot": args.plot}, {"INPUT": [args.input]})
        if not 0 < args.confidence < 1:
            raise ConfigError(f"--confidence must be in (0, 1), got {args.confidence:g}")
        if args.families is not None:
            names = [f.strip() for f in args.families.split(",") if f.strip()]
            unknown = [name for name in names if name not in FAMILIES] or ([] if names else [args.families])
            if unknown:
                raise ConfigError(
                    f"--families: unknown family {unknown[0]!r}; families: {', '.join(FAMILIES)}"
                )
        return
    check_outputs({"--output": args.output}, {"LOG": [args.log], "--features": [args.features]})
    if args.method != "regression-em":
        given = [f"--{flag}" for flag in ("features", "iterations") if getattr(args, flag) is not None]
        given += given_parse_flags(args, FEATURE_PARSE_FLAGS)
        if given:
            raise ConfigError(f"{given[0]} applies to --method regression-em, not --method {args.method}")
    check_estimate_options(
        method=args.method, n_bootstrap=args.bootstrap, confidence=args.confidence, max_position=args.max_position,
        features=args.features, iterations=ITERATIONS if args.iterations is None else args.iterations,
    )  # fmt: skip
    if args.features is not None and not Path(args.features).is_file():
        raise ConfigError(f"--features {args.features}: no such features file")


class EstimateProgress:
    """The progress of ``propensity``: a bar over the point estimate's EM iterations (up to
    ``max_iterations``), then one over the ``n_bootstrap`` replicates; each opens at its first hook
    call (:func:`ltr.clicks.propensity.estimate_propensities`' ``on_iteration`` / ``on_replicate``).
    No bar off a terminal or in CI (the helpers of :mod:`ltr.report.progress` decide).

    >>> with EstimateProgress("em", 1000, 100, enabled=False) as progress:
    ...     progress.iteration(0, {}); progress.replicate(0)
    """

    def __init__(
        self, method: str, max_iterations: int, n_bootstrap: int, *, enabled: bool | None = None
    ) -> None:
        self.method = method
        self.max_iterations = max_iterations
        self.n_bootstrap = n_bootstrap
        self.enabled = enabled
        self._bars = ExitStack()  # one bar at a time: rich draws one live display per console
        self._tick: Callable[[int, dict[str, float]], None] | None = None
        self._advance: Callable[[str], None] | None = None

    def __enter__(self) -> EstimateProgress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._bars.close()

    def iteration(self, i: int, values: dict[str, float]) -> None:
        """After EM iteration ``i`` of the point estimate."""
        if self._tick is None:
            description = f"{self.method}: point estimate, EM iterations"
            self._tick = self._bars.enter_context(
                iteration_progress(self.max_iterations, description, enabled=self.enabled)
            )
        self._tick(i, values)

    def replicate(self, b: int) -> None:
        """After bootstrap replicate ``b``."""
        if self._advance is None:
            self._bars.close()  # the iterations' bar ends before the replicates' starts
            description = f"bootstrap over queries: {self.n_bootstrap} replicates"
            self._advance = self._bars.enter_context(
                task_progress(self.n_bootstrap, description, enabled=self.enabled)
            )
        self._advance("")


def run(args: argparse.Namespace) -> str:
    with spelled_as(SPELLING):
        check_arguments(args)
        commands = {
            "simulate": _simulate,
            "propensity": _propensity,
            "discount": _discount,
            "evaluate": _evaluate,
        }
        return commands[args.command](args)


def _evaluate(args: argparse.Namespace) -> str:
    """``evaluate``: the new ranker's expected clicks@k / click-DCG@k by every estimator, with CIs."""
    import dataclasses

    from ltr.clicks.regression_em import qid_key  # deferred: with the features reader
    from ltr.data.svmlight import load_svmlight  # deferred: the data loader only when features are read
    from ltr.io.predictions import read_scores  # deferred: as above

    theta = read_propensities(args.propensities, where="--propensities")
    log = read_click_log(args.log)
    log = dataclasses.replace(log, pair_qid=np.array([qid_key(q) for q in log.pair_qid], dtype=object))
    options = {
        "integer_labels": False,
        "allow_negative_labels": True,
        **parse_options(args, FEATURE_PARSE_FLAGS),
    }
    data = load_svmlight(args.features, docid=True, **options)
    docid = np.asarray(data.docid, dtype=str)
    if data.n_docs and not all(d.strip() for d in docid):
        missing = int(np.flatnonzero(np.char.strip(docid) == "")[0])
        raise ConfigError(f"--features {args.features}: row {missing + 1} has no '# docid = DOC' comment")
    if args.scores is not None:
        scores, ranker_name = read_scores(args.scores, n_rows=data.n_docs, qid=data.qid), args.scores
    else:
        from ltr.core.resources import work_root  # deferred: only a --model is looked up
        from ltr.models.normalized import predict_raw  # deferred: as above
        from ltr.tracking.loading import load_model  # deferred: MLflow loads only for --model
        from ltr.tracking.store import resolve_tracking_uri  # deferred: as above

        loaded = load_model(args.model, tracking_uri=resolve_tracking_uri(args.tracking_uri, work_root()))
        scores, ranker_name = predict_raw(loaded.ranker, data, f"--model {args.model}"), loaded.name
    estimators = list(dict.fromkeys(e.strip() for e in args.estimators.split(",") if e.strip()))
    qid = np.array([str(int(q)) for q in data.qid.tolist()], dtype=object)  # as the log's qid_key spells them
    reward = None
    if "dr" in estimators:  # a logged document without features is named here, before the model is fitted
        rows = candidate_rows(log, qid, docid)
        reward = fit_reward_model(log, theta, data.X[rows], data.X, seed=args.seed)
    est = estimate_offpolicy(
        log, theta, qid=qid, doc=docid, scores=scores, k=args.k, metric=args.metric, estimators=estimators,
        clip=args.clip, reward=reward,
        n_bootstrap=args.bootstrap, confidence=args.confidence, seed=args.seed,
    )  # fmt: skip
    if args.json:
        return json.dumps({"ranker": ranker_name, **est.as_json()}) + "\n"
    return format_offpolicy(
        est, ranker=ranker_name, log=args.log, n_sessions=int(np.unique(log.session).size)
    )


def format_offpolicy(est: OffPolicyEstimate, *, ranker: str, log: str, n_sessions: int) -> str:
    """The estimates as a table, with what the CI is and which queries the log cannot speak for."""
    what = "expected clicks" if est.metric == "clicks" else "click-DCG"
    level = f"{100 * est.confidence:g}%"
    lines = [
        f"{what}@{est.k} of {ranker}, estimated from {log} ({est.queries.size} queries, {n_sessions} sessions); "
        f"{level} bootstrap CI over queries ({est.n_bootstrap} resamples)",
        f"{'estimator':<12}  {'value':>8}  CI",
    ]
    for name, value in est.mean.items():
        low, high = est.ci[name]
        bounds = "no CI" if math.isnan(low) else f"[{low:.4f}, {high:.4f}]"
        lines.append(f"{name:<12}  {value:>8.4f}  {bounds}")
    unshown = int((est.unshown > 0).sum())
    if unshown:
        blind = [name for name in est.mean if name != "dr"]
        effect = f"{', '.join(blind)} count their clicks as 0" if blind else ""
        model = "dr's reward model speaks for them" if "dr" in est.mean else ""
        lines.append(
            f"{unshown} of {est.queries.size} queries have documents in the new top {est.k} that the log never "
            f"showed ({100 * est.unshown.mean():.1f}% of the weight): "
            + "; ".join(p for p in (effect, model) if p)
        )
    else:
        lines.append(f"every document in the new top {est.k} was shown in the log")
    return "\n".join(lines) + "\n"


def _discount(args: argparse.Namespace) -> str:
    """``discount``: every family fitted (per segment, with the test of one curve for all), as text or JSON."""
    families = (
        None
        if args.families is None
        else list(dict.fromkeys(f.strip() for f in args.families.split(",") if f.strip()))
    )
    data = read_discount_input(args.input, segment=args.segment)
    fits = {
        name: fit_discounts(part, families=families, confidence=args.confidence)
        for name, part in data.items()
    }
    test = None
    if len(fits) > 1:
        pooled = next(iter(fits.values())).data
        for part in list(data.values())[1:]:
            pooled = pooled.pooled_with(part)
        overall = fit_discounts(pooled, families=families, confidence=args.confidence)
        shaped = [f.family for f in overall.families if f.params]  # best first; a fixed curve cannot differ
        if shaped:
            test = segment_test(data, shaped[0], confidence=args.confidence)
        fits = {"": overall, **fits}
    if args.plot:
        plot_discount_fit(fits[""] if "" in fits else next(iter(fits.values())), args.plot, args.confidence)
    if args.json:
        out = fits[""].as_json() if "" in fits else next(iter(fits.values())).as_json()
        if test is not None:
            out["segments"] = {name: fit.as_json() for name, fit in fits.items() if name}
            out["segment_test"] = test.as_json()
        return json.dumps(out) + "\n"
    return format_discount_fits(fits, test, args.confidence, source=args.input)


def _simulate(args: argparse.Namespace) -> str:
    """``simulate``: a PBM click log of the synthetic data, and its features (``--features-out``)."""
    data = generate(args.queries, seed=args.seed)
    table = simulate_log_table(data, **{name: getattr(args, name) for name in SIMULATE_OPTIONS})
    import pandas as pd  # deferred: pandas loads only when a log is written

    with replacing(args.output) as temporary:  # a failure leaves an old log whole
        pd.DataFrame(table).to_csv(temporary, index=False)
    done = f"wrote {len(table['click'])} impressions to {args.output}\n"
    if args.features_out:  # the log's doc is the row of `data`: the docid that joins them
        write_svmlight(data, args.features_out, comments=[f"docid = {i}" for i in range(data.n_docs)])
        done += f"wrote the features of {data.n_docs} documents to {args.features_out}\n"
    return done


def _propensity(args: argparse.Namespace) -> str:
    """``propensity``: the estimate of the log, as a table or JSON (``--output``: also to a file)."""
    iterations = ITERATIONS if args.iterations is None else args.iterations
    log = read_click_log(args.log)
    n_bootstrap = DEFAULT_BOOTSTRAP[args.method] if args.bootstrap is None else args.bootstrap
    max_iterations = iterations if args.method == "regression-em" else MAX_ITER
    with EstimateProgress(args.method, max_iterations, n_bootstrap) as progress:
        p = estimate_propensities(
            log,
            method=args.method,
            max_position=args.max_position,
            n_bootstrap=args.bootstrap,
            confidence=args.confidence,
            seed=args.seed,
            features=args.features,
            features_parse=parse_options(args, FEATURE_PARSE_FLAGS),
            iterations=iterations,
            on_iteration=progress.iteration,
            on_replicate=progress.replicate,
        )
    if args.output:
        write_propensities(p, args.output)
    return json.dumps(p.as_json()) + "\n" if args.json else format_table(p)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input, with the error on stderr)."""
    return print_result(run, build_parser().parse_args(argv))


if __name__ == "__main__":
    run_cli(main)  # a closed pipe (`| head`) and Ctrl-C end quietly / in one line (ltr.cli.running)
