"""The message broker: a port (`Broker`) and its adapters (RabbitMQ production, in-process).

Design: docs/design/queues.md.
"""
