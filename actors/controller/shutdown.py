"""A broker's shutdown (`KafkaServer.shutdown`, `controlledShutdown`).

On the operator's signal, with `controlled.shutdown.enable`, the broker asks the active
controller to move its leaderships (ControlledShutdown), up to `controlled.shutdown.max.retries`
attempts `controlled.shutdown.retry.backoff.ms` apart while the answer is an error, lists
partitions it still leads, or does not come. Then, whatever the outcome, it closes its ZooKeeper
session (its registration goes at once, not after the session timeout as for a crash) and hands
the signal to the replica manager, which exits the process. Left out: the shutdown of the
broker's other components, which the replica manager's exit stands for.
"""

from __future__ import annotations

from dataclasses import dataclass

from actors.addresses import controller_address
from actors.controller.config import ControllerConfig
from actors.controller.zookeeper_client import ZooKeeperClient
from actors.core import Ctx, Inbound, Out
from protocols.errors import ErrorCode
from protocols.metadata import ControlledShutdownRequest, ControlledShutdownResponse, ShutdownSignal

__all__ = ["ControlledShutdown"]


@dataclass(slots=True)
class _Shutdown:
    """A shutdown under way."""

    started_ms: int
    exit_after_ms: int
    attempts: int = 0
    waiting: int = 0
    """The correlation id of the ControlledShutdown in flight; 0: none."""
    controller: int = -1


class ControlledShutdown:
    """The broker's shutdown, sent through the actor's ZooKeeper client `zk` (its session, and
    the correlation ids it shares with it)."""

    def __init__(self, config: ControllerConfig, zk: ZooKeeperClient) -> None:
        self.config = config
        self.zk = zk
        self.shutdown: _Shutdown | None = None

    def begin(self, ctx: Ctx, out: Out, signal: ShutdownSignal, controller: int, broker_epoch: int) -> None:
        """The operator's signal; `controller` is the active controller this broker knows of,
        `broker_epoch` its own (-1 for either: none yet)."""
        if self.shutdown is not None:
            return
        self.shutdown = _Shutdown(ctx.now_ms, signal.exit_after_ms)
        controlled = self.config.controlled_shutdown_enable
        out.emit("broker_shutdown_started", broker_id=self.config.broker_id, controlled=controlled)
        if controlled:
            self.attempt(ctx, out, controller, broker_epoch)
        else:
            self._finish(ctx, out)

    def attempt(self, ctx: Ctx, out: Out, controller: int, broker_epoch: int) -> None:
        """One attempt of `doControlledShutdown`: to the controller this broker knows of; with
        none known (or not registered yet), the attempt is spent waiting the back-off."""
        shutdown = self.shutdown
        if shutdown is None or shutdown.waiting:
            return
        shutdown.attempts += 1
        if controller < 0 or broker_epoch < 0:
            self._failed(ctx, out, "CONTROLLER_NOT_AVAILABLE")
            return
        shutdown.waiting, shutdown.controller = self.zk.new_correlation_id(), controller
        request = ControlledShutdownRequest(self.config.broker_id, broker_epoch)
        out.send(controller_address(controller), request, shutdown.waiting)
        out.set_timer("controlled-shutdown-timeout", self.config.request_timeout_ms)

    def on_response(self, ctx: Ctx, out: Out, inbound: Inbound, response: ControlledShutdownResponse) -> None:
        shutdown = self.shutdown
        if shutdown is None or inbound.correlation_id != shutdown.waiting:
            return
        shutdown.waiting = 0
        out.cancel_timer("controlled-shutdown-timeout")
        if response.error_code is ErrorCode.NONE and not response.remaining_partitions:
            self._done(ctx, out, succeeded=True)
            return
        remaining = [f"{p.topic}-{p.partition}" for p in response.remaining_partitions]
        self._failed(ctx, out, response.error_code.name, remaining)

    def timed_out(self, ctx: Ctx, out: Out) -> None:
        if self.shutdown is not None:
            self._failed(ctx, out, "REQUEST_TIMED_OUT")

    def disconnected(self, ctx: Ctx, out: Out, peer: str) -> None:
        """The connection to `peer` closed: an attempt waiting on it has failed."""
        if self.shutdown is not None and self.shutdown.waiting and peer == f"broker-{self.shutdown.controller}":
            self._failed(ctx, out, "DISCONNECTED")

    def _failed(self, ctx: Ctx, out: Out, error: str, remaining: list[str] | None = None) -> None:
        shutdown = self.shutdown
        assert shutdown is not None
        shutdown.waiting = 0
        out.cancel_timer("controlled-shutdown-timeout")
        out.emit(
            "controlled_shutdown_attempt_failed",
            broker_id=self.config.broker_id,
            attempt=shutdown.attempts,
            error=error,
            remaining=remaining or [],
        )
        if shutdown.attempts >= self.config.controlled_shutdown_max_retries:
            self._done(ctx, out, succeeded=False)
        else:
            out.set_timer("controlled-shutdown", self.config.controlled_shutdown_retry_backoff_ms)

    def _done(self, ctx: Ctx, out: Out, *, succeeded: bool) -> None:
        assert self.shutdown is not None
        out.emit(
            "controlled_shutdown_completed",
            broker_id=self.config.broker_id,
            succeeded=succeeded,
            attempts=self.shutdown.attempts,
        )
        self._finish(ctx, out)

    def _finish(self, ctx: Ctx, out: Out) -> None:
        """The rest of `KafkaServer.shutdown`, at the earliest when the operator's signal said."""
        assert self.shutdown is not None
        exit_ms = self.shutdown.started_ms + self.shutdown.exit_after_ms
        if exit_ms > ctx.now_ms:
            out.set_timer("exit", exit_ms - ctx.now_ms)
        else:
            self.exit(out)

    def exit(self, out: Out) -> None:
        """Close the ZooKeeper session and wait for it to close (the ephemeral registration goes
        with it, so the controller sees the broker gone at once, not after the session timeout);
        then the replica manager stops the process."""
        if not self.zk.close(out):
            self.stop_replica_manager(out)

    def stop_replica_manager(self, out: Out) -> None:
        if self.config.replica_manager is not None:
            out.send(self.config.replica_manager, ShutdownSignal())
