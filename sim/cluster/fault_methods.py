"""The faults of the Python API as methods of `Cluster`: each is the fault a scenario file can
name (`sim.cluster.faults`), applied at the current simulated time through `Cluster.inject`."""

from __future__ import annotations

from typing import Any

from sim.cluster.faults import Fault, FaultError
from sim.engine.disk import CrashKind

__all__ = ["FaultMethods"]


class FaultMethods:
    """Mixed into `Cluster`, which provides `inject`."""

    def inject(self, fault: Fault) -> None:
        raise NotImplementedError

    # The nodes and the network.

    def crash(self, node: str, kind: str = "process") -> None:
        """`kind`: `process` (the page cache survives), `power_loss` (what was flushed
        survives) or `disk_loss` (nothing does)."""
        try:
            crash_kind = CrashKind(kind)
        except ValueError:
            kinds = [k.value for k in CrashKind]
            msg = f"crash kind {kind!r}: expected {', '.join(kinds[:-1])} or {kinds[-1]}"
            raise FaultError(msg) from None
        self.inject(Fault("crash", node=node, crash_kind=crash_kind))

    def restart(self, node: str) -> None:
        self.inject(Fault("restart", node=node))

    def shutdown(self, node: str, *, exit_after_ms: int = 0, restart_after_ms: int | None = None) -> None:
        """Stop a broker as an operator does: a controlled shutdown (with
        `controlled.shutdown.enable`), then the process exits; optionally it restarts later."""
        self.inject(Fault("shutdown", node=node, exit_after_ms=exit_after_ms, restart_after_ms=restart_after_ms))

    def pause(self, node: str, duration_ms: int) -> None:
        self.inject(Fault("pause", node=node, duration_ms=duration_ms))

    def partition(self, side_a: list[str], side_b: list[str], *, one_way: bool = False) -> None:
        self.inject(Fault("partition", side_a=tuple(side_a), side_b=tuple(side_b), one_way=one_way))

    def isolate(self, *nodes: str) -> None:
        self.inject(Fault("partition", isolate=nodes))

    def heal(self) -> None:
        self.inject(Fault("heal"))

    def link_fault(self, kind: str, **params: Any) -> None:
        """`drop`, `delay`, `duplicate`, `reorder` or `corrupt`, with `Fault`'s parameters."""
        self.inject(Fault(kind, **params))

    # The application around a consumer, and its operator.

    def close_consumer(self, node: str) -> None:
        """The consumer's application calls `close()`."""
        self.inject(Fault("close", node=node))

    def unsubscribe(self, node: str) -> None:
        self.inject(Fault("unsubscribe", node=node))

    def stall(self, node: str, duration_ms: int) -> None:
        """The processing in hand takes `duration_ms` longer."""
        self.inject(Fault("stall", node=node, duration_ms=duration_ms))

    def slow(self, node: str, process_record_ms: int, duration_ms: int | None = None) -> None:
        """From now, each record the consumer's application processes takes
        `process_record_ms`, for `duration_ms` (None: to the end), then its configured time."""
        self.inject(Fault("slow", node=node, process_record_ms=process_record_ms, duration_ms=duration_ms))

    def rolling_restart(
        self,
        nodes: list[str] | None = None,
        *,
        group: str | None = None,
        interval_ms: int = 10_000,
        down_ms: int = 0,
    ) -> None:
        """Close and restart consumers one after the other: `nodes` in order, or every
        consumer of `group`, in node order (sim.cluster.faults._RollingRestart)."""
        self.inject(
            Fault("rolling_restart", nodes=tuple(nodes or ()), group=group, interval_ms=interval_ms, down_ms=down_ms)
        )

    def zombie(self, node: str, duration_ms: int | None = None) -> None:
        """Cut the consumer off from its group's coordinator (as it is now) both ways, for
        `duration_ms` (None: until a heal); it still reaches the partitions' leaders."""
        self.inject(Fault("zombie", node=node, duration_ms=duration_ms))

