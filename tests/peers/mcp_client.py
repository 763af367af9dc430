"""Interoperability checks of the `mcp_server` example against the official
Python MCP SDK (`pip install 'mcp==2.3.0'`), a peer no one here wrote.

    python3 tests/peers/mcp_client.py stdio --server target/debug/examples/mcp_server
    python3 tests/peers/mcp_client.py http --url http://127.0.0.1:PORT/mcp --server-log LOG [--token TOKEN]

Each MCP session is one run of the support-desk tools, so every scenario
opens a session of its own. Prints one line per check and a summary;
exits non-zero when any check fails.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SUPPORT_DESK = {"classify_request", "lookup_order", "damage_photo", "issue_voucher", "hand_over", "wait_for_courier"}
TIMEOUT = 20.0


class Checks:
    """Named checks; a failed one is reported and the run goes on."""

    def __init__(self, transport: str) -> None:
        self.transport = transport
        self.passed: list[str] = []
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, detail: Any = "") -> bool:
        line = f"[{self.transport}] {name}"
        if ok:
            self.passed.append(name)
            print(f"ok   {line}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL {line}: {detail}", flush=True)
        return ok


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


class Session:
    """One client session: its notifications and what its user answers when asked to approve a call."""

    def __init__(self, connect: Callable[[], Any], *, elicitation: str | None) -> None:
        self.connect = connect
        self.elicitation = elicitation  # None: the client cannot elicit; else "accept" / "decline"
        self.asked: list[types.ElicitRequestParams] = []
        self.list_changed = anyio.Event()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed.set()

    async def on_elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        if self.elicitation == "accept":
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="decline")

    def client(self) -> Client:
        # The session-based revision (2025-11-25) this script checks; mcp_current.py checks 2026-07-28.
        options: dict[str, Any] = {"message_handler": self.on_message, "read_timeout_seconds": TIMEOUT, "mode": "legacy"}
        if self.elicitation is not None:
            options["elicitation_callback"] = self.on_elicit
        return Client(self.connect(), **options)

    async def changed(self) -> bool:
        """Whether a tools/list_changed arrived (waiting a little for it); re-arms."""
        with anyio.move_on_after(3):
            await self.list_changed.wait()
        seen = self.list_changed.is_set()
        self.list_changed = anyio.Event()
        return seen


async def names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def run_without_elicitation(checks: Checks, session: Session, server_log: Callable[[], str]) -> None:
    async with session.client() as client:
        checks.check("negotiated a session-based protocol revision", client.protocol_version == "2025-11-25", client.protocol_version)
        listed = await names(client)
        checks.check("tools/list lists the support-desk tools", listed == SUPPORT_DESK, sorted(listed))
        checks.check("refund is hidden before lookup_order ran", "refund" not in listed, sorted(listed))

        hidden = await client.call_tool("refund", {"order_id": "A-1002", "amount_cents": 100, "reason": "early"})
        checks.check(
            "calling a hidden tool is an isError result, as an unknown tool",
            hidden.is_error and "UNKNOWN_TOOL" in text_of(hidden),
            text_of(hidden),
        )
        await session.changed()  # the first call ended step 0: classify_request left the list

        found = await client.call_tool("lookup_order", {"order_id": "A-1002"})
        structured = found.structured_content or {}
        checks.check(
            "lookup_order succeeds with structuredContent",
            not found.is_error and structured.get("id") == "A-1002" and structured.get("status") == "delivered",
            found.model_dump(exclude_none=True),
        )
        checks.check("lookup_order's text is its JSON output", json.loads(text_of(found)).get("id") == "A-1002", text_of(found))
        checks.check("tools/list_changed after lookup_order", await session.changed())
        listed = await names(client)
        checks.check("refund is listed after lookup_order ran", "refund" in listed, sorted(listed))
        checks.check("classify_request is gone after the first step", "classify_request" not in listed, sorted(listed))

        bad = await client.call_tool("lookup_order", {"order_id": "1001"})
        checks.check(
            "bad input is an isError result naming the JSON pointer",
            bad.is_error and "INVALID_ARGUMENTS" in text_of(bad) and "/order_id" in text_of(bad),
            text_of(bad),
        )

        photo = await client.call_tool("damage_photo", {"order_id": "A-1002"})
        images = [block for block in photo.content if isinstance(block, types.ImageContent)]
        links = [block for block in photo.content if isinstance(block, types.ResourceLink)]
        checks.check(
            "damage_photo's image and link arrive as typed content blocks",
            not photo.is_error
            and [image.mime_type for image in images] == ["image/png"]
            and base64.b64decode(images[0].data).startswith(b"\x89PNG")
            and [str(link.uri) for link in links] == ["shop://complaints/A-1002"],
            photo.model_dump(exclude_none=True),
        )
        unknown_field = await client.call_tool("lookup_order", {"order_id": "A-1002", "colour": "red"})
        checks.check("an unknown field is refused", unknown_field.is_error and "INVALID_ARGUMENTS" in text_of(unknown_field), text_of(unknown_field))

        denied = await client.call_tool("refund", {"order_id": "A-1001", "amount_cents": 4990, "reason": "late"})
        checks.check(
            "a refund of an undelivered order is refused (POLICY_DENIED)",
            denied.is_error and "POLICY_DENIED" in text_of(denied) and "A-1001" in text_of(denied),
            text_of(denied),
        )

        needs = await client.call_tool("refund", {"order_id": "A-1002", "amount_cents": 18990, "reason": "broken"})
        checks.check(
            "a call needing approval is refused when the client cannot elicit",
            needs.is_error and "APPROVAL_UNAVAILABLE" in text_of(needs) and "approval" in text_of(needs),
            text_of(needs),
        )
        after = await client.call_tool("lookup_order", {"order_id": "A-1002"})
        checks.check(
            "the refused refund did not run",
            (after.structured_content or {}).get("refunded_cents") == 0,
            after.structured_content,
        )

        reports: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reports.append((progress, total, message))

        waited = await client.call_tool("wait_for_courier", {"order_id": "A-1003", "seconds": 1}, progress_callback=on_progress)
        checks.check("a slow tool finishes", not waited.is_error and "picked up" in text_of(waited), text_of(waited))
        checks.check(
            "its progress arrives as notifications/progress",
            len(reports) >= 2 and reports[-1][0] == reports[-1][1] and reports[0][2] == "the courier is on the way",
            reports,
        )

        started = time.monotonic()
        try:
            await client.call_tool(
                "wait_for_courier", {"order_id": "A-1003", "seconds": 10}, read_timeout_seconds=0.75
            )
            checks.check("a call abandoned at the client's timeout raises", False, "it returned")
        except MCPError as error:
            checks.check("a call abandoned at the client's timeout raises", error.code == types.REQUEST_TIMEOUT, error)
        cancelled = False
        for _ in range(40):
            if "cancelled; stopped waiting" in server_log():
                cancelled = True
                break
            await anyio.sleep(0.1)
        checks.check(
            "notifications/cancelled cancelled the tool's token",
            cancelled and time.monotonic() - started < 10,
            server_log()[-500:],
        )
        again = await client.call_tool("lookup_order", {"order_id": "A-1003"})
        checks.check(
            "the server keeps serving after a cancellation",
            not again.is_error and (again.structured_content or {}).get("status") == "shipped",
            text_of(again),
        )
        checks.check("tools/list still answers", "lookup_order" in await names(client))


async def run_with_elicitation(checks: Checks, session: Session) -> None:
    async with session.client() as client:
        await client.call_tool("lookup_order", {"order_id": "A-1002"})
        refund = await client.call_tool("refund", {"order_id": "A-1002", "amount_cents": 18990, "reason": "arrived broken"})
        asked = session.asked[-1] if session.asked else None
        message = getattr(asked, "message", "")
        checks.check(
            "a call needing approval asks the user through elicitation, showing the tool and its arguments",
            asked is not None and "refund" in message and "18990" in message and "arrived broken" in message,
            message,
        )
        checks.check(
            "accepted, the call runs",
            not refund.is_error and (refund.structured_content or {}).get("refunded_cents") == 18990,
            refund.model_dump(exclude_none=True),
        )
        session.elicitation = "decline"
        voucher = await client.call_tool("issue_voucher", {"customer": "c-17", "amount_cents": 1000})
        checks.check(
            "declined, the call is rejected and does not run",
            voucher.is_error and "APPROVAL_REJECTED" in text_of(voucher),
            text_of(voucher),
        )
        await session.changed()
        handed = await client.call_tool(
            "hand_over", {"summary": "Refunded the broken espresso machine of A-1002 after approval."}
        )
        checks.check("hand_over succeeds", not handed.is_error, text_of(handed))
        checks.check("tools/list_changed after the run ended", await session.changed())
        listed = await names(client)
        checks.check("a session whose run ended offers no tools", listed == set(), sorted(listed))


async def scenarios(checks: Checks, connect: Callable[[], Any], server_log: Callable[[], str]) -> None:
    for name, scenario in [
        ("without elicitation", lambda: run_without_elicitation(checks, Session(connect, elicitation=None), server_log)),
        ("with elicitation", lambda: run_with_elicitation(checks, Session(connect, elicitation="accept"))),
    ]:
        try:
            with anyio.fail_after(60):
                await scenario()
        except Exception as error:  # noqa: BLE001 - one broken scenario must not hide the others
            traceback.print_exc()
            checks.check(f"the session {name} ran to its end", False, repr(error))


async def check_unauthenticated_refused(checks: Checks, url: str) -> None:
    """Without the bearer token the server answers 401 and says what to send."""
    async with create_mcp_http_client() as http:
        reply = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                headers={"Accept": "application/json, text/event-stream"})
    checks.check(
        "without the bearer token: 401, saying what to send",
        reply.status_code == 401 and "Authorization: Bearer" in reply.text,
        f"{reply.status_code} {reply.text}",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="transport", required=True)
    stdio = sub.add_parser("stdio", help="spawn the server and talk over its stdin/stdout")
    stdio.add_argument("--server", required=True, help="path of the mcp_server binary")
    http = sub.add_parser("http", help="connect to a running server's streamable HTTP endpoint")
    http.add_argument("--url", required=True)
    http.add_argument("--server-log", required=True, help="file the server's stderr goes to")
    http.add_argument("--token", help="the server's bearer token (MCP_BEARER_TOKEN)")
    args = parser.parse_args()

    checks = Checks(args.transport)
    if args.transport == "stdio":
        log = tempfile.NamedTemporaryFile("w+", prefix="mcp_server-", suffix=".log", delete=False)
        log_path = Path(log.name)

        def connect() -> AbstractAsyncContextManager[Any]:
            return stdio_client(StdioServerParameters(command=args.server, args=[]), errlog=log)
    else:
        log_path = Path(args.server_log)

        def connect() -> Any:
            if args.token is None:
                return args.url
            headers = {"Authorization": f"Bearer {args.token}"}
            return streamable_http_client(args.url, http_client=create_mcp_http_client(headers=headers))

        if args.token is not None:
            anyio.run(check_unauthenticated_refused, checks, args.url)

    def server_log() -> str:
        try:
            return log_path.read_text(errors="replace")
        except OSError:
            return ""

    anyio.run(scenarios, checks, connect, server_log)
    print(f"mcp_client ({args.transport}): {len(checks.passed)} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
