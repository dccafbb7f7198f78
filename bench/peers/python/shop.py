"""The shop workload (bench/shared/shop.rs) served by FastMCP under uvicorn: the same three tools,
the same Redis commands and API calls per call, the same structured answers.

Served by serve.py (`--workload shop`), which sets SHOP_REDIS, SHOP_API and SHOP_NAME for the
uvicorn workers; `app` is the stateless streamable HTTP app (JSON answers) at /mcp.
"""

import asyncio
import json
import math
import os
import time
from typing import Annotated, Any

import httpx
import redis.asyncio as redis
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.lifespan import lifespan
from pydantic import BaseModel, Field

# Set by serve.py for every worker process (uvicorn imports this module in each).
REDIS_URL = os.environ.get("SHOP_REDIS", "redis://127.0.0.1:6390")
API_URL = os.environ.get("SHOP_API", "http://127.0.0.1:8100").rstrip("/")
SERVER_TYPE = os.environ.get("SHOP_NAME", "fastmcp")


@lifespan
async def clients(server):
    """One Redis connection pool and one keep-alive HTTP client per worker, shared by every call."""
    store = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    http = httpx.AsyncClient(
        base_url=API_URL, limits=httpx.Limits(max_keepalive_connections=64), timeout=10.0
    )
    try:
        yield {"redis": store, "http": http}
    finally:
        await http.aclose()
        await store.aclose()


mcp = FastMCP("shop", version="0.1.0", lifespan=clients)


class CartItem(BaseModel):
    """A cart line."""

    product_id: Annotated[int, Field(ge=0, description="The product's id.")]
    quantity: Annotated[int, Field(ge=0, description="How many.")]


class Found(BaseModel):
    """One product of a search's answer."""

    id: int
    sku: Any
    name: Any
    price: Any
    rating: Any
    popularity_rank: int | None = Field(
        description="Its place among the ten most popular (from 1), if it is one."
    )


class SearchResult(BaseModel):
    category: str
    total_found: Any
    products: list[Found]
    top10_popular_ids: list[int]
    server_type: str


class CartView(BaseModel):
    items: list[Any]
    item_count: int
    estimated_total: float


class CartResult(BaseModel):
    user_id: str
    cart: CartView
    recent_history: list[Any]
    server_type: str


class CheckoutResult(BaseModel):
    order_id: Any
    user_id: str
    total: Any
    items_count: Any
    rate_limit_count: int
    status: str
    server_type: str


def user(n: int) -> str:
    """The user a load client acts as: `user-00001`..."""
    return f"user-{n:05d}"


def round_half_away(x: float) -> float:
    """Rust's f64::round."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


async def api_json(response_awaitable) -> Any:
    """The API's JSON answer, or the tool's error when the API failed."""
    try:
        response = await response_awaitable
        response.raise_for_status()
        return response.json()
    except httpx.HTTPError as error:
        raise ToolError(f"api: {error}") from error


@mcp.tool(annotations={"readOnlyHint": True})
async def search_products(
    ctx: Context,
    category: Annotated[str, Field(description="The category (default `Electronics`).")] = "Electronics",
    min_price: Annotated[float, Field(description="Lowest price (default 50).")] = 50.0,
    max_price: Annotated[float, Field(description="Highest price (default 500).")] = 500.0,
    limit: Annotated[int, Field(ge=0, description="How many products (default 10).")] = 10,
) -> SearchResult:
    """Search the catalog: a category's products in a price range, cheapest first, with the ten
    most popular products' ids."""
    store, http = ctx.lifespan_context["redis"], ctx.lifespan_context["http"]
    params = {"category": category, "min_price": min_price, "max_price": max_price, "limit": limit}
    # The API's search and Redis' ten most popular, at once.
    found, popular = await asyncio.gather(
        api_json(http.get("/products/search", params=params)),
        store.zrevrange("bench:popular", 0, 9),
    )
    top = []
    for member in popular:
        if member.startswith("product:") and member[8:].isdigit():
            top.append(int(member[8:]))
    if not isinstance(found.get("products"), list):
        raise ToolError("api: the search answered no products")
    products = []
    for p in found["products"]:
        id_ = p.get("id") if isinstance(p.get("id"), int) else 0
        products.append(Found(
            id=id_, sku=p.get("sku"), name=p.get("name"), price=p.get("price"),
            rating=p.get("rating"),
            popularity_rank=top.index(id_) + 1 if id_ in top else None,
        ))
    return SearchResult(
        category=category, total_found=found.get("total_found"), products=products,
        top10_popular_ids=top, server_type=SERVER_TYPE,
    )


@mcp.tool(annotations={"readOnlyHint": True})
async def get_user_cart(
    ctx: Context,
    user_id: Annotated[str, Field(description="The user (default `user-00042`).")] = user(42),
) -> CartResult:
    """A user's cart, with their five most recent orders."""
    store, http = ctx.lifespan_context["redis"], ctx.lifespan_context["http"]
    cart = await store.hgetall(f"bench:cart:{user_id}")
    try:
        items = json.loads(cart["items"]) if "items" in cart else []
    except ValueError as error:
        raise ToolError(f"redis: the cart's items are not JSON: {error}") from error
    first = items[0].get("product_id") if items and isinstance(items[0], dict) else None

    async def product():
        if isinstance(first, int):
            return await api_json(http.get(f"/products/{first}"))
        return None

    # Then, at once, the last five orders and the cart's first product.
    history, first_product = await asyncio.gather(
        store.lrange(f"bench:history:{user_id}", 0, 4), product()
    )
    price = first_product.get("price") if isinstance(first_product, dict) else None
    price = float(price) if isinstance(price, (int, float)) else 0.0
    count = sum(i["qty"] for i in items if isinstance(i, dict) and isinstance(i.get("qty"), int))
    recent = []
    for entry in history:
        try:
            recent.append(json.loads(entry))
        except ValueError:
            pass
    return CartResult(
        user_id=user_id,
        cart=CartView(
            items=items, item_count=len(items),
            estimated_total=round_half_away(price * count * 100.0) / 100.0,
        ),
        recent_history=recent,
        server_type=SERVER_TYPE,
    )


@mcp.tool
async def checkout(
    ctx: Context,
    user_id: Annotated[str, Field(description="The user (default `user-00042`).")] = user(42),
    items: Annotated[
        list[CartItem],
        Field(description="What is bought (default two of product 42 and one of product 1337)."),
    ] = [CartItem(product_id=42, quantity=2), CartItem(product_id=1337, quantity=1)],
) -> CheckoutResult:
    """Check out a cart: price it, count the user's orders and record the order."""
    if not items:
        raise ToolError("checkout needs at least one item")
    store, http = ctx.lifespan_context["redis"], ctx.lifespan_context["http"]
    digits = user_id.removeprefix("user-") if user_id.startswith("user-") else ""
    number = int(digits) if digits.isdigit() else 0
    now = time.time_ns() // 1_000_000
    lines = [item.model_dump() for item in items]
    entry = json.dumps(
        {"order_id": f"ORD-{user_id}-{now}", "items": lines, "ts": now}, separators=(",", ":")
    )
    # One Redis round trip: the rate-limit counter, the order appended, the product's popularity.
    pipe = store.pipeline(transaction=False)
    pipe.incr(f"bench:ratelimit:{user(number % 100 + 1)}")
    pipe.rpush(f"bench:history:{user_id}", entry)
    pipe.zincrby("bench:popular", 1, f"product:{items[0].product_id}")
    # At once with the API's order total.
    total, (count, _, _) = await asyncio.gather(
        api_json(http.post("/cart/calculate", json={"user_id": user_id, "items": lines})),
        pipe.execute(),
    )
    return CheckoutResult(
        order_id=total.get("order_id"), user_id=user_id, total=total.get("total"),
        items_count=total.get("items_count"), rate_limit_count=count, status="confirmed",
        server_type=SERVER_TYPE,
    )


# The ASGI app uvicorn serves in each worker: streamable HTTP at /mcp, stateless, JSON answers.
app = mcp.http_app(path="/mcp", stateless_http=True, json_response=True)
