"""The MongoDB adapters: the production store. The only code that imports pymongo.

`tasks.py` is the task store; one adapter per side store and for item records. What they all
share: `client.py` (durable writes, bounded waits), `base.py` (opening, reads that decide a
write), `errors.py` (a driver error as baton's), `indexes.py` (every index), `marks.py` and
`settle.py` (a write whose answer was lost, settled by reading back), `first_contact.py`."""
