"""Where the actors of a broker node live: the node `broker-N` hosts the replica manager, the
controller candidate and the group coordinator, which crash together.

Every package that talks to a broker's actors names them here, so none imports another's
package for an address (the group coordinator appends through its broker; the broker answers
FindCoordinator for the group coordinator).
"""

from __future__ import annotations

from functools import cache

from actors.core import Address

__all__ = [
    "BROKER_ACTOR",
    "CONTROLLER_ACTOR",
    "GROUP_COORDINATOR_ACTOR",
    "broker_address",
    "controller_address",
    "group_coordinator_address",
]

BROKER_ACTOR = "broker"
CONTROLLER_ACTOR = "controller"
"""The actor on every broker node that is its ZooKeeper client and controller candidate."""
GROUP_COORDINATOR_ACTOR = "group-coordinator"
"""The actor on every broker node that coordinates the groups whose `__consumer_offsets`
partition the broker leads."""


# Cached: a follower asks its leader's address at every fetch. Addresses are immutable values.
@cache
def broker_address(broker_id: int) -> Address:
    return Address(f"broker-{broker_id}", BROKER_ACTOR)


@cache
def controller_address(broker_id: int) -> Address:
    return Address(f"broker-{broker_id}", CONTROLLER_ACTOR)


@cache
def group_coordinator_address(broker_id: int) -> Address:
    return Address(f"broker-{broker_id}", GROUP_COORDINATOR_ACTOR)
