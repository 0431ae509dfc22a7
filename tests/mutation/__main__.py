"""`python -m tests.mutation [NAME ...] [--jobs N]`: run the mutation check and print its table.

Exit 0 when the baseline passes and every mutant is killed; 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

from tests.mutation.harness import format_table, run_all
from tests.mutation.mutants import MUTANTS


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - {m.name for m in MUTANTS})
    if unknown:
        print(f"unknown mutant: {', '.join(unknown)}", file=sys.stderr)
        return 2
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    baseline, results = run_all(chosen, jobs=args.jobs)
    print(format_table(baseline, results))
    ok = baseline.outcome == "passed" and all(r.outcome == "killed" for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
