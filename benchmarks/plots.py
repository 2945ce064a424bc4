"""The PNG charts of docs/performance.md, drawn with matplotlib's Agg backend from result rows.

Each chart puts bitsift and every baseline of one workload on the same axes, measured in the same
run, and adds the published figures of the seeds and peers as grey dashed reference lines whose
legend says where each comes from and that it was *not* measured in this run: a reader must never
mistake a 2007 C figure or a C++ paper's number for ours.

The x positions come from the rows' ``size`` text (``"20k subs"``, ``"10,000 filters"``,
``"100k msgs x 10 subs"``, ``"1,000 subs, 10% match"``), unless a workload records
``extra["subscriptions"]``, which wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness import Result, format_ns, format_ratio

COUNT = re.compile(
    r"(\d[\d,]*(?:\.\d+)?)\s*([kKM]?)\s*(?:subs|subscriptions|patterns|filters|selectors)\b"
)
RATE = re.compile(r"(\d+(?:\.\d+)?)\s*%\s*match")
REFERENCE_STYLE: dict[str, Any] = {"color": "0.45", "linestyle": "--", "linewidth": 1.2}
NOT_MEASURED = "published; not measured in this run"


def subscription_count(result: Result) -> int | None:
    """How many subscriptions (patterns, filters) a row was measured with, if it says."""
    recorded = result.extra.get("subscriptions")
    if isinstance(recorded, int | float) and not isinstance(recorded, bool):
        return int(recorded)
    found = COUNT.search(result.size)
    if found is None:
        return None
    number = float(found.group(1).replace(",", ""))
    return int(number * {"": 1, "k": 1_000, "K": 1_000, "M": 1_000_000}[found.group(2)])


def match_rate(result: Result) -> float | None:
    """The share of messages that match, for rows whose size says ``N% match``."""
    found = RATE.search(result.size)
    return None if found is None else float(found.group(1)) / 100


def cost_series(rows: Iterable[Result]) -> dict[str, dict[int, float]]:
    """Per subject and per baseline name: subscriptions -> ns per message.

    A subject or baseline that appears in several rows of one size (W4 times its cold index
    against two baselines) is one series with one point per size.
    """
    series: dict[str, dict[int, float]] = {}
    for row in rows:
        count = subscription_count(row)
        if count is None:
            continue
        series.setdefault(row.subject, {})[count] = row.subject_ns
        series.setdefault(row.baseline, {})[count] = row.baseline_ns
    return series


def count_label(value: float, _position: object = None) -> str:
    """Axis text for a number of subscriptions: ``10``, ``1k``, ``20k``, ``1M``."""
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def microseconds_label(value: float, _position: object = None) -> str:
    """Axis text for a time given in µs, in the unit that reads best: ``300 ns``, ``26 µs``."""
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("µs", 1.0)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value * 1e3:g} ns"


def _label_axes(
    axes: Any, x_counts: bool = True, y_microseconds: bool = True, y_seconds: bool = False
) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if y_seconds:
        axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g} s"))
        axes.yaxis.set_minor_formatter(NullFormatter())
    if x_counts:
        axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axes.xaxis.set_major_formatter(FuncFormatter(count_label))
        axes.xaxis.set_minor_formatter(NullFormatter())
    if y_microseconds:
        axes.yaxis.set_major_formatter(FuncFormatter(microseconds_label))
        axes.yaxis.set_minor_formatter(NullFormatter())


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def _label_above(axes: Any, text: str, x: float, y: float) -> None:
    """A bar's value, written just above its top."""
    axes.annotate(text, (x, y), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=9)


def _finish(figure: Any, axes: Any, path: Path) -> Path:
    """Grid, a legend under the axes (it never hides a line there), save, close."""
    axes.grid(True, which="major", alpha=0.4)
    axes.grid(True, which="minor", alpha=0.12)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.13), frameon=False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    _pyplot().close(figure)
    return path


def cost_chart(
    rows: list[Result],
    path: Path,
    title: str,
    x_label: str,
    references: Iterable[tuple[str, list[tuple[float, float]]]] = (),
    horizontal: Iterable[tuple[str, float]] = (),
    extra_series: dict[str, dict[int, float]] | None = None,
) -> Path:
    """Log-log: µs per message against subscriptions, one line per subject and baseline.

    ``references`` are published curves as (label, [(subscriptions, µs)]); ``horizontal`` are
    published per-message figures or targets as (label, µs) that do not depend on the size.
    """
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(8, 6.5))
    series = cost_series(rows) | (extra_series or {})
    markers = "osD^v<>"
    counts: set[int] = set()
    for number, (name, points) in enumerate(series.items()):
        xs = sorted(points)
        counts.update(xs)
        axes.plot(
            xs,
            [points[x] / 1e3 for x in xs],
            marker=markers[number % len(markers)],
            linewidth=1.8,
            label=f"{name}: measured",
        )
    for number, (label, curve) in enumerate(references):
        counts.update(int(x) for x, _ in curve)
        axes.plot(
            [x for x, _ in curve],
            [y for _, y in curve],
            marker="xP*"[number % 3],
            markersize=8,
            label=f"{label} ({NOT_MEASURED})",
            **(REFERENCE_STYLE | {"linestyle": ("--", ":", "-.")[number % 3]}),
        )
        for x, y in curve:
            axes.annotate(
                microseconds_label(y),
                (x, y),
                textcoords="offset points",
                xytext=(6, -3),
                fontsize=7,
                color="0.35",
            )
    for number, (label, microseconds) in enumerate(horizontal):
        axes.axhline(
            microseconds,
            label=f"{label} ({NOT_MEASURED})",
            **(REFERENCE_STYLE | {"linestyle": ("--", ":", "-.")[number % 3]}),
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    if counts:  # room around the points, however few sizes were run
        axes.set_xlim(min(counts) / 2, max(counts) * 2)
    _label_axes(axes)
    axes.set_title(title)
    axes.set_xlabel(x_label)
    axes.set_ylabel("cost per message (log scale; lower is better)")
    return _finish(figure, axes, path)


MESSAGES = re.compile(r"(\d[\d,]*)\s*([kKM]?)\s*msgs\b")


def message_count(result: Result) -> int | None:
    """How many messages a row's job read, from ``extra["messages"]`` or its size text."""
    recorded = result.extra.get("messages")
    if isinstance(recorded, int) and not isinstance(recorded, bool):
        return recorded
    found = MESSAGES.search(result.size)
    if found is None:
        return None
    number = int(found.group(1).replace(",", ""))
    return number * {"": 1, "k": 1_000, "K": 1_000, "M": 1_000_000}[found.group(2)]


def seconds_chart(rows: list[Result], path: Path, title: str) -> Path:
    """W5: Spark job seconds against subscriptions, bitsift's route() and Spark SQL filters.

    Runs over different numbers of messages are separate lines (solid for the largest): their
    times are not comparable with each other, only with their own baseline.
    """
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(8, 6.5))
    groups: dict[int | None, list[Result]] = {}
    for row in rows:
        groups.setdefault(message_count(row), []).append(row)
    order = sorted(groups, key=lambda count: count or 0, reverse=True)
    for number, messages in enumerate(order):
        group = groups[messages]
        suffix = f", {count_label(messages)} messages" if messages else ""
        for side, key, marker, color in (
            ("subject", "bitsift_s", "o", "tab:blue"),
            ("baseline", "baseline_s", "s", "tab:orange"),
        ):
            points = sorted(
                (count, float(row.extra[key]))
                for row in group
                if (count := subscription_count(row)) is not None and key in row.extra
            )
            if not points:
                continue
            axes.plot(
                [x for x, _ in points],
                [y for _, y in points],
                marker=marker,
                color=color,
                linestyle=("-", "--", ":")[number % 3],
                linewidth=1.8,
                label=f"{getattr(group[0], side)}{suffix}: measured",
            )
    axes.set_xscale("log")
    axes.set_yscale("log")
    counts = [count for row in rows if (count := subscription_count(row)) is not None]
    if counts:
        axes.set_xlim(min(counts) / 2, max(counts) * 2)
    _label_axes(axes, y_microseconds=False, y_seconds=True)
    axes.set_title(title)
    axes.set_xlabel("subscriptions (log scale)")
    axes.set_ylabel("wall-clock time of the whole job (log scale; lower is better)")
    return _finish(figure, axes, path)


def rate_chart(rows: list[Result], path: Path, title: str) -> Path:
    """W6: µs per message of accepts() and match() at each match rate, as paired bars."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(8, 6.5))
    points = sorted((rate, row) for row in rows if (rate := match_rate(row)) is not None)
    positions = list(range(len(points)))
    width = 0.38
    subject = points[0][1].subject if points else "bitsift"
    baseline = points[0][1].baseline if points else "baseline"
    axes.bar(
        [p - width / 2 for p in positions],
        [row.subject_ns / 1e3 for _, row in points],
        width,
        label=f"{subject}: measured",
    )
    axes.bar(
        [p + width / 2 for p in positions],
        [row.baseline_ns / 1e3 for _, row in points],
        width,
        label=f"{baseline}: measured",
    )
    for position, (_, row) in zip(positions, points, strict=True):
        top = max(row.subject_ns, row.baseline_ns) / 1e3
        ratio = format_ratio(row.speedup)
        _label_above(axes, f"{ratio} faster" if row.speedup >= 1 else ratio, position, top)
    axes.set_xticks(positions, [f"{rate:.0%} of messages match" for rate, _ in points])
    axes.set_title(title)
    axes.set_ylabel("cost per message, µs (lower is better)")
    axes.set_ylim(0, max([row.baseline_ns / 1e3 for _, row in points] + [1.0]) * 1.15)
    return _finish(figure, axes, path)


def bar_chart(
    bars: list[tuple[str, float]],
    path: Path,
    title: str,
    horizontal: Iterable[tuple[str, float]] = (),
) -> Path:
    """A few measured costs side by side (log scale) with published figures as lines (W1)."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(8, 6.5))
    positions = list(range(len(bars)))
    axes.bar(positions, [ns / 1e3 for _, ns in bars], 0.6, label="measured in this run")
    for position, (_, ns) in zip(positions, bars, strict=True):
        _label_above(axes, format_ns(ns), position, ns / 1e3)
    for number, (label, microseconds) in enumerate(horizontal):
        axes.axhline(
            microseconds,
            label=f"{label} ({NOT_MEASURED})",
            **(REFERENCE_STYLE | {"linestyle": ("--", ":", "-.")[number % 3]}),
        )
    axes.set_xticks(positions, [name for name, _ in bars])
    axes.set_yscale("log")
    _label_axes(axes, x_counts=False)
    axes.set_title(title)
    axes.set_ylabel("cost per message (log scale; lower is better)")
    return _finish(figure, axes, path)


def memory_chart(series: dict[str, list[tuple[int, float, float]]], path: Path, title: str) -> Path:
    """Index bytes per subscription and process peak RSS against subscriptions, two panels.

    ``series`` maps a workload label to (subscriptions, bytes per subscription, peak RSS MiB).
    """
    pyplot = _pyplot()
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(10, 4.5))
    counts = [point[0] for points in series.values() for point in points]
    for label, points in series.items():
        points = sorted(points)
        left.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        right.plot([p[0] for p in points], [p[2] for p in points], marker="s", label=label)
    for axes, y_label in (
        (left, "index bytes per subscription (traced Python heap)"),
        (right, "peak RSS of the benchmark process, MiB"),
    ):
        axes.set_xscale("log")
        if counts:
            axes.set_xlim(min(counts) / 2, max(counts) * 2)
        _label_axes(axes, y_microseconds=False)
        axes.set_xlabel("subscriptions (log scale)")
        axes.set_ylabel(y_label)
        axes.grid(True, alpha=0.4)
        axes.legend(fontsize=8)
        axes.set_ylim(bottom=0)
    figure.suptitle(title)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return path


ANATOMY_PARTS = (
    ("intersections, answers in the CPU's caches", "0.35"),
    ("intersections: reading answers from main memory", "tab:red"),
    ("everything else (lookups, bisections, the result)", "tab:blue"),
)


def anatomy_parts(row: Result) -> tuple[float, float, float] | None:
    """W3's warm time split in three (ns): the intersections as if every answer were in the
    CPU's caches, what reading them from main memory adds, and the rest of the match; None
    when the row did not record the replay."""
    extra = row.extra
    if "intersect_ns_per_message" not in extra:
        return None
    as_read = float(extra["intersect_ns_per_message"])
    resident = min(float(extra["intersect_resident_ns_per_message"]), as_read)
    # The replay ran in round one of the growth rounds, when there were rounds: split that
    # round's warm time, not the median of all rounds.
    warm = float(extra.get("warm_ns_samples", [row.subject_ns])[0])
    return resident, as_read - resident, max(warm - as_read, 0.0)


def anatomy_chart(rows: list[Result], path: Path, title: str) -> Path:
    """W3: where one warm match's time goes at each size, as stacked bars."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(8, 6.5))
    points = sorted(
        (count, parts)
        for row in rows
        if (count := subscription_count(row)) is not None
        and (parts := anatomy_parts(row)) is not None
    )
    positions = list(range(len(points)))
    bottoms = [0.0] * len(points)
    for number, (label, colour) in enumerate(ANATOMY_PARTS):
        heights = [parts[number] / 1e3 for _, parts in points]
        axes.bar(positions, heights, 0.55, bottom=bottoms, label=label, color=colour)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for position, total in zip(positions, bottoms, strict=True):
        _label_above(axes, format_ns(total * 1e3), position, total)
    axes.set_xticks(positions, [f"{count:,} subscriptions" for count, _ in points])
    axes.set_title(title)
    axes.set_ylabel("warm cost per message, µs (lower is better)")
    axes.set_ylim(0, max(bottoms + [1.0]) * 1.15)
    return _finish(figure, axes, path)
