"""A tool's own questions (a form, a completion, the roots) answered by the official Python MCP SDK
(`pip install 'mcp==2.3.0'`) through its elicitation, sampling and roots callbacks, against the
`conformance_server` example, at both revisions: in a 2025-11-25 session (requests from the server)
and at 2026-07-28 (`input_required` rounds, which the SDK answers through the same callbacks).

    python3 tests/peers/mcp_questions.py --url http://127.0.0.1:PORT/mcp

Prints one line per check and a summary; exits non-zero when any check fails.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TIMEOUT = 20.0


class Checks:
    def __init__(self) -> None:
        self.passed: list[str] = []
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, detail: Any = "") -> bool:
        (self.passed if ok else self.failed).append(name)
        print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else f': {detail}'}", flush=True)
        return ok


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in getattr(result, "content", []) if isinstance(block, types.TextContent))


class User:
    """What the client's user, model and roots answer; what the server asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def on_elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(f"elicitation: {params.message}")
        properties = set((params.requested_schema or {}).get("properties", {}))
        content: dict[str, Any] = {}
        if "username" in properties:
            content = {"username": "ada", "email": "ada@example.com"}
        elif "name" in properties:
            content = {"name": "Ada"}
        elif "color" in properties:
            content = {"color": "green"}
        return types.ElicitResult(action="accept", content=content)

    async def on_sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append(f"sampling: {params.messages[0].content.text}")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="Paris"), model="py-model")

    async def on_roots(self, context: Any) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])


async def at_revision(checks: Checks, url: str, mode: str, revision: str) -> None:
    user = User()
    client = Client(
        streamable_http_client(url),
        mode=mode,
        read_timeout_seconds=TIMEOUT,
        elicitation_callback=user.on_elicit,
        sampling_callback=user.on_sample,
        list_roots_callback=user.on_roots,
    )
    async with client as c:
        checks.check(f"[{revision}] negotiated", c.protocol_version == revision, c.protocol_version)
        if revision == "2025-11-25":
            elicited = await c.call_tool("test_elicitation", {"message": "Who are you?"})
            checks.check(f"[{revision}] a form answered by the elicitation callback", "ada@example.com" in text_of(elicited), text_of(elicited))
            sampled = await c.call_tool("test_sampling", {"prompt": "Capital of France?"})
            checks.check(f"[{revision}] a completion answered by the sampling callback", text_of(sampled) == "LLM response: Paris", text_of(sampled))
        else:
            named = await c.call_tool("test_input_required_result_elicitation", {})
            checks.check(f"[{revision}] a form answered by the elicitation callback", text_of(named) == "Hello, Ada!", text_of(named))
            sampled = await c.call_tool("test_input_required_result_sampling", {})
            checks.check(f"[{revision}] a completion answered by the sampling callback", text_of(sampled) == "The model says: Paris", text_of(sampled))
        roots = await c.call_tool("test_input_required_result_list_roots", {})
        checks.check(f"[{revision}] the roots answered by the roots callback", text_of(roots) == "Roots: file:///work/project", text_of(roots))
        rounds = await c.call_tool("test_input_required_result_multi_round", {})
        checks.check(
            f"[{revision}] two questions one after the other",
            '"name":"Ada"' in text_of(rounds) and '"color":"green"' in text_of(rounds),
            text_of(rounds),
        )
        together = await c.call_tool("test_input_required_result_multiple_inputs", {})
        checks.check(f"[{revision}] three questions at once", "Paris" in text_of(together) and "project" in text_of(together), text_of(together))
    checks.check(f"[{revision}] every question reached a callback", len(user.asked) >= 8, user.asked)


async def main_async(checks: Checks, url: str) -> None:
    for mode, revision in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")]:
        try:
            with anyio.fail_after(60):
                await at_revision(checks, url, mode, revision)
        except Exception as error:  # noqa: BLE001 - one broken revision must not hide the other
            traceback.print_exc()
            checks.check(f"[{revision}] ran to its end", False, repr(error))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    args = parser.parse_args()
    checks = Checks()
    anyio.run(main_async, checks, args.url)
    print(f"mcp_questions: {len(checks.passed)} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
