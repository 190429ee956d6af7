"""The store: where tasks and everything beside them are kept.

- `tasks/`: the task store's port (`TaskStore`) and what every caller of it uses: listing
  filters, paging, the read-change-write loop, turns on a task, unreadable documents.
- `items/`: the item records of `for_each` steps: their port, paging, and opening them.
- `side/`: the ports of the stores kept beside the tasks: locks, module drains, the event log,
  module announcements, schedules.
- `gates/`: the tables a gate keeps of its own (the rate's start slots), a folder each with its
  port, adapters, indexes and relay, found by folder (docs/design/gates.md).
- `sqlite/`: every SQLite adapter (the embedded store: one file per machine).
- `mongo/`: every MongoDB adapter (production), and how baton talks to MongoDB: client, errors,
  indexes, write marks and settling. Nothing outside this folder imports pymongo (a gate's
  `mongo.py` builds on it).
- `factory.py`, `beside.py`, `side_stores.py`: from a store URL to its adapters.
- `retry.py`: the compare-and-set loop every versioned document (item, lock, schedule) uses.

Design: docs/design/stores.md.
"""
