"""The consumer groups' part of the run report's story: a consumer's crash and what it left
to be read again, rebalances (those of a rolling restart told together), partitions left
without an owner, and the duplicates by cause, each with its reason in Kafka's terms."""

from __future__ import annotations

from typing import Any

from sim.report.narrative_consumer import epoch_word
from sim.report.narrative_text import GAP_MS, grouped, join, node_order, partitions, seconds, span
from sim.report.run_facts import RunFacts

__all__ = ["CAUSE_WHY", "SKIP_WHY", "consumer_crash", "duplicate_moments", "owner_gap_moments", "out_of_group_moments", "rebalance_moments", "skip_moments"]

CAUSE_WHY = {
    "crash_before_commit": "its previous owner crashed after processing them but before committing their offsets, "
    "and the next owner resumed from the last committed offset (at-least-once delivery)",
    "expelled_session_timeout": "the coordinator expelled their owner when its session.timeout.ms passed without a "
    "heartbeat, and their new owner resumed from the last committed offset",
    "poll_interval_exceeded": "their owner took longer than max.poll.interval.ms between two poll() calls and left "
    "the group before committing them",
    "static_poll_timeout_self_replay": "a static member's poll timer expired; it reset itself and read again from "
    "the last committed offset",
    "unsubscribe_without_commit": "their owner called unsubscribe() without committing what it had processed",
    "coordinator_failover": "their owner's last commit failed while the group coordinator moved or was out of reach",
    "commit_failed_or_fenced": "their owner's commit was rejected or fenced (an old generation), so the next owner "
    "resumed from an older offset",
    "cooperative_revocation_gap": "a cooperative rebalance revoked them between two auto-commits, with no commit in "
    "onPartitionsRevoked",
    "revoked_without_commit": "they were revoked from a consumer that commits by hand and did not commit in "
    "onPartitionsRevoked",
    "log_truncation_or_reset": "the consumer's position was reset (auto.offset.reset after a truncation or an "
    "out-of-range offset) below what it had processed",
    "offsets_expired_reset": "the group's committed offsets had expired, and auto.offset.reset chose a position "
    "below what it had processed",
    "kafka_14024": "Kafka 3.2.0's consumer did not wait for its commit before a rebalance (KAFKA-14024), so the next "
    "owner resumed from an older offset",
    "kafka_14196": "Kafka 3.2.1 and 3.2.2's consumer kept returning their records while its commit before a rebalance "
    "was in flight (KAFKA-14196), and the next owner resumed from that commit",
    "kafka_14639": "the leader's assignor threw away their owner's claim for its older generation and gave them to "
    "another member while it still held them (KAFKA-14639)",
    "kafka_16460": "the consumer-protocol client of Kafka 3.7 to 3.9 kept returning their records while the commit "
    "before their revocation was in flight (KAFKA-16460), and the next owner resumed from that commit",
}


SKIP_WHY = {
    "reset_latest_no_commit": "with no committed offset, auto.offset.reset=latest started the consumer at the log end",
    "offsets_expired_reset": "the group's committed offsets had expired, so auto.offset.reset chose a new position",
    "out_of_range_reset": "the position fell out of the log's range (retention or a truncation) and auto.offset.reset "
    "moved it past them",
    "admin_reset": "an operator reset the group's offsets past them",
    "committed_before_processed": "their offsets were committed before the application had processed them, and the "
    "records were never processed",
}

COMMIT_WORDS = {
    "auto": "auto-commit",
    "join_prepare": "auto-commit before a rebalance",
    "sync": "commitSync",
    "async": "commitAsync",
    "revoke": "commit in onPartitionsRevoked",
    "close": "commit on close()",
}
"""A commit's kind (offset_commit_sent) as the story names it."""


def consumer_crash(crash: dict[str, Any], summary: dict[str, Any], facts: RunFacts) -> str:
    node, at = crash["consumer"], crash["ts_ms"]
    text = f"At {seconds(at)} {node} crashed ({crash['kind']})"
    gaps = _after_crash(crash, facts)
    group = next((h["group_id"] for h in facts.holds if h["consumer"] == node), "")
    for i, ((to, generation), ps) in enumerate(gaps.items()):
        whose = f"its partition{'s' if len(ps) > 1 else ''} " if i == 0 else ""
        until = f" until {epoch_word(facts, group)} {generation}" if generation is not None else ", to the end of the run"
        text += f"; {whose}{partitions(ps)} had no owner for {span(to - at)}{until}"
    if crash["last_commit_ms"] is None:
        since = "without having committed"
    else:
        kind = COMMIT_WORDS.get(crash["last_commit_kind"], f"{crash['last_commit_kind']} commit")
        since = f"since its last {kind} at {seconds(crash['last_commit_ms'])}"
    text += f"; it had processed {crash['uncommitted']} records {since}"
    ranges = crash.get("uncommitted_ranges", {})
    spans = [  # the duplicates of what it processed and had not committed, read after its crash
        s for s in summary.get("duplicate_spans", [])
        if s["partition"] in ranges and s["from_ms"] >= at
        and s["first_offset"] < ranges[s["partition"]][1] and s["end_offset"] > ranges[s["partition"]][0]
    ]
    if spans:
        readers = sorted({s["consumer"] for s in spans}, key=node_order)
        causes = sorted({s["cause"] for s in spans})
        text += f", read again by {join(readers)} ({', '.join(causes)})"
    return text + "."


def _after_crash(crash: dict[str, Any], facts: RunFacts) -> dict[tuple[int, int | None], list[str]]:
    """The crashed consumer's partitions by when their next owner came (the end of the run if
    none did; the consumer itself once restarted, perhaps), or nothing if another member still
    held one of them: then the group had an owner all along, a zombie or the new one."""
    at = crash["ts_ms"]
    group = next((h["group_id"] for h in facts.holds if h["consumer"] == crash["consumer"]), None)
    by_end: dict[tuple[int, int | None], list[str]] = {}
    for tp in crash["partitions"]:
        holds = [h for h in facts.holds if h["partition"] == tp and h["group_id"] == group]
        if any(h["from_ms"] < at and (h["to_ms"] is None or h["to_ms"] > at) for h in holds):
            return {}
        later = [h for h in holds if h["from_ms"] >= at]
        first = min(later, key=lambda h: h["from_ms"]) if later else None
        key = (first["from_ms"], first["generation_id"]) if first else (facts.end_ms, None)
        by_end.setdefault(key, []).append(tp)
    return dict(sorted(by_end.items(), key=lambda kv: kv[0][0]))


def rebalance_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    """A group that more than one broker coordinated in the run (a failover, or a coordinator
    cut off that went on alone) is named with the coordinator of each rebalance."""
    coordinators: dict[str, set[str]] = {}
    for r in facts.rebalances:
        coordinators.setdefault(r["group_id"], set()).add(r.get("coordinator", ""))
    out = []
    rows = [
        {**r, "ts_ms": r["began_ms"] if r["began_ms"] is not None else r["formed_ms"],
         "group": r["group_id"] + (f" (coordinator {r['coordinator']})" if len(coordinators[r["group_id"]]) > 1 else "")}
        for r in facts.rebalances
    ]
    for group in _grouped_chain(rows):
        first, last = group[0], group[-1]
        if len(group) == 1:  # told at the time its sentence gives: the formation, when no trigger began it
            told = first["formed_ms"] if first["generation_id"] == 1 or first["trigger"] is None else first["ts_ms"]
            out.append((told, 4, _rebalance(first)))
            continue
        durations = [r["formed_ms"] - r["ts_ms"] for r in group]
        who = join(r["trigger"]["member"] for r in group)
        change = first["trigger"]["change"]
        out.append((first["ts_ms"], 4, (
            f"From {seconds(first['ts_ms'])} to {seconds(last['formed_ms'])} group {first['group']} rebalanced "
            f"{len(group)} times as {who} {_change(change, first['trigger']['reason'])}: generations "
            f"{first['generation_id']} to {last['generation_id']}, each formed in {span(min(durations))} to "
            f"{span(max(durations))}."
        )))
    return out


def _trigger(r: dict[str, Any]) -> tuple[str, str | None, str | None]:
    return (r["group"], (r["trigger"] or {}).get("change"), (r["trigger"] or {}).get("reason"))


def _grouped_chain(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Consecutive rebalances of a group that members leaving began (LeaveGroup), each within a
    minute of the one before: a rolling restart's, told together. Others stand alone."""
    groups: list[list[dict[str, Any]]] = []
    last: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        group = last.get(row["group"])
        chained = _trigger(row)[1:] == ("removed", "leave")
        if group is None or not chained or _trigger(group[-1]) != _trigger(row) or row["ts_ms"] - group[-1]["formed_ms"] > 60000:
            group = last[row["group"]] = []
            groups.append(group)
        group.append(row)
    return groups


def _change(change: str, reason: str) -> str:
    if change == "joined":
        return "joined"
    return {"leave": "left (LeaveGroup)", "session_timeout": "was expelled (session timeout)"}.get(reason, f"was removed ({reason})")


def _rebalance(r: dict[str, Any]) -> str:
    members = join(r["members"]) if r["members"] else "no member"
    if r["generation_id"] == 1 or r["trigger"] is None:
        return (f"At {seconds(r['formed_ms'])} group {r['group']} formed generation {r['generation_id']} with "
                f"{members}.")
    text = (f"At {seconds(r['ts_ms'])} {r['trigger']['member']} {_change(r['trigger']['change'], r['trigger']['reason'])} "
            f"and group {r['group']} began a rebalance; generation {r['generation_id']} formed "
            f"{span(r['formed_ms'] - r['ts_ms'])} later with {members}")
    if r["removed"]:
        text += ", once the coordinator had removed " + join(f"{node}'s earlier member ({why})" for node, why in r["removed"])
    return text + "."


def _owner_gaps(facts: RunFacts) -> list[dict[str, Any]]:
    """Each partition's spells without an owner after it first had one, but those a consumer's
    crash began (the crash's sentence tells them)."""
    by_partition: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for hold in facts.holds:
        by_partition.setdefault((hold["group_id"], hold["partition"]), []).append(hold)
    gaps = []
    for (group, partition), holds in sorted(by_partition.items()):
        ended, why = -1, None
        for hold in sorted(holds, key=lambda h: h["from_ms"]):
            if ended >= 0 and hold["from_ms"] - ended >= GAP_MS and why != "node_crashed":
                gaps.append({"group_id": group, "partition": partition, "ts_ms": ended, "to_ms": hold["from_ms"],
                             "generation_id": hold["generation_id"], "why": why})
            to = facts.end_ms if hold["to_ms"] is None else hold["to_ms"]
            if to > ended:
                ended, why = to, hold["ended_by"]
        if ended < facts.end_ms and facts.end_ms - ended >= GAP_MS and why != "node_crashed":
            gaps.append({"group_id": group, "partition": partition, "ts_ms": ended, "to_ms": None,
                         "generation_id": None, "why": why})
    return sorted(gaps, key=lambda g: (g["ts_ms"], g["partition"]))


def owner_gap_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    out = []
    def key(g: dict[str, Any]) -> tuple[Any, ...]:  # gaps told together share their span, to a tenth of a second
        return (g["group_id"], g["generation_id"], g["why"], seconds(g["ts_ms"]), seconds(g["to_ms"] or facts.end_ms))

    for group in grouped(_owner_gaps(facts), key):
        first = group[0]
        why = {"partitions_revoked": "revoked", "partitions_lost": "lost", "node_stopped": "its owner's process exited"}
        end = first["to_ms"] or facts.end_ms
        word = epoch_word(facts, first["group_id"])
        until = f"until {word} {first['generation_id']}" if first["to_ms"] is not None else "to the end of the run"
        out.append((first["ts_ms"], 5, (
            f"From {seconds(first['ts_ms'])} {partitions(g['partition'] for g in group)} of group {first['group_id']} "
            f"had no owner ({why.get(first['why'], first['why'])}) for {span(end - first['ts_ms'])}, {until}."
        )))
    return out


def duplicate_moments(summary: dict[str, Any]) -> list[tuple[int, int, str]]:
    by_cause: dict[str, list[dict[str, Any]]] = {}
    for piece in summary.get("duplicate_spans", []):
        by_cause.setdefault(piece["cause"], []).append(piece)
    out = []
    for cause, spans in sorted(by_cause.items()):
        first = min(s["from_ms"] for s in spans)
        readers = sorted({s["consumer"] for s in spans}, key=node_order)
        pieces = join(f"{s['partition']} offsets {s['first_offset']} to {s['end_offset'] - 1}"
                       for s in sorted(spans, key=lambda s: (node_order(s["partition"]), s["first_offset"]))[:4])
        more = f" and {len(spans) - 4} more ranges" if len(spans) > 4 else ""
        count = summary.get("duplicates_by_cause", {}).get(cause, sum(s["end_offset"] - s["first_offset"] for s in spans))
        why = CAUSE_WHY.get(cause, "no rule of the accounting explains them")
        last = max(s["to_ms"] for s in spans)
        when = f"At {seconds(first)}" if seconds(first) == seconds(last) else f"From {seconds(first)} to {seconds(last)}"
        out.append((first, 6, (
            f"{when} {join(readers)} processed again "
            f"{count} records ({cause}): {pieces}{more}; {why}."
        )))
    return out


def skip_moments(summary: dict[str, Any]) -> list[tuple[int, int, str]]:
    """Records the group moved past and never processed, told per cause as duplicates are."""
    by_cause: dict[str, list[dict[str, Any]]] = {}
    for piece in summary.get("skip_spans", []):
        by_cause.setdefault(piece["cause"], []).append(piece)
    out = []
    for cause, spans in sorted(by_cause.items()):
        first, last = min(s["from_ms"] for s in spans), max(s["to_ms"] for s in spans)
        who = join(sorted({s["consumer"] for s in spans}, key=node_order))
        pieces = join(f"{s['partition']} offsets {s['first_offset']} to {s['end_offset'] - 1}"
                      for s in sorted(spans, key=lambda s: (node_order(s["partition"]), s["first_offset"]))[:4])
        more = f" and {len(spans) - 4} more ranges" if len(spans) > 4 else ""
        count = summary.get("skipped_by_cause", {}).get(cause, sum(s["end_offset"] - s["first_offset"] for s in spans))
        when = f"At {seconds(first)}" if seconds(first) == seconds(last) else f"From {seconds(first)} to {seconds(last)}"
        out.append((first, 6, (
            f"{when} {who} moved group {spans[0]['group_id']} past {count} records that no member processed "
            f"({cause}): {pieces}{more}; {SKIP_WHY.get(cause, 'no rule of the accounting explains it')}."
        )))
    return out


REMOVED_WHY = {
    "session_timeout": "its session timed out",
    "not_rejoined": "it did not rejoin the rebalance in time",
    "sync_timeout": "it sent no SyncGroup in time",
    "replaced": "another process took its group.instance.id",
    "group_max_size": "the group was full",
}


def out_of_group_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    """A running consumer that its coordinator removed: a zombie while it goes on, until a
    generation takes it back."""
    out = []
    for o in facts.out_of_group:
        to = facts.end_ms if o["to_ms"] is None else o["to_ms"]
        if to - o["from_ms"] < GAP_MS:
            continue
        until = f"until generation {o['generation_id']} took it back" if o["to_ms"] is not None else "to the end of the run"
        out.append((o["from_ms"], 5, (
            f"From {seconds(o['from_ms'])} {o['consumer']}, still running, was out of group {o['group_id']} for "
            f"{span(to - o['from_ms'])}, {until}: the coordinator removed it ({REMOVED_WHY.get(o['reason'], o['reason'])})."
        )))
    return out
