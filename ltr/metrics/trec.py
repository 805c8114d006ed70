"""TREC qrels and runs, trec_eval measure names, and trec_eval-compatible evaluation.

File formats (fields separated by ASCII whitespace; blank lines and lines starting with ``#`` are
skipped; encodings and line endings as in :mod:`ltr.textlines`: a UTF-8 BOM is ignored, LF or CRLF):

- qrels: ``topic iteration docno relevance`` (relevance an integer; negative levels count as 0)
- run: ``topic Q0 docno rank score tag`` (the rank column is ignored, as trec_eval does)

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr.errors import DataError, MetricError
from ltr.metrics.compute import evaluate
from ltr.metrics.registry import parse_metric, registry_listing
from ltr.predictions import parse_score
from ltr.textlines import FIELD_SPACE, check_no_bom, read_lines, split_fields

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


@dataclass(frozen=True)
class TrecTable:
    """Rows of a qrels or run file grouped by topic (topics in sorted order, rows in file order).

    ``values`` holds the relevance (qrels) or the score (run) of each row; ``lines`` the 1-based line
    number of each row, for messages.
    """

    path: str
    topics: list[str]
    offsets: np.ndarray
    docno: np.ndarray
    values: np.ndarray
    lines: np.ndarray
    tag: str = ""


def _rows(path: Path, n_fields: int, layout: str) -> Iterable[tuple[int, list[str]]]:
    """Data rows with their line numbers, read under :mod:`ltr.textlines`' encoding policy."""
    for number, line in read_lines(path):
        fields = split_fields(line)
        if not fields or fields[0].startswith("#"):
            continue
        check_no_bom(path, number, fields)
        if len(fields) != n_fields:
            shown = line.strip(FIELD_SPACE)
            raise DataError(
                f"{path}:{number}: expected {n_fields} fields ({layout}), got {len(fields)}: {shown!r}"
            )
        yield number, fields


def _group(path: Path, rows: list[tuple[int, str, str, float]], what: str, tag: str = "") -> TrecTable:
    by_topic: dict[str, list[tuple[int, str, float]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for number, topic, docno, value in rows:
        first = seen.setdefault((topic, docno), number)
        if first != number:
            raise DataError(
                f"{path}:{number}: {what} lists document {docno!r} of topic {topic} twice (first on line {first})"
            )
        by_topic.setdefault(topic, []).append((number, docno, value))
    topics = sorted(by_topic)
    ordered = [r for t in topics for r in by_topic[t]]
    sizes = [len(by_topic[t]) for t in topics]
    return TrecTable(
        path=str(path),
        topics=topics,
        offsets=np.r_[0, np.cumsum(sizes, dtype=np.int64)].astype(np.int64),
        docno=np.array([r[1] for r in ordered], dtype=str),
        values=np.array([r[2] for r in ordered], dtype=np.float64),
        lines=np.array([r[0] for r in ordered], dtype=np.int64),
        tag=tag,
    )


def read_qrels(path: str | Path) -> TrecTable:
    """Read a TREC qrels file ``topic iteration docno relevance``; errors name file and line.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".qrels", delete=False) as f:
    ...     _ = f.write("# judged\\n2 0 d1 1\\n1 0 d#2 0\\n")
    >>> q = read_qrels(f.name); os.unlink(f.name)
    >>> q.topics, q.docno.tolist(), q.values.tolist()
    (['1', '2'], ['d#2', 'd1'], [0.0, 1.0])
    """
    path = Path(path)
    rows = []
    for number, (topic, _iteration, docno, rel) in _rows(path, 4, "topic iteration docno relevance"):
        try:
            value = int(rel)
        except ValueError:
            raise DataError(f"{path}:{number}: relevance must be an integer, got {rel!r}") from None
        rows.append((number, topic, docno, float(value)))
    if not rows:
        raise DataError(f"{path}: no judgments found")
    return _group(path, rows, "qrels")


def read_run(path: str | Path) -> TrecTable:
    """Read a TREC run ``topic Q0 docno rank score tag``; the rank column is checked but ignored.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".run", delete=False) as f:
    ...     _ = f.write("1 Q0 b 1 2.0 bm25\\n1 Q0 a 2 1.0 bm25\\n")
    >>> r = read_run(f.name); os.unlink(f.name)
    >>> r.topics, r.docno.tolist(), r.values.tolist(), r.tag
    (['1'], ['b', 'a'], [2.0, 1.0], 'bm25')
    """
    path = Path(path)
    rows, tags = [], set()
    for number, (topic, _q0, docno, rank, score, tag) in _rows(path, 6, "topic Q0 docno rank score tag"):
        try:
            int(rank)
        except ValueError:
            raise DataError(f"{path}:{number}: rank must be an integer, got {rank!r}") from None
        rows.append((number, topic, docno, parse_score(path, number, score)))
        tags.add(tag)
    if not rows:
        raise DataError(f"{path}: no ranked documents found")
    return _group(path, rows, "run", tag=sorted(tags)[0] if len(tags) == 1 else "+".join(sorted(tags)))


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
