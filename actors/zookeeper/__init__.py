"""The coordination service (a ZooKeeper model)."""
