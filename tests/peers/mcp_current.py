"""Interoperability checks of the `mcp_server` example at MCP revision 2026-07-28, against the
official Python MCP SDK (`pip install 'mcp==2.3.0'`), a peer no one here wrote.

    python3 tests/peers/mcp_current.py MODE stdio --server target/debug/examples/mcp_server
    python3 tests/peers/mcp_current.py MODE http --url http://127.0.0.1:PORT/mcp [--token TOKEN] [--other-url URL]

MODE is `2026-07-28` (the client adopts the revision without a probe) or `auto` (it probes
`server/discover` and must pick 2026-07-28). The revision has no session: every request stands
alone, so the checks share one client. With `--other-url` (a second instance with the same key),
approvals asked on one instance are answered on the other. Prints one line per check and a summary;
exits non-zero when any check fails.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# The support desk at the first step of a fresh run: `refund` requires `lookup_order` in the same
# run, and this revision has no run, so it is never offered.
LISTED = ["classify_request", "lookup_order", "damage_photo", "issue_voucher", "hand_over", "wait_for_courier"]
TIMEOUT = 20.0


class Checks:
    def __init__(self, label: str) -> None:
        self.label = label
        self.passed: list[str] = []
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, detail: Any = "") -> bool:
        (self.passed if ok else self.failed).append(name)
        print(f"{'ok  ' if ok else 'FAIL'} [{self.label}] {name}{'' if ok else f': {detail}'}", flush=True)
        return ok


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


class Human:
    """What the client's user answers when asked to approve a call."""

    def __init__(self) -> None:
        self.answer = "accept"
        self.asked: list[str] = []

    async def on_elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        if self.answer == "accept":
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="decline")


def flip(state: str) -> str:
    """The state with one character of its MAC'd body changed."""
    middle = len(state) // 2
    return state[:middle] + ("B" if state[middle] == "A" else "A") + state[middle + 1 :]


async def calls(checks: Checks, client: Client, human: Human, mode: str) -> None:
    checks.check("adopted revision 2026-07-28", client.protocol_version == "2026-07-28", client.protocol_version)
    listed = await client.list_tools()
    names = [tool.name for tool in listed.tools]
    checks.check("tools/list in the registry's order, refund not offered (no run)", names == LISTED, names)
    checks.check("tools/list carries cache hints", (listed.ttl_ms, str(listed.cache_scope)) in [(0, "private"), (0, "CacheScope.private")], (listed.ttl_ms, listed.cache_scope))

    found = await client.call_tool("lookup_order", {"order_id": "A-1002"})
    checks.check(
        "lookup_order succeeds with structuredContent",
        not found.is_error and (found.structured_content or {}).get("status") == "delivered",
        found.model_dump(exclude_none=True),
    )
    bad = await client.call_tool("lookup_order", {"order_id": "1001"})
    checks.check("bad input is an isError result naming the JSON pointer", bad.is_error and "INVALID_ARGUMENTS" in text_of(bad) and "/order_id" in text_of(bad), text_of(bad))
    hidden = await client.call_tool("refund", {"order_id": "A-1002", "amount_cents": 100, "reason": "early"})
    checks.check("a tool not offered is an unknown tool", hidden.is_error and "UNKNOWN_TOOL" in text_of(hidden), text_of(hidden))

    photo = await client.call_tool("damage_photo", {"order_id": "A-1002"})
    images = [block for block in photo.content if isinstance(block, types.ImageContent)]
    checks.check(
        "content blocks arrive typed",
        not photo.is_error and len(images) == 1 and base64.b64decode(images[0].data).startswith(b"\x89PNG"),
        photo.model_dump(exclude_none=True),
    )

    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    waited = await client.call_tool("wait_for_courier", {"order_id": "A-1003", "seconds": 1}, progress_callback=on_progress)
    checks.check("a slow tool finishes with its progress as notifications", not waited.is_error and len(reports) >= 2, (text_of(waited), reports))

    human.answer = "accept"
    voucher = await client.call_tool("issue_voucher", {"customer": "c-17", "amount_cents": 1000})
    asked = human.asked[-1] if human.asked else ""
    checks.check("an approval is asked through input_required, showing tool and arguments", "issue_voucher" in asked and "1000" in asked, asked)
    checks.check("accepted, the call runs", not voucher.is_error and json.loads(text_of(voucher)).get("amount_cents") == 1000, text_of(voucher))
    human.answer = "decline"
    declined = await client.call_tool("issue_voucher", {"customer": "c-17", "amount_cents": 2000})
    checks.check("declined, the call is rejected", declined.is_error and "APPROVAL_REJECTED" in text_of(declined), text_of(declined))


async def round_trips(checks: Checks, asking: Client, answering: Client, where: str) -> None:
    """An approval driven by hand: asked on `asking`, answered (and forged) on `answering`."""
    arguments = {"customer": "c-18", "amount_cents": 700}
    asked = await asking.session.call_tool("issue_voucher", arguments, allow_input_required=True)
    if not checks.check(f"input_required carries an elicitation and a requestState{where}", isinstance(asked, types.InputRequiredResult) and asked.request_state and "approval" in (asked.input_requests or {}), asked):
        return
    state = asked.request_state
    accept = {"approval": {"action": "accept", "content": {}}}

    async def answer(state: str, args: dict[str, Any] = arguments) -> types.CallToolResult:
        return await answering.session.call_tool("issue_voucher", args, input_responses=accept, request_state=state)

    flipped = await answer(flip(state))
    checks.check(f"a requestState with a flipped byte is refused{where}", flipped.is_error and "REQUEST_STATE_REFUSED" in text_of(flipped), text_of(flipped))
    other = await answer(state, {"customer": "c-18", "amount_cents": 70000})
    checks.check(f"a requestState with other arguments is refused{where}", other.is_error and "REQUEST_STATE_REFUSED" in text_of(other), text_of(other))
    done = await answer(state)
    checks.check(f"the genuine state runs the call{where}", not done.is_error and json.loads(text_of(done)).get("amount_cents") == 700, text_of(done))
    replayed = await answer(state)
    checks.check(f"a replayed requestState is refused{where}", replayed.is_error and "REQUEST_STATE_REFUSED" in text_of(replayed), text_of(replayed))


async def without_elicitation(checks: Checks, client: Client) -> None:
    refused = await client.call_tool("issue_voucher", {"customer": "c-17", "amount_cents": 1000})
    checks.check("a client without elicitation reads APPROVAL_UNAVAILABLE", refused.is_error and "APPROVAL_UNAVAILABLE" in text_of(refused), text_of(refused))


async def scenarios(checks: Checks, connect: Any, connect_other: Any, mode: str) -> None:
    human = Human()

    def client(connector: Any, elicit: bool = True) -> Client:
        options: dict[str, Any] = {"mode": mode, "read_timeout_seconds": TIMEOUT}
        if elicit:
            options["elicitation_callback"] = human.on_elicit
        return Client(connector(), **options)

    for name, scenario in [
        ("calls", lambda c: calls(checks, c, human, mode)),
        ("round trips", lambda c: round_trips(checks, c, c, "")),
    ]:
        try:
            with anyio.fail_after(60):
                async with client(connect) as c:
                    await scenario(c)
        except Exception as error:  # noqa: BLE001 - one broken scenario must not hide the others
            traceback.print_exc()
            checks.check(f"the scenario {name} ran to its end", False, repr(error))
    try:
        with anyio.fail_after(60):
            async with client(connect, elicit=False) as c:
                await without_elicitation(checks, c)
            if connect_other is not None:
                async with client(connect) as first, client(connect_other) as second:
                    await round_trips(checks, first, second, " (asked on one instance, answered on the other)")
    except Exception as error:  # noqa: BLE001
        traceback.print_exc()
        checks.check("the last scenarios ran to their end", False, repr(error))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["2026-07-28", "auto"])
    sub = parser.add_subparsers(dest="transport", required=True)
    stdio = sub.add_parser("stdio")
    stdio.add_argument("--server", required=True, help="path of the mcp_server binary")
    http = sub.add_parser("http")
    http.add_argument("--url", required=True)
    http.add_argument("--other-url", help="a second instance holding the same request-state key")
    http.add_argument("--token", help="the servers' bearer token (MCP_BEARER_TOKEN)")
    args = parser.parse_args()

    checks = Checks(f"{args.transport} {args.mode}")
    other = None
    if args.transport == "stdio":
        log = tempfile.NamedTemporaryFile("w+", prefix="mcp_server-", suffix=".log", delete=False)

        def connect() -> Any:
            return stdio_client(StdioServerParameters(command=args.server, args=[]), errlog=log)
    else:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}

        def at(url: str) -> Any:
            return lambda: streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))

        connect = at(args.url)
        other = at(args.other_url) if args.other_url else None

    anyio.run(scenarios, checks, connect, other, args.mode)
    print(f"mcp_current ({args.transport} {args.mode}): {len(checks.passed)} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
