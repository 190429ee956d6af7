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


def wave_ends(waves: Sequence[WaveSpecDoc], item_count: int) -> list[int]:
    """The item index where each wave ends (exclusive), the last one at `item_count`. Sizes that
    do not reach the last item repeat the last size; waves past it are left out (but one, empty,
    when there is no item)."""
    ends: list[int] = []
    start = 0
    for index in range(len(waves)):
        if start >= item_count:
            break
        start = min(item_count, start + size_of(waves[index].Size, item_count, item_count - start))
        ends.append(start)
    while start < item_count:  # the last size again, as Ansible's serial does
        start = min(item_count, start + size_of(waves[-1].Size, item_count, item_count - start))
        ends.append(start)
    return ends or [0]


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
    """In place, as the step opens over records: where each wave ends, from its item count."""
    if step.Waves:
        step.Wave = WaveState(Ends=wave_ends(step.Waves, step.ItemCount or 0))


def may_start(step: Any, item: int) -> bool:
    """Whether item `item` is in a wave that opened (every item, for a step without waves)."""
    wave = step.Wave
    return wave is None or item < wave.Ends[wave.Index]
