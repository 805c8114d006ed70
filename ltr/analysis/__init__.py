"""What the per-query values say: comparisons of systems, metric agreement, segments, which queries to label next."""
