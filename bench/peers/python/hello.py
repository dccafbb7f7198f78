"""The hello workload served by FastMCP under uvicorn: `my-plugin-count-posts`, the `site` example's
SQLite count of published posts of one type (examples/shared/site.rs), answering {"result": N}.

Served by serve.py (`--workload hello`), which creates and seeds the database first (as the
Rust `site` example's Db::open does) and sets HELLO_DB for the uvicorn workers.
"""

import os
import sqlite3
from typing import Literal

import aiosqlite
from fastmcp import Context, FastMCP
from fastmcp.server.lifespan import lifespan
from pydantic import BaseModel

DB_PATH = os.environ.get("HELLO_DB", "site.db")

# The seed of a new database, as examples/shared/site.rs has it: (type, title, status, author).
SEED = [
    ("post", "Hello world", "publish", 1),
    ("post", "Second thoughts", "publish", 2),
    ("post", "Unfinished", "draft", 1),
    ("page", "About", "publish", None),
    ("attachment", "logo.png", "publish", None),
]


def prepare(path: str) -> None:
    """Create and seed the database at `path` if it is new, exactly as the Rust `Db::open` does."""
    conn = sqlite3.connect(path)
    try:
        conn.executescript(
            """PRAGMA journal_mode = WAL;
            CREATE TABLE IF NOT EXISTS users (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                name TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS posts (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                post_type TEXT NOT NULL,
                title TEXT NOT NULL,
                content TEXT NOT NULL,
                status TEXT NOT NULL,
                author_id INTEGER REFERENCES users (id)
            );"""
        )
        columns = [row[1] for row in conn.execute("PRAGMA table_info('posts')")]
        if "author_id" not in columns:
            conn.execute("ALTER TABLE posts ADD COLUMN author_id INTEGER")
        with conn:
            if conn.execute("SELECT COUNT(*) FROM users").fetchone()[0] == 0:
                conn.execute("INSERT INTO users (name) VALUES ('Ada'), ('Grace')")
            if conn.execute("SELECT COUNT(*) FROM posts").fetchone()[0] == 0:
                conn.executemany(
                    "INSERT INTO posts (post_type, title, content, status, author_id)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [(t, title, f"{title}, in full.", s, a) for t, title, s, a in SEED],
                )
    finally:
        conn.close()


@lifespan
async def database(server):
    """One connection per worker (aiosqlite runs it on its own thread), shared by every call."""
    async with aiosqlite.connect(DB_PATH) as db:
        yield {"db": db}


mcp = FastMCP("site", version="0.1.0", lifespan=database)


class Count(BaseModel):
    result: int


@mcp.tool(name="my-plugin-count-posts", annotations={"readOnlyHint": True})
async def count_posts(ctx: Context, input: Literal["post", "page", "attachment"]) -> Count:
    """Count published posts of one type."""
    db = ctx.lifespan_context["db"]
    async with db.execute(
        "SELECT COUNT(*) FROM posts WHERE post_type = ? AND status = 'publish'", (input,)
    ) as cursor:
        (count,) = await cursor.fetchone()
    return Count(result=count)


# The ASGI app uvicorn serves in each worker: streamable HTTP at /mcp, stateless, JSON answers.
app = mcp.http_app(path="/mcp", stateless_http=True, json_response=True)
