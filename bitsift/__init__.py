"""bitsift: content-based message routing with inverted bitmaps.

Parse JMS-style selectors and AMQP/MQTT topic patterns, index many thousands of subscriptions, and
find the ones a message matches at a cost that grows with the message rather than with the number
of subscriptions. See README.md and docs/ for the tour.
"""

from bitsift.errors import (
    BitsiftError,
    IndexFileError,
    MessageError,
    SelectorSyntaxError,
    SubscriptionFileError,
    TopicNameError,
    TopicPatternError,
    UnknownSubscriptionError,
)
from bitsift.filters import ReceiverFilter
from bitsift.index.results import Matches
from bitsift.index.subscriptions import SubscriptionIndex
from bitsift.models import Subscription
from bitsift.selectors.limits import Limits, get_limits, set_limits
from bitsift.selectors.parser import parse
from bitsift.selectors.selector import Selector
from bitsift.selectors.topics import TopicPattern
from bitsift.subscription_files import load_subscriptions, save_subscriptions

__all__ = [
    "BitsiftError",
    "IndexFileError",
    "Limits",
    "Matches",
    "MessageError",
    "ReceiverFilter",
    "Selector",
    "SelectorSyntaxError",
    "Subscription",
    "SubscriptionFileError",
    "SubscriptionIndex",
    "TopicNameError",
    "TopicPattern",
    "TopicPatternError",
    "UnknownSubscriptionError",
    "get_limits",
    "load_subscriptions",
    "parse",
    "save_subscriptions",
    "set_limits",
]
