"""What every stage shares: the error types, config and array checks, per-query helpers, where ltr's own files are."""
