"""KIP-848's consumer group protocol: the group coordinator's pure rules.

What the new group coordinator (`group-coordinator`'s `GroupMetadataManager`, `ConsumerGroup`,
`CurrentAssignmentBuilder` and the server-side assignors) decides, as functions of plain
values: the group's and the member's states (`states`), the target assignment's assignors
(`assignors`), a member's reconciliation towards its target (`reconciliation`), and the
member-epoch checks of heartbeats and offset commits (`epochs`), and which heartbeats are
refused outright (`validation`). `actors/group/consumer_heartbeat.py` serves
ConsumerGroupHeartbeat with them; see docs/architecture.md.
"""
