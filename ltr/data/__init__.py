"""Data stage: the :class:`RankingData` container, LETOR/SVMlight parsing, synthetic data."""

from ltr.data.dataset import RankingData, offsets_from_qid

__all__ = ["RankingData", "offsets_from_qid"]
