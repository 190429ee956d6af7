"""The rate gate's table of start slots (`task_rates`, docs/design/rates.md) and the relay that
takes a slot for an outbox entry, as the store and the relay loop find them."""

from common.engine.outbox import Flusher
from common.store.gates import GateTable

SIDE = GateTable(
    gate="rate",
    sqlite="common.store.gates.rate.sqlite:SqliteRateStore",
    mongo="common.store.gates.rate.mongo:MongoRateStore",
    mongo_indexes="common.store.gates.rate.mongo:INDEXES",
    relay="common.store.gates.rate.relay:RateRelay",
    flusher=Flusher.RATES,
)
