"""The application around the consumer: what its thread is doing, what the consumer's parts
call back on it, and its work on the records.

The poll loop (`behavior.Consumer`) is the application thread: the coordinator, the commits and
the position checks run inside its `poll()` and its other calls, as in Kafka's classic
consumer. Where Kafka's code blocks that thread or throws out of `poll()`, a part says so
through `ApplicationThread`.

`Processing` is the scenario's application, not Kafka's: how long it takes over the records a
poll returned, with its stalls and slow spells, and what it has processed. With
`processing = "workers"` a pool of worker threads (`workers.WorkerPool`) does the work instead
of the poll thread, with the same timing.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

from actors.consumer.fetcher import Returned
from actors.consumer.subscription_state import Offsets
from actors.core import Out
from protocols.types import TopicPartition

__all__ = ["App", "ApplicationThread", "Processing"]


class App(Enum):
    """What the application thread is doing."""

    STARTING = "starting"
    POLLING = "polling"
    """Inside `poll()`, waiting for records until the poll's deadline."""
    PROCESSING = "processing"
    """Processing the records the last poll returned."""
    IDLE = "idle"
    """Between two polls, until the next instant of its cadence (`poll.every.ms`)."""
    BLOCKED = "blocked"
    """Inside a call that waits for a commit (commitSync, a synchronous pre-rebalance commit,
    a commit in `onPartitionsRevoked`, `close()`)."""
    STOPPED = "stopped"
    """After `close()`, `unsubscribe()` or a fatal error: it polls no more."""


class ApplicationThread(Protocol):
    def polls_network(self) -> bool:
        """Whether the application thread is inside a call that polls the network client
        (`poll()`, a synchronous commit, `close()`), so that answers are handled as they
        arrive even where the heartbeat thread is off."""

    def fail(self, out: Out, error: str) -> None:
        """A fatal error is thrown out of `poll()`: the application stops."""

    def block_on_commit(self, out: Out) -> None:
        """A synchronous commit is about to be made inside `poll()` (the pre-rebalance commit
        before 3.2, the commit in `onPartitionsRevoked`): the application waits for it, then
        polls again."""

    def commit_completed(self, out: Out) -> None:
        """The synchronous commit the application waits for is done: answered, or given up
        after its retries."""

    def revoked_offsets(self, out: Out, partitions: list[TopicPartition]) -> Offsets | None:
        """What the application's `onPartitionsRevoked` commits for `partitions`, or None while
        it waits for its workers to finish their records (the application is blocked, and polls
        again once they are done)."""


class Processing:
    def __init__(self, process_record_ms: int) -> None:
        self.process_record_ms = process_record_ms
        self.records: list[Returned] = []
        """What the last poll returned, while the application processes it."""
        self.started_ms = 0
        self.generation_id = -1
        self.member_id = ""
        """The member that polled the records, as it was then (logged with them)."""
        self.slow_spells: list[tuple[int, int | None, int]] = []
        """(from, until or None, ms per record) of each slow spell not yet over, oldest first."""
        self.stall_until_ms = 0
        self.processed = 0
        self.finished: Offsets = {}
        """Partition -> (the offset after its last record processed, that record's leader
        epoch), for the partitions still owned: what `commit = "processed"` commits."""
        self.committed: Offsets = {}
        """What `commit = "processed"` last committed before a poll."""

    def start(self, now_ms: int, records: list[Returned], generation_id: int, member_id: str) -> int:
        """The application starts on the records; returns when it is done with them."""
        self.records = records
        self.generation_id, self.member_id = generation_id, member_id
        self.started_ms = now_ms
        self.slow_spells = [s for s in self.slow_spells if s[1] is None or s[1] > now_ms]
        return now_ms + self.duration_ms(now_ms, sum(r.end - r.first for r in records))

    def duration_ms(self, start_ms: int, count: int) -> int:
        """How long `count` records take from `start_ms`, one after the other: each takes
        `process.record.ms`, or the time of the latest slow spell under way when it starts."""
        base = self.process_record_ms
        if not self.slow_spells:
            return count * base
        t = start_ms
        for _ in range(count):
            took = base
            for since, until, record_ms in self.slow_spells:
                if since <= t and (until is None or t < until):
                    took = record_ms
            t += took
        return t - start_ms

    def finish(self, out: Out, group_id: str) -> None:
        """The application is done with the records: they are logged."""
        for r in self.records:
            self.log(out, group_id, self.member_id, self.generation_id, r)
        self.records = []

    def log(self, out: Out, group_id: str, member_id: str, generation_id: int, r: Returned) -> None:
        """Records processed: logged with the member that polled them, and counted."""
        self.processed += r.end - r.first
        self.finished[r.tp] = (r.end, r.leader_epoch)
        out.emit(
            "records_processed",
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            topic=r.tp.topic,
            partition=r.tp.partition,
            first_offset=r.first,
            end_offset=r.end,
            records=r.end - r.first,
            leader_epoch=r.leader_epoch,
        )

    def forget(self, owned: dict[TopicPartition, object]) -> None:
        """Partitions no longer owned: what was processed of them is no one's to commit now."""
        if any(tp not in owned for tp in self.finished):
            self.finished = {tp: f for tp, f in self.finished.items() if tp in owned}
        if any(tp not in owned for tp in self.committed):
            self.committed = {tp: f for tp, f in self.committed.items() if tp in owned}

    def finished_of(self, partitions: list[TopicPartition]) -> Offsets:
        return {tp: self.finished[tp] for tp in partitions if tp in self.finished}

    def to_commit(self) -> Offsets:
        """`commit = processed` before a poll: what was processed, if it moved since the last
        such commit (a failed commitAsync is not retried: the next one carries its offsets)."""
        if not self.finished or self.finished == self.committed:
            return {}
        self.committed = dict(self.finished)
        return self.committed

    def stall(self, now_ms: int, duration_ms: int) -> None:
        self.stall_until_ms = max(self.stall_until_ms, now_ms + duration_ms)

    def slow(self, now_ms: int, duration_ms: int, record_ms: int) -> int | None:
        """A slow spell from now (for `duration_ms`, or for good if 0). Returns when the
        records in hand are done now that those not yet begun take the spell's time, if the
        application has any."""
        self.slow_spells.append((now_ms, now_ms + duration_ms if duration_ms else None, record_ms))
        if not self.records:
            return None
        count = sum(r.end - r.first for r in self.records)
        return self.started_ms + self.duration_ms(self.started_ms, count)
