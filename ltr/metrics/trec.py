"""trec_eval measure names and trec_eval-compatible evaluation of a run against qrels.

The files are read by :mod:`ltr.io.trec` (``read_qrels``, ``read_run``).

trec_eval's conventions (preset ``trec``): rank by score descending, ties by docno descending; the
ideal ranking and R use every judged document of the topic; gain = relevance level; a topic without
relevant documents scores 0; only topics present in both files are evaluated; ``all`` is the mean.

Example
-------
>>> trec_measures(["ndcg_cut_10", "P.5,10", "map", "ndcg@3"])
[('ndcg_cut_10', 'ndcg@10'), ('P_5', 'p@5'), ('P_10', 'p@10'), ('map', 'map'), ('ndcg@3', 'ndcg@3')]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.core.errors import DataError, MetricError
from ltr.io.trec import TrecTable
from ltr.metrics.compute import evaluate, evaluate_by_segment
from ltr.metrics.registry import parse_metric, registry_listing

#: trec_eval's default cutoffs for measures given without one (``-m P`` → P_5 … P_1000).
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


#: trec_eval measure → (our family, takes a cutoff).
TREC_FAMILIES = {
    "ndcg": ("ndcg", False),
    "map": ("map", False),
    "recip_rank": ("mrr", False),
    "ndcg_cut": ("ndcg", True),
    "map_cut": ("map", True),
    "P": ("p", True),
    "recall": ("r", True),
}


_CUT = re.compile(r"^(ndcg_cut|map_cut|P|recall)_(\d+)$")


def trec_measures(names: Sequence[str]) -> list[tuple[str, str]]:
    """Expand trec_eval measure names (and ``ltr`` names) into ``(display name, ltr metric name)``.

    Accepts ``ndcg``, ``map``, ``recip_rank``, ``P_5`` / ``recall_10`` / ``ndcg_cut_10`` / ``map_cut_10``,
    a family with trec_eval's default cutoffs (``P`` → P_5 … P_1000) or with its own (``P.5,10``), and
    any name of the ``ltr`` registry (``ndcg@10``, ``err@20``).
    """
    out: list[tuple[str, str]] = []
    for name in names:
        base, _, params = name.partition(".")
        m = _CUT.match(name)
        if m:
            family, k = TREC_FAMILIES[m.group(1)][0], int(m.group(2))
            out.append((name, f"{family}@{k}"))
        elif base in TREC_FAMILIES:
            family, cut = TREC_FAMILIES[base]
            if not cut:
                if params:
                    raise MetricError(f"trec measure {name!r}: {base} takes no cutoffs")
                out.append((base, family))
                continue
            try:
                ks = [int(k) for k in params.split(",")] if params else list(TREC_CUTOFFS)
            except ValueError:
                raise MetricError(
                    f"trec measure {name!r}: cutoffs must be integers like {base}.5,10"
                ) from None
            out.extend((f"{base}_{k}", f"{family}@{k}") for k in ks)
        else:
            try:
                out.append((parse_metric(name).name, parse_metric(name).name))
            except MetricError:
                raise MetricError(
                    f"unknown measure {name!r}; trec_eval names: {', '.join(TREC_FAMILIES)} "
                    "(P, recall, ndcg_cut, map_cut also as NAME_k or NAME.k1,k2), or ltr names:\n"
                    + registry_listing()
                ) from None
    for _display, metric in out:
        parse_metric(metric)  # refuses a cutoff of 0 (e.g. P_0)
    return out


@dataclass(frozen=True)
class TrecResult:
    """Per-topic values of each measure (topics evaluated = in both files, sorted)."""

    topics: list[str]
    values: dict[str, np.ndarray]
    run_tag: str


def evaluate_trec(
    qrels: TrecTable, run: TrecTable, measures: Sequence[str], *, preset: str = "trec", **conventions: Any
) -> TrecResult:
    """Evaluate a run against qrels the way trec_eval does (preset ``trec``, ideal from qrels).

    Run documents without a judgment have relevance 0; negative relevance levels count as 0.

    Example: a (rel 2) and the unjudged z tie at 1.0; docno descending ranks z first, so the ranking
    is b (0), z (0), a (2): P@2 = 0, RR = 1/3, NDCG@3 = (2/log2 4) / (2 + 1/log2 3) = 0.380094
    (IDCG from all judged documents, including c, which the run did not retrieve).

    >>> import shutil, tempfile
    >>> from pathlib import Path
    >>> from ltr.io.trec import read_qrels, read_run
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "q").write_text("1 0 a 2\\n1 0 b 0\\n1 0 c 1\\n")
    >>> _ = (d / "r").write_text("1 Q0 b 1 2.0 t\\n1 Q0 a 2 1.0 t\\n1 Q0 z 3 1.0 t\\n")
    >>> res = evaluate_trec(read_qrels(d / "q"), read_run(d / "r"), ["P_2", "recip_rank", "ndcg_cut_3"])
    >>> shutil.rmtree(d)
    >>> {m: round(float(v[0]), 6) for m, v in res.values.items()}
    {'P_2': 0.0, 'recip_rank': 0.333333, 'ndcg_cut_3': 0.380094}
    >>> format_trec(res).splitlines()[-1].split()   # the 'all' line of ndcg_cut_3
    ['ndcg_cut_3', 'all', '0.3801']
    """
    pairs = trec_measures(measures)
    q_index = {t: i for i, t in enumerate(qrels.topics)}
    r_index = {t: i for i, t in enumerate(run.topics)}
    topics = [t for t in run.topics if t in q_index]
    if not topics:
        raise DataError(f"{run.path}: no topic of the run is judged in {qrels.path}")
    labels, scores, docno, offsets, ideal, ideal_offsets = [], [], [], [0], [], [0]
    for t in topics:
        ri = r_index[t]
        a, b = run.offsets[ri], run.offsets[ri + 1]
        qa, qb = qrels.offsets[q_index[t]], qrels.offsets[q_index[t] + 1]
        judged = dict(
            zip(qrels.docno[qa:qb].tolist(), np.maximum(qrels.values[qa:qb], 0.0).tolist(), strict=True)
        )
        labels.extend(judged.get(d, 0.0) for d in run.docno[a:b].tolist())
        scores.append(run.values[a:b])
        docno.append(run.docno[a:b])
        offsets.append(offsets[-1] + (b - a))
        ideal.extend(judged.values())
        ideal_offsets.append(len(ideal))
    values = evaluate(
        [metric for _, metric in pairs],
        np.asarray(labels, dtype=np.float64),
        np.concatenate(scores),
        np.asarray(offsets, dtype=np.int64),
        preset=preset,
        docno=np.concatenate(docno),
        ideal_labels=np.asarray(ideal, dtype=np.float64),
        ideal_offsets=np.asarray(ideal_offsets, dtype=np.int64),
        **conventions,
    )
    return TrecResult(
        topics, {display: values[parse_metric(metric).name] for display, metric in pairs}, run.tag
    )


def evaluate_labelled(
    labels: np.ndarray,
    scores: np.ndarray,
    offsets: np.ndarray,
    topics: Sequence[str],
    measures: Sequence[str],
    *,
    preset: str,
    docno: np.ndarray,
    tag: str,
    segments: tuple[Sequence[Any], Mapping[Any, Any]] | None = None,
) -> TrecResult:
    """Per-query values of ``measures`` (trec_eval or ltr names, keyed as given) on labelled rows.
    ``segments``: (each query's segment, conventions per segment) for :func:`~ltr.metrics.compute.evaluate_by_segment`.

    Labels 0, 2, 1 ranked in that order: P@1 = 0; NDCG@2 (exp2 gain) = (3/log2 3) / (3 + 1/log2 3).

    >>> import numpy as np
    >>> r = evaluate_labelled(np.array([0.0, 2, 1]), np.array([0.3, 0.2, 0.1]), np.array([0, 3]), ["7"],
    ...                       ["P_1", "ndcg@2"], preset="ltr", docno=np.array(["a", "b", "c"]), tag="x")
    >>> r.topics, {m: round(float(v[0]), 6) for m, v in r.values.items()}
    (['7'], {'P_1': 0.0, 'ndcg@2': 0.521296})
    """
    pairs = trec_measures(measures)
    names = [m for _, m in pairs]
    if segments is None:
        values = evaluate(names, labels, scores, offsets, preset=preset, docno=docno)
    else:
        values = evaluate_by_segment(names, labels, scores, offsets, segments[0], segments[1], docno=docno)
    return TrecResult(list(topics), {display: values[metric] for display, metric in pairs}, tag)


def format_trec(result: TrecResult, *, per_topic: bool = False) -> str:
    """trec_eval's text output: ``measure<TAB>topic<TAB>value`` (value to 4 decimals), then ``all``.

    Skipped topics (NaN, possible only with a ``skip`` convention) are not printed, not averaged and
    not counted in ``num_q``.

    >>> res = TrecResult(["1", "2"], {"map": np.array([0.5, np.nan])}, "run1")
    >>> [line.split() for line in format_trec(res, per_topic=True).splitlines()]
    [['map', '1', '0.5000'], ['runid', 'all', 'run1'], ['num_q', 'all', '1'], ['map', 'all', '0.5000']]
    """
    lines = []
    if per_topic:
        for i, topic in enumerate(result.topics):
            for name, v in result.values.items():
                if not math.isnan(v[i]):
                    lines.append(f"{name:<22}\t{topic}\t{v[i]:.4f}")
    lines.append(f"{'runid':<22}\tall\t{result.run_tag}")
    kept_topics = sum(
        1 for i in range(len(result.topics)) if any(not math.isnan(v[i]) for v in result.values.values())
    )
    lines.append(f"{'num_q':<22}\tall\t{kept_topics}")
    for name, v in result.values.items():
        kept = v[~np.isnan(v)]
        lines.append(f"{name:<22}\tall\t{(kept.mean() if kept.size else float('nan')):.4f}")
    return "\n".join(lines) + "\n"
