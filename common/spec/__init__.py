"""The vocabulary flows.yaml's keys are declared and checked in: a problem at a file's line, a
value described as the user wrote it, a strict model for a block of keys, the names that hold a
secret. Below the engine, so that a step kind or a gate declares and checks its own keys in its
folder (its `spec.py`), and common.flows assembles them."""
