"""Per-field answers and numeric buckets (bitsift/index/fields.py) against the tests themselves.

A cached answer is reused for every number in the same elementary interval, so the property that
matters is: for any sequence of values, the (possibly cached) answer equals the columns whose test
``FieldTest.holds`` accepts, plus the columns the field does not constrain. Values are drawn on and
around the boundaries (ints and floats that are equal, ``-0.0``, infinities, NaN, Decimals) so that
an off-by-one in the bucket arithmetic or an exclusive end read as inclusive cannot hide.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pyroaring import FrozenBitMap

from bitsift.index.criteria import MISSING, Equals, FieldTest, InRange, Kind, OfType, classify
from bitsift.index.fields import FieldIndex

UNIVERSE = FrozenBitMap(range(64))
BOUNDS = [-1, 0, 1, 2.5, 3, 10, math.inf, -math.inf]


def numbers() -> st.SearchStrategy[Any]:
    near = st.sampled_from(BOUNDS).flatmap(
        lambda bound: st.sampled_from(
            [bound, float(bound), math.nextafter(float(bound), math.inf)]
            + ([int(bound), Decimal(int(bound))] if math.isfinite(bound) else [])
        )
    )
    return near | st.floats(-20, 20) | st.integers(-5, 15) | st.just(-0.0) | st.just(math.nan)


def criteria() -> st.SearchStrategy[Any]:
    bound = st.none() | st.sampled_from(BOUNDS)
    ranges = st.builds(InRange, bound, st.booleans(), bound, st.booleans())
    keys = st.frozensets(st.sampled_from(BOUNDS[:6]).map(lambda number: ("n", number)), max_size=3)
    return ranges | st.builds(Equals, keys) | st.just(OfType(Kind.NUMBER)) | st.just(MISSING)


tests = st.builds(FieldTest, st.just("x"), criteria(), st.booleans())


def expected(tested: dict[int, FieldTest], value: Any) -> set[int]:
    kind, normalised = classify(value)
    return {
        column
        for column in UNIVERSE
        if column not in tested or tested[column].holds(kind, normalised)
    }


@given(st.lists(st.tuples(st.integers(0, 1), tests), max_size=12), st.lists(numbers(), max_size=12))
def test_cached_answers_equal_the_tests(
    placed: list[tuple[int, FieldTest]], values: list[Any]
) -> None:
    field = FieldIndex("x", [], UNIVERSE)
    lanes: dict[int, dict[int, FieldTest]] = {0: {}, 1: {}}
    for column, (lane, test) in enumerate(placed):
        field.add(lane, column, test)
        lanes[lane][column] = test
    for value in [*values, None, *values]:  # the second pass answers from the cache
        want = expected(lanes[0], value) & expected(lanes[1], value)
        assert set(field.allowed(value)) == want, value


@given(st.lists(tests, min_size=1, max_size=8), st.data())
def test_removing_tests_updates_buckets_and_answers(
    added: list[FieldTest], data: st.DataObject
) -> None:
    field = FieldIndex("x", [], UNIVERSE)
    tested = dict(enumerate(added))
    for column, test in tested.items():
        field.add(0, column, test)
    for value in BOUNDS:
        field.allowed(value)  # fill the cache, then change the field
    for column in data.draw(st.lists(st.sampled_from(sorted(tested)), unique=True)):
        field.remove(0, column, tested.pop(column))
        value = data.draw(numbers())
        assert set(field.allowed(value)) == expected(tested, value)
    if not tested:
        assert not field and not field._bounds


def test_bucket_edges() -> None:
    field = FieldIndex("price", [], UNIVERSE)
    field.add(0, 0, FieldTest("price", InRange(1, False, 5, True)))  # (1, 5]
    field.add(0, 1, FieldTest("price", InRange(5.0, True, None, False)))  # [5, inf)
    field.add(0, 2, FieldTest("price", Equals(frozenset([("n", 3)]))))
    assert {1.0, 5, 3} == set(field._bounds)  # 5 and 5.0 are one boundary
    buckets = [field.bucket(v) for v in (0, 1, 1.5, 3, Decimal(4), 5, 5.0, 7, math.inf)]
    assert buckets == [0, 1, 2, 3, 4, 5, 5, 6, 6]
    assert 0 not in field.allowed(1) and 0 in field.allowed(1.0000001)
    assert {0, 1} <= set(field.allowed(5)) and 0 not in field.allowed(5.000001)
    assert {0, 2} <= set(field.allowed(3.0)) and 2 not in field.allowed(3.5)
    # NaN lies in no interval and equals nothing; a boolean is not a number.
    assert not {0, 1, 2} & set(field.allowed(math.nan))
    assert not {0, 1, 2} & set(field.allowed(True))
    assert 1 in field.allowed(math.inf) and 0 not in field.allowed(-math.inf)


def test_long_strings_are_answered_but_not_cached() -> None:
    field = FieldIndex("name", [], UNIVERSE)
    field.add(0, 0, FieldTest("name", Equals(frozenset([("s", "a" * 2000)]))))
    assert 0 in field.allowed("a" * 2000) and 0 not in field.allowed("b" * 2000)
    assert field.cached == 0
    field.allowed("short")
    assert field.cached == 1


def test_the_cache_stays_within_its_byte_budget() -> None:
    field = FieldIndex("qty", [], FrozenBitMap(range(1 << 16)), budget=40_000)
    for column in range(200):
        field.add(0, column, FieldTest("qty", InRange(column, True, None, False)))
    for value in range(200):
        assert len(field.allowed(value + 0.5)) == (1 << 16) - (199 - value)
    assert 0 < field.cached_bytes <= 40_000 and field.cached < 200
