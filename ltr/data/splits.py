"""Query-aware splits: every query's documents stay together; the same seed gives the same split.

* :func:`query_kfold` — K folds of query positions (sizes differ by at most one query);
* :func:`stratified_query_folds` / :func:`cv_folds` — K folds stratified by query size (``data.cv``):
  fold i tests on part i, validates on part i+1 (mod K) and trains on the rest;
* :func:`train_valid_test` — one seeded split by query fractions;
* :func:`mslr_folds` — MSLR/LETOR fold rotation of five parts S1..S5: fold k trains on
  S_k, S_k+1, S_k+2, validates on S_k+3 and tests on S_k+4 (indices mod 5), so each part is the
  test set exactly once (MSLR-WEB30K Fold1: train S1-S3, vali S4, test S5).

>>> import numpy as np
>>> from ltr.data import RankingData
>>> d = RankingData(X=np.zeros((10, 1), np.float32), y=np.zeros(10), qid=np.repeat(np.arange(5), 2))
>>> [t.tolist() for _, t in query_kfold(d.n_queries, 5, seed=0)] == [[q] for q in np.random.default_rng(0).permutation(5)]
True
>>> [sorted(f) for f in mslr_folds(["S1", "S2", "S3", "S4", "S5"])][:1]
[['test', 'train', 'valid']]
>>> mslr_folds(["S1", "S2", "S3", "S4", "S5"])[1]
{'train': ['S2', 'S3', 'S4'], 'valid': 'S5', 'test': 'S1'}
>>> stratified_query_folds([1, 1, 2, 2, 9, 9], 2, seed=0).tolist()  # each size lands once in each fold
[0, 1, 1, 0, 1, 0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import scipy.sparse as sp

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError
from ltr.data.dataset import RankingData

T = TypeVar("T")


def query_kfold(
    n_queries: int, k: int, *, seed: int, shuffle: bool = True
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` (train, test) pairs of query positions, train sorted and test in the seeded shuffled order
    (``shuffle=False``: sorted too); each query is in exactly one test fold."""
    k = check_value(k, int, Constraint(low=2), "k")
    if n_queries < k:
        raise ConfigError(f"cannot make {k} folds from {n_queries} queries")
    order = np.random.default_rng(seed).permutation(n_queries) if shuffle else np.arange(n_queries)
    parts = np.array_split(order, k)
    out = []
    for i in range(k):
        test = parts[i]
        train = np.concatenate([parts[j] for j in range(k) if j != i])
        out.append((np.sort(train), test))
    return out


def stratified_query_folds(group_sizes: Sequence[int] | np.ndarray, k: int, *, seed: int) -> np.ndarray:
    """The fold (0..k-1) of each query, stratified by query size; the same seed gives the same folds.

    The queries, sorted by size (equal sizes in a seeded random order), are dealt in consecutive
    blocks of ``k``; each block goes to the ``k`` folds in a seeded random permutation (the last, partial
    block to as many distinct folds). So every fold holds one query of each block: the folds' query
    sizes follow the same distribution and their query counts differ by at most one.
    """
    k = check_value(k, int, Constraint(low=2), "k")
    sizes = np.asarray(group_sizes)
    n = sizes.size
    if n < k:
        raise ConfigError(f"cannot make {k} folds from {n} queries")
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.permutation(n), sizes))  # by size; ties in a seeded random order
    fold_of = np.empty(n, dtype=np.int64)
    for start in range(0, n, k):
        block = order[start : start + k]
        fold_of[block] = rng.permutation(k)[: block.size]
    return fold_of


def cv_fold_queries(
    group_sizes: Sequence[int] | np.ndarray, k: int, *, seed: int, valid: bool = True
) -> list[dict[str, np.ndarray]]:
    """The query positions (sorted) of each split of each of ``k`` folds, as :func:`cv_folds` cuts them.

    Needs only the query sizes, so data held in pieces (Dask workers) is cut exactly as a whole copy.

    >>> [{s: p.tolist() for s, p in f.items()} for f in cv_fold_queries([1, 1, 2, 2, 9, 9], 3, seed=0)][:1]
    [{'train': [3, 4], 'valid': [0, 2], 'test': [1, 5]}]
    """
    if valid and k == 2:
        raise ConfigError(
            "data.cv.folds=2 leaves no part to train on besides the validation part; "
            "use data.cv.folds>=3 or data.cv.valid=false"
        )
    fold_of = stratified_query_folds(group_sizes, k, seed=seed)
    parts = [np.flatnonzero(fold_of == i) for i in range(k)]
    out = []
    for i in range(k):
        held = {"test": i, "valid": (i + 1) % k} if valid else {"test": i}
        fold = {"train": np.sort(np.concatenate([parts[j] for j in range(k) if j not in held.values()]))}
        fold |= {s: parts[j] for s, j in held.items()}
        out.append({s: fold[s] for s in ("train", "valid", "test") if s in fold})
    return out


def cv_folds(data: RankingData, k: int, *, seed: int, valid: bool = True) -> list[dict[str, RankingData]]:
    """``k`` query-level folds of ``data`` (:func:`stratified_query_folds`), each a train/valid/test dict.

    Fold i (1-based) tests on part i; with ``valid`` it validates on part i+1 (mod k) and trains on
    the other k-2 parts (needs k ≥ 3), else it trains on the other k-1 parts. Every split keeps the
    file's query order; every query is in exactly one test split (:func:`cv_fold_queries`).
    """
    return [
        {s: data.subset(q, name=f"{data.name}[cv{i + 1}/{s}]") for s, q in fold.items()}
        for i, fold in enumerate(cv_fold_queries(data.group_sizes, k, seed=seed, valid=valid))
    ]


def split_queries(n_queries: int, fractions: Sequence[float], *, seed: int) -> list[np.ndarray]:
    """Disjoint groups of query positions with the given fractions (rounded; the last takes the rest)."""
    fr = np.asarray(fractions, dtype=float)
    if fr.ndim != 1 or fr.size < 2 or np.any(fr <= 0) or not np.isclose(fr.sum(), 1.0):
        raise ConfigError(f"fractions must be >= 2 positive numbers summing to 1, got {list(fractions)}")
    order = np.random.default_rng(seed).permutation(n_queries)
    cuts = np.round(np.cumsum(fr)[:-1] * n_queries).astype(int)
    groups = np.split(order, cuts)
    if any(g.size == 0 for g in groups):
        raise ConfigError(f"fractions {list(fractions)} leave an empty split with {n_queries} queries")
    return [np.sort(g) for g in groups]


def train_valid_test(
    data: RankingData, fractions: Sequence[float] = (0.6, 0.2, 0.2), *, seed: int
) -> dict[str, RankingData]:
    """Split ``data`` by queries into train/valid/test (each keeps the original query order)."""
    if len(fractions) != 3:
        raise ConfigError(f"fractions must have 3 values (train, valid, test), got {list(fractions)}")
    groups = split_queries(data.n_queries, fractions, seed=seed)
    return {
        name: data.subset(g, name=f"{data.name}[{name}]")
        for name, g in zip(("train", "valid", "test"), groups, strict=True)
    }


def mslr_folds(parts: Sequence[T]) -> list[dict[str, object]]:
    """MSLR-style rotation of five parts: fold k = train (S_k, S_k+1, S_k+2), valid S_k+3, test S_k+4."""
    if len(parts) != 5:
        raise ConfigError(f"MSLR-style rotation needs exactly 5 parts, got {len(parts)}")
    return [
        {
            "train": [parts[(k + j) % 5] for j in range(3)],
            "valid": parts[(k + 3) % 5],
            "test": parts[(k + 4) % 5],
        }
        for k in range(5)
    ]


def concat(datasets: Sequence[RankingData], *, name: str | None = None) -> RankingData:
    """Stack datasets row-wise (their qids must not collide, or the result is not contiguous)."""
    if not datasets:
        raise ConfigError("nothing to concatenate")
    if any(d.is_sparse for d in datasets):
        X = sp.vstack([sp.csr_matrix(d.X) for d in datasets], format="csr")
    else:
        X = np.concatenate([d.X for d in datasets])
    weights = [d.weight for d in datasets]
    return RankingData(
        X=X,
        y=np.concatenate([d.y for d in datasets]),
        qid=np.concatenate([d.qid for d in datasets]),
        name=name or "+".join(d.name for d in datasets),
        weight=None if any(w is None for w in weights) else np.concatenate(weights),
        docid=None if any(d.docid is None for d in datasets) else np.concatenate([d.docid for d in datasets]),
    )


def mslr_style_folds(data: RankingData, *, seed: int) -> list[dict[str, RankingData]]:
    """Partition ``data`` into 5 seeded query-disjoint parts and rotate them like MSLR's Fold1..Fold5."""
    parts = [data.subset(test, name=f"{data.name}[S{i + 1}]") for i, (_, test) in
             enumerate(query_kfold(data.n_queries, 5, seed=seed))]  # fmt: skip
    folds = []
    for k, f in enumerate(mslr_folds(parts)):
        folds.append(
            {
                "train": concat(f["train"], name=f"{data.name}[Fold{k + 1}/train]"),  # type: ignore[arg-type]
                "valid": f["valid"],
                "test": f["test"],
            }
        )
    return folds
