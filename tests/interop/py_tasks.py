"""The official Python SDK 1.x (`mcp` 1.30) task client against an abilities server: protocol
2025-11-25's experimental tasks. The export runs as a task, is polled to its end, its result
read, listed; a long one is cancelled.

Usage: py_tasks.py stdio CMD [ARGS...]
       py_tasks.py http URL
Prints PASS/FAIL per check; exits 1 if any failed.
"""

import asyncio
import warnings
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

transport, *target = sys.argv[1:]
# The SDK warns that its task API is experimental: that API is what this checks.
warnings.filterwarnings("ignore", category=DeprecationWarning)
failed = 0


def check(name: str, ok: bool, detail: object = "") -> None:
    global failed
    label = f"py 1.x tasks {transport} {name}"
    if ok:
        print(f"PASS {label}")
    else:
        failed += 1
        print(f"FAIL {label}: {detail}")


async def until_ended(session: ClientSession, task_id: str) -> types.GetTaskResult:
    for _ in range(200):
        task = await session.experimental.get_task(task_id)
        if task.status in ("completed", "failed", "cancelled"):
            return task
        await asyncio.sleep(task.pollInterval / 1000 if task.pollInterval else 0.1)
    raise AssertionError(f"task {task_id} did not end")


async def exercise(session: ClientSession) -> None:
    init = await session.initialize()
    check("protocol 2025-11-25", init.protocolVersion == "2025-11-25", init.protocolVersion)
    tasks = init.capabilities.tasks
    check("capabilities.tasks", tasks is not None and tasks.requests is not None and tasks.cancel is not None, tasks)
    listed = await session.list_tools()
    export = next(t for t in listed.tools if t.name == "wp_export_posts")
    check("execution.taskSupport", export.execution is not None and export.execution.taskSupport == "optional",
          export.execution)

    created = await session.experimental.call_tool_as_task("wp_export_posts", {"delay_ms": 300}, ttl=60000)
    task_id = created.task.taskId
    check("created working", created.task.status == "working", created.task)
    ended = await until_ended(session, task_id)
    check("polled to completed", ended.status == "completed", ended)
    result = await session.experimental.get_task_result(task_id, types.CallToolResult)
    check("its result", result.isError is False and isinstance((result.structuredContent or {}).get("exported"), int),
          result)
    listing = await session.experimental.list_tasks()
    check("tasks/list", any(t.taskId == task_id for t in listing.tasks), listing)

    long = await session.experimental.call_tool_as_task("wp_export_posts", {"delay_ms": 600000}, ttl=60000)
    cancelled = await session.experimental.cancel_task(long.task.taskId)
    check("tasks/cancel", cancelled.status == "cancelled", cancelled)
    try:
        await session.experimental.cancel_task(long.task.taskId)
        check("cancelling an ended task is refused", False, "accepted")
    except McpError as e:
        check("cancelling an ended task is refused", e.error.code == -32602, e.error)


async def main() -> None:
    if transport == "stdio":
        params = StdioServerParameters(command=target[0], args=target[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await exercise(session)
    else:
        async with streamablehttp_client(target[0]) as (read, write, _), ClientSession(read, write) as session:
            await exercise(session)


asyncio.run(main())
sys.exit(1 if failed else 0)
