"""The ports of the stores kept beside the tasks, in the same SQLite file or MongoDB database:
lock documents (and the lock table that applies the engine's lock decisions to them), module
drains, the event log, module announcements and schedules. Their adapters are in sqlite/ and
mongo/."""
