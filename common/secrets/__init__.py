"""What is secret, and how it is hidden, in one place: every view, log line, webhook, alarm and
API answer masks through these modules.

- `names.py`: which names hold a secret (declared `secret: true`, or named like one);
- `values.py`: which values are secret (those under such names), as text;
- `scrubber.py`: known values masked wherever they occur in a text, in one pass;
- `urls.py`: URL passwords and credentials masked;
- `documents.py`: a document or text masked on all three counts (names, values, URLs);
- `free_text.py`: an operator's free text (a reason): URL passwords and values written after a
  secret-looking name (`password=...`) masked;
- `task_views.py`: a task, its items and its alarms as they may be shown;
- `log_lines.py`: what a log line hides (the structlog processor and the standard library's
  records; the secret values of the task being worked on, for the length of a block).

Nothing here imports the engine's document model when imported: a command that only masks
starts without building it.
"""
