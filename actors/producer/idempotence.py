"""The idempotent producer's bookkeeping (`TransactionManager` without transactions).

- The producer id and epoch come from InitProducerId; nothing is sent before.
- Each partition has its own sequence: a batch gets the next one when first drained, and keeps
  it through its retries. The batches with a sequence and no outcome yet are kept per
  partition in sequence order.
- A retried batch is sent only when it is the first of its partition's unresolved batches
  (`shouldStopDrainBatchesForPartition`), so retries go one at a time and in order.
- OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that is not next in line means an earlier batch
  failed: it is retried after that one (`canRetry`).
- A batch that fails for good while later ones are unresolved leaves a gap the broker would
  refuse for ever. KIP-360 (2.5): the producer bumps its epoch itself and renumbers the
  partition's unresolved batches from 0 (`bumpIdempotentEpochAndResetIdIfNeeded`,
  `startSequencesAtBeginning`). Before 2.5 it takes a new producer id instead
  (`resetProducerId`), and every partition starts again at 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.producer.accumulator import ProducerBatch
from protocols.errors import ErrorCode
from protocols.producer import InitProducerIdRequest, InitProducerIdResponse

__all__ = ["Idempotence"]

INT_MAX = 2**31 - 1
SHORT_MAX = 2**15 - 1


@dataclass(slots=True)
class _Partition:
    next_sequence: int = 0
    last_acked_sequence: int = -1
    owner: tuple[int, int] = (-1, -1)
    """The (producer id, epoch) its sequences belong to."""
    unresolved: list[ProducerBatch] = field(default_factory=list)
    """Batches with a sequence and no outcome yet, in sequence order."""


@dataclass(slots=True)
class Idempotence:
    epoch_bump: bool = True
    """KIP-360 (2.5+): a gap is closed by bumping the epoch, not by a new producer id."""
    producer_id: int = -1
    producer_epoch: int = -1
    init_in_flight: int | None = None
    partitions: dict[int, _Partition] = field(default_factory=dict)
    to_rewrite: set[int] = field(default_factory=set)
    """Partitions whose unresolved batches get new sequences at the next epoch bump."""
    bump_needed: bool = False
    reset_needed: bool = False

    # ------------------------------------------------------------------ producer id

    def ready_to_send(self) -> bool:
        """A producer id is known, and no bump or reset is pending; applies a local bump."""
        if self.bump_needed and self.producer_id >= 0:
            self._bump_epoch()
        return self.producer_id >= 0 and not self.reset_needed

    def init_request(self) -> InitProducerIdRequest:
        return InitProducerIdRequest()

    def on_init_response(self, resp: InitProducerIdResponse) -> None:
        self.init_in_flight = None
        if resp.error_code is not ErrorCode.NONE:
            return  # asked again by the sender
        self.producer_id, self.producer_epoch = resp.producer_id, resp.producer_epoch
        self.reset_needed = False

    def _bump_epoch(self) -> None:
        """`bumpIdempotentProducerEpoch`: epoch + 1, and renumber the partitions with a gap."""
        self.bump_needed = False
        if self.producer_epoch >= SHORT_MAX:
            self._reset_producer_id()
            return
        self.producer_epoch += 1
        for partition in sorted(self.to_rewrite):
            self._start_at_beginning(self.partitions[partition])
        self.to_rewrite.clear()

    def _reset_producer_id(self) -> None:
        """`resetIdempotentProducerId`: a new producer id; every partition starts again at 0."""
        self.producer_id, self.producer_epoch = -1, -1
        self.reset_needed = True
        self.to_rewrite.clear()
        for state in self.partitions.values():
            state.owner = (-1, -1)

    def _start_at_beginning(self, state: _Partition) -> None:
        """`startSequencesAtBeginning`: the unresolved batches get sequences from 0 under the
        current id and epoch."""
        sequence = 0
        for batch in state.unresolved:
            batch.producer_id, batch.producer_epoch, batch.base_sequence = self.producer_id, self.producer_epoch, sequence
            batch.sequence_reset = True
            sequence += batch.count
        state.next_sequence, state.last_acked_sequence = sequence, -1
        state.owner = (self.producer_id, self.producer_epoch)

    # ------------------------------------------------------------------ sequences

    def _partition(self, partition: int) -> _Partition:
        state = self.partitions.get(partition)
        if state is None:
            state = self.partitions[partition] = _Partition()
        return state

    def may_send(self, batch: ProducerBatch) -> bool:
        """`shouldStopDrainBatchesForPartition`, inverted."""
        if self.producer_id < 0 or self.reset_needed:
            return False
        state = self._partition(batch.partition)
        current = (self.producer_id, self.producer_epoch)
        if batch.base_sequence < 0:
            if state.owner != current:
                if state.unresolved:
                    return False  # batches of the old id or epoch are still unresolved
                state.owner, state.next_sequence, state.last_acked_sequence = current, 0, -1
            return True
        first = state.unresolved[0] if state.unresolved else None
        return first is batch  # a retry goes only when it is first in line

    def assign(self, batch: ProducerBatch) -> None:
        """Give a new batch the partition's next sequence (a retry keeps its own)."""
        if batch.base_sequence >= 0:
            return
        state = self._partition(batch.partition)
        batch.producer_id, batch.producer_epoch = self.producer_id, self.producer_epoch
        batch.base_sequence = state.next_sequence
        state.next_sequence = (state.next_sequence + batch.count) % (INT_MAX + 1)
        state.unresolved.append(batch)

    def acked(self, batch: ProducerBatch) -> None:
        state = self._partition(batch.partition)
        state.last_acked_sequence = max(state.last_acked_sequence, batch.last_sequence)
        self._resolve(state, batch)

    def can_retry(self, batch: ProducerBatch, error: ErrorCode, retriable: bool) -> bool:
        """`TransactionManager.canRetry`: OUT_OF_ORDER_SEQUENCE_NUMBER is retried when the batch
        is not next in line (an earlier one failed and goes first), or was renumbered by an epoch
        bump while its request was in flight under the old numbers. UNKNOWN_PRODUCER_ID (a
        broker before 2.5 that lost the producer's state) fails the batch, and the producer
        takes a new id (the log start offset case, after retention, is not modelled)."""
        state = self._partition(batch.partition)
        if (batch.producer_id, batch.producer_epoch) != (self.producer_id, self.producer_epoch):
            return False
        if error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
            return batch.sequence_reset or batch.base_sequence != state.last_acked_sequence + 1
        return retriable

    def failed(self, batch: ProducerBatch, error: str) -> None:
        """A batch failed for good. If it leaves later batches unresolved (or its sequence
        may have been written, as after a timeout), the partition's numbering is broken:
        bump the epoch (KIP-360) or, before it, take a new producer id."""
        state = self._partition(batch.partition)
        if batch.base_sequence < 0:
            return  # never sent with a sequence: nothing to repair
        self._resolve(state, batch)
        if (batch.producer_id, batch.producer_epoch) != (self.producer_id, self.producer_epoch):
            return
        if self.epoch_bump and error != ErrorCode.UNKNOWN_PRODUCER_ID.name:
            self.bump_needed = True
            self.to_rewrite.add(batch.partition)
        else:
            self._reset_producer_id()

    def _resolve(self, state: _Partition, batch: ProducerBatch) -> None:
        if batch in state.unresolved:
            state.unresolved.remove(batch)
