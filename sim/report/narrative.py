"""The run report's story: a few dozen plain sentences, headline findings first, the moments
of the run in time order next, raw figures last.

Pure functions of the run's summary (summary.json) and its facts (`sim.report.run_facts`, one pass over
events.jsonl), so the same run always tells the same story. Repeated events are grouped: the
elections a controller made at once, the partitions a broker's crash left without a leader,
the restarts of a rolling restart, the rebalances they caused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.report.narrative_groups import (
    consumer_crash,
    duplicate_moments,
    out_of_group_moments,
    owner_gap_moments,
    rebalance_moments,
    skip_moments,
)
from sim.report.narrative_consumer import (
    close_tail,
    failure_moments,
    known_bug_lines,
    member_moments,
    rebalance_word,
    target_moments,
)
from sim.report.narrative_text import (
    GAP_MS,
    at,
    grouped,
    join,
    node_order,
    partitions,
    seconds,
    span,
)
from sim.report.run_facts import RunFacts

__all__ = ["MAX_LINES", "Story", "narrate"]

MAX_LINES = 40
"""At most this many sentences; the moments beyond are counted in one line."""

@dataclass(frozen=True, slots=True)
class Story:
    """Headline findings, the moments in time order, and the raw figures."""

    headline: list[str]
    moments: list[str]
    figures: str

    def lines(self) -> list[str]:
        return [*self.headline, *self.moments, self.figures]


def narrate(summary: dict[str, Any], facts: RunFacts) -> Story:
    """The story of one run: at most MAX_LINES sentences. Every sentence states only what the
    log shows: each span it names opens and closes on the events that open and close it, and
    changes told together share the time the sentence gives (to its tenth of a second)."""
    headline = [*_headline(summary), *known_bug_lines(summary)]
    moments = [text for _, _, text in sorted(_moments(summary, facts))]
    room = MAX_LINES - len(headline) - 1
    if len(moments) > room:
        hidden = len(moments) - room + 1
        moments = [*moments[: room - 1], f"... and {hidden} more moments: see the tables below."]
    return Story(headline, moments, _figures(summary, facts))


def _broker(broker_id: int) -> str:
    return "no broker" if broker_id < 0 else f"broker-{broker_id}"


# headline and figures


def _headline(summary: dict[str, Any]) -> list[str]:
    lines = []
    if summary.get("failure"):
        lines.append(f"The simulation failed: {summary['failure']}.")
    violations = summary.get("invariant_violations", [])
    if violations:
        first = violations[0]
        lines.append(
            f"{len(violations)} invariant violation{'s' if len(violations) > 1 else ''}, the first at "
            f"{seconds(first['ts_ms'])} on {first['node']}: {first['invariant']} ({first['detail']})."
        )
    lost = summary.get("lost_records", [])
    if lost:
        lines.append(f"{len(lost)} acknowledged write{'s were' if len(lost) > 1 else ' was'} lost: {_records_at(lost)}.")
    twice = summary.get("duplicated_records", [])
    if twice:
        lines.append(
            f"{summary['log_duplicates']} extra cop{'ies' if summary['log_duplicates'] > 1 else 'y'} of "
            f"{len(twice)} record{'s' if len(twice) > 1 else ''} in the final logs, a producer's retry written "
            f"again without idempotence: {join(_copies(r) for r in twice[:3])}{' and more' if len(twice) > 3 else ''}."
        )
    causes = summary.get("duplicates_by_cause", {})
    if summary.get("duplicates"):
        by = ", ".join(f"{cause} {n}" for cause, n in causes.items())
        lines.append(f"{summary['duplicates']} records were processed more than once ({by}).")
    if summary.get("skipped"):
        by = ", ".join(f"{cause} {n}" for cause, n in summary.get("skipped_by_cause", {}).items())
        lines.append(f"{summary['skipped']} acknowledged records were skipped: the group moved past them and no member "
                     f"processed them ({by}).")
    if summary.get("processed_then_lost"):
        lines.append(f"{summary['processed_then_lost']} records a group processed are not in the final log: the "
                     f"application acted on data that no longer exists.")
    if not lines:
        lines.append("No acknowledged write was lost, none was written twice, no record was processed twice, and no "
                     "record was skipped.")
    return lines


def _records_at(records: list[dict[str, Any]]) -> str:
    by_partition: dict[str, list[int]] = {}
    for record in records:
        by_partition.setdefault(record["partition"], []).append(record["offset"])
    return "; ".join(
        f"{p} offset{'s' if len(o) > 1 else ''} {_ranges(o)}" for p, o in sorted(by_partition.items())
    )


def _ranges(offsets: list[int]) -> str:
    runs: list[list[int]] = []
    for offset in sorted(offsets):
        if runs and offset == runs[-1][1] + 1:
            runs[-1][1] = offset
        else:
            runs.append([offset, offset])
    return ", ".join(str(a) if a == b else f"{a} to {b}" for a, b in runs)


def _copies(record: dict[str, Any]) -> str:
    return f"{record['value']} at {record['partition']} offsets {join(str(o) for o in record['offsets'])}"


def _figures(summary: dict[str, Any], facts: RunFacts) -> str:
    parts = [f"{summary['events']} events over {seconds(summary['sim_ms'])} simulated"]
    if summary.get("produced"):
        parts.append(f"{summary['produced']} records produced, {summary['acked']} acknowledged")
    if summary.get("consumed"):
        parts.append(f"{summary['consumed']} consumed, {summary['rebalances']} rebalances{rebalance_word(facts)}")
    return "Figures: " + "; ".join(parts) + "."


# the moments, each (ts_ms, order, sentence)


def _moments(summary: dict[str, Any], facts: RunFacts) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    out += _controller_moments(facts)
    out += _election_moments(facts)
    out += _isr_moments(facts)
    out += _leaderless_moments(facts)
    out += _hw_moments(facts)
    out += _fault_moments(summary, facts)
    out += rebalance_moments(facts)
    out += target_moments(facts)
    out += member_moments(facts)
    out += failure_moments(summary)
    out += owner_gap_moments(facts)
    out += out_of_group_moments(facts)
    out += duplicate_moments(summary)
    out += skip_moments(summary)
    out += _lost_moments(summary, facts)
    return out


def _controller_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    out = []
    for c in facts.controllers:
        if c["event"] == "controller_elected":
            text = f"At {seconds(c['ts_ms'])} broker-{c['broker_id']} became the controller (epoch {c['epoch']})."
        else:
            text = f"At {seconds(c['ts_ms'])} broker-{c['broker_id']} stopped acting as the controller (epoch {c['epoch']})."
        out.append((c["ts_ms"], 0, text))
    return out


def _election_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    elections = [c for c in facts.leader_changes if c["event"] == "leader_elected"]
    out = []
    for group in _each_once(grouped(elections, lambda c: (c["logged_by"], c["election"], c["unclean"]))):
        first = group[0]
        if first["unclean"]:
            for c in group:
                out.append((c["ts_ms"], 1, (
                    f"At {seconds(c['ts_ms'])} {_broker(c['leader'])} became leader of {c['partition']} (epoch "
                    f"{c['leader_epoch']}) in an unclean election: it was not in the ISR "
                    f"{c['previous_isr']}, so what the old leader had acknowledged beyond its log is lost."
                )))
            continue
        what = "the first leaders" if first["election"] == "new" else f"new leaders ({first['election']} election)"
        user = [c for c in group if not c["partition"].startswith("__")]
        leaders = "; ".join(f"{c['partition']} to {_broker(c['leader'])}" for c in user[:6])
        out.append((first["ts_ms"], 1, (
            f"{at(group)} the controller {first['logged_by']} elected {what} of "
            f"{partitions(c['partition'] for c in group)}"
            + (f": {leaders}." if leaders and first["election"] != "new" else ".")
        )))
    for f in facts.election_failures:
        out.append((f["ts_ms"], 1, f"At {seconds(f['ts_ms'])} no leader could be elected for {f['partition']} ({f['reason']})."))
    return out


def _each_once(groups: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Groups split where a partition comes again (elected twice within a second), so that a
    sentence names each partition's election once."""
    out: list[list[dict[str, Any]]] = []
    for group in groups:
        seen: set[str] = set()
        out.append([])
        for row in group:
            if row["partition"] in seen:
                seen.clear()
                out.append([])
            seen.add(row["partition"])
            out[-1].append(row)
    return out


def _isr_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    changes = []
    for c in facts.leader_changes:
        if c["event"] == "leader_elected":
            continue
        removed = sorted(set(c["previous_isr"]) - set(c["isr"]))
        added = sorted(set(c["isr"]) - set(c["previous_isr"]))
        if removed or added:
            changes.append({**c, "removed": removed, "added": added})
    out = []
    for group in grouped(changes, lambda c: (tuple(c["removed"]), tuple(c["added"]))):
        first = group[0]
        names = partitions(c["partition"] for c in group)
        if first["removed"]:
            who = join(_broker(b) for b in first["removed"])
            alone = sorted(c["partition"] for c in group if len(c["isr"]) == 1 and not c["partition"].startswith("__"))
            text = f"{at(group)} {who} left the ISR of {names}"
            text += f"; {partitions(alone)} kept a single in-sync replica." if alone else "."
        else:
            text = f"{at(group)} {join(_broker(b) for b in first['added'])} rejoined the ISR of {names}."
        out.append((first["ts_ms"], 2, text))
    return out


def _leaderless_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    """Spells without a live leader, those that began and ended in the same tenth of a second
    told together (a sentence states one span, true of every partition it names)."""
    rows = []
    for g in facts.leaderless:
        to = facts.end_ms if g["to_ms"] is None else g["to_ms"]
        if to - g["from_ms"] >= GAP_MS:
            rows.append({**g, "ts_ms": g["from_ms"], "to": to})
    out = []
    for group in grouped(rows, lambda g: (seconds(g["from_ms"]), seconds(g["to"]), g["to_ms"] is None, g["broker"], g["lost_by"])):
        first = group[0]
        until = "to the end of the run" if first["to_ms"] is None else f"until {seconds(first['to'])}"
        why = {"node_crashed": "crashed", "node_stopped": "was stopped"}.get(first["lost_by"], "gave up its leadership")
        out.append((first["from_ms"], 3, (
            f"From {seconds(first['from_ms'])} {partitions(g['partition'] for g in group)} had no live leader "
            f"for {span(first['to'] - first['from_ms'])}, {until}: {_broker(first['broker'])}, "
            f"{'their' if len(group) > 1 else 'its'} leader, {why}."
        )))
    return out


def _hw_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    return [
        (s["from_ms"], 3, (
            f"From {seconds(s['from_ms'])} the high watermark of {s['partition']} on its leader {s['leader']} stood at "
            f"{s['high_watermark']} for {span(s['to_ms'] - s['from_ms'])} while records waited above it."
        ))
        for s in facts.hw_stalls
    ]


def _fault_moments(summary: dict[str, Any], facts: RunFacts) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    crashes = {(c["consumer"], c["ts_ms"]): c for c in facts.consumer_crashes}
    restarts: list[dict[str, Any]] = []
    closes: dict[str, dict[str, Any]] = {}
    for f in facts.faults:
        at, event, target = f["ts_ms"], f["event"], f["target"]
        if event == "node_started":
            if f["incarnation"]:
                restarts.append(f)
            continue
        if event == "node_crashed":
            crash = crashes.get((target, at))
            text = consumer_crash(crash, summary, facts) if crash else f"At {seconds(at)} {target} crashed ({f['kind']})."
            out.append((at, 0, _with_restart(text, target, at, facts)))
        elif event == "node_stopped":
            if target in closes:
                closes.pop(target)["stopped_ms"] = at
            else:
                out.append((at, 0, _with_restart(f"At {seconds(at)} {target}'s process exited.", target, at, facts)))
        elif event == "application_called":
            node = target.split("/")[0]
            if f["action"] == "close":
                closes[node] = {"ts_ms": at, "node": node}
                restarts.append({"ts_ms": at, "event": "close", "target": node})
            else:
                out.append((at, 0, f"At {seconds(at)} {_call(node, f['action'])}."))
        elif event == "node_paused":
            out.append((at, 0, f"At {seconds(at)} {target} was paused (stop-the-world) until {seconds(f['until_ms'])}."))
        elif event == "network_partitioned":
            way = "one way, from the first to the second" if f["one_way"] else "both ways"
            out.append((at, 0, (f"At {seconds(at)} the network was cut ({way}) between {join(f['side_a'])} on one side "
                                f"and {join(f['side_b'])} on the other.")))
        elif event in ("network_healed", "network_partition_lifted"):
            out.append((at, 0, f"At {seconds(at)} the network {'healed' if event == 'network_healed' else 'cut was lifted'}."))
        elif event == "link_fault_added":
            out.append((at, 0, f"At {seconds(at)} a {f['kind']} fault began on the network's envelopes."))
        elif event == "fault_skipped":
            out.append((at, 0, f"At {seconds(at)} a {f['kind']} fault on {target} did nothing: {f['reason']}."))
    out += _closes(restarts, facts)
    return out


def _call(node: str, action: str) -> str:
    if action == "shutdown":
        return f"{node}'s operator stopped it (kafka-server-stop)"
    if node == "admin":
        return f"the operator called {action}() on the admin client"
    if action in ("stall", "slow"):
        return f"{node}'s processing became {'stalled' if action == 'stall' else 'slow'}"
    return f"{node}'s application called {action}()"


def _closes(restarts: list[dict[str, Any]], facts: RunFacts) -> list[tuple[int, int, str]]:
    """close() then a new process, per consumer: a rolling restart, told as one sentence. A
    close() whose process did not start again is told alone."""
    closed = [r for r in restarts if r["event"] == "close" and _restart_after(r["target"], r["ts_ms"], facts) is not None]
    out = [
        (r["ts_ms"], 0, f"At {seconds(r['ts_ms'])} {_call(r['target'], 'close')}.")
        for r in restarts
        if r["event"] == "close" and r not in closed
    ]
    if not closed:
        return out
    nodes = [r["target"] for r in closed]
    times = join(seconds(r["ts_ms"]) for r in closed)
    if len(closed) == 1:
        return [*out, (closed[0]["ts_ms"], 0, f"At {times} {nodes[0]}'s application called close() and its process restarted.")]
    return [*out, (closed[0]["ts_ms"], 0, (
        f"At {times} {join(nodes)} in turn called close() and restarted (a rolling restart): {close_tail(facts, nodes)}"
    ))]


def _restart_after(node: str, at: int, facts: RunFacts) -> int | None:
    later = [f["ts_ms"] for f in facts.faults if f["event"] == "node_started" and f["target"] == node and f["ts_ms"] > at]
    return later[0] if later else None


def _with_restart(text: str, node: str, at: int, facts: RunFacts) -> str:
    restart = _restart_after(node, at, facts)
    return text if restart is None else text[:-1] + f"; it restarted at {seconds(restart)}."


def _lost_moments(summary: dict[str, Any], facts: RunFacts) -> list[tuple[int, int, str]]:
    lost = summary.get("lost_records", [])
    out = []
    for partition in sorted({r["partition"] for r in lost}, key=node_order):
        unclean = [c for c in facts.leader_changes if c["partition"] == partition and c["unclean"]]
        gaps = [g for g in facts.leaderless if g["partition"] == partition]
        if unclean:
            why = f"the unclean election at {seconds(unclean[0]['ts_ms'])} gave the partition to a replica that lacked them"
        elif gaps:
            why = (f"broker-{gaps[0]['broker']} led it when it went down at {seconds(gaps[0]['from_ms'])}, before its "
                   f"followers had them")
        else:
            why = "no leader change explains it"
        n = sum(1 for r in lost if r["partition"] == partition)
        at = gaps[0]["from_ms"] if gaps and not unclean else (unclean[0]["ts_ms"] if unclean else facts.end_ms)
        out.append((at, 7, f"{partition} lost {n} acknowledged record{'s' if n > 1 else ''}: {why}."))
    return out
