"""Serve a benchmark workload's FastMCP app (shop.py or hello.py) under uvicorn on 127.0.0.1.

Run: bench/peers/.venv/bin/python bench/peers/python/serve.py --workload shop|hello --port PORT
     [--workers 2] [--redis URL] [--api URL] [--name fastmcp] [--db site.db]
Prints the URL (http://127.0.0.1:PORT/mcp) just before uvicorn binds the port and starts the
workers; calls that arrive before a worker is up wait in the listen queue.
"""

import argparse
import os
import sys

import uvicorn

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["shop", "hello"], required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes (2)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6390", help="shop: Redis")
    parser.add_argument("--api", default="http://127.0.0.1:8100", help="shop: the shop API")
    parser.add_argument("--name", default="fastmcp", help="shop: server_type in every result")
    parser.add_argument("--db", default="site.db", help="hello: the SQLite database")
    args = parser.parse_args()
    # The workers import the app module afresh: they read their settings from the environment.
    if args.workload == "shop":
        os.environ.update(SHOP_REDIS=args.redis, SHOP_API=args.api, SHOP_NAME=args.name)
    else:
        sys.path.insert(0, HERE)
        import hello

        # Created and seeded once, here, before any worker opens it.
        hello.prepare(args.db)
        os.environ["HELLO_DB"] = os.path.abspath(args.db)
    print(f"http://127.0.0.1:{args.port}/mcp", flush=True)
    uvicorn.run(
        f"{args.workload}:app",
        app_dir=HERE,
        host="127.0.0.1",
        port=args.port,
        workers=args.workers,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
