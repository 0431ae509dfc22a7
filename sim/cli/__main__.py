"""`python -m sim.cli`, as the `kafkasim` script."""

import sys

from sim.cli import main

sys.exit(main())
