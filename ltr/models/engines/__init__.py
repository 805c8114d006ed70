"""One adapter per training engine: LightGBM, XGBoost, CatBoost, scikit-learn, a single feature; binned data reuse."""
