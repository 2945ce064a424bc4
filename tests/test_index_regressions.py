"""Index bugs found by the property tests of other fast paths, pinned down as examples."""

from __future__ import annotations

from bitsift import Subscription, SubscriptionIndex, parse
from bitsift.selectors.ast import FloatLiteral


def test_signed_zero_literals_are_different_trees() -> None:
    # x / 0.0 is +Infinity and x / -0.0 is -Infinity: merging them would share one column.
    assert FloatLiteral(0.0) != FloatLiteral(-0.0)
    assert hash(FloatLiteral(0.0)) != hash(FloatLiteral(-0.0))
    assert parse("price / 0.0 > 1") != parse("price / -0.0 > 1")


def test_signed_zero_selectors_keep_their_own_columns() -> None:
    index = SubscriptionIndex(
        [
            Subscription(id="plus", selector="price / 0.0 > 1"),
            Subscription(id="minus", selector="price / -0.0 > 1"),
            Subscription(id="either", selector="price / 0.0 > 1 OR price / -0.0 > 1"),
        ]
    )
    assert index.match({"price": -5.0}) == {"minus", "either"}
    assert index.match({"price": 5.0}) == {"plus", "either"}
