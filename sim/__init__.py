"""The simulator around the actors, in layers that import one way only (pyproject.toml's
import contracts hold them):

- `sim.engine`: virtual time, the lookahead kernel, the network, disks, the trace. Knows
  nothing of Kafka.
- `sim.cluster`: a Kafka cluster from a scenario: the scenario schema, wiring actors to nodes,
  faults as data, invariants, end-of-run checks, duplicate accounting.
- `sim.analytics`: the Spark jobs; they read run directories through the log schema only.
- `sim.report`: a run's story, figures and HTML page, from its run directory.
- `sim.studies`: running scenarios into run directories, the built-in studies, sweeps, benches.
- `sim.cli`: the `kafkasim` command on top.
"""
