"""Why a ranker scores documents as it does: exact per-document feature contributions
(:mod:`~ltr.attribution.contributions`), one query or a pair of documents read from them
(:mod:`~ltr.attribution.views`), and rank-aware global importance with bootstrap CIs over queries
(:mod:`~ltr.attribution.importance`). The command is ``python -m ltr.explain`` (docs/explain.md)."""
