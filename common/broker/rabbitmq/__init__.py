"""The RabbitMQ adapter (pika). The only package of baton that imports pika.

pika connections are not thread-safe, so every connection here has exactly one owner thread:
- the publisher connection belongs to the publisher's I/O thread (publisher_loop.py). Publish,
  declare, queue_depth, purge and ping put a call in its inbox (calls.py) and wait for their own
  answer only;
- each subscription's connection (consumer.py: one channel, a consumer per band queue) belongs
  to that subscription's I/O thread. Other threads reach it only through
  `connection.add_callback_threadsafe`, the one thread-safe call.

Why the publisher is a SelectConnection. A publish must return only once the broker confirmed
it, and many threads publish at once (a module's workers, the OSS API's request threads). With a
BlockingChannel in confirm mode every basic_publish waits for its own confirm, so one channel
serializes the whole process on round trips (~1 ms each); and a BlockingConnection may only be
used by one thread at a time, so a lock would be held across each wait. With a SelectConnection
driven by one I/O thread, publishes go out as they arrive and the broker's acks come back
asynchronously: RabbitMQ answers a batch of messages with one `multiple` ack, and each caller
wakes when the ack covering ITS delivery tag arrives (confirms.py matches acks, nacks and returns
to publishes; a return carries no tag, so each publish carries an id of its own in a header). Heartbeats are answered by that loop too, whatever the callers do. A
BlockingConnection offers no public way to publish in confirm mode without waiting, so it would
have meant reaching into pika's private channel implementation.

Why the consumers stay on BlockingConnection: with one connection per I/O thread, a loop of
`process_data_events(time_limit)` gives us heartbeats, callbacks queued from other threads, and
deliveries, while control (consume, cancel, reconnect) stays straight-line code instead of a
chain of callbacks. The I/O thread never blocks on anything but pika itself: the handler hands
deliveries to workers and returns, so heartbeats keep flowing however long the work takes.

pika exceptions never leave this package: they become BrokerError / UnroutableMessage (errors.py
says which is which). The rest of the package:
- broker.py          RabbitBroker, the Broker port on top of the two kinds of connection
- publisher.py       what callers of publish/declare/queue_depth/purge/ping run: call and wait
- publisher_loop.py  the publisher's I/O thread: its connection, reconnects, deadlines, closing
- publishing.py      its confirm-mode channel: publishes out, acks, nacks and returns in
- operations.py      its channel for declare, queue_depth, purge and ping, one at a time
- calls.py           a call with its future and deadline, and the inbox handing calls over
- confirms.py        which publishes await the broker's answer, by delivery tag (pure)
- policy.py          timeouts and the reconnect-delay schedule (pure)
- connection.py      the node URLs (several: each connection tries them in turn), connection
                     parameters, and the password-free URL for logs
- topology.py        a queue and its dead-letter twin, declared with the right arguments (classic,
                     or quorum: one queue per priority band)
- migrate.py         moving a classic deployment's messages into its quorum queues
- delivery.py        one received message and the connection it came on
- eager_writes.py    pika's plaintext writes sent at once, a message's frames in one write

Design: docs/design/queues.md (the queue topology, bands, dead letters, several nodes).
"""

from common.broker.rabbitmq import eager_writes
from common.broker.rabbitmq.broker import RabbitBroker

eager_writes.install()

__all__ = ["RabbitBroker"]
