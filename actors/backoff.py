"""The clients' retry back-off: constant `retry.backoff.ms` before Kafka 3.7, exponential from
3.7 (KIP-580: Kafka's `ExponentialBackoff` with `CommonClientConfigs.RETRY_BACKOFF_EXP_BASE`
2 and `RETRY_BACKOFF_JITTER` 0.2, up to `retry.backoff.max.ms`).

The jitter is drawn from the actor's own seeded random stream (Kafka draws it from
`ThreadLocalRandom`), so a run stays the same for the same seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["RETRY_BACKOFF_EXP_BASE", "RETRY_BACKOFF_JITTER", "RetryBackoff", "exponential_backoff"]

RETRY_BACKOFF_EXP_BASE = 2
RETRY_BACKOFF_JITTER = 0.2


def exponential_backoff(
    initial_ms: int,
    max_ms: int,
    attempts: int,
    draw: float,
    *,
    multiplier: int = RETRY_BACKOFF_EXP_BASE,
    jitter: float = RETRY_BACKOFF_JITTER,
) -> int:
    """`ExponentialBackoff.backoff(attempts)`: `initial * multiplier^attempts`, the exponent
    capped where the term reaches `max`, times a factor in [1 - jitter, 1 + jitter) given by
    `draw` in [0, 1), truncated and never above `max`. A `max` not above `initial` gives a
    constant `max` (`initial` clipped to it) without jitter."""
    initial = min(initial_ms, max_ms)
    if max_ms <= initial:
        return initial
    exp_max = math.log(max_ms / max(initial, 1)) / math.log(multiplier)
    term = initial * multiplier ** min(attempts, exp_max)
    factor = (1 - jitter) + 2 * jitter * draw
    return min(int(factor * term), max_ms)


@dataclass(slots=True)
class RetryBackoff:
    """A client's retry back-off: `backoff(attempts)` is the wait before retry `attempts + 1`
    (0 for the first retry), by the version."""

    initial_ms: int
    max_ms: int
    exponential: bool
    """KIP-580 (3.7): exponential with jitter; before, a constant `retry.backoff.ms`."""
    rng: random.Random | None = None
    """The actor's seeded stream, set when it starts."""

    def backoff(self, attempts: int) -> int:
        if not self.exponential:
            return self.initial_ms
        assert self.rng is not None, "the actor's random stream is set when it starts"
        if self.max_ms <= self.initial_ms:
            return self.max_ms  # constant: no draw
        return exponential_backoff(self.initial_ms, self.max_ms, attempts, self.rng.random())
