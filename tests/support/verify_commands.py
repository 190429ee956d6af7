"""Commands with a verify (docs/design/runtime.md, "Verifying an unknown outcome"), served through
the real runtime by tests/support/run_registry.py:

- `billing`: the worked example of docs/guide/modules.md, executed from the page itself, so the
  example a user copies is the one under test;
- `unsure`: a command whose verify never can tell (the far side does not answer), to drive an
  outcome that stays unknown.
"""

from common.runtime.registry import CommandContext, CommandRegistry, Verdict
from tests.support.doc_examples import REPO, page_blocks

PAGE = REPO / "docs" / "guide" / "modules.md"
EXAMPLE = next(b for b in page_blocks(PAGE) if b.lang == "python" and b.test == "tests/e2e/test_verify.py")
_namespace: dict = {"__name__": "billing_example"}
exec(compile(EXAMPLE.code, str(PAGE), "exec"), _namespace)  # noqa: S102 (our own docs)
billing: CommandRegistry = _namespace["registry"]

unsure = CommandRegistry("unsure")


@unsure.command()
def make(ctx: CommandContext) -> dict:
    return {"made": True}


@unsure.verify("make")
def made(parameters: dict, ctx: CommandContext) -> Verdict:
    # The reason quotes a secret parameter when there is one: baton must mask it everywhere.
    token = parameters.get("token")
    return Verdict.unknown("the far side does not answer" + (f" to {token}" if token else ""))


@unsure.command()
def unmake(ctx: CommandContext) -> dict:
    return {"unmade": True}
