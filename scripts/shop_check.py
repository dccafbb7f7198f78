"""The benchmark workloads' correctness check (scripts/bench-peers.sh): every tool of each server
named on the command line (NAME=URL) answers as expected. Exits non-zero, naming the server, the
tool and what is wrong, on the first difference.

  python3 scripts/shop_check.py [--workload shop|hello] [--protocol 2026-07-28|2025] NAME=URL...

--workload shop (the default) checks search_products, get_user_cart and checkout
(bench/shared/shop.rs; each answer's server_type must be NAME); hello checks
my-plugin-count-posts over the `site` example's seeded SQLite database.

--protocol picks the requests: 2026-07-28 (the default) sends requests that need no session
(the envelope in `_meta`, and the Mcp-Method / Mcp-Name headers); 2025 sends plain 2025-11-25
`tools/call` POSTs and, if the server answers that it needs a session, first runs the
`initialize` handshake and carries its Mcp-Session-Id. A server's own mode can be given after
its URL, `NAME=URL#2025`, overriding --protocol for it.
"""

import argparse
import json
import sys
import urllib.error
import urllib.request

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class Server:
    """One server under check, and how it is spoken to."""

    def __init__(self, name, url, protocol):
        self.name, self.url, self.protocol = name, url, protocol
        self.session = None  # a 2025 session, when the server wanted one
        self.ids = iter(range(1, 1 << 30))

    def post(self, body, headers):
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), method="POST", headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **headers,
        })
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
            session = response.headers.get("mcp-session-id")
        if not text.strip():
            return None, session
        # A JSON body, or an event stream whose answer is its one message with a result or an
        # error (after, perhaps, an empty priming event and notifications).
        events = [json.loads(l[5:]) for l in text.splitlines() if l.startswith("data:") and l[5:].strip()]
        if not events:
            return json.loads(text), session
        return next((e for e in events if "result" in e or "error" in e), events[-1]), session

    def call(self, tool, arguments):
        """The tool's answer, a JSON-RPC message."""
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}
        if self.protocol == MODERN:
            body["params"]["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "shop-check", "version": "1"}}
            return self.post(body, {"mcp-protocol-version": MODERN, "mcp-method": "tools/call",
                                    "mcp-name": tool})[0]
        if self.session is None:
            try:
                return self.post(body, {"mcp-protocol-version": LEGACY})[0]
            except urllib.error.HTTPError as error:
                if error.code not in (400, 404):
                    raise
                self.initialize()
        return self.post(body, {"mcp-protocol-version": LEGACY, "mcp-session-id": self.session})[0]

    def initialize(self):
        """The 2025 handshake, for a server that serves 2025 requests only in a session."""
        answer, session = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "shop-check", "version": "1"}}}, {})
        if session is None:
            raise AssertionError(f"{self.name}: needs a session but gave none: {answer}")
        self.session = session
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                  {"mcp-protocol-version": LEGACY, "mcp-session-id": session})

    def close(self):
        """End the 2025 session, if there is one."""
        if self.session is not None:
            request = urllib.request.Request(self.url, method="DELETE", headers={
                "mcp-protocol-version": LEGACY, "mcp-session-id": self.session})
            try:
                urllib.request.urlopen(request, timeout=10).close()
            except urllib.error.HTTPError:
                pass

    def result(self, tool, arguments):
        """The tool's structured answer, which must equal its JSON text."""
        message = self.call(tool, arguments)
        result = message.get("result")
        if result is None or result.get("isError"):
            raise AssertionError(f"{self.name}: {tool} failed: {message}")
        structured = result.get("structuredContent")
        if structured != json.loads(result["content"][0]["text"]):
            raise AssertionError(f"{self.name}: {tool}: the text and structuredContent differ: {result}")
        return structured

    def mode(self):
        if self.protocol == MODERN:
            return f"{MODERN} requests without a session"
        if self.session is None:
            return f"{LEGACY} requests without initialize or session"
        return f"{LEGACY} requests in a session, after initialize"


# What the catalog holds (bench/shared/shop.rs, Product::nth): Electronics is every 20th
# product from the first, priced 1 + (i % 99900) / 100.
def price(i):
    return 1 + (i % 99_900) / 100


electronics = [i for i in range(0, 100_000, 20) if 50 <= price(i) <= 500]


def check_shop(server):
    call = server.result
    search = call("search_products", {})
    assert search["total_found"] == len(electronics), search["total_found"]
    assert [p["id"] for p in search["products"]] == sorted(
        (i + 1 for i in electronics), key=lambda id_: (price(id_ - 1), id_))[:10], search
    assert len(search["top10_popular_ids"]) == 10, search
    # A second configuration of one server (`rmcp-json` is rmcp) reports that server's type.
    assert search["server_type"] == server.name.removesuffix("-json"), search
    narrow = call("search_products", {"category": "Books", "min_price": 10, "max_price": 10.5, "limit": 3})
    assert narrow["category"] == "Books" and len(narrow["products"]) == 3, narrow
    assert all(10 <= p["price"] <= 10.5 for p in narrow["products"]), narrow

    cart = call("get_user_cart", {"user_id": "user-00007"})
    assert cart["user_id"] == "user-00007", cart
    assert cart["cart"]["item_count"] in (2, 3), cart
    assert len(cart["recent_history"]) == 5, cart

    before = call("checkout", {"user_id": "user-00007", "items": [
        {"product_id": 42, "quantity": 2}, {"product_id": 1337, "quantity": 1}]})
    # 2 x 1.41 + 14.36 = 17.18; tax 1.46; shipping 5.99 under 100.
    assert before["status"] == "confirmed" and before["items_count"] == 2, before
    assert abs(before["total"] - 24.63) < 1e-9, before
    after = call("checkout", {"user_id": "user-00007", "items": [{"product_id": 2, "quantity": 1}]})
    assert after["rate_limit_count"] == before["rate_limit_count"] + 1, (before, after)
    history = call("get_user_cart", {"user_id": "user-00007"})["recent_history"]
    assert len(history) == 5, history


# The `site` example's seed (examples/shared/site.rs): published posts of each type.
PUBLISHED = {"post": 2, "page": 1, "attachment": 1}


def check_hello(server):
    for post_type, count in PUBLISHED.items():
        answer = server.result("my-plugin-count-posts", {"input": post_type})
        assert answer == {"result": count}, (post_type, answer)
    # A type the tool does not know is refused: an error result or a JSON-RPC error.
    try:
        refused = server.call("my-plugin-count-posts", {"input": "nonsense"})
    except urllib.error.HTTPError as error:
        refused = {"error": f"HTTP {error.code}"}
    assert "error" in refused or refused.get("result", {}).get("isError"), refused


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--workload", choices=["shop", "hello"], default="shop")
    parser.add_argument("--protocol", choices=[MODERN, "2025"], default=MODERN)
    parser.add_argument("servers", nargs="+", metavar="NAME=URL[#2025|#2026-07-28]")
    args = parser.parse_args()
    check = check_shop if args.workload == "shop" else check_hello
    for argument in args.servers:
        name, url = argument.split("=", 1)
        url, _, protocol = url.partition("#")
        protocol = protocol or args.protocol
        if protocol not in (MODERN, "2025"):
            sys.exit(f"{name}: unknown protocol {protocol!r} (2026-07-28 or 2025)")
        server = Server(name, url, protocol)
        try:
            check(server)
        finally:
            server.close()
        print(f"{args.workload} check: {name} answered every tool as expected ({server.mode()})")


if __name__ == "__main__":
    main()
