"""OSS: takes jobs, writes the whole task document, dispatches step 0, answers queries.

By surface: `api/` (the REST API), `cli/` (the `baton` command, and the processes it starts),
`console/` (the web console's static pages), and `services/`, what the API and the CLI both do.
`settings.py` and `wiring.py` build a process's parts from its settings.

Design: docs/design/overview.md; operator actions: docs/design/operator-actions.md.
"""
