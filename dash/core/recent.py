"""A bounded ordered set: the newest distinct items, for things said "once" over a days-long run.

Notices, toasts already shown and alert-delivery errors are each reported once, so something has
to remember what was said; over days of new texts (an error body that names a request, a path
that changes) a plain set would grow without end. `RecentSet` keeps the last `maxlen` distinct
items in the order they first came: the oldest is forgotten first, and said again should it ever
recur. An `OrderedDict` gives the O(1) membership test and the eviction order (the standard
library has no ordered set; a dict's keys are one).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from itertools import islice
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class RecentSet(Generic[T]):
    """At most `maxlen` distinct items, oldest first."""

    def __init__(self, maxlen: int) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be at least 1")
        self.maxlen = maxlen
        self._items: OrderedDict[T, None] = OrderedDict()

    def add(self, item: T) -> bool:
        """Remember `item`; True when it was not already remembered (it is news)."""
        if item in self._items:
            return False
        self._items[item] = None
        if len(self._items) > self.maxlen:
            self._items.popitem(last=False)
        return True

    def newest(self, n: int) -> tuple[T, ...]:
        """The last `n` items added, oldest first."""
        if n <= 0:
            return ()
        return tuple(reversed(tuple(islice(reversed(self._items), n))))

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(tuple(self._items))
