"""bitsift.index"""

from bitsift.index.topics import TopicIndex

__all__ = ["TopicIndex"]
