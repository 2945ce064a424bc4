"""The indexes behind matching: topic tables, the subscription index and the batch matcher.

``SubscriptionIndex`` answers one message at a time; ``BatchMatcher`` answers a whole batch
(Arrow tables or lists of dicts) with array operations and gives the same results. The batch
matcher needs numpy, so it is imported on first use and ``import bitsift`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bitsift.index.results import Matches
from bitsift.index.subscriptions import SubscriptionIndex
from bitsift.index.topics import TopicIndex

if TYPE_CHECKING:
    from bitsift.index.batch import BatchMatcher, MatchedPairs

__all__ = ["BatchMatcher", "Matches", "MatchedPairs", "SubscriptionIndex", "TopicIndex"]


def __getattr__(name: str) -> Any:
    if name in ("BatchMatcher", "MatchedPairs"):
        from bitsift.index import batch

        return getattr(batch, name)
    raise AttributeError(f"module 'bitsift.index' has no attribute {name!r}")
