"""Reading contributions: the rows of one query, one document by docid or line, and a pair's difference.

A document is named as a person sees it in the file: its ``#docid`` comment (``docid = GX001``) or
its 1-based line number in the file (``line`` of every explained row). A pair ``A B`` of the same
query is explained by the contribution differences ``c_A − c_B`` per feature, sorted by |difference|:
they sum, with the bias difference (0 for a single tree model; the same query shares one bias), to
``score(A) − score(B)`` exactly.

>>> import numpy as np
>>> from ltr.attribution.contributions import Contributions
>>> c = Contributions(np.array([[1.0, -2.0], [0.5, 1.0]]), np.zeros(2), np.array([-1.0, 1.5]))
>>> p = pair_difference(c, 1, 0)
>>> p.features.tolist(), p.differences.tolist(), p.score_difference
([2, 1], [3.0, -0.5], 2.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ltr.attribution.contributions import Contributions
from ltr.core.errors import ConfigError
from ltr.data import RankingData


def query_rows(data: RankingData, qid: str, *, option: str = "--query") -> np.ndarray:
    """Row indices of the query ``qid`` (as written after ``qid:``); unknown ids name a few known ones."""
    ids = data.query_ids.astype(str)
    hit = np.flatnonzero(ids == str(qid))
    if hit.size == 0:
        shown = ", ".join(ids[:5]) + (", …" if ids.size > 5 else "")
        raise ConfigError(f"{option} {qid}: no such query in {data.name} ({ids.size} queries: {shown})")
    q = int(hit[0])
    return np.arange(int(data.offsets[q]), int(data.offsets[q + 1]))


def find_document(
    data: RankingData,
    lines: Sequence[int],
    rows: np.ndarray,
    ref: str,
    *,
    option: str = "--pair",
    where: str = "of the data",
) -> int:
    """The row among ``rows`` (one query) named by ``ref``: a ``#docid`` value, else a 1-based line number
    (``lines[i]`` is row ``i``'s line). A docid wins over a line number when both match."""
    if data.docid is not None:
        named = np.asarray(data.docid, dtype=str)[rows].tolist()  # the `docid = X` value of LETOR comments
        if ref in named:
            return int(rows[named.index(ref)])
    if ref.isdigit():
        line = int(ref)
        for r in rows:
            if lines[int(r)] == line:
                return int(r)
    first, last = lines[int(rows[0])], lines[int(rows[-1])]
    raise ConfigError(
        f"{option} {ref}: no document {where} has docid {ref!r} or is on line {ref} "
        f"(documents are on lines {first}-{last})"
    )


@dataclass(frozen=True)
class PairDifference:
    """Why row ``a`` scores above (or below) row ``b``: per-feature differences, largest |difference| first."""

    a: int
    b: int
    features: np.ndarray  # 1-based ids, sorted by |difference| descending
    differences: np.ndarray
    bias_difference: float
    score_difference: float


def pair_difference(contributions: Contributions, a: int, b: int) -> PairDifference:
    """``c_a − c_b`` per feature (module docstring); ``Σ differences + bias_difference == score_difference``."""
    diff = contributions.values[a] - contributions.values[b]
    order = np.argsort(-np.abs(diff), kind="stable")
    return PairDifference(
        a=a,
        b=b,
        features=order + 1,
        differences=diff[order],
        bias_difference=float(contributions.bias[a] - contributions.bias[b]),
        score_difference=float(contributions.score[a] - contributions.score[b]),
    )
