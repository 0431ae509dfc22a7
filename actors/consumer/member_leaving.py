"""Leaving a consumer-protocol group (KIP-848): `leaveGroup` and
`transitionToSendingLeaveGroup` of Kafka's membership manager, and the poll timer's leave.

- `close()` and `unsubscribe()` release the partitions (revoked at a positive epoch, lost
  otherwise) and send a heartbeat at epoch -1 (dynamic) or -2 (static: the coordinator keeps
  it, with its assignment, until its session ends); its answer is not waited for by the
  membership (`close()` waits for it as for any request pending to the coordinator);
- the poll timer: `max.poll.interval.ms` without `poll()` sends that leave heartbeat, makes
  the member STALE and its partitions lost (`onPartitionsLost`); the next `poll()` rejoins at
  epoch 0.

Part of `ConsumerMembershipManager` (its base class), apart for size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.consumer.member_state import MemberState
from actors.core import Out
from protocols.group import LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from protocols.types import TopicPartition

__all__ = ["MemberLeaving"]


class MemberLeaving:
    if TYPE_CHECKING:
        config: Any
        subscriptions: Any
        state: MemberState
        member_epoch: int
        _member_id: str
        current: tuple[TopicPartition, ...]
        target: tuple[TopicPartition, ...]
        reconciliation: Any
        poll_timer_expired: bool
        fields: Any
        requests: Any

        def transition_to(self, out: Out, state: MemberState) -> None: ...
        def heartbeat(self, out: Out) -> None: ...
        def _release(self, out: Out, partitions: list[TopicPartition], how: str, reason: str) -> None: ...

    def partitions_lost_on_leave(self) -> bool:
        return self.member_epoch <= 0 or not self.state.in_group

    def leave_group(self, out: Out, reason: str) -> None:
        """`leaveGroup`: release the partitions, then the leave heartbeat."""
        if not self.state.in_group:
            if self.state is MemberState.FENCED:
                self.transition_to(out, MemberState.UNSUBSCRIBED)
            return
        if self.state in (MemberState.PREPARE_LEAVING, MemberState.LEAVING):
            return
        self.transition_to(out, MemberState.PREPARE_LEAVING)
        self.reconciliation = None
        owned = self.subscriptions.owned()
        self._release(out, owned, "lost" if self.member_epoch <= 0 else "revoked", reason)
        self._send_leave(out)

    def _send_leave(self, out: Out) -> None:
        """`transitionToSendingLeaveGroup`: epoch -1, or -2 for a static member."""
        self.member_epoch = STATIC_LEAVE_EPOCH if self.config.group_instance_id is not None else LEAVE_EPOCH
        self.current, self.target = (), ()
        self.transition_to(out, MemberState.LEAVING)
        self.heartbeat(out)

    def _leave_on_poll_timeout(self, out: Out) -> None:
        """`max.poll.interval.ms` without `poll()`: the leave heartbeat, then STALE with the
        partitions lost; the next `poll()` rejoins."""
        static = self.config.group_instance_id is not None
        out.emit(
            "poll_timeout_expired",
            group_id=self.config.group_id,
            member_id=self._member_id,
            generation_id=self.member_epoch,
            static=static,
        )
        self.poll_timer_expired = True
        self.transition_to(out, MemberState.PREPARE_LEAVING)
        self.reconciliation = None
        self._send_leave(out)
        self.fields.reset()
        self.requests.reset()
        self._release(out, self.subscriptions.owned(), "lost", "poll_timeout")

    def reset_generation_on_leave_group(self) -> None:
        """The leave heartbeat already set the leave epoch."""
