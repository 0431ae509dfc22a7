"""Jepsen's Kafka-workload anomalies (`jepsen.tests.kafka`) that the other checks do not cover,
found in the event log alone: `poll-skip`, `nonmonotonic-poll` and `nonmonotonic-send`.

Jepsen compares, for one client process and one partition, the last record one operation saw
with the first the next one saw, by their index in the log: a delta of 1 is in order, more is a
*skip*, less (back, or the same record again) is *nonmonotonic*. Here the index is the offset
(the model writes no transaction markers and compacts no topic, so a partition's offsets have
no gaps) and the units are:

- **Polls**: one consumer's *hold* of one partition, from the assignment that gave it the
  partition to the next one (as `sim.cluster.accounting` counts holds), with the records
  processed after it gave the partition up (the consumer protocol revokes on its background
  thread while the application works) still in it. Each `records_processed` is compared with
  the last record received before it in the hold. Jepsen forgets a partition's last read when
  an `assign` or `subscribe` drops it and, blind to a subscriber's rebalances, counts these two
  anomalies as errors only under `assign`; here every assignment is in the log, and a hold
  starts afresh at each: where a new owner starts (the committed offset) is what duplicates
  and skipped records account for.
- **Sends**: one idempotent producer session (producer id and epoch) and one partition; each
  acknowledged batch (`produce_completed`, error NONE) is compared with the batch the session
  sent just before it and the one just after, in sequence order, the order it sent them (a
  batch retried after a later one was acknowledged is still in order if its offset is below
  the later one's). Producers without idempotence are left out: their retries may reorder
  records.

**The log holds what was processed, not what a poll returned.** Within a hold the application
processes every record a poll returned, in order (on the poll thread, or one worker per
partition at a time), so the records processed are the records returned, cut short only where
the hold ends (a crash, a revocation that drops the tasks in hand). But a poll's records can be
logged after a later change of position: a fetch answer is handled while the application
works, and workers finish after the poll thread has moved on. So a position change explains
the jump to the offset it set whenever that jump shows, not only at the next record.

Each anomaly is *explained* when the hold saw a position set (`fetch_position_set`, other than
the hold's first) at the offset the stream jumped to, or, for a send, when a leader elected
since the earlier batch was sent lacked it (`became_leader` with a log end at or below its last
offset); otherwise it is *unexplained*, and a correct run has none. The causes are the
labels the same records get elsewhere: a poll-skip past a reset is `out_of_range_reset` (the
skips' label for offsets a reset passed), a nonmonotonic poll after a reset or a truncation
found by validation is `log_truncation_or_reset` (the duplicates' label for records read
again after a reset), and a send that went back because the leader lost the records before it
is `lost_acked`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "KINDS", "NONMONOTONIC_POLL", "NONMONOTONIC_SEND", "POLL_SKIP", "AnomalyChecks", "anomalies_of", "poll_kind", "send_kind",
]

POLL_SKIP = "poll-skip"
NONMONOTONIC_POLL = "nonmonotonic-poll"
NONMONOTONIC_SEND = "nonmonotonic-send"
KINDS = (POLL_SKIP, NONMONOTONIC_POLL, NONMONOTONIC_SEND)

_POLL_CAUSES = {POLL_SKIP: "out_of_range_reset", NONMONOTONIC_POLL: "log_truncation_or_reset"}
"""The cause of a poll anomaly a position set explains: the label skips and duplicates give the
offsets such a reset passes or reads again."""
SEND_CAUSE = "lost_acked"
"""A send that went back because a new leader lacked the acknowledged records before it."""


def poll_kind(last: int, first: int) -> str | None:
    """The anomaly between the last offset received and the next one, if any (Jepsen's delta)."""
    delta = first - last
    if delta > 1:
        return POLL_SKIP
    if delta < 1:
        return NONMONOTONIC_POLL
    return None


def send_kind(last: int, first: int) -> str | None:
    """A batch is in order when its first offset lies past the last offset of the batch sent
    before it."""
    return NONMONOTONIC_SEND if first - last < 1 else None


@dataclass(slots=True)
class _Hold:
    """What one consumer received of one partition in one hold."""

    last: int | None = None
    """The offset of the last record received; None before the first."""
    positions: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """Positions set since the first record and not yet jumped to, oldest first: (offset, the
    event that set it)."""

    def explain(self, offset: int) -> dict[str, Any] | None:
        """The position set at `offset`, used: it and the ones before it, superseded, go."""
        for i, (at, why) in enumerate(self.positions):
            if at == offset:
                del self.positions[: i + 1]
                return why
        return None


@dataclass(slots=True)
class _Run:
    """Acknowledged batches of one session whose sequences follow one another: records
    [seq_lo, seq_hi), the first written at `first`, the last at `last`."""

    seq_lo: int
    seq_hi: int
    first: int
    last: int
    first_sent: int
    """When its first batch was first sent (the observer's count of events)."""
    last_sent: int
    """When its last batch was first sent."""


def place(runs: list[_Run], new: _Run) -> list[tuple[_Run, _Run]]:
    """Adds an acknowledged batch to a session's runs (sorted by sequence; neighbours in
    sequence merge) and returns the pairs, (earlier, later) in send order, whose offsets go
    back: the batch and the one sent just before it, or just after it (acknowledged first)."""
    at = bisect_left(runs, new.seq_lo, key=lambda r: r.seq_lo)
    before = runs[at - 1] if at > 0 else None
    after = runs[at] if at < len(runs) else None
    back = [(a, b) for a, b in ((before, new), (new, after)) if a is not None and b is not None and send_kind(a.last, b.first)]
    if before is not None and before.seq_hi == new.seq_lo:
        new = _Run(before.seq_lo, new.seq_hi, before.first, new.last, before.first_sent, new.last_sent)
        at -= 1
        del runs[at]
    if after is not None and new.seq_hi == after.seq_lo:
        new = _Run(new.seq_lo, after.seq_hi, new.first, after.last, new.first_sent, after.last_sent)
        del runs[at]
    runs.insert(at, new)
    return back


class AnomalyChecks:
    """The three checks over the event stream, in log order (a kernel observer, like
    `sim.cluster.skips.SkipAccounting`)."""

    def __init__(self) -> None:
        self.cases: list[dict[str, Any]] = []
        self._holds: dict[str, dict[str, _Hold]] = {}
        """Per consumer node, its hold of each partition it owns."""
        self._released: dict[str, dict[str, _Hold]] = {}
        """Per consumer node, the hold each partition had when it was last given up."""
        self._seen = 0
        """Events observed: when things happened, in log order."""
        self._sent: dict[tuple[str, int], tuple[int, int, int]] = {}
        """(producer, batch) -> the producer id and epoch of its last attempt, and when it was
        first sent; until its outcome."""
        self._sessions: dict[tuple[str, int, int, str], list[_Run]] = {}
        """(producer, producer id, epoch, partition) -> its acknowledged batches."""
        self._elections: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
        """Per partition, each leader's election: when, its log end offset, and the event."""

    def __call__(self, e: Mapping[str, Any]) -> None:
        self._seen += 1
        handler = _HANDLERS.get(e["event"])
        if handler is not None:
            handler(self, e)

    def figures(self) -> dict[str, Any]:
        """summary.json's `anomalies` (per kind: explained, unexplained, explained by cause)
        and `anomaly_cases`."""
        counts: dict[str, dict[str, Any]] = {k: {"explained": 0, "unexplained": 0, "by_cause": {}} for k in KINDS}
        for case in self.cases:
            count = counts[case["kind"]]
            cause = case["cause"]
            if cause is None:
                count["unexplained"] += 1
            else:
                count["explained"] += 1
                count["by_cause"][cause] = count["by_cause"].get(cause, 0) + 1
        for count in counts.values():
            count["by_cause"] = dict(sorted(count["by_cause"].items()))
        return {"anomalies": counts, "anomaly_cases": list(self.cases)}

    # ------------------------------------------------------------------ consumers

    def _gone(self, node: str) -> None:
        """A process that stops or starts again holds nothing: what it had in hand is lost."""
        self._holds.pop(node, None)
        self._released.pop(node, None)

    def _started(self, e: Mapping[str, Any]) -> None:
        self._gone(e["node"])

    def _stopped(self, e: Mapping[str, Any]) -> None:
        self._gone(e["target"])

    def _assigned(self, e: Mapping[str, Any]) -> None:
        holds, released = self._holds.setdefault(e["node"], {}), self._released.setdefault(e["node"], {})
        for tp in e["partitions"]:
            holds[tp] = _Hold()
            released.pop(tp, None)

    def _given_up(self, e: Mapping[str, Any]) -> None:
        holds, released = self._holds.get(e["node"], {}), self._released.setdefault(e["node"], {})
        for tp in e["partitions"]:
            hold = holds.pop(tp, None)
            if hold is not None:
                released[tp] = hold

    def _position_set(self, e: Mapping[str, Any]) -> None:
        hold = self._holds.get(e["node"], {}).get(f"{e['topic']}-{e['partition']}")
        # The hold's first position is where it starts, not a change: nothing came before it.
        if hold is not None and hold.last is not None:
            why = {"event": e["event"], "node": e["node"], "ts_ms": e["ts_ms"], "source": e["source"], "reason": e["reason"]}
            hold.positions.append((e["offset"], why))

    def _processed(self, e: Mapping[str, Any]) -> None:
        node, tp = e["node"], f"{e['topic']}-{e['partition']}"
        hold = self._holds.get(node, {}).get(tp) or self._released.get(node, {}).get(tp)
        if hold is None:  # records no assignment announced: a hold of their own
            hold = self._holds.setdefault(node, {})[tp] = _Hold()
        first = e["first_offset"]
        if hold.last is not None and (kind := poll_kind(hold.last, first)) is not None:
            why = hold.explain(first)
            self.cases.append(
                {
                    "kind": kind,
                    "node": node,
                    "group_id": e["group_id"],
                    "partition": tp,
                    "last_offset": hold.last,
                    "offset": first,
                    "delta": first - hold.last,
                    "ts_ms": e["ts_ms"],
                    "cause": None if why is None else _POLL_CAUSES[kind],
                    "explained_by": why,
                }
            )
        hold.last = e["end_offset"] - 1

    # ------------------------------------------------------------------ producers

    def _batch_sent(self, e: Mapping[str, Any]) -> None:
        if e["producer_id"] >= 0:
            key = (e["producer"], e["batch"])
            first_sent = self._sent[key][2] if key in self._sent else self._seen
            self._sent[key] = (e["producer_id"], e["producer_epoch"], first_sent)

    def _produce_completed(self, e: Mapping[str, Any]) -> None:
        sent = self._sent.pop((e["producer"], e["batch"]), None)
        if sent is None or e["error"] != "NONE" or e["base_offset"] < 0 or not e["records"]:
            return
        producer_id, epoch, first_sent = sent
        tp, count = f"{e['topic']}-{e['partition']}", len(e["records"])
        runs = self._sessions.setdefault((e["producer"], producer_id, epoch, tp), [])
        first, seq = e["base_offset"], e["base_sequence"]
        batch = _Run(seq, seq + count, first, first + count - 1, first_sent, first_sent)
        for earlier, later in place(runs, batch):
            why = self._lost_since(tp, min(earlier.last_sent, later.first_sent), earlier.last)
            self.cases.append(
                {
                    "kind": NONMONOTONIC_SEND,
                    "node": e["producer"],
                    "partition": tp,
                    "producer_id": producer_id,
                    "producer_epoch": epoch,
                    "last_offset": earlier.last,
                    "offset": later.first,
                    "delta": later.first - earlier.last,
                    "ts_ms": e["ts_ms"],
                    "cause": None if why is None else SEND_CAUSE,
                    "explained_by": why,
                }
            )

    def _lost_since(self, tp: str, since: int, offset: int) -> dict[str, Any] | None:
        """The first leader elected since then whose log ended at or below `offset`."""
        for seen, end, why in self._elections.get(tp, []):
            if seen > since and end <= offset:
                return why
        return None

    def _became_leader(self, e: Mapping[str, Any]) -> None:
        if e["topic"].startswith("__"):
            return  # the coordinators' records are no producer's
        why = {"event": e["event"], "node": e["node"], "ts_ms": e["ts_ms"], "leader_epoch": e["leader_epoch"]}
        self._elections.setdefault(f"{e['topic']}-{e['partition']}", []).append((self._seen, e["log_end_offset"], why))


_HANDLERS: dict[str, Any] = {
    "consumer_started": AnomalyChecks._started,
    "node_crashed": AnomalyChecks._stopped,
    "node_stopped": AnomalyChecks._stopped,
    "partitions_assigned": AnomalyChecks._assigned,
    "partitions_revoked": AnomalyChecks._given_up,
    "partitions_lost": AnomalyChecks._given_up,
    "fetch_position_set": AnomalyChecks._position_set,
    "records_processed": AnomalyChecks._processed,
    "batch_sent": AnomalyChecks._batch_sent,
    "produce_completed": AnomalyChecks._produce_completed,
    "became_leader": AnomalyChecks._became_leader,
}


def anomalies_of(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The figures of an event log (`events.jsonl`'s lines, in order)."""
    checks = AnomalyChecks()
    for e in events:
        checks(e)
    return checks.figures()
