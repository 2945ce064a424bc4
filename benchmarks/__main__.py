"""Run the benchmark workloads and print one table: ``python -m benchmarks [--full] [NAME ...]``.

Every workload times bitsift against its baseline in the same process and checks that both give
the same answers on a sample before it reports anything.

Each workload runs in its own Python process (this module again, with ``--worker``), for three
reasons: the peak RSS a workload records is its own and not the largest of those before it; a
workload that crashes, even inside a C extension or the JVM, cannot take the others down; and no
cache or Spark session carries over from one workload to the next. Every workload writes
``benchmarks/results/<name>.<quick|full>.json``, with the error instead of rows when it failed, and
the run exits non-zero when any workload failed, after running and reporting all the others.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from benchmarks.harness import RESULTS, Result, read_results, results_path, table, write_results

# name -> module under benchmarks/, in the order of shared/BENCHMARKS.md; later issues add theirs.
WORKLOADS: dict[str, str] = {
    "parse": "benchmarks.parse_evaluate",
    "openamq": "benchmarks.w1_openamq",
    "interval": "benchmarks.w2_interval",
    "selectors": "benchmarks.w3_selectors",
    "mqtt": "benchmarks.w4_mqtt",
    "spark": "benchmarks.w5_spark",
    "filter": "benchmarks.w6_filter",
}


def describe_failure(error: BaseException) -> str:
    """One line an operator can act on: a wrong answer is not the same thing as a crash."""
    if isinstance(error, AssertionError):
        return f"correctness check failed: {error}"
    return f"crashed: {type(error).__name__}: {error}"


def run_worker(name: str, full: bool, directory: Path) -> int:
    """Run one workload in this process and write its results file; 0 if it finished."""
    started = time.perf_counter()
    try:
        module = importlib.import_module(WORKLOADS[name])
        results: list[Result] = module.run(full=full)
    except Exception as error:  # any failure is recorded, then reported
        traceback.print_exc()
        elapsed = time.perf_counter() - started
        write_results(
            name, [], full, error=describe_failure(error), seconds=elapsed, directory=directory
        )
        return 1
    elapsed = time.perf_counter() - started
    write_results(name, results, full, seconds=elapsed, directory=directory)
    return 0


def run_isolated(
    name: str, full: bool, directory: Path, timeout: float | None
) -> tuple[list[Result], str | None]:
    """Run one workload in a child process; its rows, or why it failed."""
    path = results_path(name, full, directory)
    path.unlink(missing_ok=True)  # so an older run's file is never read as this run's
    command = [sys.executable, "-m", "benchmarks", "--worker", "--results", str(directory), name]
    if full:
        command.insert(3, "--full")
    started = time.perf_counter()
    try:
        returncode = subprocess.run(
            command, timeout=timeout, check=False, cwd=Path(__file__).resolve().parent.parent
        ).returncode
    except subprocess.TimeoutExpired:
        reason = f"timed out after {timeout:.0f} s (raise --timeout, or run it alone)"
        write_results(name, [], full, error=reason, seconds=timeout, directory=directory)
        return [], reason
    if path.exists():
        header, rows = read_results(path)
        if header.get("error"):
            return [], str(header["error"])
        if returncode == 0:
            return rows, None
    if returncode < 0:
        signal_name = signal.Signals(-returncode).name
        hint = " (SIGKILL: out of memory?)" if signal_name == "SIGKILL" else ""
        reason = f"the worker process was killed by {signal_name}{hint} before writing its results"
    else:
        reason = f"the worker process exited with code {returncode} without writing its results"
    elapsed = time.perf_counter() - started
    write_results(name, [], full, error=reason, seconds=elapsed, directory=directory)
    return [], reason


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--full", action="store_true", help="run the full sizes, not the quick ones"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a workload that runs longer than this and count it as failed (default: none)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        metavar="DIR",
        help=f"where to write the JSON results (default: {RESULTS})",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "names", nargs="*", help=f"workloads to run (default: all of {list(WORKLOADS)})"
    )
    arguments = parser.parse_args(argv)
    unknown = [name for name in arguments.names if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    if arguments.worker:
        if len(arguments.names) != 1:
            parser.error("--worker runs exactly one workload")
        return run_worker(arguments.names[0], arguments.full, arguments.results)

    from tqdm import tqdm

    names = arguments.names or list(WORKLOADS)
    mode = "full" if arguments.full else "quick"
    all_results: list[Result] = []
    failures: dict[str, str] = {}
    bar = tqdm(names, desc=f"workloads ({mode})", unit="workload", file=sys.stderr)
    for name in bar:
        bar.set_postfix_str(name)
        tqdm.write(f"running {name} ({mode} size)...", file=sys.stderr)
        started = time.perf_counter()
        rows, failure = run_isolated(name, arguments.full, arguments.results, arguments.timeout)
        elapsed = time.perf_counter() - started
        if failure is None:
            tqdm.write(f"  {name}: {len(rows)} rows in {elapsed:.0f} s", file=sys.stderr)
            all_results.extend(rows)
        else:
            tqdm.write(f"  {name}: FAILED after {elapsed:.0f} s: {failure}", file=sys.stderr)
            failures[name] = failure
    bar.close()
    print(table(all_results, failures))
    print(f"\nresults: {arguments.results}/<workload>.{mode}.json; report: make report")
    if failures:
        print(
            f"\n{len(failures)} of {len(names)} workloads FAILED (the others ran and are above):",
            file=sys.stderr,
        )
        for name, reason in failures.items():
            print(f"  {name}: {reason}", file=sys.stderr)
        print(
            "each failed workload's traceback is printed above; rerun one alone with "
            f"`python -m benchmarks{' --full' if arguments.full else ''} NAME`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
