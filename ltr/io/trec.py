"""TREC qrels and runs: the two text files trec_eval reads, read and written.

Formats (fields separated by ASCII whitespace; blank lines and lines starting with ``#`` are skipped;
encodings and line endings as in :mod:`ltr.io.textlines`: a UTF-8 BOM is ignored, LF or CRLF):

- qrels: ``topic iteration docno relevance`` (relevance an integer; negative levels count as 0)
- run: ``topic Q0 docno rank score tag`` (the rank column is ignored, as trec_eval does)

Every error names ``file:line``. Evaluating a run against qrels is :func:`ltr.metrics.trec.evaluate_trec`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ltr.core.errors import DataError
from ltr.io.numbers import PLAIN_INTEGER, integer
from ltr.io.predictions import check_finite_scores, parse_score, write_text
from ltr.io.textlines import FIELD_SPACE, check_no_bom, read_lines, split_fields


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
    """Data rows with their line numbers, read under :mod:`ltr.io.textlines`' encoding policy."""
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
        value = integer(rel)
        if value is None:
            raise DataError(
                f"{path}:{number}: relevance must be an integer, got {rel[:80]!r} ({PLAIN_INTEGER})"
            )
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
        if integer(rank) is None:
            raise DataError(f"{path}:{number}: rank must be an integer, got {rank[:80]!r} ({PLAIN_INTEGER})")
        rows.append((number, topic, docno, parse_score(path, number, score)))
        tags.add(tag)
    if not rows:
        raise DataError(f"{path}: no ranked documents found")
    return _group(path, rows, "run", tag=sorted(tags)[0] if len(tags) == 1 else "+".join(sorted(tags)))


def docnos(docid: np.ndarray | None, n_rows: int) -> np.ndarray:
    """Document ids for a TREC run: the file's ``docid`` comment when a row has one, else its row number.

    ``docid`` is :attr:`ltr.data.RankingData.docid`: the ``docid = X`` value of a LETOR comment, or the
    whole comment when it has no ``docid =``; a value that is empty or holds whitespace (a free-text
    comment) is not an id, and the row number stands in. Row numbers are 1-based data rows of the file
    (comment and blank lines not counted).

    >>> docnos(np.array(["GX01-1", "", "GX01-3", "a note"]), 4).tolist()
    ['GX01-1', '2', 'GX01-3', '4']
    >>> docnos(None, 2).tolist()
    ['1', '2']
    """
    rows = np.arange(1, n_rows + 1).astype(str)
    if docid is None:
        return rows
    ids = np.asarray(docid, dtype=str)
    one_word = np.array(
        [bool(d) and len(split_fields(d)) == 1 and d == d.strip(FIELD_SPACE) for d in ids.tolist()]
    )
    return np.where(one_word, ids, rows)


def check_run_docnos(
    qid: np.ndarray,
    offsets: np.ndarray,
    docno: np.ndarray,
    where: Callable[[int], str] | None = None,
    *,
    out: str | Path = "the run",
) -> None:
    """Refuse document ids a TREC run cannot hold: empty or with whitespace (the format splits fields on
    it), or twice in one query (:func:`read_run`, trec_eval and ranx reject or merge the lines). Errors
    name ``out``, the query, the docno and both data rows (``where(row)``: e.g. ``file:line``).

    >>> check_run_docnos(np.array([3, 3, 3]), np.array([0, 3]), np.array(["a", "b", "a"]), out="r.run")
    Traceback (most recent call last):
    ...
    ltr.core.errors.DataError: r.run: query 3 has the document id 'a' twice (data row 1 and data row 3); a TREC run lists a document once per query: give the rows distinct '# docid = X' comments
    """
    where = where or (lambda row: f"data row {row + 1}")
    for q in range(offsets.shape[0] - 1):
        first: dict[str, int] = {}
        for row in range(int(offsets[q]), int(offsets[q + 1])):
            d = str(docno[row])
            if not d or any(c in d for c in FIELD_SPACE + "\n"):
                raise DataError(
                    f"{out}: docno {d!r} ({where(row)}) is empty or holds whitespace; "
                    "a TREC run needs one-word document ids"
                )
            seen = first.setdefault(d, row)
            if seen != row:
                raise DataError(
                    f"{out}: query {qid[row]} has the document id {d!r} twice ({where(seen)} and {where(row)}); "
                    "a TREC run lists a document once per query: give the rows distinct '# docid = X' comments"
                )


def write_trec_run(
    path: str | Path,
    qid: np.ndarray,
    offsets: np.ndarray,
    docno: np.ndarray,
    scores: np.ndarray,
    tag: str,
    *,
    where: Callable[[int], str] | None = None,
) -> Path:
    """A TREC run ``topic Q0 docno rank score tag``: each query ranked by score descending.

    Ties keep file order (a stable sort); ranks start at 1. trec_eval and the ``trec`` preset re-rank
    by score with ties by docno descending, so give distinct scores where the order of ties matters.
    What :func:`read_run` would refuse is refused here, before the file is touched: a docno with
    whitespace or repeated within a query (:func:`check_run_docnos`; ``where(row)`` says where a data row
    came from), a non-finite score. The file is written atomically (:mod:`ltr.io.outputs`).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.run"
    >>> _ = write_trec_run(p, np.array([3, 3, 5]), np.array([0, 2, 3]), np.array(["a", "b", "c"]),
    ...                    np.array([0.5, 1.5, 0.0]), "lambdamart")
    >>> print(p.read_text(), end="")
    3 Q0 b 1 1.5 lambdamart
    3 Q0 a 2 0.5 lambdamart
    5 Q0 c 1 0.0 lambdamart
    """
    path = Path(path)
    if not tag or any(c in FIELD_SPACE + "\n" for c in tag):
        raise DataError(f"{path}: the run tag must be one word without whitespace, got {tag!r}")
    check_run_docnos(qid, offsets, docno, where, out=path)
    check_finite_scores(path, scores, where)
    lines = []
    for q in range(offsets.shape[0] - 1):
        a, b = int(offsets[q]), int(offsets[q + 1])
        order = a + np.argsort(-scores[a:b], kind="stable")
        for rank, row in enumerate(order, start=1):
            lines.append(f"{qid[row]} Q0 {docno[row]} {rank} {float(scores[row])!r} {tag}\n")
    write_text(path, "".join(lines))
    return path
