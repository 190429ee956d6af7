"""The RabbitMQ adapter (pika). The only package of baton that imports pika.

pika's BlockingConnection is not thread-safe, so every connection here has exactly one owner:
- the publisher connection (publisher.py) belongs to whoever holds the publisher's lock: publish,
  declare, queue_depth, purge, ping, and the keep-alive thread that services its heartbeats;
- each subscription's connection (consumer.py) belongs to that subscription's I/O thread. Other
  threads reach it only through `connection.add_callback_threadsafe`, the one thread-safe call.

Why BlockingConnection and not SelectConnection for consumers: with one connection per I/O
thread, a loop of `process_data_events(time_limit)` gives us heartbeats, callbacks queued from
other threads, and deliveries, while control (consume, cancel, reconnect) stays straight-line
code instead of a chain of callbacks. The I/O thread never blocks on anything but pika itself:
the handler hands deliveries to workers and returns, so heartbeats keep flowing however long the
work takes.

pika exceptions never leave this package: they become BrokerError / UnroutableMessage (errors.py
says which is which). The rest of the package:
- broker.py      RabbitBroker, the Broker port on top of the two kinds of connection
- policy.py      timeouts, the reconnect-delay schedule, the keep-alive interval (pure)
- connection.py  URL, connection parameters, and the password-free URL for logs
- topology.py    a queue and its dead-letter twin, declared with the right arguments
- delivery.py    one received message and the connection it came on
"""

from common.broker.rabbitmq.broker import RabbitBroker

__all__ = ["RabbitBroker"]
