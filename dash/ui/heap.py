"""The dashboard's long-lived heap, kept out of the garbage collector's full passes.

Once started, the process holds some hundred thousand objects that live as long as it does
(Textual's DOM and styles, Rich, the imported modules, the run state). Python's full collections
walk all of them: on the idle dashboard one took 60-200 ms every half minute or so, a tenth of
what kdash cost while nothing else changed. `gc.freeze()` moves what exists once start-up is over
into a generation the collector no longer walks. Objects created later are collected as before,
and reference counting still frees a frozen object once it is released; only a reference cycle
among frozen objects would stay, so the heap is collected once just before.
"""

from __future__ import annotations

import gc

SETTLE_S = 5.0
"""After this long the dashboard has read the logs' ends (one bounded read each) and drawn its
first frames. The collection just before the freeze holds the screen once, for as long as one
full collection takes."""


def freeze_heap() -> int:
    """Collect, then exclude every object alive now from later collections; how many."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
