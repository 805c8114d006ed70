"""Examination propensities (position bias) estimated from click logs, with bootstrap CIs.

A click log (:mod:`ltr.clicks.logs`: one row per shown document, its session, query, document,
1-based position and click) is the input. Under the position-based model
``P(click | q, d, r) = θ_r · γ_{q,d}`` (examination × relevance); θ is identified only up to a
factor, so estimates are normalised to ``θ_1 = 1``.

* ``randomization`` — result randomization (Joachims et al., WSDM 2017; Wang et al., SIGIR 2016):
  on a log whose presentation was randomized (RandTop-n: the top n shuffled uniformly per session;
  or a swap-k experiment's log restricted to positions 1 and k, where the documents at 1 and k are
  exchanged in half of the sessions), every position sees the same mixture of documents, so ``θ_r / θ_1 = CTR_r / CTR_1`` (clicks / impressions at each position).
  On an ordinary log this ratio is confounded by relevance: use ``em``.
* ``em`` — the EM of Wang, Golbandi, Bendersky, Metzler & Najork, *Position Bias Estimation for
  Unbiased Learning to Rank in Personal Search*, WSDM 2018, §3 with one relevance parameter
  γ_{q,d} per (query, document): the E-step gives, for a non-click at r,
  ``P(E=1, R=0 | c=0) = θ_r(1−γ)/(1−θ_rγ)`` and ``P(E=0, R=1 | c=0) = (1−θ_r)γ/(1−θ_rγ)``
  (a click means E = R = 1); the M-step sets θ_r and γ_{q,d} to the mean posterior of E over the
  impressions at r and of R over the impressions of (q, d). θ is identified only when documents
  move between positions (several rankers, personalised or re-ranked orders): every position must
  be linked to position 1 through documents shown at both, else a :class:`~ltr.core.errors.DataError`
  says which positions are not. With few impressions per pair the per-pair γ absorbs the clicks
  (one click: γ large; none: γ → 0) and θ is driven towards 1: use ``regression-em``.
* ``regression-em`` — the same paper's §4 *regression EM*: γ_{q,d} = σ(F(x_{q,d})) with F a
  LightGBM model of the documents' features, fitted to relevance labels sampled from the posterior
  each iteration (:mod:`ltr.clicks.regression_em`); needs ``features``, a LETOR file with a
  ``# docid = X`` comment per row, matched to the log's (qid, doc).

**Identification.** A log with one position only (after ``max_position``), without clicks, or
without non-clicks (every click rate 1: θ = 1 at every position whatever users examined) cannot
separate examination from relevance: a :class:`~ltr.core.errors.DataError` says which.

**Bootstrap over queries** (seeded): replicate b draws the log's queries with replacement (each
query with all its sessions) and re-estimates θ; the CI is the percentile interval of θ_r/θ_1. A
position gets no CI (NaN bounds and the reason in :attr:`~ltr.clicks.logs.Propensities.no_ci`) when
the bootstrap cannot measure its uncertainty: one query, one replicate, no replicate with impressions
there, or replicates that all agree (an interval of zero width would be false certainty). The
query is the unit because documents (and so relevance γ_{q,d}) are shared by all sessions of a query:
resampling sessions would treat the query sample as fixed and give too narrow intervals.

>>> from ltr.clicks.logs import impression_log
>>> log = impression_log(session=[1, 1, 2, 2], qid=["a", "a", "a", "a"], doc=["x", "y", "y", "x"],
...                      position=[1, 2, 1, 2], click=[1, 0, 1, 1])
>>> p = estimate_propensities(log, method="randomization", n_bootstrap=20, seed=0)
>>> p.as_json()["position"], p.as_json()["examination"]
([1, 2], [1.0, 0.5])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ltr.clicks.logs import ImpressionLog, Propensities
from ltr.clicks.regression_em import (
    ITERATIONS,
    TREES,
    Cells,
    RelevanceRegressor,
    pair_features,
    regression_em,
)
from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError, DataError

METHODS = ("randomization", "em", "regression-em")


#: bootstrap replicates when ``n_bootstrap`` is not given (each regression-EM replicate fits a GBDT)
DEFAULT_BOOTSTRAP = {"randomization": 200, "em": 200, "regression-em": 20}
#: most iterations of the plain EM (it stops earlier once θ changes by less than ``tol``)
MAX_ITER = 1000


def estimate_propensities(
    log: ImpressionLog,
    *,
    method: str = "em",
    max_position: int | None = None,
    n_bootstrap: int | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    tol: float = 1e-6,
    max_iter: int = MAX_ITER,
    features: str | Path | None = None,
    features_parse: Mapping[str, Any] | None = None,
    iterations: int = ITERATIONS,
    trees: int = TREES,
    regressor_params: Mapping[str, Any] | None = None,
    num_threads: int = 1,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    on_replicate: Callable[[int], None] | None = None,
) -> Propensities:
    """θ_r/θ_1 for every position r <= ``max_position`` (default: all) the log shows, and its CI.

    ``n_bootstrap`` defaults to :data:`DEFAULT_BOOTSTRAP` of the method. ``tol``/``max_iter``: the
    plain EM's stopping rule. ``features`` (required by ``regression-em``, refused by the others): a
    LETOR file with ``# docid = X`` rows (:func:`ltr.clicks.regression_em.pair_features`; ``features_parse``:
    its ``load_svmlight`` options, e.g. ``{"zero_based": True}``);
    ``iterations``, ``trees``, ``regressor_params`` (LightGBM settings over
    :data:`~ltr.clicks.regression_em.REGRESSOR_PARAMS`) and ``num_threads`` (LightGBM's, pinned)
    are regression EM's.

    Progress (``python -m ltr.clicks propensity`` draws it): the EM methods call ``on_iteration(i, {})``
    after iteration ``i`` of the point estimate's EM (at most ``max_iter``, or ``iterations`` for
    regression EM), then ``on_replicate(b)`` after bootstrap replicate ``b`` (0 … ``n_bootstrap`` − 1).
    The hooks only watch: the estimate is the same with or without them. ``randomization`` computes its
    replicates at once and calls neither.
    """
    n_bootstrap, max_position, iterations, trees, num_threads = check_estimate_options(
        method=method, n_bootstrap=n_bootstrap, confidence=confidence, max_position=max_position,
        features=features, iterations=iterations, trees=trees, num_threads=num_threads,
    )  # fmt: skip
    keep = log.position <= (max_position or int(log.position.max()))
    # the positions the log shows (a swap-k log restricted to positions 1 and k has just those two)
    shown = np.unique(log.position[keep])
    if shown[0] != 1:
        raise DataError(f"{log.source}: no impressions at position 1, the reference of the normalisation")
    depth = shown.shape[0]
    query, pair, click = log.query[keep], log.pair[keep], log.click[keep]
    _check_identifiable(log.source, shown, click, max_position)
    position = np.searchsorted(shown, log.position[keep])  # 0-based index into `shown`
    n_queries = int(query.max()) + 1
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries), size=n_bootstrap).astype(
        np.float64
    )

    if method == "randomization":
        cells = query * depth + position
        imps = np.bincount(cells, minlength=n_queries * depth).reshape(n_queries, depth)
        clicks = np.bincount(cells, weights=click, minlength=n_queries * depth).reshape(n_queries, depth)
        point = _relative_ctr(clicks.sum(0, keepdims=True), imps.sum(0, keepdims=True), log.source)[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            ctr = (weights @ clicks) / (weights @ imps)
            boot = ctr / ctr[:, :1]
    else:
        cells, cell_index = np.unique(pair.astype(np.int64) * depth + position, return_inverse=True)
        n = np.bincount(cell_index).astype(np.float64)
        c = np.bincount(cell_index, weights=click)
        log_cells = Cells(n=n, c=c, pair=cells // depth, pos=cells % depth, depth=depth)
        cell_query = np.zeros(cells.shape[0], dtype=np.int64)
        cell_query[cell_index] = query
        boot = np.empty((n_bootstrap, depth))
        if method == "em":
            _check_linked(pair, position, shown, log.source)
            theta, gamma = _em(log_cells, np.ones_like(n), tol, max_iter, None, on_iteration)
            for b in range(n_bootstrap):
                t, _ = _em(log_cells, weights[b][cell_query], tol, max_iter, (theta, gamma))
                boot[b] = t / t[0] if t[0] > 0 else np.nan
                if on_replicate is not None:
                    on_replicate(b)
        else:
            regressor = RelevanceRegressor(
                _log_pair_features(log, features, features_parse), regressor_params, seed, num_threads
            )
            settings = {"iterations": iterations, "trees": trees}
            # one sampling stream per fit: the point estimate is the same whatever n_bootstrap is;
            # replicates start from the point estimate (θ and F), as the plain EM's do
            theta, score = regression_em(
                regressor, log_cells, np.ones_like(n),
                np.random.default_rng([seed, 0]), **settings, on_iteration=on_iteration,
            )  # fmt: skip
            for b in range(n_bootstrap):
                boot[b] = regression_em(
                    regressor, log_cells, weights[b][cell_query],
                    np.random.default_rng([seed, b + 1]), **settings, start=(theta, score),
                )[0]  # fmt: skip
                if on_replicate is not None:
                    on_replicate(b)
        point = theta / theta[0]
    low, high, no_ci = _percentile_ci(boot, point, confidence, n_queries=np.unique(query).shape[0])
    return Propensities(
        position=shown,
        examination=point,
        ci_low=low,
        ci_high=high,
        method=method,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
        no_ci=no_ci,
    )


def _check_identifiable(source: str, shown: np.ndarray, click: np.ndarray, max_position: int | None) -> None:
    """Refuse a log that cannot tell examination from relevance: one position only, no clicks, or no
    non-clicks (every position's click rate 1: θ = 1 everywhere whatever the users examined)."""
    within = f" (max_position={max_position})" if max_position is not None else ""
    if shown.shape[0] < 2:
        raise DataError(
            f"{source}: the log shows documents at position 1 only{within}; examination relative to position 1 "
            "needs impressions at two or more positions"
        )
    if not np.any(click > 0):
        raise DataError(
            f"{source}: no clicks{within}; examination cannot be estimated from a log without clicks"
        )
    if np.all(click > 0):
        raise DataError(
            f"{source}: every impression{within} is a click; without non-clicks examination cannot be told "
            "apart from relevance (every position would get examination 1)"
        )


def _percentile_ci(
    boot: np.ndarray, point: np.ndarray, confidence: float, *, n_queries: int
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The percentile CI per position from the replicates ``boot`` (NaN where a replicate lacked the
    position), and per position the reason there is none ("" where there is one): one query or one
    replicate (no spread to measure), no replicate with impressions there, or replicates that all agree
    (the queries do not vary there, so the bootstrap cannot measure the uncertainty). Position 1 is 1 by
    definition: its interval is [1, 1]."""
    depth = point.shape[0]
    reasons = [""] * depth
    if n_queries < 2:
        reasons[1:] = ["the log has 1 query; a bootstrap over queries needs 2 or more"] * (depth - 1)
    elif boot.shape[0] < 2:
        reasons[1:] = ["1 bootstrap replicate; a percentile interval needs 2 or more"] * (depth - 1)
    else:
        finite = np.isfinite(boot)
        for r in range(1, depth):
            values = boot[finite[:, r], r]
            if values.size == 0:
                reasons[r] = "no bootstrap replicate had impressions at this position"
            elif values.max() == values.min():
                reasons[r] = f"every bootstrap replicate gives {values[0]:g}: the queries do not vary here"
    alpha = (1.0 - confidence) / 2.0
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: its reason says why
        low, high = np.nanquantile(boot, [alpha, 1.0 - alpha], axis=0)
    low, high = np.minimum(low, point), np.maximum(high, point)
    missing = np.array([bool(reason) for reason in reasons])
    low[missing], high[missing] = np.nan, np.nan
    low[0] = high[0] = 1.0
    return low, high, tuple(reasons)


def check_estimate_options(
    *,
    method: str,
    n_bootstrap: int | None,
    confidence: float,
    max_position: int | None,
    features: str | Path | None,
    iterations: int = ITERATIONS,
    trees: int = TREES,
    num_threads: int = 1,
) -> tuple[int, int | None, int, int, int]:
    """The options of :func:`estimate_propensities` checked (``ConfigError`` naming the argument), so a
    command checks them before it reads the log; returns ``n_bootstrap`` (its default filled),
    ``max_position``, ``iterations``, ``trees``, ``num_threads``."""
    check_value(method, str, Constraint(choices=METHODS), "method")
    n_bootstrap = check_value(
        DEFAULT_BOOTSTRAP[method] if n_bootstrap is None else n_bootstrap,
        int,
        Constraint(low=1),
        "n_bootstrap",
    )
    check_value(confidence, float, Constraint(low=0.0, high=1.0, open_low=True, open_high=True), "confidence")
    max_position = check_value(max_position, int | None, Constraint(low=1), "max_position")
    if features is None and method == "regression-em":
        raise ConfigError(
            "features: method regression-em needs the documents' features (an SVMlight/LETOR file whose rows "
            "end with '# docid = X', X the click log's doc)"
        )
    if features is not None and method != "regression-em":
        raise ConfigError(f"features: only method regression-em reads features, not method {method}")
    if method == "regression-em":
        iterations = check_value(iterations, int, Constraint(low=1), "iterations")
        trees = check_value(trees, int, Constraint(low=1), "trees")
        num_threads = check_value(num_threads, int, Constraint(low=1), "num_threads")
    return n_bootstrap, max_position, iterations, trees, num_threads


def _log_pair_features(log: ImpressionLog, path: str | Path, parse: Mapping[str, Any] | None) -> Any:
    if log.pair_qid is None or log.pair_doc is None or log.pair_row is None:
        raise ConfigError(f"{log.source}: build the log with impression_log() to match it to features")
    return pair_features(
        path,
        pair_qid=log.pair_qid,
        pair_doc=log.pair_doc,
        pair_row=log.pair_row,
        log_source=log.source,
        row_label=log.row_label,
        parse=parse,
    )


def _relative_ctr(clicks: np.ndarray, imps: np.ndarray, source: str) -> np.ndarray:
    ctr = clicks / imps
    if np.any(ctr[:, 0] <= 0):
        raise DataError(f"{source}: no clicks at position 1, the relative CTR is undefined")
    return ctr / ctr[:, :1]


def _check_linked(pair: np.ndarray, position: np.ndarray, shown: np.ndarray, source: str) -> None:
    """Every position must reach position 1 through documents shown at two positions (union-find)."""
    depth = shown.shape[0]
    parent = list(range(depth))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    order = np.lexsort((position, pair))
    p, r = pair[order], position[order]
    same = np.flatnonzero((p[1:] == p[:-1]) & (r[1:] != r[:-1]))
    for i in same:
        parent[root(int(r[i]))] = root(int(r[i + 1]))
    unlinked = [int(shown[k]) for k in range(depth) if root(k) != root(0)]
    if unlinked:
        raise DataError(
            f"{source}: method em cannot separate position bias from relevance at position(s) {unlinked}: "
            f"no document shown there was also shown at a position linked to position 1 (the EM needs "
            f"documents that move between positions; for a randomized log use method randomization)"
        )


def _em(
    cells: Cells,
    w: np.ndarray,
    tol: float,
    max_iter: int,
    start: tuple[np.ndarray, np.ndarray] | None,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Wang et al.'s EM on aggregated cells (n impressions, c clicks of one pair at one position);
    ``on_iteration(i, {})`` after each iteration."""
    n, c, cell_pair, cell_pos, depth = cells.n, cells.c, cells.pair, cells.pos, cells.depth
    n_pairs = int(cell_pair.max()) + 1
    wn, wc = w * n, w * c
    pos_n = np.bincount(cell_pos, weights=wn, minlength=depth)
    pair_n = np.bincount(cell_pair, weights=wn, minlength=n_pairs)
    if start is None:
        # θ_1 = 1 from the start stays 1 (its E-step posterior of E is 1): this fixes θ's free scale,
        # which EM would otherwise drift along for thousands of iterations
        theta = np.r_[1.0, np.full(depth - 1, 0.5)]
        gamma = np.full(n_pairs, 0.5)
    else:
        theta, gamma = start[0].copy(), start[1].copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(max_iter):
            t, g = theta[cell_pos], gamma[cell_pair]
            miss = (wn - wc) / (1.0 - t * g)
            new_theta = np.bincount(cell_pos, weights=wc + miss * t * (1.0 - g), minlength=depth) / pos_n
            new_gamma = np.bincount(cell_pair, weights=wc + miss * (1.0 - t) * g, minlength=n_pairs) / pair_n
            new_theta = np.nan_to_num(new_theta, nan=theta[0])
            new_gamma = np.nan_to_num(new_gamma, nan=0.5)
            change = np.max(np.abs(new_theta - theta))
            theta, gamma = new_theta, new_gamma
            if on_iteration is not None:
                on_iteration(i, {})
            if change < tol:
                break
    return theta, gamma
