"""W1 ``openamq``: topic fan-out as in OpenAMQ's matching test program (shared/BENCHMARKS.md).

The seed (openamq-rapid-message-matching, 2.6) routed 1M messages over 2,000 subscriptions and
2,000 topics built from five word tables, 170M matches in 26 s: 26 µs per message, in C on a
2 GHz machine in 2007. This workload rebuilds that setup for bitsift's topic index and times it
cold (result cache off, so every message runs the bitmap tables) and warm (cache on: the 2,000
topics repeat), against a loop testing every pattern in the same process.

The seed does not say how its subscriptions were drawn, only that they averaged 170 matches per
message; a ``*`` with probability 0.45 per level and an early ``#`` in one pattern in ten gives
about that (the run reports the figure it got).
"""

from __future__ import annotations

import random
import time

from benchmarks.harness import Result, ns_per_item, peak_rss_mb, progress
from bitsift.index.topics import TopicIndex
from bitsift.selectors.topics import TopicPattern

LEVELS = (
    ("gold", "oil", "pork", "chips", "bonds", "debt"),
    ("lon", "ny", "hk", "jo", "tk", "sg", "mo"),
    ("usd", "eur", "gbp", "jpy", "chy", "aud"),
    ("buy", "sell", "hold", "short", "long"),
    ("spot", "early", "late", "open", "close", "future"),
)
SUBSCRIPTIONS = 2_000
TOPICS = 2_000
STAR = 0.45
EARLY_HASH = 0.1
SEED_NS_PER_MESSAGE = 26_000.0
"""OpenAMQ, 2007: 1M messages in 26 s."""
SEED_MATCHES_PER_MESSAGE = 170.0
"""OpenAMQ, 2007: 170M matches for 1M messages."""


def make_patterns(rng: random.Random) -> list[TopicPattern]:
    patterns = []
    for _ in range(SUBSCRIPTIONS):
        words = [rng.choice(level) if rng.random() >= STAR else "*" for level in LEVELS]
        if rng.random() < EARLY_HASH:
            words = [*words[: rng.randrange(len(LEVELS))], "#"]
        patterns.append(TopicPattern(".".join(words)))
    return patterns


def make_topics(rng: random.Random) -> list[str]:
    every = [""]
    for level in LEVELS:
        every = [f"{prefix}.{word}" if prefix else word for prefix in every for word in level]
    return rng.sample(every, TOPICS)


def check(index: TopicIndex, patterns: list[TopicPattern], topics: list[str]) -> None:
    """Fail the benchmark if the index and the reference disagree on any sampled topic."""
    for topic in topics:
        expected = [column for column, pattern in enumerate(patterns) if pattern.matches(topic)]
        if list(index.match(topic)) != expected:
            raise AssertionError(f"W1: the topic index disagrees with the reference on {topic!r}")


def run(full: bool) -> list[Result]:
    rng = random.Random(20070404)
    messages_count = 1_000_000 if full else 100_000
    patterns = make_patterns(rng)
    topics = make_topics(rng)
    messages = [rng.choice(topics) for _ in range(messages_count)]

    started = time.perf_counter()
    cold = TopicIndex(cache_size=0)
    for column, pattern in enumerate(patterns):
        cold.add(column, pattern)
    build_us = (time.perf_counter() - started) / len(patterns) * 1e6
    warm = TopicIndex(cache_size=4 * TOPICS)
    for column, pattern in enumerate(patterns):
        warm.add(column, pattern)
    sample = rng.sample(topics, 200 if full else 50)
    check(cold, patterns, sample)
    check(warm, patterns, sample)

    matches = sum(len(cold.match(topic)) for topic in messages[:20_000]) / 20_000
    cold_ns = ns_per_item(cold.match, messages, repeats=5 if not full else 3)
    warm_ns = ns_per_item(warm.match, messages, repeats=5 if not full else 3)

    def loop(topic: str) -> list[int]:
        return [column for column, pattern in enumerate(patterns) if pattern.matches(topic)]

    baseline_sample = messages[: 2_000 if full else 300]
    baseline_ns = ns_per_item(
        loop, list(progress(baseline_sample, description="W1 baseline")), repeats=3, limit_s=60
    )
    size = f"{SUBSCRIPTIONS:,} patterns, {messages_count:,} msgs"
    extra = {
        "matches_per_message": round(matches, 1),
        "seed_matches_per_message": SEED_MATCHES_PER_MESSAGE,
        "seed_ns_per_message": SEED_NS_PER_MESSAGE,
        "cold_speedup_vs_seed": round(SEED_NS_PER_MESSAGE / cold_ns, 1),
        "warm_speedup_vs_seed": round(SEED_NS_PER_MESSAGE / warm_ns, 1),
        "cold_messages_per_s": round(1e9 / cold_ns),
        "cold_matches_per_s": round(matches * 1e9 / cold_ns),
        "warm_messages_per_s": round(1e9 / warm_ns),
        "build_us_per_subscription": round(build_us, 2),
        "baseline_messages_timed": len(baseline_sample),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    return [
        Result(
            "openamq",
            size,
            "TopicIndex cold",
            "TopicPattern loop",
            cold_ns,
            baseline_ns,
            goal="< 2 µs/msg cold",
            met=cold_ns < 2_000,
            extra=extra,
        ),
        Result(
            "openamq",
            size,
            "TopicIndex warm",
            "TopicPattern loop",
            warm_ns,
            baseline_ns,
            extra={"cache_size": warm.cache_size, "distinct_topics": TOPICS},
        ),
    ]
