"""Property and fuzz tests of the SVMlight parsers (hypothesis).

* round trip: ``load(write(data)) == data`` bit for bit (float32 and float64) on both engines;
* fuzz: random and mutated lines parse to identical arrays on the fast (numba) and reference
  (pure Python) engines, or fail on both with the same ``DataError`` naming ``file:line``; nothing
  else escapes (no crash, no other exception type, no silent disagreement).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ltr.core.errors import DataError
from ltr.data import RankingData
from ltr.data.svmlight import load_svmlight, write_svmlight

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_TMP = Path(tempfile.mkdtemp(prefix="ltr-fuzz-"))


def _file(content: bytes, name: str = "fuzz.txt") -> Path:
    p = _TMP / name
    p.write_bytes(content)
    return p


@st.composite
def ranking_data(draw, dtype):
    n = draw(st.integers(1, 25))
    f = draw(st.integers(1, 8))
    width = 32 if dtype == np.float32 else 64
    values = st.floats(width=width, allow_nan=False, allow_infinity=False, allow_subnormal=width == 32)
    X = draw(hnp.arrays(dtype, (n, f), elements=values))
    mask = draw(hnp.arrays(np.bool_, (n, f)))
    X[mask] = 0
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=n))
    qid = np.repeat(np.arange(len(sizes)), sizes)[:n]
    qid = np.r_[qid, np.full(n - qid.shape[0], len(sizes))].astype(np.int64)
    qid = qid * draw(st.integers(1, 10**12))
    y = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 30)))
    return RankingData(X=X if draw(st.booleans()) else sp.csr_matrix(X), y=y, qid=qid)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_trip_property(dtype):
    @SETTINGS
    @given(d=ranking_data(dtype))
    def check(d):
        p = write_svmlight(d, _TMP / "rt.txt")
        want = d.X.toarray() if d.is_sparse else d.X
        for engine in ("numba", "python"):
            back = load_svmlight(
                p,
                n_features=d.n_features,
                dtype=np.dtype(dtype).name,
                engine=engine,
                output="dense",
                huge=None if dtype == np.float32 else float(np.finfo(dtype).max),
            )
            np.testing.assert_array_equal(back.X, want)
            np.testing.assert_array_equal(back.y, d.y)
            np.testing.assert_array_equal(back.qid, d.qid)

    check()


ALPHABET = "0123456789:.-+e qid#\t\r\nnaifxE"
NO_ROWS = "(the file is empty or has only blank and comment lines)"
VALID_TOKENS = ["1:0.5", "2:-3", "3:1e5", "2:inf", "4:nan", "5:1.79e308", "0:1", "10:2", "3:.5", "7:5."]


@st.composite
def mutated_lines(draw):
    """Mostly well-formed LETOR lines with random edits, so every branch of the grammar is reached."""
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        label = draw(st.sampled_from(["0", "1", "2", "4", "1.5", "-1", "nan", "x", "3e0", "+2", "7"]))
        qid = draw(st.sampled_from(["qid:1 ", "qid:2 ", "qid:x ", "", "qid:1 ", "qid:00012 "]))
        feats = draw(st.lists(st.sampled_from(VALID_TOKENS), max_size=6))
        comment = draw(st.sampled_from(["", "", " # docid = d1", "#c:1"]))
        line = f"{label} {qid}{' '.join(feats)}{comment}"
        if draw(st.booleans()):
            pos = draw(st.integers(0, len(line)))
            line = line[:pos] + draw(st.text(ALPHABET, max_size=3)) + line[pos:]
        lines.append(line)
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(lines) + draw(st.sampled_from([eol, ""]))


OPTION_SETS = [
    {},
    {"allow_unsorted": True, "nonfinite": "missing", "integer_labels": False, "allow_negative_labels": True},
    {"zero_based": True, "nonfinite": "keep", "n_features": 8, "output": "csr", "allow_unsorted": True},
    {"nonfinite": "clip", "huge": 1e4, "label_range": (0, 4), "output": "dense"},
]


def _outcome(path: Path, engine: str, opts: dict):
    try:
        d = load_svmlight(path, engine=engine, query_file=None, weight_file=None, regroup=True, **opts)
    except DataError as e:
        return ("error", str(e))
    X = d.X.toarray() if d.is_sparse else d.X
    return ("ok", X.tobytes(), X.shape, d.is_sparse, d.y.tobytes(), d.qid.tobytes())


# The fast parser reads a feature token eight bytes at a time only when >= SWAR_REACH bytes of the
# part follow it; a padding comment line puts every generated token on that path too.
PADDING = "\n#" + "=" * 64 + "\n"


def _check_same(text: str, opts: dict) -> None:
    _check_same_once(text, opts)
    _check_same_once(text + PADDING, opts)


def _check_same_once(text: str, opts: dict) -> None:
    p = _file(text.encode("latin-1"))
    fast, ref = _outcome(p, "numba", opts), _outcome(p, "python", opts)
    assert fast == ref, (text, opts, fast[:2], ref[:2])
    if fast[0] == "error":
        m = re.match(re.escape(str(p)) + r":(\d+): ", fast[1])
        # qid-grouping, sidecar and no-data-rows errors name the file (and query), the rest file:line
        assert m or "qid" in fast[1] or fast[1] == f"{p}: no data rows {NO_ROWS}", fast[1]
        if m:
            assert 1 <= int(m.group(1)) <= text.count("\n") + 1


@pytest.mark.parametrize("opts", OPTION_SETS, ids=range(len(OPTION_SETS)))
def test_fuzz_mutated_lines_agree(opts):
    @SETTINGS
    @given(text=mutated_lines())
    def check(text):
        _check_same(text, opts)

    check()


@pytest.mark.parametrize("opts", OPTION_SETS[:2], ids=range(2))
def test_fuzz_random_bytes_agree(opts):
    @SETTINGS
    @given(text=st.text(ALPHABET, max_size=80))
    def check(text):
        _check_same(text, opts)

    check()


def test_numbers_agree_with_python_float():
    """The fast number parser rounds like Python's float for many hand-picked and random spellings."""
    rng = np.random.default_rng(3)
    vals = np.r_[
        rng.normal(size=300) * 10.0 ** rng.integers(-40, 40, 300), 0.1, 1 / 3, 2.0**-60, 5e-324 * 2**60
    ]
    spellings = (
        [repr(float(v)) for v in vals] + [f"{v:.17e}" for v in vals[:50]] + [f"{v:.9g}" for v in vals[:50]]
    )
    spellings += [
        "0.000000000000000000000000000123456789012345678",
        "123456789012345678901234567890",
        "1e-400",
        "1e400",
        "-0",
        "00012.50",
        "9007199254740993",
        "+.5E+3",
        "7.",
    ]
    text = "\n".join(f"0 qid:1 1:{s}" for s in spellings) + "\n"
    p = _file(text.encode())
    fast = load_svmlight(p, dtype="float64", nonfinite="keep", huge=1e308 * 1.79, engine="numba").X[:, 0]
    want = np.array([float(s) for s in spellings])
    want[np.abs(want) > 1.79e308] = np.copysign(np.inf, want[np.abs(want) > 1.79e308])
    np.testing.assert_array_equal(fast, want)


SWAR_CASES = {
    # token: value the eight-bytes-at-a-time path must return (or None: it must hand over)
    "12:0.305345": 0.305345,
    "7:143": 143.0,
    "0007:2": 2.0,
    "3:-0.5": -0.5,
    "3:+.25": 0.25,
    "3:5.": 5.0,
    "3:-0": -0.0,
    "1234567:1": 1.0,
    "3:1234567.1234567": 1234567.1234567,
    "3:0.0000001": 1e-7,
    "12345678:1": None,  # 8 index digits
    "3:12345678": None,  # 8 digits before the dot
    "3:0.12345678": None,  # 8 digits after the dot
    "3:1e5": None,
    "3:nan": None,
    "3:.": None,
    "3:": None,
    ":5": None,
    "3:--5": None,
    "3:5x": None,
    "3:5\xe9": None,
}


@pytest.mark.parametrize("token", list(SWAR_CASES))
def test_swar_token_fast_path_or_hand_over(token):
    """The eight-bytes-at-a-time token reader: exact values on its path, a hand-over otherwise."""
    from ltr.data._fastparse import SWAR, SWAR_REACH, _swar_token

    if not SWAR:
        pytest.skip("big-endian machine: the byte-by-byte path is the only one")
    raw = token.encode("latin-1")
    buf = np.frombuffer(raw + b" " + b"9" * SWAR_REACH, dtype=np.uint8).copy()
    ok, idx, value, end = _swar_token(buf, 0)
    want = SWAR_CASES[token]
    if want is None:
        assert not ok
        return
    assert ok and end == len(raw)
    assert idx == int(token.split(":")[0])
    assert value == want and np.signbit(value) == np.signbit(want)
    assert value == float(token.split(":")[1])


def test_swar_and_byte_paths_agree_on_hand_picked_tokens():
    """Every case above, mid-file (fast path) and as the last token of the file (byte path)."""
    for token in SWAR_CASES:
        line = f"1 qid:1 {token}"
        for text in (line + PADDING, line):
            _check_same_once(text, {"allow_unsorted": True, "nonfinite": "keep", "zero_based": True})
