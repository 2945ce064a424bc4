"""What :meth:`SubscriptionIndex.match` returns: the matching ids as a read-only set, resolved late.

Finding the matching *columns* costs what the message costs: one integer AND per field.
Turning them into subscription ids costs what the result costs: one string per match, and a
message that matches 600 of 100,000 subscriptions pays for 600 strings and their hashes (about
15 µs in CPython) before the caller has looked at any of them. A broker that only counts the
matches, asks whether one consumer is among them, or hands them to a dispatcher in bulk should not
pay that inside ``match``. So ``match`` returns a :class:`Matches` holding the columns, and the
ids are looked up the first time anything reads them (length, iteration, membership, equality,
hash, repr).

**It is still a snapshot.** The columns-to-ids tables change when subscriptions are added or
removed. Before any such change, the index resolves every :class:`Matches` it handed out that has
not been read yet (it keeps weak references to them, so a result nobody holds costs nothing), so a
result always reports the subscriptions that matched *when the message was matched*, however late
it is read, exactly as the frozenset the index used to return. Resolving takes the index's lock,
so results can be read from any thread.

A :class:`Matches` is a :class:`collections.abc.Set`: ``==`` with a set or frozenset of the same
ids is True, ``|``/``&``/``-`` give frozensets, ``sorted(result)`` and ``"id" in result`` work. It
pickles as a frozenset.

>>> from bitsift import Subscription, SubscriptionIndex
>>> index = SubscriptionIndex([Subscription(id="eu", selector="region = 'eu'")])
>>> found = index.match({"region": "eu"})
>>> index.remove("eu")          # resolves ``found`` first: it still says what matched then
>>> found == {"eu"}, len(found), "eu" in found
(True, 1, True)
>>> index.match({"region": "eu"})
Matches(set())
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Set
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bitsift.index.subscriptions import SubscriptionIndex

__all__ = ["Matches"]

_NONE: frozenset[str] = frozenset()


class Matches(Set[str]):
    """The ids of the subscriptions one message matched (a read-only set; see the module doc)."""

    __slots__ = ("_index", "_columns", "_ids", "__weakref__")

    def __init__(
        self,
        index: SubscriptionIndex | None,
        columns: int | None,
        ids: frozenset[str] | None = None,
    ) -> None:
        self._index = index
        self._columns = columns
        self._ids = ids

    def resolve(self) -> frozenset[str]:
        """The ids, looked up now if they were not yet (the index's tables are unchanged since the
        match: the index resolves every pending result before it changes)."""
        ids = self._ids
        if ids is None:
            assert self._index is not None and self._columns is not None
            ids = self._index._resolve(self)
        return ids

    def _settle(self, ids: frozenset[str]) -> None:
        """Called by the index, under its lock: keep the ids, drop the columns and the index."""
        self._ids = ids
        self._index = None
        self._columns = None

    # -- the Set protocol ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.resolve())

    def __iter__(self) -> Iterator[str]:
        return iter(self.resolve())

    def __contains__(self, item: object) -> bool:
        return item in self.resolve()

    def __bool__(self) -> bool:
        # Cheap when unresolved: a column survives only if it has subscribers.
        if self._ids is None and self._columns is not None:
            return bool(self._columns)
        return bool(self.resolve())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Matches):
            return self.resolve() == other.resolve()
        if isinstance(other, (set, frozenset)):
            return self.resolve() == other
        return Set.__eq__(self, other)

    def __hash__(self) -> int:
        return hash(self.resolve())

    @classmethod
    def _from_iterable(cls, iterable: Iterable[Any]) -> frozenset[Any]:
        return frozenset(iterable)

    def __repr__(self) -> str:
        ids = self.resolve()
        return "Matches({" + ", ".join(map(repr, sorted(ids))) + "})" if ids else "Matches(set())"

    def __reduce__(self) -> tuple[Any, ...]:
        return (frozenset, (tuple(self.resolve()),))


EMPTY = Matches(None, None, _NONE)
"""The result of a message that matched nothing (shared: it never changes)."""
