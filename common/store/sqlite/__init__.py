"""The SQLite adapters: the embedded store, one file shared by every baton process on a machine.

`tasks.py` is the task store (its alarms, history, outbox and waiting reads beside it); one
adapter per side store and for item records; `connections.py` is the one connection manager
they all use, `codec.py` how documents are encoded."""
