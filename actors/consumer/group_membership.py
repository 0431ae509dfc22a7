"""The interface between the poll loop and the consumer's group membership.

Kafka has two: the classic protocol (`ConsumerCoordinator` on `AbstractCoordinator`, with
JoinGroup, SyncGroup and a heartbeat thread; here `consumer_coordinator.py`) and, from 3.7,
KIP-848's consumer protocol (`ConsumerMembershipManager`, driven by ConsumerGroupHeartbeat;
not modelled). The poll loop and the commits see either through `GroupMembership` alone: what
they need of the membership is the same for both.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from actors.backoff import RetryBackoff
from actors.consumer.network import InFlight
from actors.core import Out
from protocols.errors import ErrorCode

__all__ = ["COORDINATOR_ERRORS", "NO_GENERATION", "Generation", "GroupMembership"]

NO_GENERATION = -1
"""The generation id of a member out of any generation."""

COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
"""Errors of a group request that mean the coordinator moved: it is marked unknown."""


class Generation(NamedTuple):
    """`AbstractCoordinator.Generation`: what a commit carries (KIP-848: the member epoch)."""

    generation_id: int
    member_id: str


class GroupMembership(Protocol):
    # ------------------------------------------------------------------ who the member is

    @property
    def member_id(self) -> str:
        """Logged with what the member does ("" before it has one)."""

    @property
    def generation_id(self) -> int:
        """Logged with what the member does (-1 out of a generation)."""

    @property
    def coordinator(self) -> int | None:
        """The group coordinator's broker, None while unknown."""

    def generation_if_stable(self) -> Generation | None:
        """`generationIfStable`: the generation a commit carries; None while the member is not
        STABLE, and then the commit fails in the client without being sent."""

    def offset_fetch_member(self) -> tuple[str | None, int]:
        """The member id and epoch an OffsetFetch carries (v9's `MemberInfo`); None and -1 when
        it names no member."""

    def rebalance_in_progress(self) -> bool:
        """`rebalanceInProgress`: tells a commit's RebalanceInProgressException (True) from its
        CommitFailedException (out of any generation)."""

    def snapshot(self) -> dict[str, Any]:
        """state, member_id, generation_id and coordinator, in that order."""

    @property
    def retry_backoff(self) -> RetryBackoff:
        """The client's retry back-off (`retryBackoff`; KIP-580 from 3.7)."""

    # ------------------------------------------------------------------ the poll loop

    def lookup_coordinator(self, out: Out) -> None:
        """Look the coordinator up if it is unknown and no lookup is under way."""

    def poll(self, out: Out) -> None:
        """`coordinator.poll` in each pass of `poll()`'s loop: find the coordinator, take the
        membership's next step without waiting for it, and auto-commit when due. It may block
        the application on a synchronous commit (`ApplicationThread.block_on_commit`)."""

    def poll_heartbeat(self, out: Out) -> None:
        """`pollHeartbeat`: the application called `poll()` (`max.poll.interval.ms` starts)."""

    def partitions_lost_on_leave(self) -> bool:
        """Whether leaving now reports the partitions lost (no `onPartitionsRevoked`, so the
        application's listener commits nothing)."""

    def leave_group(self, out: Out, reason: str) -> None:
        """`onLeavePrepare`, then leave the group, not waiting for the answer (`close()`,
        `unsubscribe()`)."""

    def reset_generation_on_leave_group(self) -> None:
        """`resetGenerationOnLeaveGroup`, after `unsubscribe()`'s leave."""

    def stop(self, out: Out) -> None:
        """The consumer polls no more: nothing runs on its own any longer (heartbeats, the
        poll timer, coordinator lookups)."""

    # ------------------------------------------------------------------ answers, timers, errors

    def on_response(self, out: Out, correlation_id: int, request: InFlight, message: Any) -> None:
        """An answer to a request the membership sent."""

    def on_timer(self, out: Out, kind: str) -> None:
        """A timer the membership set fired (any the poll loop does not own)."""

    def on_disconnect(self, out: Out, broker: int) -> None:
        """The connection to `broker` closed."""

    def mark_coordinator_unknown(self, out: Out, reason: str, request: str = "") -> None:
        """`markCoordinatorUnknown`: failing the requests in flight to it. `request`: the
        request whose answer said so, if an answer did."""

    def request_rejoin(self) -> None:
        """`requestRejoin`: a commit was answered REBALANCE_IN_PROGRESS."""

    def reset_generation(self, out: Out, reason: str, *, keep_member_id: bool) -> None:
        """`resetStateAndGeneration`: an answer fenced the member out of its generation; its
        partitions are lost at its next rejoin."""
