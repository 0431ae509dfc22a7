"""The admin client: the operator's `kafka-consumer-groups` commands, run as Kafka's
`AdminClient` runs them, against the real brokers and group coordinators.

Commands run one at a time, in the order given, as an operator types them. Each is a short
sequence of steps; each step sends its requests and waits for every answer:

- `reset_offsets` (`--reset-offsets --execute`): FindCoordinator, DescribeGroups (the tool
  refuses unless the group is Empty or Dead), the partitions (the topic's, or every partition
  the group has an offset for: OffsetFetch), the committed offsets for a shift, Metadata for
  the leaders, ListOffsets per leader for each offset the target needs (`reset.py`), then
  OffsetCommit at generation -1 with no member id (`alterConsumerGroupOffsets`).
- `delete_offsets` (`--delete-offsets`): FindCoordinator, OffsetDelete (KIP-496, 2.4+).
- `delete_group` (`--delete`): FindCoordinator, DeleteGroups (KIP-229, 1.1+).
- `describe_group` (`--describe --state --members`): FindCoordinator, DescribeGroups.
- `list_groups` (`--list --state`): Metadata for the live brokers, then ListGroups to each.

A step that fails (no answer within `request.timeout.ms`, a closed connection, a retriable
error) starts again after `retry.backoff.ms`: a coordinator that moved or is unknown
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) is looked up again first, as `KafkaAdminClient`
does. A command not done within `default.api.timeout.ms` ends with REQUEST_TIMED_OUT. A request
an older version of Kafka does not have fails at once with UNSUPPORTED_VERSION, as the client
finds from the broker's ApiVersions.
"""

from __future__ import annotations

from typing import Any

from actors.admin import results
from actors.admin.config import AdminConfig
from actors.admin.job import Job
from actors.admin.requests import Requests, timer_key
from actors.admin.reset import check_offsets_range, datetime_offsets, shifted_offsets
from actors.core import Ctx, Inbound, Out
from protocols.admin import (
    AdminCommand,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
)
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.group import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TopicPartitions,
)
from protocols.metadata import MetadataRequest, MetadataResponse
from protocols.replication import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from protocols.types import TopicPartition

__all__ = ["AdminClient"]

E = ErrorCode
FIND_AGAIN = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})
"""Coordinator errors after which the client looks the coordinator up again."""
TRY_AGAIN = frozenset({E.COORDINATOR_LOAD_IN_PROGRESS})
COORDINATOR_STEPS = frozenset({"describe", "committed", "commit", "delete", "offset_delete"})
AGAIN_FROM = {"list": "brokers", "list_offsets": "metadata"}
"""Where a failed step starts again (its leaders or brokers may have changed)."""
SPEC_TIMESTAMPS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}


class AdminClient:
    """The operator's admin client (one per cluster, on node `admin`)."""

    def __init__(self, config: AdminConfig) -> None:
        self.config = config
        self.requests = Requests(config)
        self.queue: list[AdminCommand] = []
        self.job: Job | None = None
        self.results: dict[int, dict[str, Any]] = {}
        """Each finished command's outcome, by its number (the Python API reads them)."""

    def on_start(self, ctx: Ctx) -> Out:
        return Out()

    # ------------------------------------------------------------------ dispatch

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = Out()
        message = inbound.message
        if isinstance(message, AdminCommand):
            self.queue.append(message)
            if self.job is None:
                self._next(ctx, out)
            return out
        if isinstance(message, Disconnected):
            for request in self.requests.disconnected(out, message.peer):
                self._failed(ctx, out, request.request_id, request.attempt)
            return out
        request = self.requests.answered(out, inbound.correlation_id)
        job = self.job
        if request is None or job is None or request.request_id != job.command.request_id or request.attempt != job.attempt:
            return out  # an answer to a step that failed and started again, or to a command over
        self._on_answer(ctx, out, job, request.broker_id, message)
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        kind, arg = results.parse_key(key)
        job = self.job
        if kind == "timeout":
            request = self.requests.timed_out(arg)
            if request is not None:
                self.requests.rotate_bootstrap()
                self._failed(ctx, out, request.request_id, request.attempt)
        elif job is not None and arg == job.command.request_id:
            if kind == "retry":
                self._enter(ctx, out, job, job.step)
            elif kind == "deadline":
                self._finish(ctx, out, job, E.REQUEST_TIMED_OUT.name)
        return out

    def snapshot(self) -> dict[str, Any]:
        return {
            "running": None if self.job is None else self.job.command.request_id,
            "step": None if self.job is None else self.job.step,
            "queued": [c.request_id for c in self.queue],
            "results": {str(k): v for k, v in sorted(self.results.items())},
        }

    # ------------------------------------------------------------------ commands and steps

    def _next(self, ctx: Ctx, out: Out) -> None:
        while self.job is None and self.queue:
            command = self.queue.pop(0)
            job = Job(command)
            self.job = job
            profile = self.config.profile
            missing = {"delete_group": not profile.delete_groups, "delete_offsets": not profile.offset_delete}
            if missing.get(command.operation, False):
                self._finish(ctx, out, job, E.UNSUPPORTED_VERSION.name)
                continue
            out.set_timer(timer_key("deadline", command.request_id), self.config.default_api_timeout_ms)
            self._enter(ctx, out, job, "brokers" if command.operation == "list_groups" else "find")

    def _enter(self, ctx: Ctx, out: Out, job: Job, step: str) -> None:
        """Start `step` (again): a new attempt, so answers to an earlier one are ignored."""
        job.step = step
        job.attempt += 1
        job.waiting = 1
        c = job.command
        send = self.requests.send
        rid, attempt = c.request_id, job.attempt
        if step == "find":
            send(out, rid, attempt, self.requests.bootstrap_broker(), FindCoordinatorRequest(c.group_id))
        elif step == "describe":
            send(out, rid, attempt, job.coordinator, DescribeGroupsRequest((c.group_id,)), coordinator=True)
        elif step == "committed":
            topics = (TopicPartitions(c.topic, tuple(tp.partition for tp in job.partitions)),) if c.topic else ()
            send(out, rid, attempt, job.coordinator, OffsetFetchRequest(c.group_id, topics), coordinator=True)
        elif step == "metadata":
            topics = tuple(sorted({tp.topic for tp in job.partitions}))
            send(out, rid, attempt, self.requests.bootstrap_broker(), MetadataRequest(topics))
        elif step == "list_offsets":
            self._send_list_offsets(ctx, out, job)
        elif step == "commit":
            self._send_commit(out, job)
        elif step == "delete":
            send(out, rid, attempt, job.coordinator, DeleteGroupsRequest((c.group_id,)), coordinator=True)
        elif step == "offset_delete":
            topic = TopicPartitions(c.topic, tuple(tp.partition for tp in job.partitions))
            send(out, rid, attempt, job.coordinator, OffsetDeleteRequest(c.group_id, (topic,)), coordinator=True)
        elif step == "brokers":
            send(out, rid, attempt, self.requests.bootstrap_broker(), MetadataRequest(()))
        elif step == "list":
            brokers = sorted(b for b in job.listed if b not in job.list_errors or job.list_errors[b] != "NONE")
            job.waiting = len(brokers)
            for b in brokers:
                send(out, rid, attempt, b, ListGroupsRequest(), coordinator=True)
            if not brokers:
                self._finish(ctx, out, job, E.NONE.name)

    def _failed(self, ctx: Ctx, out: Out, request_id: int, attempt: int) -> None:
        """A request of the current step went unanswered or lost its connection."""
        job = self.job
        if job is None or job.command.request_id != request_id or job.attempt != attempt:
            return
        # A coordinator is looked up again; a broker that failed ListGroups may have left the
        # cluster, so the live brokers are asked for again.
        self._retry(out, job, "find" if job.step in COORDINATOR_STEPS else AGAIN_FROM.get(job.step, job.step))

    def _retry(self, out: Out, job: Job, step: str) -> None:
        job.step = step
        job.attempt += 1  # whatever the failed attempt still has in flight is ignored
        out.set_timer(timer_key("retry", job.command.request_id), self.config.retry_backoff_ms)

    def _coordinator_error(self, out: Out, job: Job, error: ErrorCode) -> bool:
        """Retry on a coordinator error the client retries; False for any other."""
        if error in FIND_AGAIN:
            self._retry(out, job, "find")
            return True
        if error in TRY_AGAIN:
            self._retry(out, job, job.step)
            return True
        return False

    def _finish(self, ctx: Ctx, out: Out, job: Job, error: str) -> None:
        c = job.command
        self.requests.forget(out, c.request_id)
        out.cancel_timer(timer_key("deadline", c.request_id))
        out.cancel_timer(timer_key("retry", c.request_id))
        self.results[c.request_id] = results.outcome(out, job, error, ctx.now_ms)
        self.job = None
        self._next(ctx, out)

    # ------------------------------------------------------------------ answers

    def _on_answer(self, ctx: Ctx, out: Out, job: Job, broker_id: int, message: Any) -> None:  # noqa: C901, PLR0912 - one case per answer
        c = job.command
        match message:
            case FindCoordinatorResponse(error_code=error, node_id=node):
                if error is not E.NONE:
                    self.requests.rotate_bootstrap()
                    self._retry(out, job, "find")
                    return
                job.coordinator = node
                first = {"describe_group": "describe", "reset_offsets": "describe", "delete_group": "delete"}
                if c.operation == "delete_offsets":
                    job.partitions = self._partitions(c)
                self._enter(ctx, out, job, first.get(c.operation, "offset_delete"))
            case DescribeGroupsResponse(groups=(described, *_)):
                if self._coordinator_error(out, job, described.error_code):
                    return
                job.described = described
                if c.operation == "describe_group" or described.error_code is not E.NONE:
                    self._finish(ctx, out, job, described.error_code.name)
                elif described.group_state not in ("Empty", "Dead"):
                    self._finish(ctx, out, job, E.NON_EMPTY_GROUP.name)  # the tool refuses
                elif c.topic and c.target != "shift-by":
                    job.partitions = self._partitions(c)
                    self._plan(ctx, out, job)
                else:
                    job.partitions = self._partitions(c) if c.topic else []
                    self._enter(ctx, out, job, "committed")
            case OffsetFetchResponse(error_code=error, topics=topics):
                if self._coordinator_error(out, job, error):
                    return
                if error is not E.NONE:
                    self._finish(ctx, out, job, error.name)
                    return
                job.committed = {
                    TopicPartition(t.name, p.partition): p.committed_offset
                    for t in topics
                    for p in t.partitions
                    if p.committed_offset >= 0
                }
                if not c.topic:
                    job.partitions = sorted(job.committed)
                self._plan(ctx, out, job)
            case MetadataResponse(brokers=brokers, partitions=partitions):
                if job.step == "brokers":
                    # Answers already in are kept; a broker no longer live is not asked.
                    job.listed = {b: job.listed.get(b, ()) for b in sorted(brokers)}
                    job.list_errors = {b: e for b, e in job.list_errors.items() if b in job.listed}
                    self._enter(ctx, out, job, "list")
                    return
                job.leaders = {TopicPartition(p.topic, p.partition): p.leader for p in partitions if p.partition >= 0}
                if any(job.leaders.get(tp, -1) < 0 for tp in job.partitions):
                    self._retry(out, job, "metadata")  # a partition without a leader: ask again
                    return
                self._enter(ctx, out, job, "list_offsets")
            case ListOffsetsResponse(partitions=answers):
                spec, _ = job.specs[0]
                found = job.offsets.setdefault(spec, {})
                for a in answers:
                    if a.error_code is not E.NONE:
                        self._retry(out, job, "metadata")  # stale leaders, or a lagging HW
                        return
                    found[TopicPartition(a.topic, a.partition)] = a.offset
                job.waiting -= 1
                if job.waiting == 0:
                    job.specs.pop(0)
                    self._after_list_offsets(ctx, out, job, spec)
            case OffsetCommitResponse(partitions=errors):
                error = next((e.error_code for e in sorted(errors, key=lambda e: (e.topic, e.partition)) if e.error_code is not E.NONE), E.NONE)
                if self._coordinator_error(out, job, error):
                    return
                self._finish(ctx, out, job, error.name)
            case DeleteGroupsResponse(results=(result, *_)):
                if not self._coordinator_error(out, job, result.error_code):
                    self._finish(ctx, out, job, result.error_code.name)
            case OffsetDeleteResponse(error_code=error, partitions=errors):
                if self._coordinator_error(out, job, error):
                    return
                job.deleted = errors
                # The client's result fails with the group's error, else with a partition's.
                refused = sorted((e.topic, e.partition, e.error_code.name) for e in errors if e.error_code is not E.NONE)
                self._finish(ctx, out, job, refused[0][2] if error is E.NONE and refused else error.name)
            case ListGroupsResponse(error_code=error, groups=groups):
                job.listed[broker_id] = groups
                job.list_errors[broker_id] = error.name
                job.waiting -= 1
                if job.waiting == 0:
                    retry = any(e in (E.COORDINATOR_LOAD_IN_PROGRESS.name, E.COORDINATOR_NOT_AVAILABLE.name) for e in job.list_errors.values())
                    if retry:
                        self._retry(out, job, "list")  # asks again only the brokers not done
                    else:
                        self._finish(ctx, out, job, E.NONE.name)

    # ------------------------------------------------------------------ the reset's offsets

    def _partitions(self, c: AdminCommand) -> list[TopicPartition]:
        """`--topic T:0,1` or `--topic T` (every partition of the topic)."""
        numbers = c.partitions or tuple(range(self.config.partitions_of(c.topic)))
        return [TopicPartition(c.topic, p) for p in sorted(set(numbers))]

    def _plan(self, ctx: Ctx, out: Out, job: Job) -> None:
        """The ListOffsets the target needs, in the tool's order."""
        c = job.command
        every = tuple(job.partitions)
        if c.target == "shift-by":
            shifted = shifted_offsets(job.committed, job.partitions, c.shift_by)
            if isinstance(shifted, list):
                self._finish(ctx, out, job, "IllegalArgumentException")  # no committed offset to shift
                return
            job.reset_to = shifted
            job.specs = [("earliest", every), ("latest", every)]
        elif c.target == "datetime":
            job.specs = [("time", every)]
        else:
            job.specs = [(c.target, every)]
        if not every:
            self._commit(ctx, out, job)
        else:
            self._enter(ctx, out, job, "metadata")

    def _send_list_offsets(self, ctx: Ctx, out: Out, job: Job) -> None:
        spec, partitions = job.specs[0]
        timestamp = job.command.datetime_ms if spec == "time" else SPEC_TIMESTAMPS[spec]
        by_leader: dict[int, list[ListOffsetsPartition]] = {}
        for tp in partitions:
            by_leader.setdefault(job.leaders[tp], []).append(ListOffsetsPartition(tp.topic, tp.partition, timestamp))
        job.waiting = len(by_leader)
        for leader in sorted(by_leader):
            request = ListOffsetsRequest(-1, tuple(by_leader[leader]))
            self.requests.send(out, job.command.request_id, job.attempt, leader, request)

    def _after_list_offsets(self, ctx: Ctx, out: Out, job: Job, spec: str) -> None:
        if spec == "time":
            unknown = tuple(tp for tp, offset in sorted(job.offsets["time"].items()) if offset < 0)
            if unknown:
                job.specs.append(("latest", unknown))  # the tool falls back to the log end
        if job.specs:
            self._enter(ctx, out, job, "list_offsets")
            return
        target = job.command.target
        if target == "shift-by":
            job.reset_to = check_offsets_range(job.reset_to, job.offsets["earliest"], job.offsets["latest"])
        elif target == "datetime":
            job.reset_to = datetime_offsets(job.offsets["time"], job.offsets.get("latest", {}))
        else:
            job.reset_to = dict(sorted(job.offsets[target].items()))
        self._commit(ctx, out, job)

    def _commit(self, ctx: Ctx, out: Out, job: Job) -> None:
        self._enter(ctx, out, job, "commit")

    def _send_commit(self, out: Out, job: Job) -> None:
        c = job.command
        by_topic: dict[str, list[OffsetCommitPartition]] = {}
        for tp, offset in sorted(job.reset_to.items()):
            by_topic.setdefault(tp.topic, []).append(OffsetCommitPartition(tp.partition, offset))
        topics = tuple(OffsetCommitTopic(t, tuple(ps)) for t, ps in by_topic.items())
        request = OffsetCommitRequest(c.group_id, generation_id=-1, member_id="", topics=topics)
        out.emit("admin_offsets_reset_sent", group_id=c.group_id, target=c.target, offsets=results.triples(job.reset_to))
        self.requests.send(out, c.request_id, job.attempt, job.coordinator, request, coordinator=True)
