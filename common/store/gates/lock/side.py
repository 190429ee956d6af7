"""The lock gate's table of per-key lines (`task_locks`, docs/design/locks.md) and the relay that
joins and leaves them for an outbox entry and reclaims what crashes leave, as the store, the relay
loop and the sweeper find them."""

from common.engine.outbox import Flusher
from common.store.gates import GateTable

SIDE = GateTable(
    gate="lock",
    sqlite="common.store.gates.lock.sqlite:SqliteLockStore",
    mongo="common.store.gates.lock.mongo:MongoLockStore",
    mongo_indexes="common.store.gates.lock.mongo:INDEXES",
    relay="common.store.gates.lock.relay:LockRelay",
    flusher=Flusher.LOCKS,
    reclaim_every=5.0,  # a normal end releases through the outbox: this only catches what nothing else would
)
