"""Shared measuring and reporting for every benchmark workload.

The machines are shared and noisy, so a workload never reports one absolute time alone: it times
bitsift and its baseline in the same process, takes medians over repeats, and reports the ratio.
Each workload module exposes ``run(full: bool) -> list[Result]`` and is listed in
``benchmarks/__main__.py``.
"""

from __future__ import annotations

import gc
import json
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
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
    function: Callable[[T], object], items: Sequence[T], repeats: int = 5, limit_s: float = 30.0
) -> float:
    """Median over ``repeats`` passes of the nanoseconds per item of ``function`` over ``items``.

    Stops repeating early once ``limit_s`` seconds have been spent, but always does one pass.
    """
    samples: list[float] = []
    started = time.perf_counter()
    for _ in range(repeats):
        gc.disable()
        begin = time.perf_counter_ns()
        for item in items:
            function(item)
        elapsed = time.perf_counter_ns() - begin
        gc.enable()
        samples.append(elapsed / max(1, len(items)))
        if time.perf_counter() - started > limit_s:
            break
    return statistics.median(samples)


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


def machine() -> dict[str, str]:
    import bitsift

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "bitsift": getattr(bitsift, "__version__", "dev"),
    }


def write_results(name: str, results: list[Result]) -> Path:
    """Write one workload's results as JSON under benchmarks/results/ and return the path."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "machine": machine(),
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "results": [asdict(result) | {"speedup": result.speedup} for result in results],
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def format_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def table(results: list[Result]) -> str:
    """A fixed-width table: workload, size, bitsift, baseline, ratio, goal, met."""
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
                f"{result.speedup:,.1f}x",
                result.goal,
                met,
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
