"""What the application around a client does to it, from the scenario's faults.

Kafka's clients are libraries: `close()`, `unsubscribe()`, a long pause in the processing
between two polls or a spell of slow processing are the application's calls, not the network's.
The kernel hands them to the client's actor as a message at the time the scenario says.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.keys import SimKey
from protocols.registry import Kind, message

__all__ = ["APPLICATION_ACTIONS", "ApplicationCall"]

APPLICATION_ACTIONS = ("close", "unsubscribe", "stall", "slow")


@message(SimKey.APPLICATION_CALL, kind=Kind.ONE_WAY)
@dataclass(frozen=True, slots=True)
class ApplicationCall:
    action: str
    """`close`, `unsubscribe`, `stall` (the processing of the records in hand takes
    `duration_ms` longer: a slow batch, a blocking call), or `slow` (from now, each record takes
    `record_ms` to process, for `duration_ms`; 0: to the end of the run)."""
    duration_ms: int = 0
    record_ms: int = 0
