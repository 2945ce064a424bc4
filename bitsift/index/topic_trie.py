"""A word trie for AMQP patterns with a ``#`` before a literal word (``#.error``, ``a.#.b``).

The position tables (:mod:`~bitsift.index.topic_tables`) ask "which word is at position i?", and
a ``#`` followed by a literal word has no fixed position for that word: in ``#.error`` it is the
first word of ``error`` and the ninth of ``a.b.c.d.e.f.g.h.error``. Such patterns are legal in
AMQP (not in MQTT) and rare in practice, so they get an exact structure of their own instead of
approximations in the tables.

Patterns share prefixes in a trie whose edges are literal words, ``*`` or ``#``. Matching walks
the topic's words once, carrying the *set* of trie nodes reached so far (an NFA simulation). A set
holds each node once, so a node is visited at most once per word however many ``#``s lead to it:
that is the memo that keeps patterns like ``#.a.#.a.#.a`` polynomial, where a recursive walk such
as RabbitMQ's revisits the same (node, word) pair exponentially often. The walk is a loop, not
recursion, so long topics cannot exhaust the stack.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyroaring import BitMap

from bitsift.selectors.topics import Token, Wildcard

__all__ = ["PatternTrie"]


class _Node:
    __slots__ = ("words", "one", "many", "ends", "loops")

    def __init__(self, loops: bool = False) -> None:
        self.words: dict[str, _Node] = {}
        self.one: _Node | None = None
        self.many: _Node | None = None
        self.ends = BitMap()
        """Columns whose pattern ends at this node."""
        self.loops = loops
        """True for the node after a '#' edge: the '#' may go on swallowing words."""

    def child(self, token: Token) -> _Node | None:
        if token is Wildcard.ONE:
            return self.one
        if token is Wildcard.MANY:
            return self.many
        assert isinstance(token, str)
        return self.words.get(token)

    def is_empty(self) -> bool:
        return not (self.words or self.one or self.many or self.ends)


class PatternTrie:
    """Patterns of words, ``*`` and ``#`` anywhere, matched exactly."""

    __slots__ = ("_root", "_count")

    def __init__(self) -> None:
        self._root = _Node()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, column: int, tokens: Sequence[Token]) -> None:
        node = self._root
        for token in tokens:
            child = node.child(token)
            if child is None:
                child = _Node(loops=token is Wildcard.MANY)
                if token is Wildcard.ONE:
                    node.one = child
                elif token is Wildcard.MANY:
                    node.many = child
                else:
                    assert isinstance(token, str)
                    node.words[token] = child
            node = child
        node.ends.add(column)
        self._count += 1

    def remove(self, column: int, tokens: Sequence[Token]) -> None:
        """Remove ``column`` from the end of ``tokens`` and prune the nodes left empty."""
        path = [self._root]
        for token in tokens:
            child = path[-1].child(token)
            assert child is not None, "removing a pattern that was never added"
            path.append(child)
        path[-1].ends.discard(column)
        self._count -= 1
        for depth in range(len(tokens), 0, -1):
            if not path[depth].is_empty():
                break
            parent, token = path[depth - 1], tokens[depth - 1]
            if token is Wildcard.ONE:
                parent.one = None
            elif token is Wildcard.MANY:
                parent.many = None
            else:
                assert isinstance(token, str)
                del parent.words[token]

    def match(self, words: Sequence[str]) -> BitMap | None:
        """The columns whose patterns match these words: a new bitmap, or ``None``."""
        reached = _past_hashes([self._root])
        for word in words:
            following: list[_Node] = []
            for node in reached:
                if node.loops:
                    following.append(node)
                child = node.words.get(word)
                if child is not None:
                    following.append(child)
                if node.one is not None:
                    following.append(node.one)
            if not following:
                return None
            reached = _past_hashes(following)
        result = BitMap()
        for node in reached:
            result |= node.ends
        return result if result else None


def _past_hashes(nodes: list[_Node]) -> list[_Node]:
    """``nodes`` without repeats, plus every node reached from them by letting '#' match nothing."""
    seen: dict[int, _Node] = {}
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            if node.many is not None:
                pending.append(node.many)
    return list(seen.values())
