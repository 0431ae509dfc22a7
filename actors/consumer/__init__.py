"""The consumer client, in the parts Kafka's Java client has.

- `behavior.py`: the actor, the application's poll loop and calls (`KafkaConsumer`,
  `ClassicKafkaConsumer`); `application.py`: what the parts call back on the application, and
  the scenario's application itself (its processing time);
- `group_membership.py`: the interface between the poll loop and the group membership; the
  classic protocol's is `consumer_coordinator.py` (`ConsumerCoordinator`) on
  `abstract_coordinator.py` (`AbstractCoordinator`), with `heartbeat.py` (its heartbeat
  thread) and `membership.py` (the member's state);
- `commits.py`: auto-commit, commitSync and commitAsync, and the committed offsets
  (`ConsumerCoordinator`'s commits, the async consumer's `CommitRequestManager`);
- `subscription_state.py` (`SubscriptionState`): the assigned partitions and their positions;
  `offset_fetcher.py` (`OffsetFetcher`): resets and validation of positions; `fetcher.py`
  (`Fetcher`): fetches and what `poll()` returns;
- `metadata.py` (`ConsumerMetadata`): the leaders; `network.py` (`ConsumerNetworkClient`): the
  requests in flight and the connections;
- `assignors.py`: the partition assignors; `config.py`: the settings.
"""
