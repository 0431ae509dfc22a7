"""InitProducerId: how an idempotent producer gets its producer id and epoch.

Field names are Kafka's (`InitProducerIdRequest.json`). Without a transactional id any broker
answers, from the block of ids it holds (KIP-98).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.errors import ErrorCode
from protocols.keys import ApiKey
from protocols.registry import Kind, message


@message(ApiKey.INIT_PRODUCER_ID, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error_code: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


@message(ApiKey.INIT_PRODUCER_ID, kind=Kind.REQUEST, response=InitProducerIdResponse)
@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    transaction_timeout_ms: int = 60000
    producer_id: int = -1
    """KIP-360 (2.5): the id to bump the epoch of; -1 for a new producer id."""
    producer_epoch: int = -1
