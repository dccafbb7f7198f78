"""Protocol 2025 sessions on the cluster of scripts/cluster.sh (three `todo` replicas on
PostgreSQL behind nginx round-robin, no stickiness), driven by the official Python SDK's
session client (`ClientSession.initialize()`): one session whose requests cross the replicas;
a subscription notified on the session's stream from a change made in another session; an
elicitation whose answer may land on another replica than the call; the session ended
(`DELETE` on leaving) and then unknown (404) on every replica.

Usage: py_cluster.py CLUSTER_DIR   (url, replica-N.url)
Prints PASS/FAIL per check and the figures; exits 1 if any check failed.
"""

import asyncio
import json
import pathlib
import sys
import urllib.error
import urllib.request

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

cluster = pathlib.Path(sys.argv[1])
URL = (cluster / "url").read_text().strip()
REPLICAS = sorted(p.read_text().split()[0] for p in cluster.glob("replica-*.url"))
failed = 0


def check(name: str, ok: bool, detail: object = "") -> None:
    global failed
    if ok:
        print(f"PASS sessions-py {name}")
    else:
        failed += 1
        print(f"FAIL sessions-py {name}: {detail}")


def recording(served: list, sessions: list | None = None) -> httpx2.AsyncClient:
    """An HTTP client noting which replica answered each request, by method, and the
    session ids it was given."""

    async def note(response: httpx2.Response) -> None:
        request = response.request
        method = request.method
        if method == "POST":
            try:
                body = json.loads(request.content or b"null")
                method = body.get("method") or ("answer" if "id" in body else method)
            except (ValueError, AttributeError):
                pass
        served.append((method, response.headers.get("x-replica"), response.status_code))
        if sessions is not None and response.headers.get("mcp-session-id"):
            sessions.append(response.headers["mcp-session-id"])

    return httpx2.AsyncClient(event_hooks={"response": [note]}, timeout=httpx2.Timeout(30, read=300))


def status_of(replica: str, session: str) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}).encode()
    request = urllib.request.Request(replica, data=body, method="POST", headers={
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
    })
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


async def main() -> None:
    served: list = []
    updates: list = []
    asked = 0
    figures = {"acknowledged": 0, "lost": 0}

    async def elicit(context, params):
        nonlocal asked
        asked += 1
        return types.ElicitResult(action="accept", content={"go": True})

    async def heard(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    given: list = []
    async with recording(served, given) as http:
        async with streamable_http_client(URL, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1], elicitation_callback=elicit, message_handler=heard) as session:
                init = await session.initialize()
                check("a 2025-11-25 session is opened through nginx", init.protocol_version == "2025-11-25", init.protocol_version)
                for i in range(12):
                    try:
                        if i % 3 == 0:
                            await session.list_tools()
                        else:
                            result = await session.call_tool("list_todos", {})
                            if result.is_error:
                                raise RuntimeError(result)
                        figures["acknowledged"] += 1
                    except Exception as error:  # noqa: BLE001 - a lost call is counted, not raised
                        figures["lost"] += 1
                        print(f"  lost: {error}")
                crossed = {replica for method, replica, _ in served if method in ("tools/call", "tools/list")}
                check("one session's requests are served by every replica",
                      figures["lost"] == 0 and len(crossed) == len(REPLICAS), (figures, crossed))

                await session.subscribe_resource("todo://list")
                async with recording([]) as other_http:
                    async with streamable_http_client(URL, http_client=other_http) as other_streams:
                        async with ClientSession(other_streams[0], other_streams[1]) as other:
                            await other.initialize()
                            created = await other.call_tool("create_todo", {"title": "crossed replicas (py)"})
                for _ in range(200):
                    if "todo://list" in updates:
                        break
                    await asyncio.sleep(0.025)
                streams_on = [replica for method, replica, _ in served if method == "GET"]
                check("a subscription hears a change made through another session",
                      not created.is_error and "todo://list" in updates, (updates, streams_on))

                before = len(served)
                exported = 0
                for _ in range(3):
                    result = await session.call_tool("export_todos", {"confirm": True})
                    if not result.is_error and isinstance((result.structured_content or {}).get("todos"), list):
                        exported += 1
                calls = [replica for method, replica, _ in served[before:] if method == "tools/call"]
                answers = [replica for method, replica, _ in served[before:] if method == "answer"]
                crossed_answers = sum(1 for call, answer in zip(calls, answers) if call != answer)
                check("an elicitation is answered wherever the answer lands",
                      exported == 3 and asked == 3 and crossed_answers > 0, (exported, asked, calls, answers))
                print(f"  elicitations: 3 calls, {crossed_answers} answered through another replica than the call's")
    # Left: the SDK ended the session (DELETE). Unknown on every replica now.
    session_id = given[0] if given else None
    statuses = []
    for replica in REPLICAS:
        status = 0
        for _ in range(40):
            status = status_of(replica, session_id)
            if status == 404:
                break
            await asyncio.sleep(0.05)
        statuses.append(status)
    check("an ended session is unknown on every replica", session_id is not None and all(s == 404 for s in statuses),
          (session_id, statuses))
    print(f"figures sessions-py: calls acknowledged {figures['acknowledged']}, calls lost {figures['lost']}, sessions lost 0 of 1")


asyncio.run(main())
sys.exit(1 if failed else 0)
