"""The bare loop baton cannot beat: consume, one SQLite read-modify-write, publish with confirm, ack.

Deliberately minimal: no claim, no lease, no child process, no outbox. Each message carries a
task id; its document is read, a counter bumped, written back, and the next hop published to
the same queue until the task has made its hops.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid

import pika

DOC = {"TaskId": "", "Parameters": {"pad": "x" * 1500}, "Hops": 0}


def run_baseline(amqp_url: str, db_path: str, tasks: int, hops: int, in_flight: int = 64) -> dict:
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, version INT, doc TEXT)")
    ids = [uuid.uuid4().hex for _ in range(tasks)]
    db.executemany("INSERT INTO docs VALUES (?, 0, ?)", [(i, json.dumps({**DOC, "TaskId": i})) for i in ids])

    queue = f"baseline-{uuid.uuid4().hex[:6]}"
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    channel = connection.channel()
    channel.queue_declare(queue, durable=True)
    channel.confirm_delivery()
    channel.basic_qos(prefetch_count=in_flight)
    props = pika.BasicProperties(delivery_mode=2)
    for task_id in ids:
        channel.basic_publish("", queue, task_id.encode(), props, mandatory=True)

    done = 0
    started = time.perf_counter()
    # pika's BlockingConnection does its I/O in this thread: the loop's whole CPU is this thread's.
    cpu_started = time.thread_time()
    for method, _props, body in channel.consume(queue, inactivity_timeout=10):
        if method is None:
            break
        task_id = body.decode()
        version, raw = db.execute("SELECT version, doc FROM docs WHERE id=?", (task_id,)).fetchone()
        doc = json.loads(raw)
        doc["Hops"] += 1
        db.execute("UPDATE docs SET version=?, doc=? WHERE id=? AND version=?",
                   (version + 1, json.dumps(doc), task_id, version))
        if doc["Hops"] < hops:
            channel.basic_publish("", queue, body, props, mandatory=True)
        else:
            done += 1
        channel.basic_ack(method.delivery_tag)
        if done == tasks:
            break
    elapsed = time.perf_counter() - started
    cpu = time.thread_time() - cpu_started
    channel.queue_delete(queue)
    connection.close()
    return {"hops_per_second": tasks * hops / elapsed, "seconds": elapsed, "tasks": tasks, "hops": hops,
            "cpu_ms_per_hop": 1000 * cpu / (tasks * hops)}
