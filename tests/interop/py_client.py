"""The official Python SDK (`mcp`) against an abilities server, in both lifecycles.

Usage: py_client.py EXPECT.json legacy|auto stdio CMD [ARGS...]
       py_client.py EXPECT.json legacy|auto http URL
`legacy` runs ClientSession.initialize(); `auto` runs mcp.Client's default, which starts
with the 2026-07-28 `server/discover`. Prints PASS/FAIL per check; exits 1 if any failed.
"""

import asyncio
import json
import sys

import mcp
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

expect_path, lifecycle, transport, *target = sys.argv[1:]
with open(expect_path, encoding="utf-8") as f:
    EXPECT = json.load(f)
failed = 0


def check(name: str, ok: bool, detail: object = "") -> None:
    global failed
    label = f"py {lifecycle} {transport} {name}"
    if ok:
        print(f"PASS {label}")
    else:
        failed += 1
        print(f"FAIL {label}: {detail}")


def wire(model) -> dict:
    """A result as it was on the wire (camelCase), whatever the SDK's attribute names."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def exercise(session) -> None:
    listed = await session.list_tools()
    names = sorted(t.name for t in listed.tools)
    check("tools/list names", names == sorted(EXPECT["tools"]), names)
    for key in ("count_posts", "get_post"):
        case = EXPECT[key]
        result = wire(await session.call_tool(case["name"], case["arguments"]))
        check(f"{case['name']} isError", result.get("isError") is False, result)
        check(f"{case['name']} structuredContent", result.get("structuredContent") == case["structuredContent"], result)
        texts = [c["text"] for c in result["content"] if c["type"] == "text"]
        check(f"{case['name']} text block", len(texts) == 1 and json.loads(texts[0]) == case["structuredContent"], texts)
    for key in ("missing_post", "site_mismatch"):
        case = EXPECT[key]
        result = wire(await session.call_tool(case["name"], case["arguments"]))
        check(f"{key} isError", result.get("isError") is True, result)
        error = json.loads(result["content"][0]["text"])
        check(f"{key} code", error.get("code") == case["code"], error)
    try:
        await session.call_tool("no-such-tool", {})
        check("unknown tool is a JSON-RPC error", False, "the call succeeded")
    except Exception as e:  # the SDK raises McpError for JSON-RPC errors
        code = getattr(getattr(e, "error", None), "code", None)
        check("unknown tool is a JSON-RPC error", code == -32602, repr(e))


async def main() -> None:
    if lifecycle == "auto":
        server = StdioServerParameters(command=target[0], args=target[1:]) if transport == "stdio" else target[0]
        async with mcp.Client(server) as client:
            await exercise(client)
        return
    streams = stdio_client(StdioServerParameters(command=target[0], args=target[1:])) if transport == "stdio" else streamable_http_client(target[0])
    async with streams as opened:
        async with ClientSession(opened[0], opened[1]) as session:
            init = await session.initialize()
            info = wire(init)["serverInfo"]
            check("initialize serverInfo", info["name"] == "abilities-site-example", info)
            await exercise(session)


asyncio.run(main())
sys.exit(1 if failed else 0)
