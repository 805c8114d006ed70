"""Every text reader applies the one encoding policy of :mod:`ltr.io.textlines`.

Readers × encodings: a UTF-8 byte order mark, CRLF, a BOM with CRLF and Unicode line separators
inside comments read exactly like the plain LF file; CR-only line endings are a ``DataError`` naming
``file:1``. Never a silently renamed topic, a swallowed line or an extra row.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from ltr.core.errors import DataError
from ltr.data.reading import read_positions, read_query_sizes, read_weights
from ltr.data.svmlight import load_svmlight
from ltr.evaluate import main as evaluate_main
from ltr.io.trec import read_qrels, read_run

BOM = b"\xef\xbb\xbf"  # the UTF-8 byte order mark (spelled out: the test must not trust the code)


def _svmlight(engine: str, cached: bool) -> Callable[[Path], tuple]:
    def read(path: Path) -> tuple:
        cache = path.parent / "cache" if cached else None
        d = load_svmlight(path, engine=engine, cache_dir=cache, docid=True, output="dense")
        return d.X.tolist(), d.y.tolist(), d.qid.tolist(), d.docid.tolist()

    return read


def _table(reader) -> Callable[[Path], tuple]:
    def read(path: Path) -> tuple:
        t = reader(path)
        return t.topics, t.offsets.tolist(), t.docno.tolist(), t.values.tolist(), t.lines.tolist(), t.tag

    return read


@dataclass(frozen=True)
class Reader:
    """A reader, the LF lines of a small valid file, and a comment line (None: no comments)."""

    read: Callable[[Path], tuple]
    lines: tuple[str, ...]
    comment: str | None


#: The comment hides text that would be a valid data line if a reader split the comment at a
#: Unicode line separator: such a reader would gain a row (or a judgment) silently.
SVM_LINES = ("2 qid:7 1:0.5 2:1 # docid = d1", "0 qid:7 2:0.25 # docid = d2", "1 qid:9 1:1 # docid = d3")
QRELS_LINES = ("301 0 d1 2", "301 0 d2 0", "302 0 d3 1")
RUN_LINES = ("301 Q0 d1 1 2.5 bm25", "301 Q0 d2 2 1.5 bm25", "302 Q0 d3 1 0.5 bm25")
READERS = {
    "svmlight-python": Reader(_svmlight("python", False), SVM_LINES, "# note{sep}3 qid:7 1:9"),
    "svmlight-numba": Reader(_svmlight("numba", False), SVM_LINES, "# note{sep}3 qid:7 1:9"),
    "svmlight-numba-cached": Reader(_svmlight("numba", True), SVM_LINES, "# note{sep}3 qid:7 1:9"),
    "qrels": Reader(_table(read_qrels), QRELS_LINES, "# note{sep}302 0 d9 3"),
    "run": Reader(_table(read_run), RUN_LINES, "# note{sep}302 Q0 d9 9 9.5 bm25"),
    ".query": Reader(lambda p: read_query_sizes(p).tolist(), ("2", "1"), None),
    ".weight": Reader(lambda p: read_weights(p).tolist(), ("0.5", "1", "2"), None),
    ".position": Reader(lambda p: read_positions(p).tolist(), ("top", "mid", "pos_3"), None),
}
SEPARATORS = {"U+2028": "\u2028", "U+2029": "\u2029", "U+0085": "\u0085"}


def _encode(lines: list[str], *, bom: bool = False, eol: str = "\n") -> bytes:
    return (BOM if bom else b"") + "".join(line + eol for line in lines).encode("utf-8")


def _plain(reader: Reader) -> list[str]:
    """The LF file the other encodings must read like (with a plain comment line if it takes comments)."""
    lines = list(reader.lines)
    if reader.comment is not None:
        lines.insert(1, reader.comment.format(sep=" "))
    return lines


ACCEPTED = {
    "bom": lambda r: _encode(_plain(r), bom=True),
    "crlf": lambda r: _encode(_plain(r), eol="\r\n"),
    "bom+crlf": lambda r: _encode(_plain(r), bom=True, eol="\r\n"),
    "bom-only-first-line-blank": lambda r: _encode(["", *_plain(r)], bom=True),
}


def _cases():
    for reader in READERS:
        for encoding in ACCEPTED:
            yield reader, encoding
        if READERS[reader].comment is not None:
            for sep in SEPARATORS:
                yield reader, f"{sep} in comment"


@pytest.mark.parametrize(("reader", "encoding"), list(_cases()))
def test_encodings_read_like_the_plain_file(tmp_path, reader, encoding):
    r = READERS[reader]
    plain_file, other_file = tmp_path / "plain.txt", tmp_path / "other.txt"
    lines = _plain(r)
    plain_file.write_bytes(_encode(lines))
    if encoding in ACCEPTED:
        other = ACCEPTED[encoding](r)
    else:
        sep = SEPARATORS[encoding.split()[0]]
        other = _encode([r.comment.format(sep=sep) if i == 1 else line for i, line in enumerate(lines)])
    other_file.write_bytes(other)
    want = r.read(plain_file)
    if encoding == "bom-only-first-line-blank" and reader in ("qrels", "run"):
        # same rows, each one line further down
        want = (*want[:4], [n + 1 for n in want[4]], want[5])
    assert r.read(other_file) == want


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("where", ["everywhere", "one line"])
def test_cr_only_line_endings_are_an_error_naming_file_and_line(tmp_path, reader, where):
    r = READERS[reader]
    lines = _plain(r)
    path = tmp_path / "cr.txt"
    if where == "everywhere":
        path.write_bytes(_encode(lines, eol="\r"))
        line = 1
    else:  # LF file with one CR-only line ending on line 2: lines 2 and 3 would be glued together
        text = _encode(lines)
        first = text.index(b"\n")
        second = text.index(b"\n", first + 1)
        path.write_bytes(text[:second] + b"\r" + text[second + 1 :])
        line = 2
    with pytest.raises(
        DataError, match=rf"cr\.txt:{line}: a carriage return \(\\r\) not followed by a line feed"
    ):
        r.read(path)


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le-bom+crlf", "utf-16-be"])
def test_utf16_files_are_an_error_that_says_so(tmp_path, reader, codec):
    """Windows "Unicode" text: the reader says UTF-16 (not a bad label or a stray carriage return)."""
    text = "".join(line + ("\r\n" if "crlf" in codec else "\n") for line in _plain(READERS[reader]))
    if codec == "utf-16-le-bom+crlf":
        data = b"\xff\xfe" + text.encode("utf-16-le")
    elif codec == "utf-16-be":
        data = b"\xfe\xff" + text.encode("utf-16-be")
    else:
        data = text.encode("utf-16")
    path = tmp_path / "wide.txt"
    path.write_bytes(data)
    with pytest.raises(DataError, match=r"wide\.txt:1: the file is UTF-16 text .*save it as UTF-8"):
        READERS[reader].read(path)


@pytest.mark.parametrize("reader", list(READERS))
def test_a_bom_past_the_start_is_an_error_naming_its_line(tmp_path, reader):
    """Two files concatenated, the second with a BOM: never a silently renamed topic or document."""
    lines = _plain(READERS[reader])
    path = tmp_path / "cat.txt"
    path.write_bytes(_encode(lines[:2]) + BOM + _encode(lines[2:]))
    with pytest.raises(DataError, match=r"cat\.txt:3: "):
        READERS[reader].read(path)


SVMLIGHT_READERS = [name for name in READERS if name.startswith("svmlight")]


@pytest.mark.parametrize("reader", SVMLIGHT_READERS)
@pytest.mark.parametrize(
    "content",
    [b"", b"\n\n", b"# only a comment\n# and another\n", BOM, BOM + b"# comment\r\n", b"  \t\n# x\n"],
    ids=["empty", "blank-lines", "comments", "bom-only", "bom-comment-crlf", "spaces-and-comment"],
)
def test_file_without_data_rows_says_so(tmp_path, reader, content):
    path = tmp_path / "nothing.txt"
    path.write_bytes(content)
    with pytest.raises(DataError, match=r"nothing\.txt: no data rows \(the file is empty or has only blank"):
        READERS[reader].read(path)


@pytest.mark.parametrize(
    ("reader", "message"), [("qrels", "no judgments found"), ("run", "no ranked documents")]
)
@pytest.mark.parametrize("content", [b"", BOM + b"# only a comment\r\n"], ids=["empty", "bom-comment-crlf"])
def test_trec_file_without_rows_says_so(tmp_path, reader, message, content):
    path = tmp_path / "nothing.txt"
    path.write_bytes(content)
    with pytest.raises(DataError, match=rf"nothing\.txt: {message}"):
        READERS[reader].read(path)


def test_data_info_cli_on_a_comments_only_file_is_one_clear_line(tmp_path):
    path = tmp_path / "nothing.txt"
    path.write_bytes(b"# header only\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.data", "info", str(path)], capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "no data rows" in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_non_utf8_sidecar_names_file_and_line(tmp_path):
    path = tmp_path / "bad.query"
    path.write_bytes(b"2\n\xff\n")
    with pytest.raises(DataError, match=r"bad\.query:2: not UTF-8 text"):
        read_query_sizes(path)


def test_fields_split_on_ascii_whitespace_only(tmp_path):
    """A no-break space or U+2028 inside a docno is part of it (trec_eval splits on ASCII whitespace)."""
    path = tmp_path / "run.txt"
    path.write_bytes("301 Q0 d\u00a01 1 2.0 t\n301 Q0 d\u20282 2 1.0 t\n".encode())
    assert read_run(path).docno.tolist() == ["d\u00a01", "d\u20282"]


# --- trec_eval's own test files ---------------------------------------------------------------------
def _evaluate(capsys, qrels: Path, run: Path) -> str:
    assert evaluate_main(["--qrels", str(qrels), "--run", str(run), "-q", "-m", "ndcg", "-m", "P.5,10"]) == 0
    return capsys.readouterr().out


@pytest.mark.shared_data
@pytest.mark.parametrize("which", ["qrels", "run", "both"])
@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_bom_on_trec_eval_test_files_changes_nothing(shared_data, tmp_path, capsys, which, eol):
    trec = shared_data / "trec_eval"
    want = _evaluate(capsys, trec / "qrels.test", trec / "results.test")
    files = {}
    for kind, name in (("qrels", "qrels.test"), ("run", "results.test")):
        text = (trec / name).read_bytes().replace(b"\n", eol.encode())
        files[kind] = tmp_path / name
        files[kind].write_bytes((BOM if which in (kind, "both") else b"") + text)
    assert _evaluate(capsys, files["qrels"], files["run"]) == want


@pytest.mark.shared_data
def test_bom_on_a_run_whose_first_line_is_its_best_document(shared_data, tmp_path, capsys):
    """The issue's case: with the BOM read as part of the topic, the first row (topic 302's best
    relevant document) went to a topic "\\ufeff302" that is not judged, and NDCG dropped silently."""
    trec = shared_data / "trec_eval"
    rows = (trec / "results.test").read_text().splitlines()
    judged = {tuple(line.split()[::2][:2]) for line in (trec / "qrels.test").read_text().splitlines()
              if line.split()[3:4] not in (["0"], [])}  # fmt: skip
    best = max((r for r in rows if r.split()[0] == "302" and (r.split()[0], r.split()[2]) in judged),
               key=lambda r: float(r.split()[4]))  # fmt: skip
    reordered = [best, *[r for r in rows if r != best]]
    plain, bom = tmp_path / "plain.run", tmp_path / "bom.run"
    plain.write_text("\n".join(reordered) + "\n")
    bom.write_bytes(BOM + plain.read_bytes())
    want = _evaluate(capsys, trec / "qrels.test", plain)
    assert _evaluate(capsys, trec / "qrels.test", bom) == want
    assert read_run(bom).topics == read_run(plain).topics == ["301", "302", "303"]
    np.testing.assert_array_equal(read_run(bom).values, read_run(plain).values)


# --- the fast engine's chunks, parts and read fallback ---------------------------------------------
def _fast(path: Path, monkeypatch, *, chunk: int, threads: int, memory_map: bool):
    from ltr.data import _fastparse
    from ltr.data._syntax import ParseOptions

    monkeypatch.setattr(_fastparse, "MEMORY_MAP", memory_map)
    return _fastparse.parse_path(path, ParseOptions(output="dense"), n_threads=threads, chunk=chunk)


@pytest.mark.parametrize("memory_map", [True, False], ids=["mmap", "read"])
@pytest.mark.parametrize("chunk", [16, 64, 4096])
@pytest.mark.parametrize("threads", [1, 2])
def test_fast_engine_finds_the_first_lone_cr_in_any_chunk_or_part(
    tmp_path, monkeypatch, memory_map, chunk, threads
):
    """A stray CR deep in the file (a later chunk, a later part, the last byte of a part or of the
    file) is found, at the offset the reference engine reports."""
    from ltr.data import _pyparse
    from ltr.data._syntax import LONE_CR, ParseOptions

    lines = [f"{i % 3} qid:{i // 4} 1:0.{i} 2:{i}" for i in range(40)]
    text = "\n".join(lines) + "\n"
    for at in (5, 23, 39):
        cut = sum(len(line) + 1 for line in lines[:at]) - 1  # the LF ending line `at`
        # a CR-only ending on line `at`; and a CRLF there with the CR-only ending one line later
        lone = text[:cut] + "\r" + text[cut + 1 :]
        crlf_then_lone = text[:cut] + "\r\n" + text[cut + 1 :].replace("\n", "\r", 1)
        for variant, line in ((lone, at), (crlf_then_lone, at + 1)):
            path = tmp_path / "stray.txt"
            path.write_bytes(variant.encode())
            offset = variant.index("\r", cut + 2) if variant is crlf_then_lone else cut
            with pytest.raises(_pyparse.ParseFailure) as ref:
                _pyparse.parse_bytes(path.read_bytes(), ParseOptions(output="dense"))
            with pytest.raises(_pyparse.ParseFailure) as fast:
                _fast(path, monkeypatch, chunk=chunk, threads=threads, memory_map=memory_map)
            assert fast.value.code == ref.value.code == LONE_CR
            assert fast.value.line_start == ref.value.line_start == offset
            assert variant[:offset].count("\n") + 1 == line
    path = tmp_path / "last.txt"
    path.write_bytes(("\n".join(lines) + "\r").encode())  # the file's very last byte
    with pytest.raises(_pyparse.ParseFailure) as fast:
        _fast(path, monkeypatch, chunk=chunk, threads=threads, memory_map=memory_map)
    assert fast.value.code == LONE_CR and fast.value.line_start == path.stat().st_size - 1


@pytest.mark.parametrize("memory_map", [True, False], ids=["mmap", "read"])
@pytest.mark.parametrize("chunk", [4, 64])
def test_fast_engine_ignores_a_bom_with_small_chunks_and_without_mmap(
    tmp_path, monkeypatch, memory_map, chunk
):
    """The BOM is blanked in the first window only, also when the first line is longer than a chunk,
    and the file on disk is never changed."""
    text = "2 qid:1 1:0.5 2:1 # a long first line comment\n0 qid:1 2:0.25\n1 qid:2 1:1\n"
    plain, bom = tmp_path / "plain.txt", tmp_path / "bom.txt"
    plain.write_bytes(text.encode())
    bom.write_bytes(BOM + text.encode())
    want = _fast(plain, monkeypatch, chunk=chunk, threads=2, memory_map=memory_map)
    got = _fast(bom, monkeypatch, chunk=chunk, threads=2, memory_map=memory_map)
    assert got.dense.tolist() == want.dense.tolist() and got.y.tolist() == want.y.tolist()
    assert got.qid.tolist() == want.qid.tolist()
    assert bom.read_bytes() == BOM + text.encode()


@pytest.mark.parametrize("threads", [1, 2])
def test_fast_engine_vector_blocks_see_crlf_and_lone_cr_at_block_edges(tmp_path, monkeypatch, threads):
    """Files longer than one 64 × 255-byte counting block: a CRLF pair split across the block edge is
    no error, and a lone CR on either side of the edge is found (same offset as the reference)."""
    from ltr.data import _pyparse
    from ltr.data._syntax import ParseOptions

    block = 64 * 255
    lines = [f"{i % 3} qid:{i // 4} 1:0.{i:05d} 2:{i % 7}" for i in range(3000)]
    lf = ("\n".join(lines) + "\n").encode()
    plain = tmp_path / "lf.txt"
    plain.write_bytes(lf)
    want = _fast(plain, monkeypatch, chunk=1 << 20, threads=threads, memory_map=True)
    for edge in (block - 1, block, block + 1, 2 * block):
        # move a line end onto the edge by padding the line before it with spaces
        nl = lf.index(b"\n", edge - 40)
        shifted = lf[:nl] + b" " * (edge - nl) + lf[nl:]
        assert shifted[edge : edge + 1] == b"\n"
        crlf = tmp_path / "crlf.txt"
        crlf.write_bytes(shifted[:edge] + b"\r" + shifted[edge:])  # the CR on the edge, its LF after it
        got = _fast(crlf, monkeypatch, chunk=1 << 20, threads=threads, memory_map=True)
        assert got.dense.tolist() == want.dense.tolist()
        data = shifted[:edge] + b"\r" + shifted[edge + 1 :]  # the LF on the edge becomes a lone CR
        stray = tmp_path / "stray.txt"
        stray.write_bytes(data)
        with pytest.raises(_pyparse.ParseFailure) as fast:
            _fast(stray, monkeypatch, chunk=1 << 20, threads=threads, memory_map=True)
        with pytest.raises(_pyparse.ParseFailure) as ref:
            _pyparse.parse_bytes(data, ParseOptions(output="dense"))
        assert fast.value.line_start == ref.value.line_start == edge
