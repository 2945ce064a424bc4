"""Regenerate docs/performance.md and its plots from benchmarks/results/: ``make report``.

The report is generated, never edited by hand, so that every number in it can be traced to a
results file that ``make bench`` (quick sizes) or ``make bench FULL=1`` wrote, with the machine,
the library versions, the commit and the load at the time. For each workload it uses the full run
when one finished, else the quick run, and says which. A workload whose last run failed is shown
as failed, not with older numbers.

Usage: ``python -m benchmarks.report [--results DIR] [--output FILE] [--prefer quick|full]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import plots
from benchmarks.harness import RESULTS, Result, format_ns, format_ratio, read_results

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "performance.md"
ORDER = ("parse", "openamq", "interval", "selectors", "mqtt", "spark", "filter")
"""The order of shared/BENCHMARKS.md; workloads not listed here follow, by name."""

TITLES = {
    "parse": "Parsing and the reference evaluator",
    "openamq": "W1 `openamq`: AMQP topic fan-out (OpenAMQ's test program)",
    "interval": "W2 `interval`: the academic range workload (REIN, TAMA, counting)",
    "selectors": "W3 `selectors`: realistic JMS-style subscriptions",
    "mqtt": "W4 `mqtt`: MQTT topic filters against paho-mqtt",
    "spark": "W5 `spark`: batch routing in Spark",
    "filter": "W6 `filter`: receiver-side drop",
}
LABELS = {
    "openamq": "W1 openamq",
    "interval": "W2 interval",
    "selectors": "W3 selectors",
    "mqtt": "W4 mqtt",
    "spark": "W5 spark",
    "filter": "W6 filter",
}
DESCRIPTIONS = {
    "parse": (
        "Not a routing workload: the cost of parsing a selector (cold against the parse cache) "
        "and of the reference evaluator against hand-written Python for each W3 term kind. The "
        "evaluator loop is the baseline of W2 and W3, so this says what that baseline costs."
    ),
    "openamq": (
        "2,000 AMQP patterns over five word tables, 2,000 distinct topics, random messages. "
        "bitsift's topic index cold (result cache off: every message runs the bitmap tables) "
        "and warm (cache on; the 2,000 topics repeat), against a loop testing every pattern with "
        "`TopicPattern.matches`. Wall-clock medians."
    ),
    "interval": (
        "20 integer attributes; each subscription ANDs 10 `BETWEEN` ranges of half the domain; "
        "about 0.1% of subscriptions match an event. `SubscriptionIndex.match` per event against "
        "the reference evaluator over every subscription (timed on 10 events). CPU time of the "
        "process, so other jobs on the shared machine do not inflate either side."
    ),
    "selectors": (
        "Market-data messages (`bitsift.samples`) and a mix of equality, `IN`, `BETWEEN`, "
        "`<`/`>`, `LIKE 'prefix%'`, `IS [NOT] NULL`, `NOT`, `OR`, optional topic patterns and 5% "
        "of terms no index can serve. `SubscriptionIndex.match` warm (the stream seen once, per-"
        "field caches filled, as in a running broker) and cold (fresh index, unseen messages), "
        "against the reference evaluator over every subscription. CPU time of the process. In "
        "full runs the 10k and 100k warm times, and the growth between them, are medians of five "
        "rounds, each size built afresh in a process of its own (the samples are listed below)."
    ),
    "mqtt": (
        "10,000 MQTT filters over a 30-word vocabulary, 4 levels, 20% with `+`, 10% ending in `#`. "
        "bitsift's topic index cold (cache off, random topics) and warm (a pool of 5,000 topics "
        "that repeat), against paho-mqtt's `MQTTMatcher` trie (timed in alternating passes with "
        "the cold index) and a loop over `topic_matches_sub`. Wall-clock medians. The workload "
        "has one size, so its chart has one point per line."
    ),
    "spark": (
        "W3 messages as JSON lines in a local[2] Spark session; subscriptions without a topic "
        "pattern (Spark SQL has no AMQP matching). `bitsift.pipeline.route` (one broadcast index, "
        "Arrow batches) against one `df.filter(F.expr(selector))` per subscription, unioned; both "
        "forced with the `noop` sink, timed end to end, and checked equal. The per-message times "
        "are job seconds divided by messages. A separate row times the batch matcher alone "
        "against `SubscriptionIndex.match` per message on one core."
    ),
    "filter": (
        "1,000 W3 subscriptions; streams where 1%, 10% and 50% of messages match. "
        "`ReceiverFilter.accepts` (does anyone want it?) against `SubscriptionIndex.match` (who "
        "wants it?) on the same messages, passes interleaved, CPU-time medians; and the same "
        "through a ZeroMQ `ipc://` socket end to end."
    ),
}


BUILD_KEYS = (
    "build_us_per_subscription",
    "index_build_us_per_subscription",
    "build_us_per_filter",
)
"""Where workloads record the index build time per subscription, by the names they use."""


@dataclass(frozen=True)
class Reference:
    """A published figure drawn as a reference line: never measured in our runs."""

    label: str
    microseconds: float
    subscriptions: int | None
    source: str
    workload: str


REFERENCES = (
    Reference(
        "OpenAMQ (C, 2 GHz, 2007): 26 µs/msg",
        26.0,
        None,
        "OpenAMQ *Rapid Message Matching* §2.6 (also quoted by the Malamute whitepaper): 1M "
        "messages, 170M matches in 26 s",
        "openamq",
    ),
    Reference(
        "REIN, C++ g++ -O2, one thread",
        210.0,
        20_000,
        "bitsift's W2 workload definition (shared/BENCHMARKS.md): REIN (Qian et al., INFOCOM "
        "2014) in compiled C++, measured on a machine like ours: 0.21 ms/event at 20k",
        "interval",
    ),
    Reference(
        "REIN, C++ g++ -O2, one thread",
        960.0,
        100_000,
        "bitsift's W2 workload definition: REIN, same measurement, 0.96 ms/event at 100k",
        "interval",
    ),
    Reference(
        "counting algorithm, C++",
        500.0,
        20_000,
        "bitsift's W2 workload definition: the counting baseline (Siena-style), same "
        "measurement, 0.50 ms/event at 20k",
        "interval",
    ),
    Reference(
        "TAMA, C++, approximate (false positives)",
        79.0,
        20_000,
        "bitsift's W2 workload definition: TAMA, same measurement, 0.079 ms/event at 20k; it "
        "returns false positives, so it does less work than an exact matcher",
        "interval",
    ),
    Reference(
        "OpenAMQ RFC003 target: < 10 µs/msg",
        10.0,
        None,
        "OpenAMQ RFC003 *A Fast Dispatcher Module* / *Rapid Message Matching*: a goal, not a "
        "measurement",
        "selectors",
    ),
    Reference(
        "Malamute target: 2 µs/msg (500k msg/s)",
        2.0,
        None,
        "Malamute whitepaper: a goal, not a measurement",
        "selectors",
    ),
    Reference(
        "paho MQTTMatcher: about 2 µs/topic",
        2.0,
        None,
        "bitsift's W4 workload definition (shared/BENCHMARKS.md): paho's trie on machines like "
        "ours, a rough figure; the trie is also measured in this run (see the table)",
        "mqtt",
    ),
)


@dataclass(frozen=True)
class Run:
    """One results file: the workload's rows (or its error) and how they were obtained."""

    name: str
    header: dict[str, Any]
    rows: list[Result]
    notes: tuple[str, ...] = ()

    @property
    def mode(self) -> str:
        return str(self.header.get("mode", "?"))

    @property
    def error(self) -> str | None:
        error = self.header.get("error")
        return None if error is None else str(error)

    @property
    def machine(self) -> dict[str, Any]:
        machine = self.header.get("machine")
        return machine if isinstance(machine, dict) else {}


def load_runs(directory: Path, prefer: str = "full") -> dict[str, Run]:
    """The run to report per workload: ``prefer``'s mode when it finished, else the other mode.

    When the preferred run failed and the other finished, the other is shown with a note saying
    so; when neither finished, the failure is shown, never an older run's numbers. A file named
    ``<workload>-<anything>`` (a workload module's own command for one extra measurement, such as
    ``spark-100000``) adds its rows to that workload's, marked as a separate run.
    """
    found: dict[str, dict[str, Run]] = {}
    for path in sorted(directory.glob("*.json")):
        parts = path.name.split(".")
        if len(parts) != 3 or parts[1] not in ("quick", "full"):
            continue  # not written by this harness (an older layout, say)
        header, rows = read_results(path)
        found.setdefault(parts[0], {})[parts[1]] = Run(parts[0], header, rows)
    other = "quick" if prefer == "full" else "full"
    chosen: dict[str, Run] = {}
    for name, modes in found.items():
        candidates = [modes[mode] for mode in (prefer, other) if mode in modes]
        finished = [run for run in candidates if not run.error]
        run = finished[0] if finished else candidates[0]
        notes = [
            f"The {skipped.mode} run failed ({skipped.error}); this shows the {run.mode} run."
            for skipped in candidates
            if skipped is not run and skipped.error and skipped.mode == prefer
        ]
        if prefer not in modes and "-" not in name:
            notes.append(
                f"No {prefer}-size run of this workload is in the results "
                f"(`{name}.{prefer}.json`): this shows the {run.mode} sizes."
            )
        chosen[name] = Run(name, run.header, run.rows, tuple(notes))
    for name in [name for name in chosen if "-" in name]:
        base = name.split("-", 1)[0]
        extra = chosen[name]
        if base not in chosen or chosen[base].error or extra.error:
            continue
        del chosen[name]
        rows = [
            Result(**{**vars(row), "extra": {**row.extra, "separate_run": name}})
            for row in extra.rows
        ]
        note = (
            f"Rows marked *separate run* come from `{name}.{extra.mode}.json`, written by the "
            f"workload's own command at {extra.header.get('written', '?')}."
        )
        base_run = chosen[base]
        chosen[base] = Run(base, base_run.header, base_run.rows + rows, (*base_run.notes, note))
    known = [name for name in ORDER if name in chosen]
    return {name: chosen[name] for name in known + sorted(set(chosen) - set(known))}


def format_number(value: Any) -> str:
    """Numbers as a reader wants them: thousands separators, three significant digits; a list
    of numbers (a measure's samples) as those numbers, comma-separated."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(item, int | float) and not isinstance(item, bool) for item in value)
    ):
        return ", ".join(format_number(item) for item in value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        text = str(value)
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 100:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def markdown_table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [cell.replace("|", "\\|").replace("\n", " ") for cell in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def met_text(result: Result) -> str:
    return {True: "yes", False: "**no**", None: "-"}[result.met]


def results_table(rows: list[Result], labels: list[str] | None = None) -> str:
    """One line per row; with ``labels``, a first column naming each row's workload."""
    header = ["size", "bitsift", "time", "baseline (same run)", "time", "ratio", "goal", "met?"]
    body = []
    for number, row in enumerate(rows):
        cells = [
            f"{row.size} (separate run)" if "separate_run" in row.extra else row.size,
            row.subject,
            format_ns(row.subject_ns),
            row.baseline,
            format_ns(row.baseline_ns),
            format_ratio(row.speedup),
            row.goal or "-",
            met_text(row),
        ]
        body.append([labels[number], *cells] if labels else cells)
    return markdown_table(["workload", *header] if labels else header, body)


def details(rows: list[Result]) -> str:
    """Everything else the workload recorded: a table with one column per row when there are a
    few rows, else one bullet per row (a table a dozen columns wide reads badly)."""
    keys: list[str] = []
    for row in rows:
        keys.extend(key for key in row.extra if key not in keys)
    if not keys:
        return ""
    if len(rows) > 4:
        return "\n".join(
            f"- {row.size}, {row.subject}: "
            + "; ".join(
                f"{key.replace('_', ' ')} {format_number(value)}"
                for key, value in row.extra.items()
            )
            for row in rows
            if row.extra
        )
    header = ["measure", *[f"{row.size}: {row.subject}" for row in rows]]
    body = [
        [key.replace("_", " "), *[format_number(row.extra.get(key, "")) for row in rows]]
        for key in keys
    ]
    return markdown_table(header, body)


def machine_section(runs: dict[str, Run]) -> list[str]:
    lines = ["## Machine and versions", ""]
    machines = {
        (str(run.machine.get("cpu", "?")), str(run.machine.get("python", "?"))): run.machine
        for run in runs.values()
    }
    for machine in machines.values():
        lines += [
            f"- CPU: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores visible, "
            f"{machine.get('memory_gib', '?')} GiB memory",
            f"- Python: {machine.get('python', '?')} on {machine.get('platform', '?')}",
        ]
        libraries = machine.get("libraries", {})
        if isinstance(libraries, dict) and libraries:
            versions = ", ".join(f"{name} {version}" for name, version in libraries.items())
            lines.append(f"- Libraries: {versions}")
        lines.append("")
    lines += [
        "The machine is shared with other jobs. The load average when each workload finished is "
        "recorded: absolute times drift with it, while ratios to a baseline measured in the same "
        "process (W2, W3 and W6 in CPU time, W4 in alternating passes) hold much better.",
        "",
    ]
    body = []
    for run in runs.values():
        load = run.machine.get("load_average") or []
        body.append(
            [
                run.name,
                run.mode,
                str(run.header.get("written", "?")),
                str(run.machine.get("git_commit", "") or "?"),
                ", ".join(str(value) for value in load) or "?",
                format_number(run.header.get("seconds") or ""),
                "FAILED" if run.error else f"{len(run.rows)} rows",
            ]
        )
    lines.append(
        markdown_table(
            [
                "workload",
                "sizes",
                "written (UTC)",
                "commit",
                "load 1/5/15 min",
                "seconds",
                "outcome",
            ],
            body,
        )
    )
    return lines + [""]


def image(path: Path, output: Path, caption: str) -> str:
    relative = path.relative_to(output.parent).as_posix()
    return f"![{caption}]({relative})"


def chart_for(run: Run, images: Path, output: Path) -> list[str]:
    """Draw the workload's chart, if it has one, and return the markdown lines that show it."""
    rows = run.rows
    name = run.name
    references = [reference for reference in REFERENCES if reference.workload == name]
    flat = [(ref.label, ref.microseconds) for ref in references if ref.subscriptions is None]
    curves: dict[str, list[tuple[float, float]]] = {}
    for ref in references:
        if ref.subscriptions is not None:
            curves.setdefault(ref.label, []).append((ref.subscriptions, ref.microseconds))
    path = images / f"{name}.png"
    notes: list[str] = []
    if name == "openamq":
        bars = [(f"{rows[0].baseline}\n(baseline)", rows[0].baseline_ns)] + [
            (row.subject, row.subject_ns) for row in rows
        ]
        plots.bar_chart(bars, path, f"W1 openamq: {rows[0].size}", flat)
    elif name in ("interval", "selectors", "mqtt"):
        extra: dict[str, dict[int, float]] = {}
        for row in rows:
            count = plots.subscription_count(row)
            if "cold_ns_per_message" in row.extra and count is not None:
                label = row.subject.replace("(warm)", "(cold)").strip()
                if label == row.subject:
                    label += " (cold)"
                extra.setdefault(label, {})[count] = float(row.extra["cold_ns_per_message"])
        x_label = "MQTT filters (log scale)" if name == "mqtt" else "subscriptions (log scale)"
        plots.cost_chart(
            rows,
            path,
            TITLES[name].replace("`", ""),
            x_label,
            references=sorted(curves.items()),
            horizontal=flat,
            extra_series=extra,
        )
        if name == "selectors":
            notes += anatomy_section(rows, images, output)
    elif name == "spark":
        spark_rows = [row for row in rows if "bitsift_s" in row.extra]
        if not spark_rows:
            return []
        for messages in sorted({plots.message_count(row) for row in spark_rows}, key=str):
            by_count = sorted(
                (count, float(row.extra["bitsift_s"]))
                for row in spark_rows
                if (count := plots.subscription_count(row)) is not None
                and plots.message_count(row) == messages
            )
            if len(by_count) > 1 and by_count[0][1] > by_count[1][1]:
                notes += [
                    f"bitsift's job at {by_count[0][0]:,} subscriptions"
                    f"{f' over {messages:,} messages' if messages else ''} took longer than at "
                    f"{by_count[1][0]:,}: it is the first full-size job of its Spark session "
                    "(only a 300-row correctness check runs before it), so it likely pays part "
                    "of Spark's warm-up. Read the smallest size with that in mind.",
                    "",
                ]
        plots.seconds_chart(spark_rows, path, "W5 spark: Spark job time against subscriptions")
    elif name == "filter":
        rate_rows = [
            row for row in rows if plots.match_rate(row) is not None and "ZeroMQ" not in row.size
        ]
        if not rate_rows:
            return []
        plots.rate_chart(
            rate_rows, path, "W6 filter: accepts() against match(), 1,000 subscriptions"
        )
    else:
        return []
    return [image(path, output, TITLES[name].replace("`", "")), "", *notes]


def anatomy_section(rows: list[Result], images: Path, output: Path) -> list[str]:
    """W3's account of where a warm match's time goes (w3_selectors.intersection_anatomy)."""
    body = []
    for row in rows:
        parts = plots.anatomy_parts(row)
        if parts is None:
            continue
        extra = row.extra
        body.append(
            [
                row.size,
                format_ns(sum(parts)),
                format_ns(float(extra["intersect_ns_per_message"])),
                format_ns(float(extra["intersect_resident_ns_per_message"])),
                format_ns(parts[2]),
                format_number(float(extra["answer_bytes_per_message"]) / 1024),
                format_number(float(extra["answer_working_set_mb"])),
            ]
        )
    if not body:
        return []
    title = "W3: where a warm match's time goes"
    path = plots.anatomy_chart(rows, images / "selectors_anatomy.png", title)
    lines = [
        "Where the warm time goes (in round one, where the growth rounds ran). The match loop's "
        "intersections are replayed alone, once with "
        "each message's own answers as the caches hold them and once cycling through 64 "
        "messages' answers, which stay in the CPU's caches; the rest of the warm time is the "
        "lookups, bisections and the result. *Answers read* is the bytes of answers one message "
        "intersects; *working set* is the bytes of every distinct answer the 4,000-message stream "
        "reads. Once the working set outgrows the CPU's last-level cache (32 MiB on the machine "
        'above), most answers come from main memory: see docs/architecture.md, "Why 100k costs '
        'more than 10k".',
        "",
        markdown_table(
            [
                "size",
                "warm match",
                "intersections as read",
                "same, answers resident",
                "everything else",
                "answers read, KiB/message",
                "working set, MB",
            ],
            body,
        ),
        "",
    ]
    growth = next(
        (row.extra for row in rows if "growth_from_10k_if_answers_resident" in row.extra), None
    )
    if growth is not None:

        def spread(key: str) -> str:
            samples = growth.get(f"{key}_samples") or [growth[key]]
            if len(samples) < 2:
                return f"{float(growth[key]):.2f}x"
            return (
                f"{float(growth[key]):.2f}x (median of {len(samples)} rounds: "
                f"{min(samples):.2f}x to {max(samples):.2f}x)"
            )

        lines += [
            f"Growth of the warm match from 10k to 100k: {spread('growth_from_10k')} as "
            f"measured; {spread('growth_from_10k_if_answers_resident')} with the replayed "
            "intersections' resident cost in place of their cost as read.",
            "",
        ]
    return lines + [image(path, output, title), ""]


def memory_section(runs: dict[str, Run], images: Path, output: Path) -> list[str]:
    lines = [
        "## Memory",
        "",
        "Two measures per index size, as the workloads record them. *Index bytes per "
        "subscription* is what Python allocates for a second build of the same index, traced by "
        "`tracemalloc`; the bitmaps pyroaring allocates in C are **not** traced, so it is a lower "
        "bound. *Peak RSS* is the whole benchmark process at the end of that size (each workload "
        "runs in its own process), including the messages, the baseline's parsed selectors and "
        "any smaller size run before it, so it is an upper bound. *Index RSS bytes per "
        "subscription*, where a workload records it, is the growth of the process's resident "
        "memory across the build (W3) or across the build and the timed matches (W2, so that the "
        "sweep's masks are in), after a garbage collection on both sides, so it includes "
        "pyroaring's C memory.",
        "",
    ]
    latest: dict[tuple[str, int | None], Result] = {}
    for name, run in runs.items():
        for row in run.rows:
            if "peak_rss_mb" in row.extra:  # one line per index size: the last row measured
                latest[(name, plots.subscription_count(row))] = row
    body = []
    series: dict[str, list[tuple[int, float, float]]] = {}
    for (name, count), row in latest.items():
        per_subscription = row.extra.get("index_bytes_per_subscription")
        rss_per_subscription = row.extra.get("index_rss_bytes_per_subscription")
        build = next((row.extra[key] for key in BUILD_KEYS if key in row.extra), None)
        body.append(
            [
                LABELS.get(name, name),
                format_number(count) if count else row.size,
                format_number(per_subscription) if per_subscription is not None else "not recorded",
                format_number(per_subscription * count / 2**20)
                if per_subscription is not None and count
                else "-",
                format_number(rss_per_subscription)
                if rss_per_subscription is not None
                else "not recorded",
                format_number(row.extra["peak_rss_mb"]),
                format_number(build) if build is not None else "not recorded",
            ]
        )
        if per_subscription is not None and count:
            series.setdefault(LABELS.get(name, name), []).append(
                (count, float(per_subscription), float(row.extra["peak_rss_mb"]))
            )
    if not body:
        return lines + ["No workload recorded its memory in this run.", ""]
    lines.append(
        markdown_table(
            [
                "workload",
                "subscriptions",
                "index bytes/subscription (traced)",
                "index MiB (traced)",
                "index RSS bytes/subscription",
                "peak RSS MiB",
                "build µs/subscription",
            ],
            body,
        )
    )
    lines.append("")
    if series:
        title = "Index memory against subscriptions (traced heap: pyroaring's C bitmaps excluded)"
        path = plots.memory_chart(series, images / "memory.png", title)
        lines += [image(path, output, title), ""]
    return lines


def references_section() -> list[str]:
    body = [
        [
            ref.label,
            f"{ref.microseconds:,g} µs"
            + (f" at {ref.subscriptions:,} subscriptions" if ref.subscriptions else ""),
            ref.workload,
            ref.source,
        ]
        for ref in REFERENCES
    ]
    return [
        "## Published figures drawn as reference lines",
        "",
        "None of these was measured in our runs: they are other systems' numbers (on other "
        "hardware, in C or C++) or design targets, drawn as grey dashed lines so that the "
        "measured lines can be read against them. The ratios in the tables are only ever against "
        "baselines measured in the same run.",
        "",
        markdown_table(["figure", "value", "chart", "source"], body),
        "",
    ]


def generate(
    results: Path = RESULTS,
    output: Path = OUTPUT,
    images: Path | None = None,
    prefer: str = "full",
) -> Path:
    """Write the report and its PNGs from the results files; return the report's path."""
    images = images or output.parent / "img"
    runs = load_runs(results, prefer)
    if not runs:
        raise SystemExit(
            f"no results in {results}: run `make bench` (or `make bench FULL=1`) first"
        )
    modes = sorted({run.mode for run in runs.values()})
    quick_seconds = [
        float(read_results(path)[0].get("seconds") or 0)
        for name in ORDER
        if (path := results / f"{name}.quick.json").exists()
    ]
    quick_time = (
        f" ({sum(quick_seconds) / 60:.0f} min in the recorded run)"
        if len(quick_seconds) == len(ORDER)
        else ""
    )
    lines = [
        "# Performance",
        "",
        "<!-- Generated by `make report` (python -m benchmarks.report) from "
        "benchmarks/results/*.json. Do not edit by hand. -->",
        "",
        "Every number here was measured by the code in `benchmarks/` on the standard workloads "
        "(W1–W6), with each baseline run in the same process on the same data, after checking "
        "that bitsift and the reference evaluator agree on a sample. Times are medians per "
        "message (per event for W2, per topic for W4); *ratio* is baseline time over bitsift "
        "time, so higher is better for bitsift.",
        "",
        f"Sizes in this report: **{' and '.join(modes)}** (per workload below). "
        + (
            "Quick sizes are the `make bench` sizes, smaller than the full sizes of the "
            "workload definitions: W2 has 20k subscriptions only, W3 1k and 10k, W5 100k "
            "messages. "
            if "quick" in modes
            else ""
        ),
        "",
        "Reproduce:",
        "",
        "```sh",
        "make bench FULL=1   # the full sizes; `make bench` runs the quick ones" + quick_time,
        "make report         # rewrites this page and docs/img/*.png",
        "```",
        "",
    ]
    lines += machine_section(runs)
    succeeded = {name: run for name, run in runs.items() if not run.error}
    routing = [
        (name, row) for name, run in succeeded.items() if name != "parse" for row in run.rows
    ]
    lines += [
        "## Summary",
        "",
        "Every routing workload's rows (the parser's own measures are in their section below).",
        "",
        results_table([row for _, row in routing], [LABELS.get(name, name) for name, _ in routing]),
        "",
    ]
    failed = {name: run for name, run in runs.items() if run.error}
    fallbacks = {
        name: run for name, run in succeeded.items() if any("failed" in n for n in run.notes)
    }
    if failed or fallbacks:
        lines += ["## Failed workloads", ""]
        lines += [f"- `{name}` ({run.mode}): {run.error}" for name, run in failed.items()]
        lines += [
            f"- `{name}`: {note}"
            for name, run in fallbacks.items()
            for note in run.notes
            if "failed" in note
        ]
        lines.append("")
    for name, run in succeeded.items():
        lines += [f"## {TITLES.get(name, name)}", ""]
        lines += [DESCRIPTIONS.get(name, ""), "", f"Sizes: {run.mode}.", ""]
        lines += [note for text in run.notes for note in (f"> {text}", "")]
        lines += [results_table(run.rows), ""]
        lines += chart_for(run, images, output)
        recorded = details(run.rows)
        if recorded:
            lines += ["Everything else this workload recorded:", "", recorded, ""]
    lines += memory_section(succeeded, images, output)
    lines += references_section()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines).rstrip() + "\n")
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__)
    parser.add_argument("--results", type=Path, default=RESULTS, metavar="DIR")
    parser.add_argument("--output", type=Path, default=OUTPUT, metavar="FILE")
    parser.add_argument(
        "--images", type=Path, default=None, metavar="DIR", help="default: img/ beside the output"
    )
    parser.add_argument(
        "--prefer",
        choices=("full", "quick"),
        default="full",
        help="which sizes to report when a workload has both (default: full)",
    )
    arguments = parser.parse_args(argv)
    path = generate(arguments.results, arguments.output, arguments.images, arguments.prefer)
    print(f"wrote {path} and its plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
