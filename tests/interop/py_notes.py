"""The official Python SDK (`mcp` 2.3), a client that can ask its user, against the `notes`
example: deleting a note asks the user (elicitation) and runs only once they confirm; a
declined confirmation deletes nothing.

Usage: py_notes.py URL
Prints PASS/FAIL per check; exits 1 if any failed.
"""

import asyncio
import json
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

url = sys.argv[1]
failed = 0
asked: list[str] = []
answer = {"action": "accept"}


def check(name: str, ok: bool, detail: object = "") -> None:
    global failed
    if ok:
        print(f"PASS py notes {name}")
    else:
        failed += 1
        print(f"FAIL py notes {name}: {detail}")


async def the_user(_context, params: types.ElicitRequestParams) -> types.ElicitResult:
    asked.append(params.message)
    if answer["action"] == "accept":
        return types.ElicitResult(action="accept", content={"confirm": True})
    return types.ElicitResult(action="decline")


def wire(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main() -> None:
    async with streamable_http_client(url) as opened, ClientSession(
        opened[0], opened[1], elicitation_callback=the_user
    ) as session:
        await session.initialize()
        for title in ("first", "second"):
            added = wire(await session.call_tool("add_note", {"title": title, "body": "b"}))
            check(f"add {title}", added.get("isError") is False, added)
        deleted = wire(await session.call_tool("delete_note", {"id": 1}))
        check("the user was asked", len(asked) == 1, asked)
        check("confirmed: deleted", deleted.get("structuredContent", {}).get("id") == 1, deleted)
        answer["action"] = "decline"
        kept = wire(await session.call_tool("delete_note", {"id": 2}))
        check("asked again", len(asked) == 2, asked)
        check("declined: refused", kept.get("isError") is True, kept)
        listed = wire(await session.call_tool("list_notes", {}))
        ids = [n["id"] for n in listed.get("structuredContent", {}).get("notes", [])]
        check("only the declined note is left", ids == [2], json.dumps(listed))


asyncio.run(main())
sys.exit(1 if failed else 0)
