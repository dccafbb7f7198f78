"""The shop workload's correctness check (scripts/bench-shop.sh): every tool of each server
named on the command line (NAME=URL) answers as expected, over 2026-07-28 requests that need
no session. Exits non-zero, naming the server, the tool and what is wrong, on the first
difference."""

import json
import sys
import urllib.request


def call(url, tool, arguments, id_=1):
    body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "shop-check", "version": "1"}}}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": tool,
    })
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    data = next((l[5:] for l in text.splitlines() if l.startswith("data:")), text)
    message = json.loads(data)
    result = message.get("result")
    if result is None or result.get("isError"):
        raise AssertionError(f"{tool} failed: {message}")
    structured = result.get("structuredContent")
    if structured != json.loads(result["content"][0]["text"]):
        raise AssertionError(f"{tool}: the text and structuredContent differ: {result}")
    return structured


# What the catalog holds (bench/shared/shop.rs, Product::nth): Electronics is every 20th
# product from the first, priced 1 + (i % 99900) / 100.
def price(i):
    return 1 + (i % 99_900) / 100


electronics = [i for i in range(0, 100_000, 20) if 50 <= price(i) <= 500]


def check(name, url):
    search = call(url, "search_products", {})
    assert search["total_found"] == len(electronics), search["total_found"]
    assert [p["id"] for p in search["products"]] == sorted(
        (i + 1 for i in electronics), key=lambda id_: (price(id_ - 1), id_))[:10], search
    assert len(search["top10_popular_ids"]) == 10, search
    assert search["server_type"] == name, search
    narrow = call(url, "search_products", {"category": "Books", "min_price": 10, "max_price": 10.5, "limit": 3})
    assert narrow["category"] == "Books" and len(narrow["products"]) == 3, narrow
    assert all(10 <= p["price"] <= 10.5 for p in narrow["products"]), narrow

    cart = call(url, "get_user_cart", {"user_id": "user-00007"})
    assert cart["user_id"] == "user-00007", cart
    assert cart["cart"]["item_count"] in (2, 3), cart
    assert len(cart["recent_history"]) == 5, cart

    before = call(url, "checkout", {"user_id": "user-00007", "items": [
        {"product_id": 42, "quantity": 2}, {"product_id": 1337, "quantity": 1}]})
    # 2 x 1.41 + 14.36 = 17.18; tax 1.46; shipping 5.99 under 100.
    assert before["status"] == "confirmed" and before["items_count"] == 2, before
    assert abs(before["total"] - 24.63) < 1e-9, before
    after = call(url, "checkout", {"user_id": "user-00007", "items": [{"product_id": 2, "quantity": 1}]})
    assert after["rate_limit_count"] == before["rate_limit_count"] + 1, (before, after)
    history = call(url, "get_user_cart", {"user_id": "user-00007"})["recent_history"]
    assert len(history) == 5, history
    print(f"shop check: {name} answered every tool as expected")


for argument in sys.argv[1:]:
    name, url = argument.split("=", 1)
    check(name, url)
