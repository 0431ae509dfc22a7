"""The consumer client."""
