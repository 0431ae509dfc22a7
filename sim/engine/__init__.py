"""The simulation engine: virtual time, the lookahead kernel and its Pykka hosts, the network,
disks, and the structured trace. It runs behaviours and knows nothing of Kafka."""
