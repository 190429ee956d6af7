"""What init_instance left behind, for its verify (docs/design/runtime.md, "Verifying an unknown
outcome"): asked after an attempt whose outcome is unknown (it timed out, or its module died
mid-command), before a retry or before the rollback.

The ownership row names the step that created the instance by its idempotency key, the same for
every attempt of the step: a row under this key, `ready`, whose database and user still carry
baton's proof, means the command finished. A row under this key that is not finished is a part
done: before a retry that is "not done" (the command is re-run safely and finishes it), before
the rollback it is "done" (there is something to clean). No row under this key: nothing of it
happened, so the rollback has nothing to undo.
"""

from __future__ import annotations

from common.engine.states import Phase
from common.runtime.verify import Verdict
from modules.mysql.provision import BATONS, Placement, instance_output, presence
from modules.mysql.server import Server
from modules.mysql.naming import derive_password


def verify_instance(server: Server, place: Placement, *, name: str, key: str, password: str | None,
                    before: Phase) -> Verdict:  # fmt: skip
    row = server.owned(name)
    if row is None or row.owner_key != key:
        return Verdict.not_done(f"no instance {name} created under this step's key")
    found = presence(server, row)
    if row.state == "ready" and found.database == BATONS and found.user == BATONS:
        secret = place.password_secret or server.password_key()
        output = instance_output(place, row, password or derive_password(secret, key))
        return Verdict.done(output, f"instance {name} exists, created under this step's key")
    part = f"instance {name} partly created (state {row.state}, database {found.database}, user {found.user})"
    if before is Phase.ROLLBACK:
        return Verdict.done(reason=part)  # something to clean
    return Verdict.not_done(part)  # the command, re-run, finishes it
