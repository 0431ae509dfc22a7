"""The comparison of two event logs (`sim.engine.divergence`) on hand-made lines."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sim.engine.divergence import Divergence, EventHead, LogComparison, compare_logs, describe, first_divergence

LOG = [
    '{"ts_ms":0,"node":"sim","actor":"kernel","event":"run_started","scenario":"s"}',
    '{"ts_ms":4,"node":"broker-1","actor":"broker","event":"high_watermark_advanced","partition":"T-0","high_watermark":7}',
    '{"ts_ms":9,"node":"consumer-1","actor":"consumer","event":"records_processed","offsets":[7,8]}',
]
HW = EventHead(4, "broker-1", "broker", "high_watermark_advanced")
PROCESSED = EventHead(9, "consumer-1", "consumer", "records_processed")


def test_identical_logs_do_not_diverge() -> None:
    assert first_divergence(LOG, list(LOG)) is None
    assert first_divergence([], []) is None
    assert first_divergence((line.encode() for line in LOG), (line.encode() for line in LOG)) is None


def test_a_differing_field_is_named_with_both_values() -> None:
    other = [*LOG[:1], LOG[1].replace('"high_watermark":7', '"high_watermark":8'), LOG[2].replace("9", "10")]
    divergence = first_divergence(LOG, other)
    assert divergence == Divergence(2, HW, HW, "high_watermark", "7", "8")
    assert describe(divergence, "pykka", "direct") == [
        "the event logs first differ at line 2",
        "  pykka   4 ms broker-1/broker high_watermark_advanced",
        "  direct  4 ms broker-1/broker high_watermark_advanced",
        "  first differing field: high_watermark: 7 under pykka, 8 under direct",
    ]


def test_values_differ_by_their_json_text_and_an_absent_field_is_named() -> None:
    as_bool = LOG[1].replace('"high_watermark":7', '"high_watermark":true')
    assert first_divergence([LOG[1]], [as_bool]) == Divergence(1, HW, HW, "high_watermark", "7", "true")
    as_float = LOG[1].replace('"high_watermark":7', '"high_watermark":7.0')
    assert first_divergence([LOG[1]], [as_float]) == Divergence(1, HW, HW, "high_watermark", "7", "7.0")
    extra = LOG[1].replace("}", ',"leader_epoch":3}')
    assert first_divergence([LOG[1]], [extra]) == Divergence(1, HW, HW, "leader_epoch", None, "3")
    moved = LOG[2].replace('"ts_ms":9', '"ts_ms":11').replace("[7,8]", "[8,7]")
    divergence = first_divergence([LOG[2]], [moved])
    assert (divergence.field, divergence.value_a, divergence.value_b) == ("ts_ms", "9", "11")
    assert describe(first_divergence([LOG[1]], [extra]), "a", "b")[-1] == "  first differing field: leader_epoch: (absent) under a, 3 under b"


def test_the_shorter_log_diverges_where_it_ends() -> None:
    assert first_divergence(LOG, LOG[:1]) == Divergence(2, HW, None)
    assert first_divergence(LOG[:2], LOG) == Divergence(3, None, PROCESSED)
    assert first_divergence([], LOG[:1]) == Divergence(1, None, EventHead(0, "sim", "kernel", "run_started"))
    assert describe(first_divergence(LOG, LOG[:1]), "pykka", "direct") == [
        "the event logs first differ at line 2",
        "  pykka   4 ms broker-1/broker high_watermark_advanced",
        "  direct  ended after line 1",
    ]


def test_the_same_fields_in_another_order_or_a_line_that_is_not_an_event() -> None:
    reordered = '{"node":"sim","ts_ms":0,"actor":"kernel","event":"run_started","scenario":"s"}'
    divergence = first_divergence(LOG[:1], [reordered])
    assert divergence == Divergence(1, EventHead(0, "sim", "kernel", "run_started"), EventHead(0, "sim", "kernel", "run_started"))
    assert describe(divergence, "a", "b")[-1] == "  the same fields and values, written differently (their order or spacing)"
    cut = LOG[1][:40]
    divergence = first_divergence(LOG[:2], [LOG[0], cut])
    assert divergence == Divergence(2, HW, EventHead(None, None, None, None))
    assert describe(divergence, "a", "b")[2] == "  b  a line that is not a logged event"


def test_compare_logs_streams_two_files_and_gives_the_digest_of_identical_ones(tmp_path: Path) -> None:
    data = "".join(f"{line}\n" for line in LOG).encode()
    (tmp_path / "a").write_bytes(data)
    (tmp_path / "b").write_bytes(data)
    (tmp_path / "cut").write_bytes(data[: data.index(b"\n") + 1])
    (tmp_path / "unterminated").write_bytes(data[:-1])
    assert compare_logs(tmp_path / "a", tmp_path / "b") == LogComparison(3, hashlib.sha256(data).hexdigest(), None)
    assert compare_logs(tmp_path / "a", tmp_path / "cut") == LogComparison(1, None, Divergence(2, HW, None))
    # The same event without its end of line: the bytes differ, the fields do not.
    assert compare_logs(tmp_path / "a", tmp_path / "unterminated") == LogComparison(
        2, None, Divergence(3, PROCESSED, PROCESSED)
    )
