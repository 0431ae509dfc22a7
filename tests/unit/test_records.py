"""Record values held compactly (`ValueRun`), followers sharing their leader's batches, and a
log's records read from its batches (`LogEntries`)."""

from __future__ import annotations

from actors.broker.partition_log import PartitionLog
from actors.core import Out
from protocols import decode_frame, encode_frame
from protocols.errors import ErrorCode
from protocols.records import LogEntries, ValueRun, compact_values, numbered, producer_records
from protocols.replication import FetchedPartition, FetchResponse, RecordBatch
from protocols.types import TopicPartition


def test_a_run_is_the_sequence_of_its_strings() -> None:
    run = ValueRun("producer-1:", 8, 4)
    assert list(run) == ["producer-1:8", "producer-1:9", "producer-1:10", "producer-1:11"]
    assert (len(run), run[0], run[-1], run[2]) == (4, "producer-1:8", "producer-1:11", "producer-1:10")
    assert run[1:3] == ValueRun("producer-1:", 9, 2) == ("producer-1:9", "producer-1:10")
    assert ("producer-1:9", "producer-1:10") == run[1:3]
    assert run != ValueRun("producer-1:", 9, 4) and run != ValueRun("producer-2:", 8, 4)
    assert ValueRun("p:", 0, 0) == ValueRun("q:", 5, 0) == ()
    assert hash(run) == hash(tuple(run))
    strided = ValueRun("p:", 3, 3, 12)
    assert list(strided) == ["p:3", "p:15", "p:27"] and strided[1:] == ("p:15", "p:27")


def test_values_are_compacted_only_when_they_are_a_run() -> None:
    assert compact_values(("p:5", "p:6", "p:7")) == ValueRun("p:", 5, 3)
    assert type(compact_values(("p:5", "p:6", "p:7"))) is ValueRun
    assert compact_values(("p:0", "p:12", "p:24")) == ValueRun("p:", 0, 3, 12)
    for values in (("a", "b"), ("p:1", "p:1"), ("p:1", "p:2", "p:4"), ("p:01", "p:2"), ("p:1", "q:2"), ("x",)):
        compacted = compact_values(values)
        assert type(compacted) is tuple and compacted == values
    assert compact_values(()) == ()
    assert numbered("m10") == ("m", 10) and numbered("m") is None and numbered("m007") is None
    assert numbered("0") == ("", 0)


def test_a_batch_names_its_producer_and_record_numbers() -> None:
    assert producer_records(ValueRun("producer-2:", 7, 3, 2)) == ("producer-2", [7, 9, 11])
    assert producer_records(("producer-1:4", "producer-1:9")) == ("producer-1", [4, 9])
    # Values written through the API, or of two producers, name no batch.
    assert producer_records(("a", "b")) is None
    assert producer_records(("producer-1:4", "producer-2:5")) is None
    assert producer_records(ValueRun("v", 1, 2)) is None
    assert producer_records(()) is None


def test_a_run_goes_on_the_wire_as_its_strings() -> None:
    """The frame of a batch held as a run is the frame of its strings: peers and the golden
    frames see no difference."""
    strings = RecordBatch(0, 1, ("p:7", "p:8"), size_bytes=77)
    run = RecordBatch(0, 1, ValueRun("p:", 7, 2), size_bytes=77)
    frames = [
        encode_frame(FetchResponse((FetchedPartition("T", 0, ErrorCode.NONE, 2, (b,)),)), 5) for b in (strings, run)
    ]
    assert frames[0] == frames[1]
    assert decode_frame(frames[1]).message.partitions[0].records == (strings,)


def test_followers_keep_the_leaders_batch() -> None:
    """A follower's fetched copy of a batch its leader appended in this process is replaced by
    the leader's object; a batch that differs is kept, compacted."""
    tp = TopicPartition("shared-batches", 0)
    leader, follower, other = PartitionLog(tp), PartitionLog(tp), PartitionLog(tp)
    batch = leader.append_as_leader(Out(), ("p:1", "p:2"), 0, (-1, -1, -1), 80)
    follower.append_as_follower(Out(), (RecordBatch(0, 0, ("p:1", "p:2"), size_bytes=80),))
    assert follower.batches[0] is batch
    other.append_as_follower(Out(), (RecordBatch(0, 3, ("p:1", "p:2"), size_bytes=80),))
    assert other.batches[0] is not batch and type(other.batches[0].values) is ValueRun


def test_log_entries_read_records_from_batches() -> None:
    batches = [RecordBatch(0, 0, ValueRun("p:", 0, 3)), RecordBatch(3, 2, ("a",)), RecordBatch(4, 2, ValueRun("p:", 9, 2))]
    entries = LogEntries(batches)
    expected = [(0, 0, "p:0"), (1, 0, "p:1"), (2, 0, "p:2"), (3, 2, "a"), (4, 2, "p:9"), (5, 2, "p:10")]
    assert len(entries) == 6 and list(entries) == expected and entries == expected
    assert (entries[3], entries[5], entries[-1]) == ((3, 2, "a"), (5, 2, "p:10"), (5, 2, "p:10"))
    assert entries[1:3] == expected[1:3]
    assert list(entries.runs())[1] == (3, 2, ("a",))
    assert LogEntries([]) == [] and len(LogEntries([])) == 0
