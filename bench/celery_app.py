"""The Celery side of bench/celery_side.py: a worker runs this app (`celery -A bench.celery_app`).

Three no-op tasks chained, as baton's three-step no-op flow; the last one also sends the chain's
id to a queue the bench reads, so the bench learns when a chain ended without a result backend
(Celery keeps no state of its own by default). Settings from the environment:
BENCH_CELERY_BROKER (the vhost's URL) and BENCH_CELERY_NO_LOSS=1 for the settings that keep a task
through a worker's crash and a broker's restart: acks after the task ran, a task whose worker died
rejected back to the queue, and publisher confirms (messages are persistent by default).
"""

from __future__ import annotations

import os

from celery import Celery

QUEUE = "bench-steps"
DONE = "bench-done"

app = Celery("baton_bench", broker=os.environ.get("BENCH_CELERY_BROKER", "amqp://guest:guest@127.0.0.1:5672//"))
app.conf.task_default_queue = QUEUE
if os.environ.get("BENCH_CELERY_NO_LOSS") == "1":
    app.conf.task_acks_late = True
    app.conf.task_reject_on_worker_lost = True
    app.conf.broker_transport_options = {"confirm_publish": True}


@app.task(name="bench.noop")
def noop() -> None:
    return None


@app.task(name="bench.last")
def last(chain_id: str) -> None:
    """The third no-op, which then tells the bench that chain `chain_id` ended."""
    with app.producer_or_acquire() as producer:
        producer.publish({"id": chain_id}, exchange="", routing_key=DONE, serializer="json")
