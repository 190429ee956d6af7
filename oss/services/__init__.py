"""What the REST API (oss/api/) and the CLI (oss/cli/) both do, each the I/O shell around the
engine's pure decisions: creating and reading tasks (`tasks.py`, with its idempotency rule and
`after_task` waits), operator actions one at a time or in bulk, dry runs and their plans,
migrations to a new flows revision, module drains, schedules, the inventory's hosts, the views
of items and locks, the times clients write, and the sweeper's retention jobs."""
