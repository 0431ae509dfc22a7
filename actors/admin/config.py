"""The admin client's configuration: where the brokers are, what the topics hold, and the
AdminClient settings it runs with (Kafka's defaults)."""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.core import Address
from actors.profiles import Profile

__all__ = ["ADMIN_ACTOR", "ADMIN_NODE", "AdminConfig"]

ADMIN_NODE = "admin"
"""The operator's machine: one admin client per cluster, a process of its own."""
ADMIN_ACTOR = "admin"


@dataclass(frozen=True, slots=True)
class AdminConfig:
    bootstrap: tuple[int, ...]
    """`bootstrap.servers`: the brokers asked for metadata and coordinators, in turn."""
    topics: tuple[tuple[str, int], ...] = ()
    """Each topic and its partition count (topics exist before the run and never change, so
    this stands in for DescribeTopics)."""
    profile: Profile = field(default_factory=lambda: Profile.for_version("3.9"))
    request_timeout_ms: int = 30000
    """`request.timeout.ms`: an unanswered request fails after this and is tried again."""
    retry_backoff_ms: int = 100
    """`retry.backoff.ms`: the wait before a failed request is tried again."""
    default_api_timeout_ms: int = 60000
    """`default.api.timeout.ms`: a command not done by then fails with a timeout (the tool's
    `--timeout` is 5000 ms for its describe calls; the model uses the client's default for
    every call)."""

    @property
    def address(self) -> Address:
        return Address(ADMIN_NODE, ADMIN_ACTOR)

    def partitions_of(self, topic: str) -> int:
        return dict(self.topics).get(topic, 0)
