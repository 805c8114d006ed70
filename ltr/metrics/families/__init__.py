"""One module per metric family, each with its formula, a tested example and its ``compute``.

:data:`FAMILIES` lists them in the order :mod:`ltr.metrics.registry` shows them; a new family is a new
module here and one entry in that tuple (docs/architecture.md, "Where a new … goes").
"""

from ltr.metrics.families.ap import AP
from ltr.metrics.families.base import MetricFamily, RankedQueries
from ltr.metrics.families.dcg import DCG, NDCG
from ltr.metrics.families.err import ERR
from ltr.metrics.families.meanndcg import MEAN_NDCG
from ltr.metrics.families.precision import PRECISION
from ltr.metrics.families.recall import RECALL
from ltr.metrics.families.rr import RR

FAMILIES: tuple[MetricFamily, ...] = (NDCG, DCG, MEAN_NDCG, ERR, AP, RR, PRECISION, RECALL)

__all__ = ["FAMILIES", "MetricFamily", "RankedQueries"]
