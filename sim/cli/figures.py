"""Figures as the command line prints them."""

from __future__ import annotations

from typing import Any

__all__ = ["group_figures"]


def group_figures(figures: dict[str, Any]) -> str:
    """Duplicates and skipped records with their causes, and records processed then lost."""
    parts = []
    for name, key in (("duplicates", "duplicates_by_cause"), ("skipped", "skipped_by_cause")):
        causes = ", ".join(f"{cause} {n}" for cause, n in figures[key].items())
        parts.append(f"{name} {figures[name]}{f' ({causes})' if causes else ''}")
    if figures["processed_then_lost"]:
        parts.append(f"processed then lost {figures['processed_then_lost']}")
    return ", ".join(parts)
