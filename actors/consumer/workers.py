"""The application's worker threads (`processing = "workers"`): what `poll()` returned is handed
to a bounded queue and processed by a pool of workers while the poll thread polls on, as many
Kafka applications do. This is the scenario's application, not Kafka's; the consumer is not
safe for multi-threaded access, so only the poll thread calls it (`behavior.Consumer`): it hands
records off, pauses and resumes partitions, and commits.

- A *task* is the records one poll returned from one partition in one leader epoch. Tasks wait
  in one queue, in the order the polls returned them.
- One partition is handled by one worker at a time, as a key-ordered pool does: a free worker
  (lowest number first) takes the oldest waiting task whose partition no other worker has in
  hand, so each partition's records are processed in offset order, each once.
- A worker takes `process.record.ms` per record (a slow spell's time for a record begun within
  it), and logs the task's records (`records_processed`) when it has done them all. A stall
  stops every worker for its duration: the tasks in hand end that much later, and none starts
  before it is over.
- The queue's bound is kept by pausing partitions, not by blocking the poll thread: after a
  hand-off that leaves `worker.queue.records` or more records waiting, the partitions whose
  records wait are paused (`KafkaConsumer.pause`: not fetched, and `poll()` returns none of
  theirs), so the poll thread goes on polling (heartbeats, no poll timeout); before a poll, once
  no record waits, they are resumed.
- The tasks of partitions the consumer no longer owns are dropped, the one a worker has in hand
  included (its worker is interrupted, as `Future.cancel(true)` would): they were never
  processed. A crash loses the queue and the tasks in hand with the process.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from actors.consumer.application import Processing
from actors.consumer.config import ConsumerConfig
from actors.consumer.fetcher import Returned
from actors.consumer.group_membership import GroupMembership
from actors.consumer.subscription_state import SubscriptionState
from actors.core import Out
from protocols.types import TopicPartition

__all__ = ["Task", "WorkerPool"]


@dataclass(frozen=True, slots=True)
class Task:
    records: Returned
    generation_id: int
    member_id: str
    """The member that polled the records, as it was then (logged with them)."""

    @property
    def count(self) -> int:
        return self.records.end - self.records.first


@dataclass(slots=True)
class Worker:
    task: Task | None = None
    started_ms: int = 0
    stalled_ms: int = 0
    """What stalls added to the task in hand."""
    until_ms: int = 0


class WorkerPool:
    def __init__(self, config: ConsumerConfig, processing: Processing, subscriptions: SubscriptionState) -> None:
        self.config = config
        self.workers = [Worker() for _ in range(config.worker_threads)]
        self.queue: list[Task] = []
        self.processing = processing
        self.subscriptions = subscriptions
        self.paused: list[TopicPartition] = []
        """The partitions paused because the queue was full, sorted."""

    # ------------------------------------------------------------------ the queue

    def waiting(self) -> int:
        """Records in the queue, not yet taken by a worker."""
        return sum(task.count for task in self.queue)

    def waiting_partitions(self) -> list[TopicPartition]:
        return sorted({task.records.tp for task in self.queue})

    def holds(self, partitions: Container[TopicPartition]) -> bool:
        """Whether records of these partitions are still queued or in a worker's hands."""
        return any(t.records.tp in partitions for t in self.queue) or any(
            w.task is not None and w.task.records.tp in partitions for w in self.workers
        )

    def hand_off(self, out: Out, now_ms: int, returned: list[Returned], member: GroupMembership) -> None:
        """The poll thread hands a poll's records off (the queue takes them all), then pauses
        the partitions whose records wait if the queue is full."""
        self.queue += [Task(r, member.generation_id, member.member_id) for r in returned]
        self._dispatch(out, now_ms)
        waiting = self.waiting()
        if waiting < self.config.worker_queue_records:
            return
        owned = self.subscriptions.assigned
        new = [tp for tp in self.waiting_partitions() if tp in owned and tp not in self.paused]
        if new:
            self.subscriptions.pause(new)
            self.paused = sorted(self.paused + new)
            self._emit(out, "partitions_paused", new, waiting, member)

    def resume_if_drained(self, out: Out, member: GroupMembership) -> None:
        """Before a poll: once no record waits in the queue, the paused partitions resume."""
        if not self.paused or self.queue:
            return
        resumed, self.paused = self.paused, []
        self.subscriptions.resume(resumed)
        self._emit(out, "partitions_resumed", resumed, 0, member)

    def _emit(self, out: Out, event: str, partitions: list[TopicPartition], waiting: int, member: GroupMembership) -> None:
        out.emit(
            event,
            group_id=self.config.group_id,
            member_id=member.member_id,
            generation_id=member.generation_id,
            partitions=[str(tp) for tp in partitions],
            count=waiting,
        )

    def _dispatch(self, out: Out, now_ms: int) -> None:
        """Each free worker takes the oldest waiting task of a partition no worker holds."""
        for i, worker in enumerate(self.workers):
            if not self.queue:
                return
            if worker.task is not None:
                continue
            held = {w.task.records.tp for w in self.workers if w.task is not None}
            at = next((k for k, task in enumerate(self.queue) if task.records.tp not in held), None)
            if at is None:
                return
            task = self.queue.pop(at)
            start = max(now_ms, self.processing.stall_until_ms)
            worker.task, worker.started_ms, worker.stalled_ms = task, start, 0
            worker.until_ms = start + self.processing.duration_ms(start, task.count)
            out.set_timer(f"worker:{i}", worker.until_ms - now_ms)

    # ------------------------------------------------------------------ the workers

    def finish(self, out: Out, index: int, now_ms: int, group_id: str) -> bool:
        """Worker `index`'s timer: its task is done and logged, and it takes the next one.
        False if it had none (its task was dropped)."""
        worker = self.workers[index]
        task = worker.task
        if task is None or now_ms < worker.until_ms:
            return False
        worker.task = None
        self.processing.log(out, group_id, task.member_id, task.generation_id, task.records)
        self._dispatch(out, now_ms)
        return True

    def drop_unowned(self, out: Out, now_ms: int, owned: Container[TopicPartition]) -> None:
        """The tasks of partitions no longer owned go, the ones in hand included, and their
        pauses (a new assignment of theirs starts unpaused)."""
        if any(tp not in owned for tp in self.paused):
            self.paused = [tp for tp in self.paused if tp in owned]
        if not self.holds(_Not(owned)):
            return
        self.queue = [task for task in self.queue if task.records.tp in owned]
        for i, worker in enumerate(self.workers):
            if worker.task is not None and worker.task.records.tp not in owned:
                worker.task = None
                out.cancel_timer(f"worker:{i}")
        self._dispatch(out, now_ms)

    def stall(self, out: Out, now_ms: int, duration_ms: int) -> None:
        """Every worker stops for `duration_ms` (after a stall under way, what it adds)."""
        before = max(now_ms, self.processing.stall_until_ms)
        self.processing.stall(now_ms, duration_ms)
        added = self.processing.stall_until_ms - before
        if added <= 0:
            return
        for i, worker in enumerate(self.workers):
            if worker.task is not None:
                worker.stalled_ms += added
                worker.until_ms += added
                out.set_timer(f"worker:{i}", worker.until_ms - now_ms)

    def slow(self, out: Out, now_ms: int) -> None:
        """A slow spell began (`Processing.slow`): the tasks in hand end when its time per
        record, for the records begun within it, makes them end."""
        for i, worker in enumerate(self.workers):
            task = worker.task
            if task is not None:
                took = self.processing.duration_ms(worker.started_ms, task.count)
                worker.until_ms = worker.started_ms + took + worker.stalled_ms
                out.set_timer(f"worker:{i}", max(0, worker.until_ms - now_ms))

    def snapshot(self) -> dict[str, object]:
        return {
            "queued": self.waiting(),
            "in_hand": [str(w.task.records.tp) if w.task is not None else None for w in self.workers],
        }


class _Not:
    """The partitions not in `owned`."""

    def __init__(self, owned: Container[TopicPartition]) -> None:
        self.owned = owned

    def __contains__(self, tp: object) -> bool:
        return tp not in self.owned
