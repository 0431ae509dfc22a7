"""Jepsen's poll and send anomalies (`sim.cluster.anomalies`) on hand-made event lists, with the
fields docs/log-schema.md gives the events: what is an anomaly, what explains one, and what
starts a hold or a session afresh."""

from __future__ import annotations

from typing import Any

from sim.cluster.anomalies import anomalies_of, poll_kind, send_kind

C = "consumer-1"
P = "producer-1"


def _e(ts_ms: int, node: str, event: str, **fields: Any) -> dict[str, Any]:
    return {"ts_ms": ts_ms, "node": node, "event": event, **fields}


def assigned(ts_ms: int, *partitions: str, node: str = C) -> dict[str, Any]:
    return _e(ts_ms, node, "partitions_assigned", group_id="g", member_id="m", generation_id=1, partitions=list(partitions),
              assignment=list(partitions))


def revoked(ts_ms: int, *partitions: str, node: str = C) -> dict[str, Any]:
    return _e(ts_ms, node, "partitions_revoked", group_id="g", member_id="m", generation_id=1, partitions=list(partitions),
              reason="rebalance")


def position(ts_ms: int, offset: int, source: str = "committed", reason: str = "committed", node: str = C) -> dict[str, Any]:
    return _e(ts_ms, node, "fetch_position_set", group_id="g", member_id="m", generation_id=1, topic="T", partition=0,
              offset=offset, source=source, reason=reason)


def processed(ts_ms: int, first: int, end: int, node: str = C, epoch: int = 0) -> dict[str, Any]:
    return _e(ts_ms, node, "records_processed", group_id="g", member_id="m", generation_id=1, topic="T", partition=0,
              first_offset=first, end_offset=end, records=end - first, leader_epoch=epoch)


def sent(ts_ms: int, batch: int, seq: int, producer_id: int = 7, epoch: int = 0) -> dict[str, Any]:
    return _e(ts_ms, P, "batch_sent", topic="T", partition=0, producer=P, batch=batch, records=[batch], created_ms=0,
              attempt=1, broker_id=1, producer_id=producer_id, producer_epoch=epoch, base_sequence=seq)


def acked(ts_ms: int, batch: int, seq: int, base_offset: int, count: int = 1) -> dict[str, Any]:
    return _e(ts_ms, P, "produce_completed", topic="T", partition=0, producer=P, batch=batch, records=list(range(count)),
              base_sequence=seq, created_ms=0, base_offset=base_offset, error="NONE", attempt=1, acks=-1)


def leader(ts_ms: int, log_end_offset: int) -> dict[str, Any]:
    return _e(ts_ms, "broker-2", "became_leader", topic="T", partition=0, leader_epoch=3, isr=[2], log_end_offset=log_end_offset,
              high_watermark=log_end_offset)


def _cases(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(c["kind"], c["partition"], c["last_offset"], c["offset"], c["delta"], c["ts_ms"], c["cause"]) for c in anomalies_of(events)["anomaly_cases"]]


def test_jepsens_delta_one_is_in_order_more_a_skip_less_nonmonotonic() -> None:
    assert [poll_kind(9, first) for first in (10, 11, 9, 3)] == [None, "poll-skip", "nonmonotonic-poll", "nonmonotonic-poll"]
    assert [send_kind(9, first) for first in (10, 40, 9, 0)] == [None, None, "nonmonotonic-send", "nonmonotonic-send"]


def test_a_jump_ahead_to_where_no_position_was_set_is_an_unexplained_poll_skip() -> None:
    """A reset to 50 explains a jump to 50, not the jump to 20 the consumer made."""
    events = [assigned(0, "T-0"), position(1, 0), processed(10, 0, 10), position(20, 50, "earliest", "out_of_range"),
              processed(30, 20, 30)]
    figures = anomalies_of(events)
    assert _cases(events) == [("poll-skip", "T-0", 9, 20, 11, 30, None)]
    assert figures["anomalies"]["poll-skip"] == {"explained": 0, "unexplained": 1, "by_cause": {}}
    assert figures["anomaly_cases"][0]["explained_by"] is None


def test_records_received_again_without_a_position_change_are_an_unexplained_nonmonotonic_poll() -> None:
    events = [assigned(0, "T-0"), position(1, 0), processed(10, 0, 10), processed(20, 5, 8), processed(30, 8, 12)]
    assert _cases(events) == [("nonmonotonic-poll", "T-0", 9, 5, -4, 20, None)]
    assert anomalies_of(events)["anomalies"]["nonmonotonic-poll"] == {"explained": 0, "unexplained": 1, "by_cause": {}}


def test_a_reset_explains_the_jump_to_its_offset_even_after_records_returned_before_it() -> None:
    """Records 10-19 were returned (to a worker) before validation moved the position back to
    10; they are logged after it, in order, and only then the jump back to 10 shows."""
    events = [assigned(0, "T-0"), position(1, 0), processed(10, 0, 10), position(15, 10, "truncation", "truncation"),
              processed(20, 10, 20), processed(30, 10, 15, epoch=1)]
    figures = anomalies_of(events)
    assert _cases(events) == [("nonmonotonic-poll", "T-0", 19, 10, -9, 30, "log_truncation_or_reset")]
    assert figures["anomaly_cases"][0]["explained_by"] == {
        "event": "fetch_position_set", "node": C, "ts_ms": 15, "source": "truncation", "reason": "truncation",
    }
    # a position once jumped to explains nothing more
    assert _cases([*events, processed(40, 15, 16), processed(50, 10, 11)])[1:] == [("nonmonotonic-poll", "T-0", 15, 10, -5, 50, None)]


def test_a_new_assignment_starts_afresh_and_records_in_hand_after_a_revocation_go_on_the_old_hold() -> None:
    events = [
        assigned(0, "T-0"), position(1, 0), processed(10, 0, 10),
        revoked(20, "T-0"), processed(25, 10, 15),  # in hand when the partition was revoked
        assigned(30, "T-0"), position(31, 40), processed(40, 40, 45),  # back from another owner's commit
        revoked(50, "T-0"), processed(55, 30, 31),  # the released hold's last record was 44
    ]
    assert _cases(events) == [("nonmonotonic-poll", "T-0", 44, 30, -14, 55, None)]


def test_a_restarted_consumer_holds_nothing_until_assigned() -> None:
    events = [assigned(0, "T-0"), processed(10, 0, 10), _e(20, "sim", "node_crashed", target=C, kind="process"),
              _e(30, C, "consumer_started", group_id="g"), assigned(40, "T-0"), processed(50, 4, 8)]
    assert _cases(events) == []


def test_an_acknowledgement_below_the_last_one_sent_before_it_is_an_unexplained_nonmonotonic_send() -> None:
    events = [sent(0, 1, 0), acked(5, 1, 0, 0, count=5), sent(6, 2, 5), acked(10, 2, 5, 3, count=2)]
    figures = anomalies_of(events)
    assert _cases(events) == [("nonmonotonic-send", "T-0", 4, 3, -1, 10, None)]
    [case] = figures["anomaly_cases"]
    assert (case["node"], case["producer_id"], case["producer_epoch"]) == (P, 7, 0)
    assert figures["anomalies"]["nonmonotonic-send"] == {"explained": 0, "unexplained": 1, "by_cause": {}}


def test_sends_are_compared_in_the_order_they_were_sent_not_acknowledged() -> None:
    """Sequence 2 failed once (NOT_ENOUGH_REPLICAS_AFTER_APPEND) and was acknowledged, as a
    duplicate of its first write, after 3 and 4: its offset is still below theirs. A later
    batch acknowledged before an earlier one, below it, is the anomaly."""
    in_order = [sent(0, 1, 0), acked(1, 1, 0, 0, count=2), sent(2, 2, 2), sent(3, 3, 3), sent(4, 4, 4),
                acked(5, 3, 3, 3), acked(6, 4, 4, 4), acked(9, 2, 2, 2)]
    assert _cases(in_order) == []
    out_of_order = [*in_order[:5], acked(5, 3, 3, 2), acked(6, 4, 4, 3), acked(9, 2, 2, 5)]
    assert _cases(out_of_order) == [("nonmonotonic-send", "T-0", 5, 2, -3, 9, None)]


def test_a_send_goes_back_explained_when_a_leader_elected_since_lacked_the_one_before() -> None:
    events = [sent(0, 1, 0), acked(5, 1, 0, 0, count=5), leader(7, 5), sent(8, 2, 5), acked(10, 2, 5, 5),
              leader(12, 3), sent(13, 3, 6), acked(15, 3, 6, 3)]
    figures = anomalies_of(events)
    # the leader at 7 held offsets 0-4: what came next went on at 5, in order
    assert _cases(events) == [("nonmonotonic-send", "T-0", 5, 3, -2, 15, "lost_acked")]
    assert figures["anomaly_cases"][0]["explained_by"] == {"event": "became_leader", "node": "broker-2", "ts_ms": 12, "leader_epoch": 3}


def test_another_session_or_a_producer_without_idempotence_is_not_compared() -> None:
    events = [sent(0, 1, 0), acked(5, 1, 0, 10), sent(6, 2, 0, epoch=1), acked(10, 2, 0, 3),  # KIP-360's bump: a new session
              sent(11, 3, -1, producer_id=-1), acked(15, 3, -1, 0), sent(16, 4, 1, epoch=1), acked(20, 4, 1, 4)]
    assert _cases(events) == []
