"""The built-in dataset: a deterministic synthetic LETOR-style collection.

It exists so that a new user gets a real training run without downloading anything. It is **not
real data**: every run that uses it says so.

Generative model (all draws from one ``np.random.Generator(seed)``):

* query ``q`` has ``n_q`` documents, ``log n_q ~ Uniform(log min_docs, log max_docs)``, a
  difficulty ``b_q ~ N(0, 0.5²)`` and a topic vector ``t_q ~ N(0, I_4)``;
* document ``d`` has a latent vector ``z_d ~ N(0, I_4)`` and latent relevance
  ``r_d = 1.2·tanh(t_q·z_d / 2) + 0.8·z_d1 − 0.4·z_d2² + b_q + ε_d``, ``ε_d ~ N(0, 0.7²)``;
* labels are ``r_d`` cut at fixed thresholds into grades 0–4; a fraction ``p_empty`` of queries is
  forced to all-zero labels (queries with no relevant document exist in every real collection);
* features: *informative* ones are noisy monotone or interacting transforms of the latent
  variables, *weak* ones carry a small share of the signal, *noise* ones are independent of it;
  a few features are sparse (mostly exact zeros) and a few are query-level (constant in a query).

Example
-------
>>> d = generate(n_queries=20, seed=1)
>>> d.n_queries, d.n_features, int(d.y.max()) <= 4
(20, 46, True)
>>> bool((generate(n_queries=20, seed=1).X == d.X).all())
True
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.config_check import Constraint, check_value, plain
from ltr.core.errors import ConfigError, DataError
from ltr.data.config import check_data_block
from ltr.data.dataset import RankingData
from ltr.data.locking import flocked
from ltr.data.svmlight import load_svmlight, write_svmlight

#: bump when the generative model changes, so cached files are regenerated
GENERATOR_VERSION = 1
SPLITS = ("train", "valid", "test")
#: file names in the LETOR convention (``vali`` for the validation split)
SPLIT_FILES = {"train": "train.txt", "valid": "vali.txt", "test": "test.txt"}
LABEL_THRESHOLDS = np.array([0.4, 1.2, 1.9, 2.6])  # r < 0.4 → 0, … , r ≥ 2.7 → 4
LABEL_RANGE = (0, len(LABEL_THRESHOLDS))  # the grades the generator draws: 0..4

N_INFORMATIVE = 12
N_WEAK = 10
N_NOISE = 20
N_QUERY_LEVEL = 4
N_FEATURES = N_INFORMATIVE + N_WEAK + N_NOISE + N_QUERY_LEVEL
#: the ``load_svmlight`` options the synthetic files are read with (locally and on Dask workers)
PARSE_OPTIONS = {"n_features": N_FEATURES}


def generate(
    n_queries: int,
    *,
    seed: int,
    min_docs: int = 5,
    max_docs: int = 200,
    p_empty: float = 0.05,
    qid_start: int = 1,
) -> RankingData:
    """Generate ``n_queries`` synthetic queries (see the module docstring for the model)."""
    n_queries = check_value(n_queries, int, Constraint(low=1), "n_queries")
    min_docs = check_value(min_docs, int, Constraint(low=1), "min_docs")
    max_docs = check_value(max_docs, int, None, "max_docs")
    if max_docs < min_docs:
        raise ConfigError(f"max_docs: must be >= min_docs={min_docs}, got {max_docs}")
    p_empty = check_value(p_empty, float, Constraint(low=0.0, high=1.0, open_high=True), "p_empty")
    rng = np.random.default_rng(seed)

    sizes = np.exp(rng.uniform(np.log(min_docs), np.log(max_docs + 1), n_queries)).astype(np.int64)
    sizes = np.clip(sizes, min_docs, max_docs)
    n = int(sizes.sum())
    qidx = np.repeat(np.arange(n_queries), sizes)

    difficulty = rng.normal(0.0, 0.5, n_queries)
    topic = rng.normal(0.0, 1.0, (n_queries, 4))
    z = rng.normal(0.0, 1.0, (n, 4))
    match = (topic[qidx] * z).sum(axis=1)
    # what features can see; the label noise below is irreducible
    signal = 1.2 * np.tanh(match / 2.0) + 0.8 * z[:, 0] - 0.4 * z[:, 1] ** 2 + difficulty[qidx]
    relevance = signal + rng.normal(0.0, 0.7, n)
    labels = np.searchsorted(LABEL_THRESHOLDS, relevance, side="right").astype(np.float64)
    empty = rng.random(n_queries) < p_empty
    labels[empty[qidx]] = 0.0

    def noisy(signal: np.ndarray, scale: float) -> np.ndarray:
        return signal + rng.normal(0.0, scale, n)

    informative = np.column_stack(
        [
            noisy(match, 0.5),  # query-document match, like BM25
            np.exp(noisy(match, 0.7) / 3.0),  # monotone transform of the match
            noisy(z[:, 0], 0.4),
            noisy(z[:, 0], 0.8) * 10.0 + 50.0,  # same signal on another scale
            noisy(z[:, 1] ** 2, 0.5),
            np.abs(noisy(z[:, 1], 0.3)),
            noisy(match * (z[:, 0] > 0), 0.6),  # an interaction
            noisy(np.tanh(match / 2.0), 0.3),
            noisy(signal, 1.0),
            noisy(signal, 1.5),
            np.log1p(np.exp(noisy(z[:, 0] + 0.5 * match, 0.8))),
            np.where(rng.random(n) < 0.7, 0.0, noisy(signal, 0.8)),  # sparse but informative
        ]
    )
    weak = np.column_stack([noisy(0.15 * signal, 1.0) for _ in range(N_WEAK - 2)])
    weak_sparse = np.column_stack(
        [np.where(rng.random(n) < 0.85, 0.0, noisy(0.3 * signal, 1.0)) for _ in range(2)]
    )
    noise_dense = rng.normal(0.0, 1.0, (n, N_NOISE - 6))
    noise_sparse = np.where(rng.random((n, 6)) < 0.9, 0.0, rng.exponential(1.0, (n, 6)))
    query_level = np.column_stack(
        [
            np.log(sizes[qidx]),
            noisy(difficulty[qidx], 0.0) + rng.normal(0.0, 0.3, n_queries)[qidx],
            topic[qidx, 0],
            rng.normal(0.0, 1.0, n_queries)[qidx],
        ]
    )
    X = np.column_stack([informative, weak, weak_sparse, noise_dense, noise_sparse, query_level])
    X = np.round(X, 4).astype(np.float32)
    X[X == 0] = 0.0  # no negative zeros in the text files
    qid = np.repeat(np.arange(qid_start, qid_start + n_queries, dtype=np.int64), sizes)
    return RankingData(X=X, y=labels, qid=qid, name=f"synthetic(seed={seed})")


def _settings(data_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The generator settings of a data config (checked; defaults from :class:`SyntheticDataSchema`)."""
    cfg = check_data_block({**plain(data_cfg), "kind": "synthetic"})  # errors name data.<key>, as the config
    return {"generator_version": GENERATOR_VERSION} | {
        key: cfg[key] for key in ("seed", "n_queries", "min_docs", "max_docs", "p_empty")
    }


@contextlib.contextmanager
def _locked(directory: Path, *, shared: bool) -> Iterator[None]:
    """Hold an ``flock`` on ``directory/.lock`` while the block runs: exclusive to (re)generate the splits,
    shared to read them (readers never see a split replaced under them by a generator).

    The kernel releases the lock when its holder exits, also when it is killed, so a dead process never
    blocks the next one. Without ``fcntl`` (Windows), or in a folder where the lock file cannot be
    created (read-only: nobody generates there), the block runs unlocked.
    """
    with flocked(directory / ".lock", shared=shared):
        yield


def _current(paths: Mapping[str, Path], manifest: Path, settings: Mapping[str, Any]) -> bool:
    """Whether ``paths`` exist and ``manifest`` records exactly ``settings``."""
    if not (manifest.is_file() and all(p.is_file() for p in paths.values())):
        return False
    try:
        return json.loads(manifest.read_text()) == settings
    except (ValueError, OSError):
        return False


def ensure_synthetic(directory: str | os.PathLike[str], data_cfg: Mapping[str, Any]) -> dict[str, Path]:
    """Write the synthetic splits as SVMlight files into ``directory`` unless identical ones exist.

    The files are reused when ``manifest.json`` records the same generator settings; otherwise
    they are regenerated. Generation holds an exclusive lock on ``directory/.lock``: processes started
    together in a fresh folder (several ``ltr.train`` runs, a parallel sweep) wait for the first one and
    reuse its files, and two different settings never mix their splits. Each file is written to a
    temporary name and renamed into place, and the manifest last, so an interrupted run never leaves a
    half-written split behind nor a manifest that vouches for files it did not write.
    """
    directory = Path(directory)
    settings = _settings(data_cfg)
    paths = {s: directory / SPLIT_FILES[s] for s in SPLITS}
    manifest = directory / "manifest.json"
    if _current(paths, manifest, settings):  # the common case: no lock, works on a read-only folder
        return paths
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with _locked(directory, shared=False):
            _generate(paths, manifest, settings)
    except OSError as e:
        raise DataError(
            f"data.dir: cannot write the synthetic files into {directory} ({e.strerror or e}); "
            "set data.dir to a writable folder"
        ) from None
    return paths


def _generate(paths: Mapping[str, Path], manifest: Path, settings: Mapping[str, Any]) -> None:
    """Write the splits and then the manifest (the caller holds the exclusive lock)."""
    if _current(paths, manifest, settings):  # another process generated them while we waited
        return
    manifest.unlink(missing_ok=True)  # the splits below are about to change
    folder = manifest.parent
    # temporary files of killed generators (this one holds the lock, so no live writer owns them):
    # ``train.txt.<random>.tmp`` from write_svmlight, ``.train.txt.<pid>.tmp`` from older versions
    for name in [*SPLIT_FILES.values(), "manifest"]:
        for leftover in [*folder.glob(f"{name}.*.tmp"), *folder.glob(f".{name}.*.tmp")]:
            leftover.unlink(missing_ok=True)
    # one generator per split, seeded from the base seed, so split sizes don't change each other
    seeds = np.random.SeedSequence(settings["seed"]).spawn(len(SPLITS))
    qid_start = 1
    for split, child in zip(SPLITS, seeds, strict=True):
        data = generate(
            settings["n_queries"][split],
            seed=int(child.generate_state(1)[0]),
            min_docs=settings["min_docs"],
            max_docs=settings["max_docs"],
            p_empty=settings["p_empty"],
            qid_start=qid_start,
        )
        qid_start += data.n_queries
        write_svmlight(data, paths[split])  # to a temporary name, then renamed
    tmp_manifest = manifest.with_name(f".manifest.{os.getpid()}.tmp")
    tmp_manifest.write_text(json.dumps(settings, indent=2, sort_keys=True))
    os.replace(tmp_manifest, manifest)


@contextlib.contextmanager
def current_synthetic_files(
    data_cfg: Mapping[str, Any],
    ensure: Callable[[Path, Mapping[str, Any]], Mapping[str, Path]] = ensure_synthetic,
) -> Iterator[dict[str, Path]]:
    """The synthetic split files for ``data_cfg``, generated first when needed, held under a shared lock.

    ``ensure(directory, data_cfg)`` generates or reuses the files (:func:`ensure_synthetic`, here or in
    another process, e.g. a Dask worker). The block runs while this process holds a shared lock on
    ``data.dir`` and the files match ``data_cfg``, so a process that regenerates them for other settings
    at the same moment waits until the block is done reading them.
    """
    directory = data_cfg.get("dir")
    if not directory:
        raise ConfigError("data.dir must name the folder for the synthetic files (e.g. data/synthetic)")
    directory = Path(directory)
    settings = _settings(data_cfg)
    while True:
        paths = dict(ensure(directory, data_cfg))
        with _locked(directory, shared=True):
            if _current(paths, directory / "manifest.json", settings):
                yield paths
                return


def load_synthetic(data_cfg: Mapping[str, Any]) -> dict[str, RankingData]:
    """Generate (first use) or reuse the synthetic SVMlight files, then load them with the strict parser
    (:data:`PARSE_OPTIONS`) under the shared lock of :func:`current_synthetic_files`."""
    with current_synthetic_files(data_cfg) as paths:
        return {split: load_svmlight(path, **PARSE_OPTIONS) for split, path in paths.items()}
