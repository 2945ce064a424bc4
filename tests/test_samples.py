"""The W3 sample generator: deterministic, shaped as shared/BENCHMARKS.md says, and selective."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from pathlib import Path

from bitsift import SubscriptionIndex, load_subscriptions
from bitsift.samples import (
    EXCHANGES,
    REGIONS,
    symbols,
    w3_messages,
    w3_records,
    w3_selector_texts,
    w3_subscriptions,
    write_w3_messages,
    write_w3_subscriptions,
)


def test_same_seed_same_data_and_prefixes_agree() -> None:
    assert list(w3_messages(500, seed=3)) == list(w3_messages(500, seed=3))
    assert list(w3_messages(500, seed=3)) != list(w3_messages(500, seed=4))
    longer = list(w3_messages(70_000, seed=3))
    assert longer[:500] == list(w3_messages(500, seed=3))
    assert w3_selector_texts(50, seed=1) == w3_selector_texts(50, seed=1)


def test_the_stream_is_pinned_across_machines() -> None:
    """A digest of the data: if it changes, every published W3 number changes meaning."""
    text = json.dumps(list(w3_records(2_000, seed=0)), sort_keys=True)
    text += json.dumps(w3_selector_texts(200, seed=0))
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert digest == PINNED_DIGEST, digest


PINNED_DIGEST = "44d900fe12714a7ac1116326502578740cdc27688f3f1ef1a164be26d4092955"


def test_message_shape_follows_the_workload() -> None:
    messages = list(w3_messages(20_000, seed=5))
    table = symbols()
    assert len(set(table)) == 5_000
    for topic, properties in messages[:2_000]:
        assert topic == f"{properties['exchange']}.{properties['region']}.{properties['symbol']}"
        assert properties["exchange"] in EXCHANGES and properties["region"] in REGIONS
        assert properties["side"] in ("buy", "sell")
        assert 0 <= properties["price"] < 1000 and type(properties["price"]) is float
        assert 1 <= properties["qty"] <= 10_000 and type(properties["qty"]) is int
        assert type(properties.get("urgent", False)) is bool
    missing = sum("urgent" not in properties for _, properties in messages)
    assert 0.45 < missing / len(messages) < 0.55
    # Zipf: the most popular symbol is far more common than the median one.
    counts = Counter(properties["symbol"] for _, properties in messages)
    assert counts[table[0]] > 50 * max(1, counts[table[2_500]])


def test_subscriptions_mix_every_kind_of_term_and_stay_selective() -> None:
    subscriptions = w3_subscriptions(1_000, seed=6)
    texts = " ".join(subscription.selector or "" for subscription in subscriptions)
    for needle in (" IN (", " BETWEEN ", " < ", " > ", " LIKE '", "IS NULL", "IS NOT NULL"):
        assert needle in texts
    assert "NOT " in texts and ") OR (" in texts
    residual = sum("price * qty" in (s.selector or "") for s in subscriptions)
    assert 30 <= residual <= 70
    with_topic = sum(s.topic is not None for s in subscriptions)
    assert 200 <= with_topic <= 400
    index = SubscriptionIndex(subscriptions)
    matched = [len(index.match(p, t)) for t, p in itertools.islice(w3_messages(2_000, 7), 2_000)]
    share = sum(matched) / len(matched) / len(subscriptions)
    assert 0.001 <= share <= 0.02


def test_files_round_trip(tmp_path: Path) -> None:
    messages = write_w3_messages(tmp_path / "m.jsonl", 100, seed=8)
    lines = messages.read_text().splitlines()
    assert [json.loads(line) for line in lines] == list(w3_records(100, seed=8))
    subscriptions = write_w3_subscriptions(tmp_path / "s.json", 20, seed=9)
    assert load_subscriptions(subscriptions) == w3_subscriptions(20, seed=9)
