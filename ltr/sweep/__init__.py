"""Hyper-parameter searches: ltr's Optuna sweeper, its study, pruning, shared data, MLflow runs, the multirun summary."""
