"""Off-policy evaluation: a new ranker's clicks, estimated from the production ranker's click log.

Under the position-based model (PBM) a document d shown at position k is clicked with probability
θ_k·γ(d): examination θ_k (``ltr.clicks propensity``, or known) times its attractiveness γ(d). A new
ranker puts d at rank r(d) among the query's candidate documents. Two values of the new ranker, per
query, each a weighted sum over its top k:

* **expected clicks@k**: V = Σ_{r(d) ≤ k} θ_{r(d)}·γ(d), the clicks the new ranker would get from the
  same users (PBM), with λ(r) = θ_r;
* **click-DCG@k**: V = Σ_{r(d) ≤ k} γ(d) / log2(r(d) + 1), DCG with attractiveness as the gain, λ(r) = 1/log2(r+1).

Both are V = Σ_d λ(r(d))·γ(d). The estimators, per query q with n_q sessions in the log (impression i: a
document d_i shown at position k_i, clicked c_i ∈ {0, 1}):

* ``ips`` (Joachims, Swaminathan & Schnabel, WSDM 2017): V̂ = (1/n_q) Σ_i c_i·λ(r(d_i)) / θ_{k_i}.
  Unbiased when every document the new ranker puts in its top k was shown in every session;
* ``clipped_ips``: the same with θ_{k_i} replaced by max(θ_{k_i}, τ) (``clip``): less variance, biased down;
* ``snips`` (self-normalised, a ratio estimator): γ̂(d) = Σ_{i: d_i = d} c_i / Σ_{i: d_i = d} θ_{k_i}, then
  V̂ = Σ_{d shown} λ(r(d))·γ̂(d): consistent, biased in small samples, and it does not penalise a document
  for the sessions that did not show it;
* ``dr`` (doubly robust): a reward model γ̃(d) (:func:`fit_reward_model`: LightGBM on the log's features, the
  IPS targets c/θ), then V̂ = Σ_{d: λ > 0} λ(r(d))·[γ̃(d) + (1/n_q) Σ_{i: d_i = d} (c_i/θ_{k_i} − γ̃(d))]:
  unbiased where IPS is, and the reward model's estimate for documents the log never showed.

Each estimator gives one value per query; the reported value is their mean over queries with a bootstrap
CI over queries (:func:`ltr.stats.bootstrap_ci`, percentile). ``unshown`` is, per query, the share of
the new ranker's λ-weight on documents the log never showed for that query: where it is > 0, ``ips``,
``clipped_ips`` and ``snips`` cannot see those documents' clicks (they count 0) and only ``dr``'s reward
model speaks for them. Under cascade users (a click ends the session) the PBM estimators are biased: the
examination of a position depends on the clicks above it. docs/online.md has the measured bias and CI
coverage of each estimator against simulated truth.

>>> from ltr.clicks.logs import impression_log
>>> log = impression_log(session=[1, 1, 2, 2], qid=["q"] * 4, doc=["a", "b", "b", "a"],
...                      position=[1, 2, 1, 2], click=[1, 0, 1, 1])
>>> theta = np.array([1.0, 0.5])
>>> est = estimate_offpolicy(log, theta, qid=["q", "q"], doc=["a", "b"], scores=[2.0, 1.0], k=2,
...                          estimators=("ips",), n_bootstrap=0)
>>> est.values["ips"].tolist()  # clicks@2 of the ranking a, b: (1·1/1 + (1·0.5/1 + 1·1/0.5)) / 2 sessions
[1.75]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ltr.clicks.logs import ImpressionLog
from ltr.core.errors import ConfigError, DataError

ESTIMATORS = ("ips", "clipped_ips", "snips", "dr")
#: the fewest logged impressions the dr estimator's reward model is fitted on
REWARD_MIN_IMPRESSIONS = 20
METRICS = ("clicks", "dcg")


def rank_weights(metric: str, k: int, theta: np.ndarray) -> np.ndarray:
    """λ(1..k): θ_r for expected clicks@k, 1/log2(r + 1) for click-DCG@k.

    >>> rank_weights("dcg", 3, np.ones(3)).round(4).tolist()
    [1.0, 0.6309, 0.5]
    """
    if metric not in METRICS:
        raise ConfigError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if not (isinstance(k, int) and k >= 1):
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    if metric == "clicks":
        if k > theta.size:
            raise ConfigError(
                f"k={k}: expected clicks@{k} needs the examination of positions 1..{k}; the propensities "
                f"cover 1..{theta.size}"
            )
        return theta[:k].astype(np.float64)
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def new_ranks(qid: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """1-based rank of every candidate within its query under the new ranker (higher score first; ties
    in input order).

    >>> new_ranks(np.array(["a", "a", "b", "a"]), np.array([1.0, 3.0, 0.0, 3.0])).tolist()
    [3, 1, 1, 2]
    """
    order = np.lexsort((np.arange(qid.size), -scores, qid))
    ranks = np.empty(qid.size, dtype=np.int64)
    sorted_q = qid[order]
    starts = np.r_[0, np.flatnonzero(sorted_q[1:] != sorted_q[:-1]) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, qid.size]))
    ranks[order] = np.arange(qid.size) - first + 1
    return ranks


@dataclass(frozen=True)
class OffPolicyEstimate:
    """Per estimator: the per-query values (log queries in ``queries`` order), their mean and CI."""

    metric: str
    k: int
    queries: np.ndarray
    values: dict[str, np.ndarray]
    mean: dict[str, float]
    ci: dict[str, tuple[float, float]]
    unshown: np.ndarray  # per query: the share of the new ranker's λ-weight on documents the log never showed
    confidence: float
    n_bootstrap: int

    def as_json(self) -> dict[str, Any]:
        return {
            "metric": f"{'expected clicks' if self.metric == 'clicks' else 'click-DCG'}@{self.k}",
            "n_queries": int(self.queries.size),
            "confidence": self.confidence,
            "n_bootstrap": self.n_bootstrap,
            "estimators": {
                name: {
                    "mean": self.mean[name],
                    "ci_low": _finite(self.ci[name][0]),
                    "ci_high": _finite(self.ci[name][1]),
                }
                for name in self.values
            },
            "unshown_share": float(self.unshown.mean()),
            "queries_with_unshown": int((self.unshown > 0).sum()),
        }


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def estimate_offpolicy(
    log: ImpressionLog,
    theta: ArrayLike,
    *,
    qid: Sequence[Any] | np.ndarray,
    doc: Sequence[Any] | np.ndarray,
    scores: ArrayLike,
    k: int = 10,
    metric: str = "clicks",
    estimators: Sequence[str] = ESTIMATORS,
    clip: float = 0.1,
    reward: ArrayLike | None = None,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> OffPolicyEstimate:
    """The new ranker's value estimated from ``log`` (module docstring).

    ``theta``: examination of positions 1, 2, … (only ratios matter); ``qid``/``doc``/``scores``: the new
    ranker's candidates (every document it may rank for a query, shown in the log or not) and their scores;
    ``reward``: the reward model's γ̃ per candidate (``dr`` needs it, :func:`fit_reward_model`).
    ``n_bootstrap=0``: no CI.
    """
    from ltr.stats.bootstrap import bootstrap_ci  # deferred: scipy.stats loads in ~0.5 s

    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0 or not np.all(np.isfinite(theta) & (theta > 0)):
        raise ConfigError("propensities: examination per position must be finite numbers > 0")
    unknown = [e for e in estimators if e not in ESTIMATORS]
    if unknown or not estimators:
        raise ConfigError(
            f"estimators: {unknown[0] if unknown else 'none'!r}; choose from {', '.join(ESTIMATORS)}"
        )
    if not (isinstance(clip, int | float) and 0 < clip <= 1):
        raise ConfigError(f"clip must be in (0, 1], got {clip!r}")
    lam = rank_weights(metric, k, theta)
    cand_q = np.asarray(qid, dtype=object).astype(str)
    cand_d = np.asarray(doc, dtype=object).astype(str)
    s = np.asarray(scores, dtype=np.float64)
    if not (cand_q.shape == cand_d.shape == s.shape) or not np.all(np.isfinite(s)):
        raise DataError(f"new ranker: {cand_q.size} candidates need one finite score each, got {s.size}")
    if "dr" in estimators:
        if reward is None:
            raise ConfigError("the dr estimator needs a reward model's prediction per candidate (reward=)")
        reward = np.asarray(reward, dtype=np.float64)
        if reward.shape != s.shape:
            raise DataError(f"reward: {reward.size} predictions for {s.size} candidates")
    rank = new_ranks(cand_q, s)
    weight = np.where(rank <= k, lam[np.minimum(rank, k) - 1], 0.0)  # λ(r(d)) per candidate

    pair_cand = candidate_rows(log, cand_q, cand_d)
    pair_qid = np.asarray(log.pair_qid, dtype=object).astype(str)
    if int(log.position.max()) > theta.size:
        i = int(np.argmax(log.position > theta.size))
        raise DataError(
            f"{log.source}: {log.row_label} {i + 1}: position {int(log.position[i])}, but the propensities "
            f"cover positions 1..{theta.size}"
        )
    cand = pair_cand[log.pair]
    th = theta[log.position - 1]
    lam_i = weight[cand]
    c = log.click
    if log.session is None:
        raise DataError(
            f"{log.source}: off-policy estimates need the log's sessions (ltr.clicks.logs.impression_log)"
        )
    first = np.unique(log.session, return_index=True)[1]  # a session shows one query
    n_q = np.bincount(log.query[first], minlength=log.n_queries).astype(np.float64)
    Q = log.n_queries
    values: dict[str, np.ndarray] = {}
    if "ips" in estimators:
        values["ips"] = np.bincount(log.query, weights=c * lam_i / th, minlength=Q) / n_q
    if "clipped_ips" in estimators:
        values["clipped_ips"] = (
            np.bincount(log.query, weights=c * lam_i / np.maximum(th, clip), minlength=Q) / n_q
        )
    shown_pairs = np.unique(log.pair)
    pair_query = np.empty(pair_qid.size, dtype=np.int64)
    pair_query[log.pair] = log.query
    if "snips" in estimators:
        clicks = np.bincount(log.pair, weights=c, minlength=pair_qid.size)
        exam = np.bincount(log.pair, weights=th, minlength=pair_qid.size)
        gamma = clicks[shown_pairs] / exam[shown_pairs]
        values["snips"] = np.bincount(
            pair_query[shown_pairs], weights=weight[pair_cand[shown_pairs]] * gamma, minlength=Q
        )
    # the log's query of every candidate (-1: a query the log does not have)
    query_names = np.empty(Q, dtype=object)
    query_names[log.query] = pair_qid[log.pair]
    code = {name: i for i, name in enumerate(query_names.tolist())}
    cand_query = np.array([code.get(q, -1) for q in cand_q.tolist()], dtype=np.int64)
    in_log = cand_query >= 0
    if "dr" in estimators:
        correction = np.bincount(log.query, weights=lam_i * (c / th - reward[cand]), minlength=Q) / n_q
        model = np.bincount(cand_query[in_log], weights=(weight * reward)[in_log], minlength=Q)
        values["dr"] = model + correction
    shown_weight = np.bincount(pair_query[shown_pairs], weights=weight[pair_cand[shown_pairs]], minlength=Q)
    total_weight = np.bincount(cand_query[in_log], weights=weight[in_log], minlength=Q)
    with np.errstate(invalid="ignore", divide="ignore"):
        unshown = np.where(total_weight > 0, 1.0 - shown_weight / total_weight, 0.0)
    mean, ci = {}, {}
    for name, v in values.items():
        mean[name] = float(v.mean())
        if n_bootstrap and Q >= 2:
            b = bootstrap_ci(v, method="percentile", B=n_bootstrap, confidence=confidence, seed=seed)
            ci[name] = (float(b.low), float(b.high))
        else:
            ci[name] = (math.nan, math.nan)
    return OffPolicyEstimate(
        metric, k, query_names, values, mean, ci, np.clip(unshown, 0.0, 1.0), confidence, n_bootstrap
    )


def candidate_rows(
    log: ImpressionLog, qid: Sequence[Any] | np.ndarray, doc: Sequence[Any] | np.ndarray
) -> np.ndarray:
    """The candidate row (index into ``qid``/``doc``) of every (qid, doc) pair of ``log``; a logged pair that is
    no candidate is a :class:`DataError` naming the log row.

    >>> from ltr.clicks.logs import impression_log
    >>> log = impression_log(session=[1, 1], qid=["q", "q"], doc=["b", "a"], position=[1, 2], click=[0, 1])
    >>> candidate_rows(log, ["q", "q"], ["a", "b"]).tolist()  # pairs in the log's order of (qid, doc)
    [0, 1]
    """
    cand_q = np.asarray(qid, dtype=object).astype(str)
    cand_d = np.asarray(doc, dtype=object).astype(str)
    index = {(q, d): i for i, (q, d) in enumerate(zip(cand_q.tolist(), cand_d.tolist(), strict=True))}
    pair_qid = np.asarray(log.pair_qid, dtype=object).astype(str)
    pair_doc = np.asarray(log.pair_doc, dtype=object).astype(str)
    rows = np.empty(pair_qid.size, dtype=np.int64)
    for p, key in enumerate(zip(pair_qid.tolist(), pair_doc.tolist(), strict=True)):
        found = index.get(key)
        if found is None:
            row = int(log.pair_row[p]) + 1 if log.pair_row is not None else p + 1
            raise DataError(
                f"{log.source}: {log.row_label} {row}: qid {key[0]!r} doc {key[1]!r} is not among the new "
                "ranker's candidates (the features/scores of every logged document are needed)"
            )
        rows[p] = found
    return rows


def fit_reward_model(
    log: ImpressionLog,
    theta: ArrayLike,
    pair_x: Any,
    candidate_x: Any,
    *,
    seed: int = 0,
    num_threads: int = 1,
) -> np.ndarray:
    """γ̃ for every candidate: LightGBM regression (50 trees, 15 leaves) of the IPS target c/θ_k of every
    impression on its document's features ``pair_x[log.pair]``, predicted on ``candidate_x``, clipped to [0, 1]."""
    import lightgbm as lgb  # deferred: LightGBM loads only for the dr estimator

    if log.click.size < REWARD_MIN_IMPRESSIONS:
        raise DataError(
            f"{log.source}: {log.click.size} impression(s); the dr estimator's reward model needs at least "
            f"{REWARD_MIN_IMPRESSIONS} (leave dr out of the estimators)"
        )
    theta = np.asarray(theta, dtype=np.float64)
    target = log.click / theta[log.position - 1]
    x = pair_x[log.pair]
    model = lgb.LGBMRegressor(
        n_estimators=50, num_leaves=15, learning_rate=0.1, min_child_samples=20, random_state=seed,
        n_jobs=num_threads, verbose=-1,
    )  # fmt: skip
    model.fit(x, target)
    return np.clip(model.predict(candidate_x), 0.0, 1.0)


def true_value(
    attractiveness: ArrayLike,
    rank: ArrayLike,
    qid: ArrayLike,
    theta: ArrayLike,
    *,
    k: int,
    metric: str,
    model: str = "pbm",
) -> dict[Any, float]:
    """The new ranker's true value per query when the users' γ and examination are known (simulation):
    PBM V = Σ λ(r)·γ; cascade users' expected clicks@k = 1 − Π_{r ≤ k} (1 − γ_r) (one click at most); click-DCG
    does not depend on the user model.

    >>> true_value([0.5, 0.5], [1, 2], ["q", "q"], [1.0, 0.5], k=2, metric="clicks", model="cascade")
    {'q': 0.75}
    """  # fmt: skip
    gamma = np.asarray(attractiveness, dtype=np.float64)
    r = np.asarray(rank, dtype=np.int64)
    q = np.asarray(qid, dtype=object)
    lam = rank_weights(metric, k, np.asarray(theta, dtype=np.float64))
    out: dict[Any, float] = {}
    for name in dict.fromkeys(q.tolist()):
        rows = (q == name) & (r <= k)
        g, rr = gamma[rows], r[rows]
        if model == "cascade" and metric == "clicks":
            out[name] = float(1.0 - np.prod(1.0 - g))
        else:
            out[name] = float(np.sum(lam[rr - 1] * g))
    return out
