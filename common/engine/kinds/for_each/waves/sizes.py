"""Where each wave of a step ends, and which wave an item is in (docs/design/waves.md): pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from common.engine.kinds.for_each.waves.fields import WaveSpecDoc, WaveState

REST = "rest"


def size_of(size: int | str, item_count: int, left: int) -> int:
    """The items of one wave: N, "P%" of the step's items rounded up (at least 1), or every one left."""
    if size == REST:
        return left
    if isinstance(size, str):
        return max(1, math.ceil(float(size.rstrip("%")) * item_count / 100))
    return size


def wave_ends(waves: Sequence[WaveSpecDoc], item_count: int, fixed: Sequence[int] = (),
              base: int | None = None) -> list[int]:
    """The item index where each wave ends (exclusive), the last one at `item_count`. Sizes that
    do not reach the last item repeat the last size; waves past it are left out (but one, empty,
    when there is no item). `fixed`: the ends fixed already, kept (a source's step, whose last
    page just came); `base`: what a percentage is of (the item count unless given)."""
    ends = list(fixed)
    start = ends[-1] if ends else 0
    while start < item_count:  # past the list, the last size again, as Ansible's serial does
        size = size_of(spec_of(waves, len(ends)).Size, item_count if base is None else base, item_count - start)
        start = min(item_count, start + size)
        ends.append(start)
    return ends or [0]


# A `rest` wave's end while a source's count is not known: every item that comes is in it.
OPEN_END = 2**62


def source_ends(waves: Sequence[WaveSpecDoc], wave: WaveState, fetched: int, total: int | None,
                done: bool) -> list[int]:
    """The ends of a source step's waves (docs/design/waves.md, "Waves over a source"): those
    fixed stay; the open wave's is fixed when its size can be known (a percentage needs the total
    the source reported, or its last page); once the last page came, the open wave's end is cut
    at the final count and every later wave's is fixed from it."""
    ends = list(wave.Ends)
    base = total if total is not None else fetched if done else None  # what a percentage is of
    while len(ends) <= wave.Index:
        start = ends[-1] if ends else 0
        size = spec_of(waves, len(ends)).Size
        if size == REST:
            ends.append(OPEN_END)
        elif isinstance(size, int):
            ends.append(start + size)
        elif base is not None:
            ends.append(start + size_of(size, base, 0))
        else:
            return ends  # a percentage of a count not known yet: sized by the page that brings it
    if not done:
        return ends
    return wave_ends(waves, fetched, [min(end, fetched) for end in ends], base)


def growing(step: Any) -> bool:
    """Whether the step's waves are not all fixed yet: its source has pages left."""
    return step.Paging is not None and not step.Paging.Done


def resize(step: Any) -> bool:
    """In place, after a source's page (or the opening of a wave of a source step): fix what the
    count now known allows. True when the open wave was unsized and now has its end."""
    wave, paging = step.Wave, step.Paging
    if wave is None or paging is None or not step.Waves:
        return False
    unsized = wave.Index >= len(wave.Ends)
    wave.Ends = source_ends(step.Waves, wave, paging.Fetched, paging.Total, paging.Done)
    return unsized and wave.Index < len(wave.Ends)


def open_end(wave: WaveState) -> int:
    """The item index the open wave ends at; an unsized wave (waiting for its source's count)
    lets no item of its own start: it ends where the wave before it ended."""
    if wave.Index < len(wave.Ends):
        return wave.Ends[wave.Index]
    return wave.Ends[-1] if wave.Ends else 0


def wave_count(step: Any) -> int | None:
    """How many waves the step has; while its source has pages left, as many as the total it
    reported gives (None: it reported none)."""
    wave = step.Wave
    if not growing(step):
        return len(wave.Ends)
    total = step.Paging.Total
    return None if total is None or not step.Waves else max(len(wave_ends(step.Waves, total)), wave.Index + 1)


def spec_of(waves: Sequence[WaveSpecDoc], index: int) -> WaveSpecDoc:
    """The spec of wave `index` (a repeated last size uses the last wave's spec)."""
    return waves[min(index, len(waves) - 1)]


def wave_of(ends: Sequence[int], item: int) -> int:
    """The wave item `item` is in."""
    return next((index for index, end in enumerate(ends) if item < end), len(ends) - 1)


def bounds(ends: Sequence[int], index: int) -> tuple[int, int]:
    """The items [start, end) of wave `index`."""
    return (ends[index - 1] if index > 0 else 0), ends[index]


def fix_waves(step: Any) -> None:
    """In place, as the step opens over records: where each wave ends, from its item count (a
    source's step: the first wave's, when its size can be known yet)."""
    if not step.Waves:
        return
    if step.Paging is not None:
        step.Wave = WaveState(Ends=[])
        resize(step)
        return
    step.Wave = WaveState(Ends=wave_ends(step.Waves, step.ItemCount or 0))


def may_start(step: Any, item: int) -> bool:
    """Whether item `item` is in a wave that opened (every item, for a step without waves)."""
    wave = step.Wave
    return wave is None or item < open_end(wave)


def is_last(step: Any) -> bool:
    """Whether the open wave is the step's last: its settling ends it, no gate follows."""
    wave = step.Wave
    return not growing(step) and wave.Index >= len(wave.Ends) - 1
