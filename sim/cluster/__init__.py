"""A Kafka cluster from a scenario: the scenario schema and loader, the harness that wires the
actors to nodes, faults as scenario data, the invariants checked after every event, the
end-of-run checks and the accounting of duplicates by cause."""
