"""The controller's reads and writes in ZooKeeper (`KafkaZkClient`), and the requests of the
broker's own writes: its registration, its bid for the controller, and its ISR write before 2.7.

Each read or write is a generator, as the controller's steps are: it `yield`s a tuple of
ZooKeeper requests and is resumed with their responses, in the same order. Reads return what
they found; the controller caches it (`ControllerContext`), as Kafka's does.

From 2.1 every controller write is wrapped in a multi with `CheckOp(/controller_epoch,
epochZkVersion)` (KAFKA-6082): a BADVERSION on that check means another controller was elected
since, and raises `ControllerMoved`, on which the controller resigns.

Left out: the znodes of topic deletion, partition reassignment, preferred-replica election
requests, configs and ACLs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any

from actors.controller import zkdata as zk
from actors.controller.zkdata import LeaderIsr
from protocols.errors import ErrorCode
from protocols.metadata import IsrUpdateRequest, IsrUpdateResponse
from protocols.types import TopicPartition
from protocols.zookeeper import (
    GetChildrenRequest,
    GetDataRequest,
    MultiRequest,
    MultiResponse,
    Op,
    OpCode,
    ZkError,
)

__all__ = [
    "TOP_LEVEL_PATHS",
    "ControllerMoved",
    "KafkaZkClient",
    "Step",
    "create_top_level_paths",
    "isr_update_request",
    "isr_update_response",
    "register_broker",
    "register_controller",
]

Step = Generator[tuple[Any, ...], tuple[Any, ...], Any]
"""A controller step: yields ZooKeeper requests, is resumed with their responses."""


class ControllerMoved(Exception):  # noqa: N818 - Kafka's name
    """A write's controller-epoch check failed: another broker is controller now."""


class KafkaZkClient:
    """The elected controller's view of ZooKeeper: `session` gives the session its requests
    are sent on (a new one after an expiry), `epoch_zk_version` the version of
    `/controller_epoch` it won with."""

    def __init__(self, session: Callable[[], int], epoch_zk_version: int, *, checked_writes: bool) -> None:
        self.session = session
        self.epoch_zk_version = epoch_zk_version
        self.checked_writes = checked_writes
        """2.1+ (KAFKA-6082): every write starts with the controller-epoch check."""

    # ------------------------------------------------------------------ reads

    def get_all_broker_and_epochs(self) -> Step:
        """`getAllBrokerAndEpochsInCluster`, with the child watch set again: broker id -> epoch."""
        (children,) = yield (GetChildrenRequest(self.session(), zk.BROKER_IDS, watch=True),)
        ids = sorted(int(c) for c in children.children) if children.error is ZkError.OK else []
        datas = yield tuple(GetDataRequest(self.session(), zk.broker_path(b)) for b in ids)
        return {b: d.stat.czxid for b, d in zip(ids, datas, strict=True) if d.error is ZkError.OK and d.stat}

    def get_full_replica_assignment(self) -> Step:
        """`getFullReplicaAssignmentForTopics` of every topic, with the child watch set."""
        (children,) = yield (GetChildrenRequest(self.session(), zk.TOPICS, watch=True),)
        topics = sorted(children.children) if children.error is ZkError.OK else []
        datas = yield tuple(GetDataRequest(self.session(), zk.topic_path(t)) for t in topics)
        assignments: dict[TopicPartition, tuple[int, ...]] = {}
        for topic, data in zip(topics, datas, strict=True):
            if data.error is ZkError.OK:
                assignments.update(zk.decode_assignment(topic, data.data))
        return assignments

    def get_topic_partition_states(self, partitions: list[TopicPartition]) -> Step:
        """`getTopicPartitionStates`: the leader and ISR of each partition whose znode exists."""
        datas = yield tuple(GetDataRequest(self.session(), zk.state_path(tp)) for tp in partitions)
        states: dict[TopicPartition, LeaderIsr] = {}
        for tp, data in zip(partitions, datas, strict=True):
            if data.error is ZkError.OK and data.stat is not None:
                states[tp] = zk.decode_state(data.data, data.stat.version)
        return states

    def get_all_isr_change_notifications(self) -> Step:
        """The paths of the `/isr_change_notification` children, with the child watch set."""
        (children,) = yield (GetChildrenRequest(self.session(), zk.ISR_CHANGE_NOTIFICATION, watch=True),)
        names = sorted(children.children) if children.error is ZkError.OK else []
        return [f"{zk.ISR_CHANGE_NOTIFICATION}/{name}" for name in names]

    def get_partitions_from_isr_change_notifications(self, paths: list[str]) -> Step:
        notes = yield tuple(GetDataRequest(self.session(), p) for p in paths)
        return sorted({tp for n in notes if n.error is ZkError.OK for tp in zk.decode_isr_change(n.data)})

    # ------------------------------------------------------------------ writes

    def delete_isr_change_notifications(self, paths: list[str]) -> Step:
        (response,) = yield from self._writes([[Op(OpCode.DELETE, p) for p in paths]])
        return response

    def create_topic_partition_states(self, created: dict[TopicPartition, LeaderIsr]) -> Step:
        """`createTopicPartitionStatesRaw`: each partition's znode and its state znode, in
        partition order. Returns each partition's error."""
        order = sorted(created)
        responses = yield from self._writes(
            [
                [
                    Op(OpCode.CREATE, zk.partition_path(tp)),
                    Op(OpCode.CREATE, zk.state_path(tp), zk.encode_state(created[tp])),
                ]
                for tp in order
            ]
        )
        return {tp: response.error for tp, response in zip(order, responses, strict=True)}

    def update_leader_and_isr(self, proposed: dict[TopicPartition, LeaderIsr]) -> Step:
        """`updateLeaderAndIsr`: one conditional setData per partition, each fenced by the
        controller epoch. Returns the partitions written, in order, with their new zkVersion."""
        order = sorted(proposed)
        responses = yield from self._writes(
            [
                [Op(OpCode.SET_DATA, zk.state_path(tp), zk.encode_state(proposed[tp]), proposed[tp].zk_version)]
                for tp in order
            ]
        )
        written: dict[TopicPartition, LeaderIsr] = {}
        for tp, response in zip(order, responses, strict=True):
            if response.error is ZkError.OK:
                stat = response.results[-1].stat
                written[tp] = replace(proposed[tp], zk_version=stat.version if stat else -1)
        return written

    def _writes(self, writes: list[list[Op]]) -> Step:
        """Multis, each starting with the controller-epoch check; BADVERSION on that check in
        any of them: ControllerMoved."""
        if not writes:
            return []
        if not self.checked_writes:
            # Before 2.1 a controller that lost its place still writes (KAFKA-6082): it learns
            # of it only from the watch on /controller.
            return list((yield tuple(MultiRequest(self.session(), tuple(ops)) for ops in writes)))
        check = Op(OpCode.CHECK, zk.CONTROLLER_EPOCH, version=self.epoch_zk_version)
        responses: tuple[MultiResponse, ...] = yield tuple(
            MultiRequest(self.session(), (check, *ops)) for ops in writes
        )
        for response in responses:
            if response.error is ZkError.BADVERSION and response.results[0].error is ZkError.BADVERSION:
                raise ControllerMoved
        return list(responses)


# ---------------------------------------------------------------------- a broker's own writes

TOP_LEVEL_PATHS = ("/brokers", zk.BROKER_IDS, zk.TOPICS, zk.ISR_CHANGE_NOTIFICATION)


def create_top_level_paths(session_id: int) -> list[MultiRequest]:
    """`createTopLevelPaths`, and `/controller_epoch` = 0: one multi each, so that a path that
    exists already fails alone."""
    requests = [MultiRequest(session_id, (Op(OpCode.CREATE, path),)) for path in TOP_LEVEL_PATHS]
    requests.append(MultiRequest(session_id, (Op(OpCode.CREATE, zk.CONTROLLER_EPOCH, "0"),)))
    return requests


def register_broker(session_id: int, broker_id: int) -> MultiRequest:
    """`registerBroker`: the ephemeral `/brokers/ids/N`, whose czxid is the broker epoch."""
    info = json.dumps({"host": f"broker-{broker_id}", "version": 5}, sort_keys=True)
    return MultiRequest(session_id, (Op(OpCode.CREATE, zk.broker_path(broker_id), info, ephemeral=True),))


def register_controller(session_id: int, broker_id: int, epoch: int, epoch_zk_version: int) -> MultiRequest:
    """`registerControllerAndIncrementControllerEpoch`: the ephemeral `/controller` and
    `/controller_epoch` = `epoch`, expecting the version read, in one multi."""
    me = json.dumps({"brokerid": broker_id, "version": 2}, sort_keys=True)
    ops = (
        Op(OpCode.CREATE, zk.CONTROLLER, me, ephemeral=True),
        Op(OpCode.SET_DATA, zk.CONTROLLER_EPOCH, str(epoch), version=epoch_zk_version),
    )
    return MultiRequest(session_id, ops)


def isr_update_request(session_id: int, req: IsrUpdateRequest) -> MultiRequest:
    """Before 2.7, `Partition.updateIsr` through `KafkaZkClient`: a conditional write of the
    state znode (not fenced by the controller epoch: a broker writes it), then the notification
    (`propagateIsrChanges`)."""
    tp = TopicPartition(req.topic, req.partition)
    state = zk.LeaderIsr(req.leader, req.leader_epoch, tuple(req.isr), req.controller_epoch, req.zk_version)
    ops = (
        Op(OpCode.SET_DATA, zk.state_path(tp), zk.encode_state(state), req.zk_version),
        Op(OpCode.CREATE, zk.ISR_CHANGE_PREFIX, zk.encode_isr_change([tp]), sequential=True),
    )
    return MultiRequest(session_id, ops)


def isr_update_response(resp: MultiResponse) -> IsrUpdateResponse:
    """The answer to the replica manager: the state znode's new version, or a conflict."""
    if resp.error is ZkError.OK and resp.results[0].stat is not None:
        return IsrUpdateResponse(ErrorCode.NONE, resp.results[0].stat.version)
    return IsrUpdateResponse(ErrorCode.INVALID_UPDATE_VERSION)
