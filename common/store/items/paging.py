"""What both item store adapters decide the same way before querying (pure, no I/O): which
items a page of a step may hold.

A chain (docs/design/item-records.md, "The life of a step over records") is the items `i` with `i %
modulus == residue`. Without a states filter its next items are known in advance, so a page of up to
CHAIN_POINTS is a set of point look-ups on the unique index (the cost of the answer, whatever the
modulus); otherwise the adapters walk the index from `after` and keep the chain's items (reading the
other chains' entries between).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from common.engine.states import StepState

CHAIN_POINTS = 500  # point look-ups in one query: well under SQLite's bound on parameters


@dataclass(frozen=True)
class ItemPage:
    first: int  # the lowest item index the page may hold
    limit: int
    states: list[StepState] | None  # sorted, without repeats; None: any state
    modulus: int | None
    residue: int | None

    @property
    def chain_items(self) -> list[int] | None:
        """The items a chain page without a states filter can hold, ascending; None otherwise."""
        if self.modulus is None or self.states is not None or self.limit > CHAIN_POINTS:
            return None
        assert self.residue is not None
        start = self.first + (self.residue - self.first) % self.modulus
        return [start + k * self.modulus for k in range(self.limit)]


def item_page(after: int | None, limit: int, states: Collection[StepState] | None,
              modulus: int | None, residue: int | None) -> ItemPage | None:
    """The page asked for; None when it is empty whatever is stored (limit <= 0, no states).
    ValueError for a chain that is not one (modulus < 1, residue out of range, one without the other)."""
    if (modulus is None) != (residue is None):
        raise ValueError("modulus and residue go together")
    if modulus is not None and residue is not None and not (modulus >= 1 and 0 <= residue < modulus):
        raise ValueError(f"a chain needs modulus >= 1 and 0 <= residue < modulus, not {modulus}, {residue}")
    wanted = None if states is None else sorted({StepState(s) for s in states})
    if limit <= 0 or wanted == []:
        return None
    return ItemPage(0 if after is None else max(after + 1, 0), limit, wanted, modulus, residue)
