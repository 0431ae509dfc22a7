"""Analytics on Spark: read run directories with explicit schemas, aggregate across runs."""
