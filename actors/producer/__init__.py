"""The producer client."""
