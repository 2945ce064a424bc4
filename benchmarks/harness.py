"""Shared measuring and reporting for every benchmark workload.

The machines are shared and noisy, so a workload never reports one absolute time alone: it times
bitsift and its baseline in the same process, takes medians over repeats, and reports the ratio.
Each workload module exposes ``run(full: bool) -> list[Result]`` and is listed in
``benchmarks/__main__.py``.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

RESULTS = Path(__file__).parent / "results"
T = TypeVar("T")


@dataclass
class Result:
    """One row of the report: bitsift against its same-run baseline on one workload size."""

    workload: str
    size: str
    subject: str
    baseline: str
    subject_ns: float
    """Median nanoseconds per item (message, event or topic) for bitsift."""
    baseline_ns: float
    """Median nanoseconds per item for the baseline, measured in the same process."""
    goal: str = ""
    met: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def speedup(self) -> float:
        return self.baseline_ns / self.subject_ns if self.subject_ns else float("inf")


def ns_per_item(
    function: Callable[[T], object],
    items: Sequence[T],
    repeats: int = 5,
    limit_s: float = 30.0,
    *,
    cpu: bool = False,
) -> float:
    """Median over ``repeats`` passes of the nanoseconds per item of ``function`` over ``items``.

    Stops repeating early once ``limit_s`` seconds have been spent, but always does one pass.
    With ``cpu=True`` the clock is the CPU time of this process instead of the wall clock: on a
    shared machine wall time also counts the waits for a core (a quick W3 run was inflated
    five-fold), while CPU time does not; measure bitsift and its baseline the same way.
    """
    clock_ns = time.process_time_ns if cpu else time.perf_counter_ns
    samples: list[float] = []
    started = clock_ns()
    for _ in range(repeats):
        gc.disable()
        begin = clock_ns()
        for item in items:
            function(item)
        elapsed = clock_ns() - begin
        gc.enable()
        samples.append(elapsed / max(1, len(items)))
        if clock_ns() - started > limit_s * 1e9:
            break
    return statistics.median(samples)


def current_rss_bytes() -> int | None:
    """Resident memory of this process now (Linux ``/proc``); None where that is not available.

    The difference around one step is what the step kept, including memory C extensions such as
    pyroaring allocate, which ``tracemalloc`` cannot see.
    """
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize()
    except (OSError, IndexError, ValueError):
        return None


def growth_per_item(before: int | None, after: int | None, count: int) -> float | None:
    """``after - before`` (two :func:`current_rss_bytes` readings) per item; None when either
    reading is unavailable."""
    if before is None or after is None:
        return None
    return (after - before) / count


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def progress(items: Iterable[T], total: int | None = None, description: str = "") -> Iterator[T]:
    """Wrap a long loop in a progress bar on a terminal (tqdm), silently elsewhere."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dev dependency
        yield from items
        return
    yield from tqdm(
        items, total=total, desc=description, leave=False, disable=not sys.stderr.isatty()
    )


LIBRARIES = (
    "pyroaring",
    "lark",
    "pydantic",
    "sortedcontainers",
    "pyspark",
    "pyarrow",
    "pandas",
    "paho-mqtt",
    "pyzmq",
    "numpy",
    "matplotlib",
    "tqdm",
)
"""Libraries whose versions go into every result file: bitsift's own and its baselines'."""


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo, or what :mod:`platform` knows elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def library_versions() -> dict[str, str]:
    """Installed version of bitsift and of each of :data:`LIBRARIES` ("not installed" if absent)."""
    from importlib import metadata

    versions = {}
    for name in ("bitsift", *LIBRARIES):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_commit() -> str:
    """The checkout's commit, with ``+changes`` when the work tree differs from it (or "")."""

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", *arguments],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=Path(__file__).parent,
            check=True,
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"{head}+changes" if dirty else head


def machine() -> dict[str, Any]:
    """What a reader needs to judge a result: CPU, cores, memory, load, Python, library versions.

    The load average is recorded because the benchmark machines are shared: a run taken while
    other jobs kept both cores busy has noisier absolute times (the same-run ratios hold better).
    """
    memory_gib = 0.0
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory_gib = round(pages / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    try:
        load = [round(value, 2) for value in os.getloadavg()]
    except OSError:
        load = []
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 0,
        "memory_gib": memory_gib,
        "load_average": load,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "libraries": library_versions(),
        "git_commit": git_commit(),
    }


def mode_name(full: bool) -> str:
    return "full" if full else "quick"


def results_path(name: str, full: bool, directory: Path = RESULTS) -> Path:
    """Where workload ``name``'s results for one mode live: ``<directory>/<name>.<mode>.json``."""
    return directory / f"{name}.{mode_name(full)}.json"


def write_results(
    name: str,
    results: list[Result],
    full: bool = False,
    *,
    error: str | None = None,
    seconds: float | None = None,
    directory: Path = RESULTS,
) -> Path:
    """Write one workload's results (or its failure) as JSON and return the path.

    A failed run still writes its file, with ``error`` set and no rows, so that the report never
    shows an older run's numbers as if they were this run's.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = results_path(name, full, directory)
    payload = {
        "workload": name,
        "mode": mode_name(full),
        "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": None if seconds is None else round(seconds, 1),
        "error": error,
        "machine": machine(),
        "results": [asdict(result) | {"speedup": result.speedup} for result in results],
    }
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def read_results(path: Path) -> tuple[dict[str, Any], list[Result]]:
    """Read a file written by :func:`write_results`: its header and its rows as Results."""
    payload = json.loads(path.read_text())
    names = {item.name for item in fields(Result)}
    rows = [
        Result(**{key: value for key, value in row.items() if key in names})
        for row in payload.get("results", [])
    ]
    header = {key: value for key, value in payload.items() if key != "results"}
    return header, rows


def format_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def format_ratio(ratio: float) -> str:
    """A speedup to read at a glance: ``1,234x``, ``12.3x``, ``0.85x``, ``0.024x``."""
    if ratio >= 100:
        return f"{ratio:,.0f}x"
    if ratio >= 1:
        return f"{ratio:.1f}x"
    return f"{ratio:.2g}x"


def table(results: list[Result], failures: dict[str, str] | None = None) -> str:
    """A fixed-width table: workload, size, bitsift, baseline, ratio, goal, met.

    ``failures`` maps a workload that did not finish to why; each gets a FAILED row, so one table
    shows the whole run.
    """
    header = ("workload", "size", "bitsift", "baseline", "ratio", "goal", "met?")
    rows = [header]
    for result in results:
        met = {True: "yes", False: "NO", None: "-"}[result.met]
        rows.append(
            (
                result.workload,
                result.size,
                f"{result.subject}: {format_ns(result.subject_ns)}",
                f"{result.baseline}: {format_ns(result.baseline_ns)}",
                format_ratio(result.speedup),
                result.goal,
                met,
            )
        )
    for name, reason in (failures or {}).items():
        first_line = reason.strip().splitlines()[0] if reason.strip() else "failed"
        rows.append((name, "-", f"FAILED: {first_line}"[:70], "-", "-", "-", "FAILED"))
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
