"""What a command's callbacks add to the engine's shared tables (common/engine/core/declared.py):
a claimed run whose command waits for a callback parks."""

# member: the run-state changes it makes, as (from, to) values
RUN_TRANSITIONS = {"PARKED_BY_CALLBACK": (("running", "parked"),)}
