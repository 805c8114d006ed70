"""Regression EM: position bias from sparse click logs, with relevance shared through document features.

Wang, Golbandi, Bendersky, Metzler & Najork, *Position Bias Estimation for Unbiased Learning to Rank
in Personal Search*, WSDM 2018, §4 (Algorithm 1, "regression EM"). The position-based model
``P(C=1 | q, d, k) = θ_k · γ_{q,d}`` as in the plain EM (:mod:`ltr.clicks.propensity`), but the
relevance is a function of the document's features, ``γ_{q,d} = σ(F(x_{q,d}))`` with ``F`` a
gradient-boosted tree model, instead of one free parameter per (query, document). On a log where
each pair has only a few impressions, the per-pair γ of the plain EM is mostly noise (one click
makes it large, no click makes it 0) and that noise leaks into θ; a regressor pools the evidence of
all documents with similar features. Each iteration:

1. **E-step** under the current θ and γ, per impression ``(c, q, d, k)``: a click means
   ``E = R = 1``; for a non-click ``P(E=1, R=0 | C=0) = θ_k(1−γ)/(1−θ_kγ)`` and
   ``P(E=0, R=1 | C=0) = (1−θ_k)γ/(1−θ_kγ)``;
2. **relevance labels are sampled**: ``r ~ Bernoulli(P(R=1 | c, q, d, k))``, i.e. ``r = 1`` for a
   click and ``r ~ Bernoulli(P(E=0, R=1 | C=0))`` for a non-click, one draw per impression;
3. **F = GBDT(S)**: ``trees`` boosting rounds of log loss on the sampled set
   ``S = {(x_{q,d}, r)}``, from the labels' average (LightGBM, :data:`REGRESSOR_PARAMS`);
4. **M-step for θ** (closed form): ``θ_k`` = mean over the impressions at ``k`` of
   ``c + (1−c)·P(E=1, R=0 | C=0)``, repeated for the new γ to its fixed point (the maximum of the
   likelihood in θ given γ: an ECM step; a single repetition is the paper's update).

F is **refitted every iteration with a fixed number of trees**. Reading the paper's
``F = GBDT(F, S)`` as adding trees to F at every iteration makes F grow until it memorises the
pairs, and θ then drifts to the plain EM's answer as iterations go on (measured in
docs/position_bias.md); a fixed-size F has a fixed point. θ starts at the click-through-rate ratio
``CTR_k/CTR_1`` (or ``start``: the bootstrap replicates start at the point estimate); ``θ_1 = 1``
stays 1 (its posterior of E is 1), which fixes θ's free scale. Sampling makes the iteration
stochastic: it runs ``iterations`` iterations and reports the final θ (seeded, so a seed gives
identical output).

**Regressor: LightGBM** (the project's engine), not scikit-learn's ``GradientBoostingClassifier``:
the feature matrix is binned once and reused by every iteration and bootstrap replicate (only the
gradients change), sparse LETOR features are taken as they are, and with ``num_threads`` pinned
and ``deterministic`` it is reproducible. The impressions of a pair share its features, so the log loss of ``S`` is computed
on one row per pair: with ``n_p`` impressions and ``s_p`` sampled ``r = 1`` the gradient is
``n_p·σ(F) − s_p`` and the hessian ``n_p·σ(F)(1−σ(F))`` — exactly LightGBM's ``binary`` objective
on the per-impression rows (tested against it), at a fraction of the rows.

**Features** come from an SVMlight/LETOR file whose rows carry the LETOR comment ``# docid = X``:
the log's ``(qid, doc)`` is matched to the file's ``(qid, docid)``; ``python -m ltr.clicks simulate
--features-out`` writes such a file for its log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.core.errors import DataError
from ltr.io.textlines import data_line_number

#: LightGBM settings of the relevance regressor F (``regressor_params`` overrides any of them).
REGRESSOR_PARAMS: dict[str, Any] = {
    "learning_rate": 0.1,
    "num_leaves": 7,
    "min_data_in_leaf": 100,  # pairs: a smooth F pools many documents (a leaf per pair would be the plain EM)
    "min_sum_hessian_in_leaf": 1e-3,
    "lambda_l2": 1.0,
    "max_bin": 63,
    "deterministic": True,
    "force_row_wise": True,
    "feature_pre_filter": False,  # a small log: trees without splits (γ constant) instead of an error
    "verbosity": -1,
}
ITERATIONS = 40
TREES = 30
THETA_STEPS = 500  # M-step repetitions for θ per fit of F (cheap: no trees)


@dataclass(frozen=True)
class Cells:
    """A click log aggregated by (pair, position): ``n`` impressions and ``c`` clicks per cell."""

    n: np.ndarray
    c: np.ndarray
    pair: np.ndarray  # 0-based pair code
    pos: np.ndarray  # 0-based index of the position among the positions shown
    depth: int  # number of positions shown


def pair_features(
    path: str | Path,
    *,
    pair_qid: np.ndarray,
    pair_doc: np.ndarray,
    pair_row: np.ndarray,
    log_source: str,
    row_label: str = "row",
    parse: Mapping[str, Any] | None = None,
) -> np.ndarray | sp.csr_matrix:
    """The feature row of every (qid, doc) pair of a click log, from a LETOR file's ``# docid = X`` rows.

    ``pair_qid``/``pair_doc``: the pair's qid and doc as the log spells them; ``pair_row``: a
    0-based log row showing the pair (named in the error when the file has no such document).
    ``parse``: more ``load_svmlight`` options for the file (``zero_based``, ``allow_unsorted``, …).
    A file qid ``7`` matches a log qid ``7`` or ``007`` (compared as integers when the log's is one).
    """
    from ltr.data.svmlight import load_svmlight  # deferred: the data loader only when features are read

    path = Path(path)
    if not path.is_file():
        raise DataError(
            f"features: no such features file {str(path)!r} (an SVMlight/LETOR file whose rows end with "
            f"'# docid = X', X the click log's doc)"
        )
    options = {"integer_labels": False, "allow_negative_labels": True, **dict(parse or {})}
    data = load_svmlight(path, docid=True, **options)
    docid = np.asarray(data.docid, dtype=str)
    index: dict[tuple[str, str], int] = {}
    for row, (q, d) in enumerate(zip(data.qid.tolist(), docid.tolist(), strict=True)):
        if not d.strip():
            raise DataError(
                f"{path}:{data_line_number(path, row)}: no '# docid = X' comment; regression EM matches the "
                f"click log's (qid, doc) to the file's (qid, docid)"
            )
        key = (str(int(q)), d)
        if key in index:
            raise DataError(
                f"{path}:{data_line_number(path, row)}: qid {q} docid {d!r} already on line "
                f"{data_line_number(path, index[key])}; each (qid, docid) needs one feature row"
            )
        index[key] = row
    rows = np.empty(len(pair_qid), dtype=np.int64)
    for p, (q, d) in enumerate(zip(pair_qid, pair_doc, strict=True)):
        found = index.get((qid_key(q), str(d)))
        if found is None:
            raise DataError(
                f"{log_source}: {row_label} {int(pair_row[p]) + 1}: qid {q!r} doc {d!r} has no feature row "
                f"in {path} (no line with qid:{q} and '# docid = {d}')"
            )
        rows[p] = found
    return data.X[rows]


def qid_key(qid: Any) -> str:
    """A log's qid as a LETOR file's integer qid is written (``007`` → ``7``); any other text as it is.

    >>> qid_key("007"), qid_key(" q1 ")
    ('7', 'q1')
    """
    text = str(qid).strip()
    try:
        return str(int(text))
    except ValueError:
        return text


class RelevanceRegressor:
    """The pair features binned once (a LightGBM ``Dataset``), shared by every EM run on them."""

    def __init__(
        self,
        features: np.ndarray | sp.spmatrix,
        params: Mapping[str, Any] | None,
        seed: int,
        num_threads: int,
    ) -> None:
        import lightgbm as lgb  # deferred: LightGBM loads only for regression EM

        self.params = {
            **REGRESSOR_PARAMS,
            **dict(params or {}),
            "objective": "none",  # the log-loss gradients come from fit_relevance (one row per pair)
            "seed": seed,
            "num_threads": num_threads,
        }
        spread = features.max(axis=0) - features.min(axis=0)
        spread = spread.toarray() if sp.issparse(spread) else np.asarray(spread)
        if not np.any(spread > 0):
            raise DataError(
                f"features: every feature has one value over the {features.shape[0]} documents of the log; "
                f"regression EM needs features that tell documents apart"
            )
        self.features = features
        self.n_pairs = features.shape[0]
        self.dataset = lgb.Dataset(
            features, label=np.zeros(self.n_pairs), params=self.params, free_raw_data=False
        ).construct()

    def booster(self) -> Any:
        import lightgbm as lgb  # deferred: LightGBM loads only for regression EM

        return lgb.Booster(params=self.params, train_set=self.dataset)


def fit_relevance(
    regressor: RelevanceRegressor, base: float, n: np.ndarray, s: np.ndarray, rounds: int
) -> np.ndarray:
    """F = ``base`` + ``rounds`` trees of log loss for ``s`` of ``n`` sampled r = 1 per pair (one row each).

    The gradient and hessian are those of LightGBM's ``binary`` objective summed over a pair's
    impressions: ``n·σ(F) − s`` and ``n·σ(F)(1 − σ(F))``.
    """
    booster = regressor.booster()

    def log_loss_gradients(raw: np.ndarray, _: Any) -> tuple[np.ndarray, np.ndarray]:
        prob = 1.0 / (1.0 + np.exp(-(base + raw)))
        return n * prob - s, n * prob * (1.0 - prob)

    for _ in range(rounds):
        booster.update(fobj=log_loss_gradients)
    return base + booster.predict(regressor.features, raw_score=True)


def regression_em(
    regressor: RelevanceRegressor,
    cells: Cells,
    w: np.ndarray,
    rng: np.random.Generator,
    *,
    iterations: int = ITERATIONS,
    trees: int = TREES,
    start: tuple[np.ndarray, np.ndarray] | None = None,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """θ per position (θ_1 = 1) and F per pair by regression EM on aggregated cells.

    ``w``: the weight of each cell (the bootstrap count of its query; integers, so a weight-``w``
    cell is ``w`` copies of its impressions and its non-clicks draw
    ``Binomial(w·(n−c), P(E=0, R=1 | C=0))`` relevant labels). ``on_iteration(i, {})`` after each
    iteration (progress; it changes nothing).
    """
    cell_pair, cell_pos, depth = cells.pair, cells.pos, cells.depth
    n_pairs = regressor.n_pairs
    wn, wc = w * cells.n, w * cells.c
    wmiss = np.rint(wn - wc).astype(np.int64)
    pos_n = np.bincount(cell_pos, weights=wn, minlength=depth)
    pair_n = np.bincount(cell_pair, weights=wn, minlength=n_pairs)
    if start is None:  # θ: the click-through rate ratio (biased by relevance, but nearer than a constant)
        with np.errstate(invalid="ignore", divide="ignore"):
            ctr = np.bincount(cell_pos, weights=wc, minlength=depth) / pos_n
        theta = np.clip(np.nan_to_num(ctr / ctr[0], nan=0.5, posinf=0.5), 1e-3, 1.0)
        theta[0], score = 1.0, np.zeros(n_pairs)
    else:
        theta, score = start[0].copy(), start[1].copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(iterations):
            t, g = theta[cell_pos], 1.0 / (1.0 + np.exp(-score[cell_pair]))
            unclicked = 1.0 - t * g
            p_relevant = (1.0 - t) * g / unclicked  # P(E=0, R=1 | C=0)
            sampled = wc + rng.binomial(wmiss, np.clip(p_relevant, 0.0, 1.0))
            s = np.bincount(cell_pair, weights=sampled, minlength=n_pairs)
            rate = np.clip(s.sum() / pair_n.sum(), 1e-6, 1.0 - 1e-6)
            # boosting from the sampled labels' average, like LightGBM's binary boost_from_average
            score = fit_relevance(regressor, float(np.log(rate / (1.0 - rate))), pair_n, s, trees)
            theta = examination_given_relevance(
                theta, 1.0 / (1.0 + np.exp(-score[cell_pair])), cell_pos, wn, wc
            )
            if on_iteration is not None:
                on_iteration(i, {})
    # a position no impression of this replicate shows has no estimate (the bootstrap skips NaN)
    return np.where(pos_n > 0, theta, np.nan), score


def examination_given_relevance(
    theta: np.ndarray, gamma: np.ndarray, cell_pos: np.ndarray, wn: np.ndarray, wc: np.ndarray
) -> np.ndarray:
    """θ maximising the likelihood for fixed γ: the M-step ``θ_k = mean(c + (1−c)·P(E=1, R=0 | C=0))``
    repeated to its fixed point (an ECM step; one repetition is the paper's M-step).

    Two cells of γ = ½ documents, 100 impressions each: 50 clicks at position 1, 25 at position 2
    (θ_2 = 25 / (100·½)):

    >>> gamma, pos = np.array([0.5, 0.5]), np.array([0, 1])
    >>> examination_given_relevance(np.array([1.0, 0.9]), gamma, pos, np.array([100.0, 100.0]),
    ...                             np.array([50.0, 25.0])).round(6).tolist()
    [1.0, 0.5]
    """
    depth = theta.shape[0]
    pos_n = np.bincount(cell_pos, weights=wn, minlength=depth)
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(THETA_STEPS):
            t = theta[cell_pos]
            p_examined = t * (1.0 - gamma) / (1.0 - t * gamma)
            new = np.bincount(cell_pos, weights=wc + (wn - wc) * p_examined, minlength=depth) / pos_n
            new = np.nan_to_num(new, nan=1.0)
            done = np.max(np.abs(new - theta)) < 1e-9
            theta = new
            if done:
                break
    return theta
