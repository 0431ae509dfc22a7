"""The admin client: the operator's `kafka-consumer-groups` commands as AdminClient requests."""
