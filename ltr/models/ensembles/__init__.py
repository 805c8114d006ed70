"""Ensembles of configured rankers: bagging, score fusion, a learned blend, stacking."""
