"""Rankers trained on click logs: position-debiased LambdaMART (LightGBM, XGBoost) and pairwise IPS."""
