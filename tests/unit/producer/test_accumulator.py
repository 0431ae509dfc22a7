"""The record accumulator: batches by `batch.size`, readiness by `linger.ms` and the retry
back-off, the drain per node under `max.request.size`, and expiry."""

from __future__ import annotations

from actors.producer.accumulator import RecordAccumulator
from protocols.replication import RECORD_BATCH_OVERHEAD

RECORD = 100  # bytes of key and value; 108 in a batch


def _acc(batch_size: int = 400, linger_ms: int = 5, retry_backoff_ms: int = 100) -> RecordAccumulator:
    return RecordAccumulator(batch_size, linger_ms, retry_backoff_ms, RECORD)


def test_records_fill_a_batch_up_to_batch_size_then_start_another() -> None:
    acc = _acc()
    batches = [acc.append(0, n, 0, abort_on_new_batch=False) for n in range(4)]
    assert batches[0] is batches[1] is batches[2]  # 61 + 3 * 108 = 385 <= 400
    assert batches[3] is not batches[0] and batches[0].numbers == [0, 1, 2]
    assert batches[0].size_bytes == RECORD_BATCH_OVERHEAD + 3 * 108
    assert acc.append(0, 4, 0, abort_on_new_batch=True) is batches[3]  # it has room
    assert acc.append(0, 5, 0, abort_on_new_batch=True) is batches[3]
    assert acc.append(0, 6, 0, abort_on_new_batch=True) is None  # a new batch would be needed
    big = RecordAccumulator(100, 0, 100, 500).append(1, 0, 0, abort_on_new_batch=False)
    assert big is not None and big.count == 1  # a batch always takes its first record


def test_a_partition_is_ready_when_its_batch_lingered_or_is_full() -> None:
    acc = _acc()
    leaders = {0: 1, 1: 2, 2: -1}.get
    acc.append(0, 0, 10, abort_on_new_batch=False)
    acc.append(1, 1, 12, abort_on_new_batch=False)
    ready = acc.ready(12, leaders)
    assert (ready.nodes, ready.next_check_ms, ready.unknown_leader) == ([], 3, False)
    assert acc.ready(15, leaders).nodes == [1]
    for n in range(2, 6):  # partition 1's first batch fills: a second batch exists
        acc.append(1, n, 13, abort_on_new_batch=False)
    assert acc.ready(13, leaders).nodes == [2]
    acc.append(2, 9, 13, abort_on_new_batch=False)
    assert acc.ready(13, leaders).unknown_leader


def test_the_drain_takes_one_batch_per_partition_within_max_request_size() -> None:
    acc = _acc(linger_ms=0)
    for partition in (0, 1, 2):
        for n in range(5):
            acc.append(partition, 10 * partition + n, 0, abort_on_new_batch=False)
    drained = acc.drain(1, [0, 1, 2], 800, 0, lambda b: True)
    assert [(b.partition, b.numbers) for b in drained] == [(0, [0, 1, 2]), (1, [10, 11, 12])]  # 385 + 385
    assert all(b.closed for b in drained)
    # The next drain starts where this one stopped (`drainIndex`), so no partition starves.
    assert [b.partition for b in acc.drain(1, [0, 1, 2], 800, 0, lambda b: True)] == [2, 0]
    held = acc.drain(1, [0, 1, 2], 10_000, 0, lambda b: b.partition != 1)
    assert [b.partition for b in held] == [2]


def test_a_retried_batch_waits_for_the_back_off_and_goes_first() -> None:
    acc = _acc(linger_ms=0)
    first = acc.append(0, 0, 0, abort_on_new_batch=False)
    [sent] = acc.drain(1, [0], 10_000, 0, lambda b: True)
    acc.append(0, 1, 5, abort_on_new_batch=False)
    acc.reenqueue(sent, 10, in_sequence_order=False)
    assert sent is first and sent.attempts == 1
    assert acc.ready(50, {0: 1}.get).nodes == []  # backing off until 110
    assert acc.drain(1, [0], 10_000, 50, lambda b: True) == []
    [again] = acc.drain(1, [0], 10_000, 110, lambda b: True)
    assert again is first
    assert acc.append(0, 2, 110, abort_on_new_batch=False).numbers == [1, 2]  # a closed batch takes none


def test_an_idempotent_retry_is_put_back_in_sequence_order() -> None:
    """`insertInSequenceOrder`: retried batches go back at the head, ordered by sequence, ahead
    of new batches without one."""
    acc = _acc(linger_ms=0)
    drained = []
    for n in range(2):
        acc.append(0, n, 0, abort_on_new_batch=False)
        drained += acc.drain(1, [0], 10_000, 0, lambda b: True)
    earlier, later = drained
    earlier.base_sequence, later.base_sequence = 0, 1
    new = acc.append(0, 2, 0, abort_on_new_batch=False)
    acc.reenqueue(later, 1, in_sequence_order=True)
    acc.reenqueue(earlier, 1, in_sequence_order=True)
    assert list(acc.queued()) == [earlier, later, new]


def test_batches_expire_after_the_delivery_timeout_or_before_kip_91_the_request_timeout() -> None:
    acc = _acc(linger_ms=5)
    acc.append(0, 0, 0, abort_on_new_batch=False)
    acc.append(1, 1, 50, abort_on_new_batch=False)
    assert acc.next_expiry(1000, 30000) == 1000
    assert [b.numbers for b in acc.expired(1000, 1000, 30000)] == [[0]]
    assert acc.next_expiry(1000, 30000) == 1050
    old = _acc(linger_ms=5)
    old.append(0, 0, 0, abort_on_new_batch=False)
    assert old.next_expiry(None, 30000) == 30006  # created + linger + request.timeout.ms, passed
    assert old.expired(30005, None, 30000) == [] and len(old.expired(30006, None, 30000)) == 1
