"""Fast generator of LETOR/SVMlight text at benchmark scale (up to MSLR-WEB30K size and beyond).

This is *not* the built-in dataset (see :mod:`ltr.data.synthetic` for that): it writes files that
look like MSLR-WEB folds to the parser — ``label qid:Q i:v ...`` lines, 1-based indices, a mix of
integer counts, 6-decimal fractions and 4-decimal reals, about 120 documents per query — as fast as
the disk takes them (a numba kernel formats the bytes). Labels (0–4, skewed like MSLR: about
52/32/13/2/1 %) depend on a few features plus noise, so a ranker can learn something; the splits of
one collection (``write_letor_splits``) share that label function and each feature's kind, so a
ranker fitted on its train file ranks its vali and test files.

Sizes: ``PRESETS`` gives the query counts of an MSLR-WEB10K / -WEB30K fold (WEB30K Fold1: 18,919 /
6,306 / 6,306 queries, 2.27 M training documents).

>>> import tempfile, pathlib
>>> out = write_letor_text(pathlib.Path(tempfile.mkdtemp()) / "t.txt", n_queries=3, docs_per_query=4,
...                        n_features=5, seed=1)
>>> from ltr.data.svmlight import load_svmlight
>>> d = load_svmlight(out, n_features=5, label_range=(0, 4))
>>> d.n_queries, d.n_features
(3, 5)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError
from ltr.data.svmlight import atomic_writer

PRESETS = {
    "tiny": {"train": 60, "valid": 20, "test": 20},
    "mslr_web10k": {"train": 6_000, "valid": 2_000, "test": 2_000},
    "mslr_web30k": {"train": 18_919, "valid": 6_306, "test": 6_306},
}
SPLIT_FILES = {"train": "train.txt", "valid": "vali.txt", "test": "test.txt"}
_LABEL_CUTS = np.array([0.52, 0.84, 0.97, 0.99])  # cumulative shares of labels 0..3


@njit(cache=True)
def _write_uint(out, pos, v):
    if v == 0:
        out[pos] = 48
        return pos + 1
    start = pos
    while v > 0:
        out[pos] = 48 + v % 10
        v //= 10
        pos += 1
    i, j = start, pos - 1
    while i < j:
        out[i], out[j] = out[j], out[i]
        i += 1
        j -= 1
    return pos


@njit(cache=True)
def _write_fixed(out, pos, v, decimals):
    """Write the non-negative integer v as a decimal with ``decimals`` digits after the point."""
    if decimals == 0:
        return _write_uint(out, pos, v)
    scale = 10**decimals
    pos = _write_uint(out, pos, v // scale)
    out[pos] = 46
    pos += 1
    frac = v % scale
    for k in range(decimals - 1, -1, -1):
        out[pos + k] = 48 + frac % 10
        frac //= 10
    return pos + decimals


@njit(cache=True)
def _format_rows(labels, qids, values, mask, decimals, out):
    pos = 0
    n, f = values.shape
    for i in range(n):
        pos = _write_uint(out, pos, labels[i])
        for c in (32, 113, 105, 100, 58):  # " qid:"
            out[pos] = c
            pos += 1
        pos = _write_uint(out, pos, qids[i])
        for j in range(f):
            if not mask[i, j]:
                continue
            out[pos] = 32
            pos += 1
            pos = _write_uint(out, pos, j + 1)
            out[pos] = 58
            pos += 1
            pos = _write_fixed(out, pos, values[i, j], decimals[j])
        out[pos] = 10
        pos += 1
    return pos


def _feature_kinds(n_features: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per feature: decimals (0 counts, 6 fractions, 4 reals) and the integer range of its numerator."""
    kind = rng.choice(3, size=n_features, p=[0.4, 0.5, 0.1])
    decimals = np.array([0, 6, 4])[kind]
    high = np.array([1_000, 1_000_000, 1_000_000_000])[kind]
    return decimals.astype(np.int64), high.astype(np.int64)


def write_letor_text(
    path: str | Path,
    *,
    n_queries: int,
    docs_per_query: int = 120,
    n_features: int = 136,
    density: float = 1.0,
    seed: int = 0,
    model_seed: int | None = None,
    qid_start: int = 1,
    chunk_queries: int = 2_000,
) -> Path:
    """Write ``n_queries`` queries (sizes uniform in [docs/2, 3·docs/2]) as SVMlight text; atomic rename.

    ``density`` is the share of feature entries written per row (1.0: every feature, MSLR-style);
    omitted entries are zeros. ``seed`` draws the rows; ``model_seed`` (default: ``seed``) draws what
    files of one collection must share: each feature's kind and the features the labels depend on.
    """
    n_queries, docs_per_query, n_features = (
        check_value(value, int, Constraint(low=1), name)
        for name, value in (
            ("n_queries", n_queries),
            ("docs_per_query", docs_per_query),
            ("n_features", n_features),
        )
    )
    density = check_value(density, float, Constraint(low=0.0, high=1.0, open_low=True), "density")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model_rng = np.random.default_rng(seed if model_seed is None else model_seed)
    decimals, high = _feature_kinds(n_features, model_rng)
    signal = model_rng.choice(n_features, size=min(5, n_features), replace=False)
    rng = np.random.default_rng(seed) if model_seed is not None else model_rng
    with atomic_writer(path, "wb") as f:
        for start in range(0, n_queries, chunk_queries):
            nq = min(chunk_queries, n_queries - start)
            lo, hi = max(1, docs_per_query // 2), max(1, docs_per_query * 3 // 2)
            sizes = rng.integers(lo, hi + 1, nq)
            n = int(sizes.sum())
            qids = np.repeat(np.arange(qid_start + start, qid_start + start + nq, dtype=np.int64), sizes)
            u = rng.random((n, n_features), dtype=np.float32)
            values = (u * u * high).astype(np.int64)  # skewed towards small values, like counts
            mask = (
                np.ones((n, n_features), dtype=np.bool_) if density >= 1.0 else rng.random(u.shape) < density
            )
            score = (values[:, signal] / high[signal]).sum(axis=1) / len(signal)
            score = score + rng.normal(0, 0.15, n) + rng.normal(0, 0.2, nq).repeat(sizes)
            ranks = np.argsort(np.argsort(score)) / max(n - 1, 1)
            labels = np.searchsorted(_LABEL_CUTS, ranks, side="right").astype(np.int64)
            width = 2 + 6 + 20 + n_features * (1 + 10 + 1 + 16)
            out = np.empty(n * width, dtype=np.uint8)
            end = _format_rows(labels, qids, values, mask, decimals, out)
            f.write(memoryview(out[:end]))
    return path


def write_letor_splits(
    directory: str | Path,
    *,
    scale: str | None = None,
    n_queries: dict[str, int] | None = None,
    docs_per_query: int = 120,
    n_features: int = 136,
    density: float = 1.0,
    seed: int = 0,
) -> dict[str, Path]:
    """Write train/vali/test files (query-disjoint qids) into ``directory`` at a preset ``scale`` or sizes:
    one collection — every split has the label function and feature kinds ``seed`` draws, and rows of
    its own."""
    if (scale is None) == (n_queries is None):
        raise ConfigError("give exactly one of scale (a preset) or n_queries")
    if scale is not None:
        check_value(scale, str, Constraint(choices=tuple(PRESETS)), "scale")
        n_queries = PRESETS[scale]
    seeds = np.random.SeedSequence(seed).spawn(len(n_queries))
    out = {}
    qid = 1
    for (split, nq), child in zip(n_queries.items(), seeds, strict=True):
        if split not in SPLIT_FILES:
            raise ConfigError(f"unknown split {split!r}; expected {list(SPLIT_FILES)}")
        out[split] = write_letor_text(
            Path(directory) / SPLIT_FILES[split],
            n_queries=nq,
            docs_per_query=docs_per_query,
            n_features=n_features,
            density=density,
            seed=int(child.generate_state(1)[0]),
            model_seed=seed,
            qid_start=qid,
        )
        qid += nq
    return out
