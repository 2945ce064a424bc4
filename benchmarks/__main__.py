"""Run the benchmark workloads and print one table: ``python -m benchmarks [--full] [NAME ...]``.

Every workload times bitsift against its baseline in the same process and checks that both give
the same answers on a sample before it reports anything.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time

from benchmarks.harness import Result, table, write_results

# name -> module under benchmarks/, in the order of shared/BENCHMARKS.md; later issues add theirs.
WORKLOADS: dict[str, str] = {
    "parse": "benchmarks.parse_evaluate",
    "openamq": "benchmarks.w1_openamq",
    "mqtt": "benchmarks.w4_mqtt",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--full", action="store_true", help="run the full sizes, not the quick ones"
    )
    parser.add_argument(
        "names", nargs="*", help=f"workloads to run (default: all of {list(WORKLOADS)})"
    )
    arguments = parser.parse_args(argv)
    unknown = [name for name in arguments.names if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    all_results: list[Result] = []
    for name in arguments.names or list(WORKLOADS):
        started = time.perf_counter()
        print(f"running {name} ({'full' if arguments.full else 'quick'} size)...", file=sys.stderr)
        module = importlib.import_module(WORKLOADS[name])
        results: list[Result] = module.run(full=arguments.full)
        path = write_results(name, results)
        elapsed = time.perf_counter() - started
        print(f"  {name}: {len(results)} rows in {elapsed:.0f} s -> {path}", file=sys.stderr)
        all_results.extend(results)
    print(table(all_results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
