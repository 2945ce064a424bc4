"""W4 ``mqtt``: 10,000 MQTT topic filters against paho-mqtt's matchers (shared/BENCHMARKS.md).

Filters have four levels over a 30-word vocabulary; one in five has a ``+`` at one level and one
in ten ends in ``#``. Topics are four random words. bitsift's topic index runs cold (result cache
off; the stream is random so almost every topic is new anyway) and warm (a pool of topics that
repeat, cache on), against two baselines in the same process: paho's ``MQTTMatcher`` trie, which
has no cache so it is the same cold or warm, and a loop calling ``topic_matches_sub`` for every
filter (timed on a sample: it is slow).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence

from benchmarks.harness import Result, ns_per_item, peak_rss_mb, progress
from bitsift.index.topics import TopicIndex
from bitsift.selectors.topics import TopicPattern

VOCABULARY = [f"w{number:02d}" for number in range(30)]
FILTERS = 10_000
LEVELS = 4
PLUS = 0.2
HASH = 0.1
WARM_POOL = 5_000


def interleaved(
    subjects: dict[str, Callable[[str], object]], items: Sequence[str], rounds: int = 5
) -> dict[str, float]:
    """Median ns per item of each subject, timed in alternating passes over the same items.

    The machines are shared: timing one subject fully and then the other lets a change of load
    in between decide the ratio. Alternating passes exposes both to the same load.
    """
    samples: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(rounds):
        for name, function in subjects.items():
            samples[name].append(ns_per_item(function, items, repeats=1))
    return {name: statistics.median(values) for name, values in samples.items()}


def make_filters(rng: random.Random) -> list[str]:
    filters = []
    for _ in range(FILTERS):
        levels = [rng.choice(VOCABULARY) for _ in range(LEVELS)]
        ends_in_hash = rng.random() < HASH
        if ends_in_hash:
            levels[-1] = "#"
        if rng.random() < PLUS:
            levels[rng.randrange(LEVELS - 1 if ends_in_hash else LEVELS)] = "+"
        filters.append("/".join(levels))
    return filters


def make_topics(rng: random.Random, count: int) -> list[str]:
    return ["/".join(rng.choice(VOCABULARY) for _ in range(LEVELS)) for _ in range(count)]


def run(full: bool) -> list[Result]:
    # paho is a baseline, not a dependency of bitsift: imported only when this workload runs.
    from paho.mqtt.client import topic_matches_sub
    from paho.mqtt.matcher import MQTTMatcher

    rng = random.Random(3114)
    filters = make_filters(rng)
    patterns = [TopicPattern(text, "mqtt") for text in filters]
    cold_topics = make_topics(rng, 200_000 if full else 40_000)
    pool = make_topics(rng, WARM_POOL)
    warm_topics = [rng.choice(pool) for _ in range(len(cold_topics))]

    started = time.perf_counter()
    cold = TopicIndex(cache_size=0)
    for column, pattern in enumerate(patterns):
        cold.add(column, pattern)
    build_us = (time.perf_counter() - started) / FILTERS * 1e6
    warm = TopicIndex(cache_size=2 * WARM_POOL)
    for column, pattern in enumerate(patterns):
        warm.add(column, pattern)
    trie = MQTTMatcher()  # type: ignore[no-untyped-call]
    for column, text in enumerate(filters):
        try:
            trie[text].append(column)
        except KeyError:
            trie[text] = [column]

    def paho_trie(topic: str) -> list[int]:
        found = trie.iter_match(topic)  # type: ignore[no-untyped-call]
        return [column for columns in found for column in columns]

    def paho_loop(topic: str) -> list[int]:
        return [column for column, text in enumerate(filters) if topic_matches_sub(text, topic)]

    sample = cold_topics[:300] + pool[:100]
    for topic in sample:
        expected = [column for column, pattern in enumerate(patterns) if pattern.matches(topic)]
        for name, got in (("cold", cold.match(topic)), ("warm", warm.match(topic))):
            if list(got) != expected:
                raise AssertionError(
                    f"W4: the {name} topic index disagrees with the reference on {topic!r}"
                )
        if sorted(paho_trie(topic)) != expected:
            raise AssertionError(
                f"W4: paho's MQTTMatcher disagrees with the reference on {topic!r}"
            )

    matches = sum(len(cold.match(topic)) for topic in cold_topics[:20_000]) / 20_000
    medians = interleaved({"cold": cold.match, "trie": paho_trie}, cold_topics)
    cold_ns, trie_ns = medians["cold"], medians["trie"]
    warm_ns = ns_per_item(warm.match, warm_topics)
    loop_sample = list(progress(cold_topics[: 100 if full else 30], description="W4 loop"))
    loop_ns = ns_per_item(paho_loop, loop_sample, repeats=3, limit_s=60)

    size = f"{FILTERS:,} filters"
    extra = {
        "matches_per_topic": round(matches, 3),
        "topics_timed": len(cold_topics),
        "warm_distinct_topics": WARM_POOL,
        "build_us_per_filter": round(build_us, 2),
        "cold_topics_per_s": round(1e9 / cold_ns),
        "warm_topics_per_s": round(1e9 / warm_ns),
        "paho_trie_ns": round(trie_ns),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    return [
        Result(
            "mqtt",
            size,
            "TopicIndex cold",
            "paho MQTTMatcher",
            cold_ns,
            trie_ns,
            goal=">= 2x paho trie cold",
            met=trie_ns / cold_ns >= 2,
            extra=extra,
        ),
        Result(
            "mqtt",
            size,
            "TopicIndex warm",
            "paho MQTTMatcher",
            warm_ns,
            trie_ns,
            goal="< 0.3 µs/topic warm",
            met=warm_ns < 300,
        ),
        Result(
            "mqtt",
            size,
            "TopicIndex cold",
            "topic_matches_sub loop",
            cold_ns,
            loop_ns,
            extra={"loop_topics_timed": len(loop_sample)},
        ),
    ]
