"""Protocol 2025 sessions on the cluster of scripts/cluster.sh (three `todo` replicas on
PostgreSQL, or with their records on Redis, behind nginx round-robin, no stickiness), driven by
the official Python SDK's session client (`ClientSession.initialize()`): one session whose
requests cross the replicas; a subscription notified on the session's stream from a change
made in another session; an elicitation whose answer may land on another replica than the
call; a rolling restart (each replica drained with SIGTERM and started again in turn) under
the session's load; the replica holding the session's stream killed with `kill -9` while
another session writes (the SDK resumes the stream elsewhere with `Last-Event-ID` and hears
every update); the session ended (`DELETE` on leaving) and then unknown (404) on every
replica.

Usage: py_cluster.py CLUSTER_DIR   (url, replica-N.url)
Prints PASS/FAIL per check and the figures; exits 1 if any check failed.
"""

import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
KEY = "io.github.abilities-rs/idempotencyKey"
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


async def restart(n: int) -> None:
    """`scripts/cluster.sh restart N`: drained with SIGTERM, started again, ready."""
    process = await asyncio.create_subprocess_exec(
        "bash", str(ROOT / "scripts" / "cluster.sh"), "restart", str(n),
        env={**os.environ, "CLUSTER_DIR": str(cluster)},
    )
    if await process.wait() != 0:
        raise RuntimeError(f"replica {n} did not restart")


async def rolling_restart(session, figures: dict, updates: list, open_writer) -> None:
    """Every replica restarted in turn while the session calls; then a write in another
    session still reaches its stream."""
    load = {"acknowledged": 0, "lost": 0, "retried": 0, "errors": []}
    running = True

    async def calls() -> None:
        # A read that nginx answers 502 (a request it had sent on a kept-alive connection the
        # stopping replica closed: it never sends a POST twice) is retried, and counted.
        while running:
            for attempt in range(5):
                try:
                    result = await session.call_tool("list_todos", {})
                    if result.is_error:
                        raise RuntimeError(result)
                    load["acknowledged"] += 1
                    break
                except Exception as error:  # noqa: BLE001 - a lost call is counted, not raised
                    if attempt < 4 and "502" in str(error):
                        load["retried"] += 1
                        await asyncio.sleep(0.1)
                        continue
                    load["lost"] += 1
                    load["errors"].append(str(error))
                    await asyncio.sleep(0.05)
                    break

    started = time.monotonic()
    loop = asyncio.create_task(calls())
    for n in range(1, len(REPLICAS) + 1):
        await restart(n)
    running = False
    await loop
    seconds = time.monotonic() - started
    updates.clear()
    await open_writer("after the rolling restart (py)", 1)
    for _ in range(400):
        if updates:
            break
        await asyncio.sleep(0.025)
    figures["acknowledged"] += load["acknowledged"]
    figures["lost"] += load["lost"]
    print(f"  rolling restart: {len(REPLICAS)} replicas in {seconds:.1f} s, calls acknowledged "
          f"{load['acknowledged']}, calls lost {load['lost']} ({load['retried']} answered 502 by nginx and retried)")
    check("a rolling restart under load loses no call and no session",
          load["lost"] == 0 and load["acknowledged"] > 0 and bool(updates),
          (load["lost"], load["errors"][:3], updates))


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
                # Twelve requests, and more (up to 36) while a replica has served none: nginx skips
                # one it marked failed a moment ago until its fail_timeout ends.
                def crossed_now() -> set:
                    return {replica for method, replica, _ in served if method in ("tools/call", "tools/list")}

                for i in range(36):
                    if i >= 12 and len(crossed_now()) == len(REPLICAS):
                        break
                    if i >= 12:
                        await asyncio.sleep(0.1)
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

                async def open_writer(title: str, writes: int, pause: float = 0.0) -> tuple[int, int]:
                    """Another session's writes, each with an idempotency key and retried on an
                    error (nginx answers 502 for a request it had sent to a killed replica):
                    how many were acknowledged and refused."""
                    produced = refused = 0
                    async with recording([]) as writer_http:
                        async with streamable_http_client(URL, http_client=writer_http) as writer_streams:
                            async with ClientSession(writer_streams[0], writer_streams[1]) as writer:
                                await writer.initialize()
                                for n in range(writes):
                                    key = f"py-{title}-{time.time_ns()}-{n}"
                                    for attempt in range(5):
                                        try:
                                            created = await writer.call_tool(
                                                "create_todo", {"title": f"{title} {key}"}, meta={KEY: key})
                                            if created.is_error:
                                                refused += 1
                                            else:
                                                produced += 1
                                            break
                                        except Exception:  # noqa: BLE001 - retried with the same key
                                            if attempt == 4:
                                                refused += 1
                                            await asyncio.sleep(0.1)
                                    await asyncio.sleep(pause)
                    return produced, refused

                await rolling_restart(session, figures, updates, open_writer)

                gets = [replica for method, replica, status in served if method == "GET" and status == 200]
                holder = gets[-1]
                n = holder.split("-")[1]
                os.kill(int((cluster / f"replica-{n}.pid").read_text().strip()), signal.SIGKILL)
                try:
                    updates.clear()
                    produced, refused = await open_writer("after the kill (py)", 50, 0.1)
                    for _ in range(200):
                        if len(updates) >= produced:
                            break
                        await asyncio.sleep(0.025)
                    heard = len(updates)
                    reopened = [replica for method, replica, status in served if method == "GET" and status == 200][-1]
                    print(f"  kill -9 of {holder}, the stream's replica: {produced} writes acknowledged ({refused} refused), "
                          f"{heard} of their {produced} updates heard (events lost {produced - heard}), "
                          f"the stream resumed on {reopened}")
                    figures["events"] = (produced, heard)
                    listed = await session.list_tools()
                    check("the session outlives a kill -9 of its stream's replica, and its stream misses no event",
                          refused == 0 and produced > 0 and heard == produced and reopened != holder and listed.tools,
                          (refused, produced, heard, holder, reopened))
                finally:
                    await restart(int(n))
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
    events = ""
    if "events" in figures:
        produced, heard = figures["events"]
        events = f", events lost {produced - heard} of {produced}"
    print(f"figures sessions-py: calls acknowledged {figures['acknowledged']}, calls lost {figures['lost']}{events}, "
          f"sessions lost 0 of 1")


asyncio.run(main())
sys.exit(1 if failed else 0)
