"""The controller: on every broker a ZooKeeper client and controller candidate; on the elected
one, the controller's state machines and elections (KAFKA.md 1.9 and 2.1)."""
