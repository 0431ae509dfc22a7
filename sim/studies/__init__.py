"""Running scenarios: a run into its run directory, the built-in studies, the variants of an
example study, sweeps on Spark, and the benches of `kafkasim bench`."""
