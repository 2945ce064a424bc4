"""bitsift: content-based message routing with inverted bitmaps.

Parse JMS-style selectors and AMQP/MQTT topic patterns, index many thousands of subscriptions, and
find the ones a message matches at a cost that grows with the message rather than with the number
of subscriptions. See README.md and docs/ for the tour.
"""

from bitsift.errors import (
    BitsiftError,
    IndexFileError,
    SelectorSyntaxError,
    SubscriptionFileError,
    TopicNameError,
    TopicPatternError,
    UnknownSubscriptionError,
)
from bitsift.selectors.limits import Limits
from bitsift.selectors.parser import parse
from bitsift.selectors.selector import Selector
from bitsift.selectors.topics import TopicPattern

__all__ = [
    "BitsiftError",
    "IndexFileError",
    "Limits",
    "Selector",
    "SelectorSyntaxError",
    "SubscriptionFileError",
    "TopicNameError",
    "TopicPattern",
    "TopicPatternError",
    "UnknownSubscriptionError",
    "parse",
]
