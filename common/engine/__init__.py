"""The engine: the task document and every change to it, as pure functions.

Nothing here does I/O. `document` holds the models, `states` every state machine's legal
changes, `routing` decides what is ready, `advance` and `transitions` apply a decision to a task.
A step kind other than a command lives in `kinds/` (sub-flows), a gate that holds dispatches
back in `gates/` (locks, waiting for another task), and the operators' changes in `operator/`.
What carries out the outbox a change writes (publishing, relays, the sweeper) is in common/relay.

Design: docs/design/engine.md (the layout and every file), docs/design/task-document.md,
docs/design/graph-and-routing.md, docs/design/protocol.md.
"""
