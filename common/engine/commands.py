"""What a module's command uses of the engine: the "check again later" answer, the fencing
token it checks before a side effect, and a callback's token and answer. Imported from its home
on first use."""

from __future__ import annotations

from common.engine.core.declared import declared_exports
from common.exports import lazy

EXPORTS: dict[str, tuple[str, ...]] = {
    "common.engine.core.check_again": ("ANSWER_KEY", "check_again", "parse_answer"),
    "common.engine.core.fence": ("FencingToken", "ReadItem", "StaleFence", "check_fence", "item_record_of",
                                 "rollback_reached"),
    **declared_exports("COMMANDS"),  # each kind's, in its folder's face.py (a callback's token and answer)
}
__all__ = sorted(name for names in EXPORTS.values() for name in names)
__getattr__ = lazy(__name__, EXPORTS)
