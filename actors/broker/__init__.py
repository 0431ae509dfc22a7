"""The broker: replica manager, partitions, purgatory and follower fetchers."""
