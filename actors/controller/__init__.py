"""The controller: on every broker a ZooKeeper client and controller candidate; on the elected
one, the controller's state machines and elections (`KafkaController`, `PartitionStateMachine`)."""
