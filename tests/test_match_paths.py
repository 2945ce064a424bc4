"""The match loop's fast paths against their references.

* integer column sets (bitsift/index/bits.py) against roaring bitmaps, both ways;
* derived fields (bitsift/index/derived.py): a compiled expression against ``value_of``, and an
  index whose arithmetic comparisons became field tests against the reference evaluator;
* the lazily resolved result (bitsift/index/results.py): a snapshot, however late it is read.
"""

from __future__ import annotations

import math
import pickle
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap
from strategies import _numeric, messages
from test_subscription_index import reference_matches

from bitsift import Subscription, SubscriptionIndex, parse
from bitsift.errors import SelectorSyntaxError
from bitsift.index.bits import from_positions, position_array, positions, to_bitmap, to_int
from bitsift.index.derived import PREFIX, compile_expression
from bitsift.index.results import Matches
from bitsift.selectors.evaluate import value_of

# -- integers as column sets -------------------------------------------------------------------

column_lists = st.lists(
    st.one_of(st.integers(0, 200), st.integers(0, 300_000), st.integers(65_000, 66_000)),
    max_size=300,
)


@given(
    column_lists,
    st.booleans(),
    st.one_of(st.none(), st.tuples(st.integers(0, 200_000), st.integers(0, 70_000))),
)
def test_roaring_to_int_and_back(columns: list[int], optimise: bool, run: Any) -> None:
    bitmap = BitMap(columns)
    if run is not None:  # a long run of columns: bitset or run containers
        bitmap.add_range(run[0], run[0] + run[1])
    if optimise:
        bitmap.run_optimize()
    number = to_int(bitmap)
    assert number == sum(1 << column for column in bitmap)
    assert positions(number) == list(bitmap) == position_array(number).tolist()
    assert to_bitmap(number) == bitmap
    assert from_positions(list(bitmap)) == number


def test_positions_of_dense_and_sparse_integers() -> None:
    assert positions(0) == [] and positions(1) == [0] and positions(1 << 64) == [64]
    everything = (1 << 20_000) - 1  # past the word count where numpy unpacks the bits
    assert positions(everything) == list(range(20_000))
    assert positions(everything ^ (1 << 777)) == [n for n in range(20_000) if n != 777]
    assert position_array(everything).tolist() == list(range(20_000))
    assert position_array((1 << 63) | (1 << 130) | 7).tolist() == [0, 1, 2, 63, 130]


# -- derived fields ----------------------------------------------------------------------------


def same_value(left: Any, right: Any) -> bool:
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    return type(left) is type(right) and left == right


@given(_numeric(3), messages())
def test_a_compiled_expression_is_value_of(expression: Any, message: dict[str, Any]) -> None:
    assert same_value(compile_expression(expression)(message), value_of(expression, message))


ARITHMETIC = st.sampled_from(["price * a", "a + b", "-price", "price / a", "(a - 1) * 2", "a"])
LITERALS = st.sampled_from(["0", "1", "2.5", "-1", "100000", "1e308", "0.0", "-0.0"])


@st.composite
def arithmetic_selectors(draw: st.DrawFn) -> str:
    expression, literal = draw(ARITHMETIC), draw(LITERALS)
    shape = draw(st.integers(0, 5))
    if shape == 0:
        text = f"{expression} {draw(st.sampled_from(['=', '<>', '<', '<=', '>', '>=']))} {literal}"
    elif shape == 1:
        text = f"{literal} {draw(st.sampled_from(['<', '>=']))} {expression}"
    elif shape == 2:
        text = f"{expression} BETWEEN {literal} AND {draw(LITERALS)}"
    elif shape == 3:
        text = f"{expression} NOT BETWEEN {literal} AND {draw(LITERALS)}"
    elif shape == 4:
        text = f"NOT ({expression} > {literal})"
    else:
        text = f"{expression} > {literal} AND b IS NOT NULL"
    return text


@settings(max_examples=150)
@given(st.lists(arithmetic_selectors(), min_size=1, max_size=6), st.lists(messages(), max_size=5))
def test_derived_fields_match_like_the_evaluator(
    texts: list[str], batch: list[dict[str, Any]]
) -> None:
    subscriptions = [Subscription(id=f"s{n}", selector=text) for n, text in enumerate(texts)]
    index = SubscriptionIndex(subscriptions)
    for message in [*batch, *batch]:  # the second pass answers from the caches
        want = {sub.id for sub in subscriptions if sub.parsed_selector.matches(message)}
        assert set(index.match(message)) == want, message


def test_an_arithmetic_comparison_is_indexed_not_evaluated() -> None:
    index = SubscriptionIndex(
        [
            Subscription(id="big", selector="price * qty > 100000 AND side = 'buy'"),
            Subscription(id="not-big", selector="NOT (price * qty > 100000)"),
            Subscription(id="pair", selector="price < qty"),  # two fields: stays a residual
        ]
    )
    derived = [field for field in index._fields if field.startswith(PREFIX)]
    assert derived == [PREFIX + "(price * qty)"]
    assert len(index._with_residuals) == 1  # only "pair"
    assert set(index.match({"price": 500, "qty": 300, "side": "buy"})) == {"big"}
    assert set(index.match({"price": 2, "qty": 3})) == {"not-big", "pair"}
    assert set(index.match({"qty": 3})) == set()  # price missing: UNKNOWN either way


def test_a_property_name_cannot_hold_nul() -> None:
    with pytest.raises(SelectorSyntaxError, match="NUL"):
        parse('"\x00(price * qty)" > 5')


# -- lazily resolved results -------------------------------------------------------------------


def test_a_result_read_after_changes_reports_the_match_time() -> None:
    index = SubscriptionIndex([Subscription(id=f"s{n}", selector=f"a > {n}") for n in range(5)])
    early = index.match({"a": 3})
    also = index.match({"a": 10})
    index.remove("s0")
    index.add(Subscription(id="s0", selector="a < 0"))  # the same column number, reused
    index.add(Subscription(id="new", selector="a > 0"))
    index.remove_client("nobody")
    assert early == {"s0", "s1", "s2"} and also == frozenset({"s0", "s1", "s2", "s3", "s4"})
    assert index.match({"a": 3}) == {"s1", "s2", "new"}


def test_thousands_of_unread_results_survive_pruning_and_a_change() -> None:
    index = SubscriptionIndex([Subscription(id=f"s{n}", selector=f"a > {n}") for n in range(4)])
    kept = [index.match({"a": n % 5}) for n in range(3000)]  # past the pruning thresholds
    for _ in range(3000):
        index.match({"a": 4})  # freed at once: pruned, never resolved
    index.remove("s0")
    assert len(index._pending) == 0
    for n, found in enumerate(kept):
        assert found == {f"s{m}" for m in range(n % 5) if m < 4}


def test_a_result_is_a_set() -> None:
    index = SubscriptionIndex(
        [
            Subscription(id="x", selector="a = 1", client="c"),
            Subscription(id="y", selector="a = 1 OR b = 1"),  # two columns, one id
            Subscription(id="z", selector="a = 1"),  # shares x's column
        ]
    )
    found = index.match({"a": 1, "b": 1})
    assert isinstance(found, Matches)
    assert len(found) == 3 and "y" in found and "w" not in found and bool(found)
    assert found == {"x", "y", "z"} and {"x", "y", "z"} == found and found != {"x"}
    assert hash(found) == hash(frozenset({"x", "y", "z"}))
    assert found | {"w"} == {"w", "x", "y", "z"} and found - {"x"} == {"y", "z"}
    assert sorted(found) == ["x", "y", "z"] and repr(found) == "Matches({'x', 'y', 'z'})"
    assert pickle.loads(pickle.dumps(found)) == frozenset({"x", "y", "z"})
    nothing = index.match({"a": 2})
    assert not nothing and len(nothing) == 0 and nothing == set()
    assert index.match_clients({"a": 1}) == {"c"}


def test_results_resolve_safely_while_another_thread_changes_the_index() -> None:
    index = SubscriptionIndex([Subscription(id=f"s{n}", selector=f"a >= {n}") for n in range(50)])
    results = [(n, index.match({"a": n})) for n in range(50)]
    stop = threading.Event()

    def churn() -> None:
        number = 0
        while not stop.is_set():
            index.remove(f"s{number % 50}")
            index.add(Subscription(id=f"s{number % 50}", selector="a < 0"))
            number += 1

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for n, found in results:
            assert found == {f"s{m}" for m in range(n + 1)}
    finally:
        stop.set()
        worker.join(timeout=30)


@settings(max_examples=60)
@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 5), st.integers(-5, 15), st.integers(0, 10)),
            min_size=1,
            max_size=5,
        ),
        min_size=1,
        max_size=12,
    ),
    st.lists(
        st.dictionaries(
            st.sampled_from([f"a{n}" for n in range(6)]),
            st.one_of(st.integers(-8, 30), st.floats(-8, 30), st.none(), st.text("ab", max_size=2)),
            max_size=6,
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_messages_that_miss_the_caches_are_swept_exactly(
    shapes: list[list[tuple[int, int, int]]], batch: list[dict[str, Any]]
) -> None:
    """The W2 shape: many range fields, values the caches have not seen. Most fields miss, so the
    index sweeps those messages (``_sweep``, sweep.py); either way, exactly."""
    subscriptions = [
        Subscription(
            id=f"s{n}",
            selector=" AND ".join(
                f"a{field} BETWEEN {low} AND {low + width}" for field, low, width in terms
            ),
        )
        for n, terms in enumerate(shapes)
    ]
    index = SubscriptionIndex(subscriptions)
    for message in batch:
        for field in index._fields.values():
            field.forget()  # every value new to the caches
        found = index.match(message)
        want = {sub.id for sub in subscriptions if sub.parsed_selector.matches(message)}
        assert set(found) == want, message


def test_a_fresh_w2_event_is_swept() -> None:
    subscriptions = [
        Subscription(
            id=f"s{n}", selector=" AND ".join(f"a{f} BETWEEN {n} AND {n + 50}" for f in range(6))
        )
        for n in range(40)
    ]
    index = SubscriptionIndex(subscriptions)
    event = {f"a{f}": 45 for f in range(6)}
    found = index.match(event)
    # Every field missed: swept, with each field's masks built, no answer cached.
    assert all(field._sketches for field in index._fields.values())
    assert not any(field.cached for field in index._fields.values())
    assert found == {f"s{n}" for n in range(40) if n <= 45 <= n + 50}
    again = index.match({f"a{f}": 45 for f in range(6)})
    assert again == found


@given(st.lists(st.integers(0, 61_439), min_size=1, max_size=200))
def test_small_integers_become_roaring_through_the_deserializer(columns: list[int]) -> None:
    from bitsift.index.bits import small_to_bitmap

    bitmap = small_to_bitmap(from_positions(columns))
    assert bitmap is not None and list(bitmap) == sorted(set(columns))


def test_integers_too_wide_or_empty_are_left_to_numpy() -> None:
    from bitsift.index.bits import small_to_bitmap

    assert small_to_bitmap(0) is None and small_to_bitmap(1 << 61_440) is None


@pytest.mark.parametrize("budget", [-1, "8MiB", 2.5, True])
def test_a_bad_cache_budget_is_refused_clearly(budget: Any) -> None:
    with pytest.raises(ValueError, match="cache_bytes must be a non-negative integer"):
        SubscriptionIndex(cache_bytes=budget)


def test_an_explicit_cache_budget_bounds_every_cache_and_survives_pickling() -> None:
    subscriptions = [Subscription(id=f"s{n}", selector=f"a = {n}", topic="t.*") for n in range(50)]
    index = SubscriptionIndex(subscriptions, cache_bytes=0)  # nothing cached: still exact
    for n in range(60):
        assert index.match({"a": n}, topic="t.x") == ({f"s{n}"} if n < 50 else set())
    assert all(field.cached == 0 for field in index._fields.values())
    assert not index._topic_starts
    assert pickle.loads(pickle.dumps(index))._cache_bytes == 0


def test_the_replayed_intersections_are_the_match_loops() -> None:
    """``_intersected`` (the W3 benchmark's account of where the time goes) must replay what the
    match loop intersects: its intersection is the match, residual columns aside, and it
    agrees with the reference evaluator. A wrong replay would time different work."""
    from functools import reduce
    from operator import and_

    from bitsift.samples import w3_messages, w3_subscriptions

    subscriptions = w3_subscriptions(400, seed=11)
    subscriptions.append(Subscription(id="cross", selector="price > qty AND side = 'buy'"))
    index = SubscriptionIndex(subscriptions)
    residual = to_int(index._with_residuals)
    assert residual  # the cross-field comparison is checked by the evaluator
    for topic, properties in w3_messages(60, seed=12):
        replayed = reduce(and_, index._intersected(properties, topic))
        matched = index._matching_columns(properties, topic)
        assert matched & ~residual == replayed & ~residual
        assert matched & replayed == matched
        expected = {s.id for s in subscriptions if reference_matches(s, properties, topic)}
        assert set(index.match(properties, topic)) == expected


def test_a_bulk_load_fits_the_universe_and_the_index_grows_past_it() -> None:
    """The universe a bulk load leaves ends at its highest column (answers carry no slack); a
    later add beyond it grows the universe again, and every match stays the evaluator's."""
    from bitsift.samples import w3_messages, w3_subscriptions

    first = w3_subscriptions(300, seed=3)
    index = SubscriptionIndex(first)
    fitted = len(index._universe)
    assert fitted == index._live.max() + 1
    messages = list(w3_messages(40, seed=5))
    for topic, properties in messages:  # fill the caches at the fitted width
        index.match(properties, topic)
    later = w3_subscriptions(5000, seed=4)[300:]  # ids w3-000300..., new columns
    for subscription in later:
        index.add(subscription)
    assert len(index._universe) > fitted
    everything = first + later
    for topic, properties in messages:
        expected = {s.id for s in everything if reference_matches(s, properties, topic)}
        assert set(index.match(properties, topic)) == expected


@given(
    st.lists(
        st.one_of(
            st.integers(-(2**70), 2**70),
            st.floats(allow_nan=False),
            st.sampled_from([0.0, -0.0, math.inf, -math.inf, 256, 257, -5, -6]),
        ),
        max_size=40,
    )
)
def test_fresh_boundaries_equal_the_originals(bounds: list[Any]) -> None:
    """The copies the sorted boundaries are made of (fields._fresh) are equal numbers of the
    same type, so a bisection over them finds the same buckets."""
    from bitsift.index.fields import _fresh

    copies = [_fresh(bound) for bound in bounds]
    assert copies == bounds
    assert [type(copy) for copy in copies] == [type(bound) for bound in bounds]
    assert [math.copysign(1, c) for c in copies if c == 0] == [
        math.copysign(1, b) for b in bounds if b == 0
    ]
