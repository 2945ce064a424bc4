"""W6 ``filter``: receiver-side drop against full matching (shared/BENCHMARKS.md).

1,000 W3 subscriptions (:func:`bitsift.samples.w3_subscriptions`) and W3 message streams in which
1%, 10% and 50% of the messages match at least one subscription. ``ReceiverFilter.accepts`` is
timed against ``SubscriptionIndex.match`` on the same messages in the same process, passes
interleaved, medians of CPU time reported.

Shaping the streams: with 1,000 W3 subscriptions almost every W3 message (about 98.5%) matches
something, so the generator is not enough on its own. This module draws W3 messages
(:func:`bitsift.samples.w3_messages`), sorts them into a matching and a non-matching pool, and
mixes the pools in the wanted proportion, shuffled with a fixed seed. The sorting is screened by a
separate filter (it is quick), then every message of every stream is labelled again by the index
and a sample by the reference evaluator; any disagreement stops the benchmark.

The filter runs as a receiver would: one untimed pass first (its ranking adapts to the stream, as
it does while running), then the timed passes.

End to end: messages per second through :class:`bitsift.filters.receivers.ZmqReceiver` (a PUB
socket in a thread, ``ipc://`` in a temporary directory, the 50% stream as
``[topic, properties JSON, body]``), against the same SUB loop that decodes each message and
calls ``SubscriptionIndex.match`` instead.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.harness import Result, peak_rss_mb, progress
from bitsift.filters import ReceiverFilter
from bitsift.filters.wire import MalformedMessage, decode_frames
from bitsift.index.subscriptions import SubscriptionIndex
from bitsift.models import Subscription
from bitsift.samples import w3_messages, w3_subscriptions

SUBSCRIPTIONS = 1_000
RATES = (0.01, 0.10, 0.50)
SEED = 606
Message = tuple[str, dict[str, Any]]


def pools(
    subscriptions: Sequence[Subscription], matching: int, non_matching: int, scan_limit: int
) -> tuple[list[Message], list[Message], int]:
    """Distinct W3 messages that match some subscription, and ones that match none.

    Returns the two pools and how many messages were drawn. Non-matching messages are rare, so the
    scan stops at ``scan_limit``; the streams then repeat some of them (reported)."""
    screen = ReceiverFilter(subscriptions, refine=False)
    wanted: list[Message] = []
    unwanted: list[Message] = []
    scanned = 0
    for topic, properties in progress(
        w3_messages(scan_limit, seed=SEED), total=scan_limit, description="W6 pools"
    ):
        scanned += 1
        if screen.accepts(properties, topic):
            if len(wanted) < matching:
                wanted.append((topic, properties))
        elif len(unwanted) < non_matching:
            unwanted.append((topic, properties))
        if len(wanted) >= matching and len(unwanted) >= non_matching:
            break
    return wanted, unwanted, scanned


def stream(
    wanted: list[Message], unwanted: list[Message], size: int, rate: float, rng: random.Random
) -> list[Message]:
    """``size`` messages of which ``round(rate * size)`` match, shuffled."""
    hits = round(rate * size)
    misses = size - hits
    chosen = [wanted[i % len(wanted)] for i in range(hits)]
    chosen += [unwanted[i % len(unwanted)] for i in range(misses)]
    rng.shuffle(chosen)
    return chosen


def check(
    subscriptions: Sequence[Subscription],
    index: SubscriptionIndex,
    receiver_filter: ReceiverFilter,
    messages: Sequence[Message],
    rate: float,
    rng: random.Random,
) -> None:
    """Index labels for every message, the reference for a sample, and the filter on that sample.

    The filter's answers are checked on a copy of the filter (``accepts`` counts what it sees)."""
    labels = [bool(index.match(properties, topic)) for topic, properties in messages]
    share = sum(labels) / len(labels)
    if abs(share - rate) > 0.001 + 1 / len(labels):
        raise AssertionError(f"W6: the {rate:.0%} stream has {share:.2%} matching messages")
    sample = rng.sample(range(len(messages)), min(300, len(messages)))
    probe = ReceiverFilter(subscriptions, refine_after=8)
    for position in sample:
        topic, properties = messages[position]
        expected = any(subscription.matches(properties, topic) for subscription in subscriptions)
        if labels[position] != expected:
            raise AssertionError(f"W6: SubscriptionIndex disagrees with the reference on {topic}")
        if probe.accepts(properties, topic) != expected:
            raise AssertionError(f"W6: ReceiverFilter disagrees with the reference on {topic}")
        if receiver_filter.accepts(properties, topic) != expected:
            raise AssertionError(f"W6: the timed filter disagrees with the reference on {topic}")


def interleaved(
    subject: Callable[[dict[str, Any], str], object],
    baseline: Callable[[dict[str, Any], str], object],
    messages: Sequence[Message],
    repeats: int,
) -> tuple[float, float]:
    """Median CPU ns per message of each, over passes that alternate between the two.

    CPU time of this thread, not wall time: the machines are shared, and another process taking
    the core mid-pass would otherwise land in one side's numbers only. Neither side does I/O."""
    timings: dict[str, list[float]] = {"subject": [], "baseline": []}
    for _ in range(repeats):
        for name, function in (("subject", subject), ("baseline", baseline)):
            begin = time.thread_time_ns()
            for topic, properties in messages:
                function(properties, topic)
            timings[name].append((time.thread_time_ns() - begin) / len(messages))
    return statistics.median(timings["subject"]), statistics.median(timings["baseline"])


Consumer = Callable[[bool], int]


def zmq_messages_per_second(
    make_consumer: Callable[[str, Any], Consumer], frames: list[list[bytes]]
) -> tuple[float, int]:
    """Messages per second through a SUB loop, from the first message of ``frames`` to the end
    marker, and how many the loop accepted.

    ``make_consumer(endpoint, context)`` connects and returns ``consume(joining)``: with
    ``joining`` it returns at the first probe; without, it skips probes, reads until the end
    marker and returns how many messages it accepted."""
    import zmq

    context = zmq.Context()
    folder = tempfile.TemporaryDirectory()
    try:
        publisher = context.socket(zmq.PUB)
        publisher.setsockopt(zmq.SNDHWM, 0)
        publisher.setsockopt(zmq.LINGER, 0)
        endpoint = f"ipc://{folder.name}/w6"
        publisher.bind(endpoint)
        consume = make_consumer(endpoint, context)
        # Slow joiner: probe until the subscription is in place (consume() sees probes first).
        ready = threading.Event()
        joined = threading.Event()

        def publish() -> None:
            deadline = time.monotonic() + 30
            while not joined.is_set() and time.monotonic() < deadline:
                publisher.send_multipart(_PROBE)
                time.sleep(0.01)
            ready.wait(30)
            for message in frames:
                publisher.send_multipart(message)
            publisher.send_multipart(_END)

        sender = threading.Thread(target=publish, daemon=True)
        sender.start()
        consume(True)
        joined.set()
        ready.set()
        begin = time.perf_counter()
        accepted = consume(False)
        elapsed = time.perf_counter() - begin
        sender.join(30)
        publisher.close()
    finally:
        context.destroy(linger=0)
        folder.cleanup()
    return len(frames) / elapsed, accepted


_PROBE = [b"control.probe", b'{"control": "probe"}', b""]
_END = [b"control.probe", b'{"control": "end"}', b""]


def run(full: bool) -> list[Result]:
    size = 20_000 if full else 3_000
    repeats = 5
    rng = random.Random(SEED)
    subscriptions = w3_subscriptions(SUBSCRIPTIONS, seed=SEED)
    started = time.perf_counter()
    index = SubscriptionIndex(subscriptions)
    index_build = (time.perf_counter() - started) / SUBSCRIPTIONS * 1e6
    started = time.perf_counter()
    ReceiverFilter(subscriptions)
    filter_build = (time.perf_counter() - started) / SUBSCRIPTIONS * 1e6

    needed_misses = round(size * (1 - min(RATES)))
    wanted, unwanted, scanned = pools(
        subscriptions, round(size * max(RATES)), needed_misses, 40 * needed_misses * 2
    )
    results = []
    for rate in RATES:
        messages = stream(wanted, unwanted, size, rate, rng)
        receiver_filter = ReceiverFilter(subscriptions)
        check(subscriptions, index, receiver_filter, messages, rate, rng)
        for topic, properties in messages:  # the untimed pass: caches and ranking settle
            receiver_filter.accepts(properties, topic)
            index.match(properties, topic)
        filter_ns, index_ns = interleaved(receiver_filter.accepts, index.match, messages, repeats)
        goal, met = "", None
        if rate == 0.5:
            goal, met = ">= 5x", index_ns / filter_ns >= 5
        elif rate == 0.01:
            goal, met = ">= 1x (never slower)", index_ns / filter_ns >= 1
        results.append(
            Result(
                "filter",
                f"{SUBSCRIPTIONS:,} subs, {rate:.0%} match",
                "ReceiverFilter.accepts",
                "SubscriptionIndex.match",
                filter_ns,
                index_ns,
                goal=goal,
                met=met,
                extra={
                    "messages": size,
                    "filter_messages_per_s": round(1e9 / filter_ns),
                    "index_messages_per_s": round(1e9 / index_ns),
                    "distinct_non_matching": len(unwanted),
                    "messages_scanned_for_pools": scanned,
                    "conjunctions": receiver_filter.column_count,
                    "subsumed": receiver_filter.subsumed,
                    "filter_build_us_per_subscription": round(filter_build, 1),
                    "index_build_us_per_subscription": round(index_build, 1),
                    "peak_rss_mb": round(peak_rss_mb(), 1),
                },
            )
        )
    results.append(_end_to_end(subscriptions, index, stream(wanted, unwanted, size, 0.5, rng)))
    return results


def _end_to_end(
    subscriptions: Sequence[Subscription], index: SubscriptionIndex, messages: list[Message]
) -> Result:
    try:
        import zmq
    except ImportError:  # pragma: no cover - pyzmq is a dev dependency
        raise SystemExit("W6 end to end needs pyzmq") from None
    from bitsift.filters.receivers import ZmqReceiver

    frames = [
        [topic.encode(), json.dumps(properties).encode(), b"body"] for topic, properties in messages
    ]
    expected = sum(1 for topic, properties in messages if index.match(properties, topic))
    control = Subscription(id="control", topic="control.#")

    def filtering(endpoint: str, context: Any) -> Consumer:
        receiver = ZmqReceiver(ReceiverFilter([*subscriptions, control]), endpoint, context=context)

        def consume(joining: bool) -> int:
            accepted = 0
            while True:
                message = receiver.receive(timeout=30)
                if message is None:
                    raise AssertionError("W6: the ZeroMQ feed stalled")
                if message.topic == "control.probe":
                    if joining:
                        return 0
                    if message.properties["control"] == "end":
                        receiver.close()
                        return accepted
                    continue
                accepted += 1

        return consume

    def matching(endpoint: str, context: Any) -> Consumer:
        sub = context.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.RCVHWM, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(endpoint)
        control_index = SubscriptionIndex([control])

        def consume(joining: bool) -> int:
            accepted = 0
            while True:
                if not sub.poll(30_000):
                    raise AssertionError("W6: the ZeroMQ feed stalled")
                try:
                    message = decode_frames(sub.recv_multipart())
                except MalformedMessage:
                    continue
                if control_index.match(message.properties, message.topic):
                    if joining:
                        return 0
                    if message.properties["control"] == "end":
                        sub.close()
                        return accepted
                    continue
                if index.match(message.properties, message.topic):
                    accepted += 1

        return consume

    counts: dict[str, list[float]] = {"filter": [], "index": []}
    for _ in range(3):
        for name, make_consumer in (("filter", filtering), ("index", matching)):
            rate, accepted = zmq_messages_per_second(make_consumer, frames)
            if accepted != expected:
                raise AssertionError(
                    f"W6: the {name} receiver accepted {accepted} messages, not {expected}"
                )
            counts[name].append(rate)
    filter_rate = statistics.median(counts["filter"])
    index_rate = statistics.median(counts["index"])
    return Result(
        "filter",
        f"ZeroMQ ipc end to end, {len(frames):,} msgs, 50% match",
        "ZmqReceiver + ReceiverFilter",
        "SUB + decode + SubscriptionIndex.match",
        1e9 / filter_rate,
        1e9 / index_rate,
        extra={
            "filter_messages_per_s": round(filter_rate),
            "index_messages_per_s": round(index_rate),
            "accepted_expected": expected,
        },
    )
