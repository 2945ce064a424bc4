"""W2 `interval`: the academic pub/sub workload (REIN, TAMA, OpIndex, H-Tree, Siena counting).

20 integer attributes; each subscription ANDs 10 ``BETWEEN`` ranges of width half the domain over
distinct attributes; each event carries all 20 attributes. About 0.1% of subscriptions match. It is
the hardest shape for an inverted index: every event satisfies about half of all range criteria,
so it measures the range buckets (bisection plus checkpoint bitmaps) more than anything else.

Baseline in the same run: the reference evaluator over every subscription (on 10 events, as it is
slow). Times are CPU time of the process (:func:`benchmarks.w3_selectors.cpu_ns_per_item`), so
other jobs on the shared machine do not inflate them.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
import tracemalloc
from functools import partial

from benchmarks.harness import Result, current_rss_bytes, growth_per_item, peak_rss_mb, progress
from benchmarks.w3_selectors import cpu_ns_per_item
from bitsift import Selector, Subscription, SubscriptionIndex, parse

ATTRIBUTES = 20
PER_SUBSCRIPTION = 10
DOMAIN = 1_000_000
WIDTH = 500_000
EVENTS = 200
REIN_MS = {20_000: 0.21, 100_000: 0.96}  # compiled C++, one thread, a machine like ours


def subscriptions(count: int, seed: int = 2) -> list[Subscription]:
    generator = random.Random(seed)
    result = []
    for number in range(count):
        attributes = generator.sample(range(ATTRIBUTES), PER_SUBSCRIPTION)
        terms = []
        for attribute in sorted(attributes):
            low = generator.randrange(0, DOMAIN - WIDTH)
            terms.append(f"a{attribute} BETWEEN {low} AND {low + WIDTH}")
        result.append(Subscription(id=f"s{number}", selector=" AND ".join(terms)))
    return result


def events(count: int = EVENTS, seed: int = 3) -> list[dict[str, int]]:
    generator = random.Random(seed)
    return [
        {f"a{attribute}": generator.randrange(DOMAIN) for attribute in range(ATTRIBUTES)}
        for _ in range(count)
    ]


def match_all(selectors: list[Selector], message: dict[str, int]) -> list[bool]:
    """The baseline: the reference evaluator over every subscription."""
    return [selector.matches(message) for selector in selectors]


def index_memory(subs: list[Subscription]) -> float:
    """Bytes Python allocates for an index of ``subs`` (a second build, traced)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = SubscriptionIndex(subs)
        return float(tracemalloc.get_traced_memory()[0] - before) if len(index) else 0.0
    finally:
        tracemalloc.stop()


def run(full: bool) -> list[Result]:
    results = []
    for size in (20_000, 100_000) if full else (20_000,):
        subs = subscriptions(size)
        # Every timed event is new to the index (as in the academic workload, values never
        # repeat): five fresh batches of EVENTS, median over the batches. Then warm, once more.
        messages = events(EVENTS * 6)
        selectors = [parse(sub.selector or "") for sub in subs]
        gc.collect()
        rss_before = current_rss_bytes()
        started = time.process_time()
        index = SubscriptionIndex(progress(subs, len(subs), f"W2 build {size:,}"))
        build_s = time.process_time() - started
        gc.collect()
        rss_built = current_rss_bytes()
        # Correctness before speed: the index equals the reference on a sample of events.
        sample = messages[:5]
        matches = 0
        for message in sample:
            expected = {
                sub.id for sub, sel in zip(subs, selectors, strict=True) if sel.matches(message)
            }
            found = index.match(message)
            if set(found) != expected:
                raise AssertionError(f"W2: index and reference disagree on {message}")
            matches += len(found)
        batches = [messages[EVENTS * (n + 1) : EVENTS * (n + 2)] for n in range(5)]
        subject = statistics.median(
            cpu_ns_per_item(index.match, batch, repeats=1) for batch in batches
        )
        warm = cpu_ns_per_item(index.match, batches[-1], repeats=3)
        # What the index holds once matching, roaring and the sweep's masks included (RSS:
        # tracemalloc sees only Python's allocator), measured before the traced second build.
        gc.collect()
        rss_matching = current_rss_bytes()
        index_bytes = index_memory(subs)
        index_rss = growth_per_item(rss_before, rss_matching, size)
        build_rss = growth_per_item(rss_before, rss_built, size)
        baseline = cpu_ns_per_item(partial(match_all, selectors), messages[:10], repeats=1)
        target_ms = 1.0 if size > 20_000 else REIN_MS[size]
        results.append(
            Result(
                workload="W2 interval",
                size=f"{size // 1000}k subs",
                subject="index.match (new events)",
                baseline="evaluator loop",
                subject_ns=subject,
                baseline_ns=baseline,
                goal=f"<= {target_ms} ms/event" + (", index < 500 MB" if size > 20_000 else ""),
                met=subject / 1e6 <= target_ms
                and (size <= 20_000 or (index_rss is not None and index_rss * size < 500e6)),
                extra={
                    "warm_ns_per_event": warm,
                    "build_us_per_subscription": build_s * 1e6 / size,
                    "index_bytes_per_subscription": index_bytes / size,
                    "index_rss_bytes_per_subscription": index_rss,
                    "index_rss_mb": None if index_rss is None else index_rss * size / 2**20,
                    "build_rss_bytes_per_subscription": build_rss,
                    "peak_rss_mb": peak_rss_mb(),
                    "matches_per_event": matches / len(sample),
                    "rein_cpp_ms_per_event": REIN_MS[size],
                    "columns": index.column_count,
                },
            )
        )
    return results
