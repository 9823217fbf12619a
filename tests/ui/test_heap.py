"""The long-lived heap kept out of full collections: what comes later is still collected."""

from __future__ import annotations

import gc
import weakref

from dash.ui.heap import freeze_heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_objects_alive_at_the_freeze_are_frozen_and_later_cycles_still_collected() -> None:
    before = _Node()
    try:
        assert freeze_heap() > 0
        assert gc.get_freeze_count() > 0
        assert not any(o is before for o in gc.get_objects())  # no longer walked
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a cycle: only the collector frees it
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
