"""The rate gate's table (docs/design/rates.md): its port (`port.py`), the compare-and-set loop that
applies the engine's pure `take` (`table.py`), its adapters (`sqlite.py`, `mongo.py` with its
indexes), the relay that takes a slot for an outbox entry (`relay.py`), and what the store finds of
them (`side.py`)."""
