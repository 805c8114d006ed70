"""Data stage: the :class:`RankingData` container, LETOR/SVMlight parsing and writing, binary cache,
dataset registry, query-aware splits and feature normalisation (see ``docs/data.md``)."""

from ltr.data._syntax import ParseOptions
from ltr.data.dataset import RankingData, offsets_from_qid
from ltr.data.svmlight import load_svmlight, write_svmlight

__all__ = ["ParseOptions", "RankingData", "load_svmlight", "offsets_from_qid", "write_svmlight"]
