"""The lock gate's table (docs/design/locks.md): its port (`port.py`), the compare-and-set loop
that applies the engine's pure decisions (`table.py`), its adapters (`sqlite.py`, `mongo.py` with
its indexes), the relay that joins and leaves a key's line for an outbox entry and reclaims what
crashes leave (`relay.py`), and what the store finds of them (`side.py`)."""
