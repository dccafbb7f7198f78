//! The I/O workload of the public cross-SDK MCP server benchmark ("MCP Server Performance
//! Benchmark v2"), rebuilt on this machine: a product catalog behind a local HTTP API (the
//! `shop_api` example), carts, order history, popularity and rate-limit counters in Redis, and
//! three tools that combine them. Every server of the comparison calls these functions, so each
//! does the same I/O per call and answers the same JSON; only the MCP machinery around them
//! differs.
//!
//! - `search_products`: the API's price-sorted search and Redis' ten most popular products, at
//!   once.
//! - `get_user_cart`: the cart (a Redis hash), then at once its last five orders (a Redis list)
//!   and its first product (the API).
//! - `checkout`: at once the API's order total and one Redis pipeline (a rate-limit counter,
//!   the order appended to the history, the product's popularity raised).

use std::time::{SystemTime, UNIX_EPOCH};

use redis::AsyncCommands;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Products in the catalog.
pub(crate) const PRODUCTS: u32 = 100_000;
/// Users with a cart.
pub(crate) const CART_USERS: u32 = 10_000;
/// Users with an order history (20 orders each).
pub(crate) const HISTORY_USERS: u32 = 1_000;

/// The catalog's categories; product `i` (from 0) is in `CATEGORIES[i % 20]`.
pub(crate) const CATEGORIES: [&str; 20] = [
    "Electronics",
    "Books",
    "Clothing",
    "Home",
    "Garden",
    "Sports",
    "Toys",
    "Beauty",
    "Grocery",
    "Automotive",
    "Health",
    "Music",
    "Movies",
    "Office",
    "Pets",
    "Shoes",
    "Jewelry",
    "Tools",
    "Baby",
    "Games",
];

/// One product of the catalog, as the API serves it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Product {
    pub(crate) id: u32,
    pub(crate) sku: String,
    pub(crate) name: String,
    pub(crate) category: String,
    pub(crate) price: f64,
    pub(crate) rating: f64,
    pub(crate) tags: Vec<String>,
    pub(crate) description: String,
}

impl Product {
    /// Product `index` (from 0) of the catalog: the same on every run.
    pub(crate) fn nth(index: u32) -> Self {
        let category = CATEGORIES[(index % 20) as usize];
        let tags = ["new", "sale", "popular", "eco"]
            .iter()
            .take(2 + (index % 3) as usize)
            .map(|t| (*t).to_owned())
            .collect();
        Self {
            id: index + 1,
            sku: format!("SKU-{:06}", index + 1),
            name: format!("{category} item {}", index + 1),
            category: category.to_owned(),
            price: 1.0 + f64::from(index % 99_900) / 100.0,
            rating: 1.0 + f64::from(index % 41) / 10.0,
            tags,
            description: format!(
                "A {} from the {category} aisle, catalog number {}, kept in stock for the benchmark.",
                category.to_lowercase(),
                index + 1
            ),
        }
    }
}

/// The user a load client acts as: `user-00001`...
pub(crate) fn user(n: u32) -> String {
    format!("user-{n:05}")
}

/// A cart line.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct CartItem {
    /// The product's id.
    pub(crate) product_id: u32,
    /// How many.
    pub(crate) quantity: u32,
}

/// Arguments of `search_products`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SearchArgs {
    /// The category (default `Electronics`).
    #[serde(default = "default_category")]
    pub(crate) category: String,
    /// Lowest price (default 50).
    #[serde(default = "default_min_price")]
    pub(crate) min_price: f64,
    /// Highest price (default 500).
    #[serde(default = "default_max_price")]
    pub(crate) max_price: f64,
    /// How many products (default 10).
    #[serde(default = "default_limit")]
    pub(crate) limit: u32,
}

/// Arguments of `get_user_cart`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CartArgs {
    /// The user (default `user-00042`).
    #[serde(default = "default_user")]
    pub(crate) user_id: String,
}

/// Arguments of `checkout`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CheckoutArgs {
    /// The user (default `user-00042`).
    #[serde(default = "default_user")]
    pub(crate) user_id: String,
    /// What is bought (default two of product 42 and one of product 1337).
    #[serde(default = "default_items")]
    pub(crate) items: Vec<CartItem>,
}

fn default_category() -> String {
    "Electronics".to_owned()
}
fn default_min_price() -> f64 {
    50.0
}
fn default_max_price() -> f64 {
    500.0
}
fn default_limit() -> u32 {
    10
}
fn default_user() -> String {
    user(42)
}
fn default_items() -> Vec<CartItem> {
    vec![
        CartItem {
            product_id: 42,
            quantity: 2,
        },
        CartItem {
            product_id: 1337,
            quantity: 1,
        },
    ]
}

/// One product of a search's answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Found {
    id: u64,
    sku: Value,
    name: Value,
    price: Value,
    rating: Value,
    /// Its place among the ten most popular (from 1), if it is one.
    popularity_rank: Option<usize>,
}

/// `search_products`' answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchResult {
    category: String,
    total_found: Value,
    products: Vec<Found>,
    top10_popular_ids: Vec<u32>,
    server_type: &'static str,
}

/// A cart as `get_user_cart` shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CartView {
    items: Vec<Value>,
    item_count: usize,
    estimated_total: f64,
}

/// `get_user_cart`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CartResult {
    user_id: String,
    cart: CartView,
    recent_history: Vec<Value>,
    server_type: &'static str,
}

/// `checkout`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CheckoutResult {
    order_id: Value,
    user_id: String,
    total: Value,
    items_count: Value,
    rate_limit_count: u64,
    status: &'static str,
    server_type: &'static str,
}

/// What a tool could not do: the API or Redis failed, or answered what it should not.
#[derive(Debug)]
pub(crate) struct ShopError(pub String);

impl std::fmt::Display for ShopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShopError {}

impl From<redis::RedisError> for ShopError {
    fn from(e: redis::RedisError) -> Self {
        Self(format!("redis: {e}"))
    }
}

impl From<reqwest::Error> for ShopError {
    fn from(e: reqwest::Error) -> Self {
        Self(format!("api: {e}"))
    }
}

/// What the tools use: one multiplexed Redis connection and one pooled HTTP client, shared by
/// every call.
#[derive(Clone)]
pub(crate) struct Shop {
    redis: redis::aio::MultiplexedConnection,
    http: reqwest::Client,
    api: String,
    /// Which server answers (`server_type` in every result).
    server: &'static str,
}

impl Shop {
    /// Connect to Redis at `redis_url` and use the API at `api` (`http://127.0.0.1:8100`).
    pub(crate) async fn connect(
        redis_url: &str,
        api: &str,
        server: &'static str,
    ) -> Result<Self, ShopError> {
        let client = redis::Client::open(redis_url)?;
        let redis = client.get_multiplexed_async_connection().await?;
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true)
            .build()?;
        Ok(Self {
            redis,
            http,
            api: api.trim_end_matches('/').to_owned(),
            server,
        })
    }

    /// `search_products`.
    pub(crate) async fn search_products(
        &self,
        args: SearchArgs,
    ) -> Result<SearchResult, ShopError> {
        let url = format!("{}/products/search", self.api);
        let search = async {
            let answer: Value = self
                .http
                .get(&url)
                .query(&[
                    ("category", args.category.clone()),
                    ("min_price", args.min_price.to_string()),
                    ("max_price", args.max_price.to_string()),
                    ("limit", args.limit.to_string()),
                ])
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            Ok::<_, ShopError>(answer)
        };
        let mut redis = self.redis.clone();
        let popular = async move {
            let ids: Vec<String> = redis.zrevrange("bench:popular", 0, 9).await?;
            Ok::<_, ShopError>(ids)
        };
        let (found, popular) = tokio::try_join!(search, popular)?;
        let top: Vec<u32> = popular
            .iter()
            .filter_map(|member| member.strip_prefix("product:")?.parse().ok())
            .collect();
        let products: Vec<Found> = found["products"]
            .as_array()
            .ok_or_else(|| ShopError("api: the search answered no products".to_owned()))?
            .iter()
            .map(|p| {
                let id = p["id"].as_u64().unwrap_or_default();
                Found {
                    id,
                    sku: p["sku"].clone(),
                    name: p["name"].clone(),
                    price: p["price"].clone(),
                    rating: p["rating"].clone(),
                    popularity_rank: top.iter().position(|t| u64::from(*t) == id).map(|r| r + 1),
                }
            })
            .collect();
        Ok(SearchResult {
            category: args.category,
            total_found: found["total_found"].clone(),
            products,
            top10_popular_ids: top,
            server_type: self.server,
        })
    }

    /// `get_user_cart`.
    pub(crate) async fn get_user_cart(&self, args: CartArgs) -> Result<CartResult, ShopError> {
        let mut redis = self.redis.clone();
        let cart: std::collections::HashMap<String, String> = redis
            .hgetall(format!("bench:cart:{}", args.user_id))
            .await?;
        let items: Vec<Value> = match cart.get("items") {
            Some(text) => serde_json::from_str(text)
                .map_err(|e| ShopError(format!("redis: the cart's items are not JSON: {e}")))?,
            None => Vec::new(),
        };
        let first = items.first().and_then(|item| item["product_id"].as_u64());
        let history_key = format!("bench:history:{}", args.user_id);
        let history = async move {
            let entries: Vec<String> = redis.lrange(history_key, 0, 4).await?;
            Ok::<_, ShopError>(entries)
        };
        let product = async {
            match first {
                Some(id) => {
                    let product: Value = self
                        .http
                        .get(format!("{}/products/{id}", self.api))
                        .send()
                        .await?
                        .error_for_status()?
                        .json()
                        .await?;
                    Ok::<_, ShopError>(Some(product))
                }
                None => Ok(None),
            }
        };
        let (history, product) = tokio::try_join!(history, product)?;
        let price = product
            .as_ref()
            .and_then(|p| p["price"].as_f64())
            .unwrap_or_default();
        let count: u64 = items.iter().filter_map(|i| i["qty"].as_u64()).sum();
        let recent: Vec<Value> = history
            .iter()
            .filter_map(|entry| serde_json::from_str(entry).ok())
            .collect();
        Ok(CartResult {
            user_id: args.user_id,
            cart: CartView {
                item_count: items.len(),
                items,
                estimated_total: (price * count as f64 * 100.0).round() / 100.0,
            },
            recent_history: recent,
            server_type: self.server,
        })
    }

    /// `checkout`.
    pub(crate) async fn checkout(&self, args: CheckoutArgs) -> Result<CheckoutResult, ShopError> {
        let Some(first) = args.items.first() else {
            return Err(ShopError("checkout needs at least one item".to_owned()));
        };
        let number: u32 = args
            .user_id
            .strip_prefix("user-")
            .and_then(|n| n.parse().ok())
            .unwrap_or_default();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let limit_key = format!("bench:ratelimit:{}", user(number % 100 + 1));
        let history_key = format!("bench:history:{}", args.user_id);
        let member = format!("product:{}", first.product_id);
        let entry = json!({
            "order_id": format!("ORD-{}-{now}", args.user_id),
            "items": args.items,
            "ts": now,
        })
        .to_string();
        let total = async {
            let answer: Value = self
                .http
                .post(format!("{}/cart/calculate", self.api))
                .json(&json!({"user_id": args.user_id, "items": args.items}))
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            Ok::<_, ShopError>(answer)
        };
        let mut redis = self.redis.clone();
        let counters = async move {
            let (count, _, _): (u64, u64, f64) = redis::pipe()
                .incr(limit_key, 1)
                .rpush(history_key, entry)
                .zincr("bench:popular", member, 1)
                .query_async(&mut redis)
                .await?;
            Ok::<_, ShopError>(count)
        };
        let (total, count) = tokio::try_join!(total, counters)?;
        Ok(CheckoutResult {
            order_id: total["order_id"].clone(),
            user_id: args.user_id,
            total: total["total"].clone(),
            items_count: total["items_count"].clone(),
            rate_limit_count: count,
            status: "confirmed",
            server_type: self.server,
        })
    }
}

/// Fill Redis with the workload's data, replacing what the database held: a cart for each of
/// [`CART_USERS`] users (2 or 3 lines), 20 past orders for each of [`HISTORY_USERS`], every
/// product's popularity, and 100 rate-limit counters at 0.
pub(crate) async fn seed(redis_url: &str) -> Result<(), ShopError> {
    let client = redis::Client::open(redis_url)?;
    let mut redis = client.get_multiplexed_async_connection().await?;
    redis::cmd("FLUSHDB").query_async::<()>(&mut redis).await?;
    for chunk in (1..=CART_USERS).collect::<Vec<_>>().chunks(1_000) {
        let mut pipe = redis::pipe();
        for &n in chunk {
            let lines: Vec<Value> = (0..2 + n % 2)
                .map(|k| json!({"product_id": (n * 7 + k * 13) % PRODUCTS + 1, "qty": 1 + (n + k) % 3}))
                .collect();
            pipe.hset_multiple(
                format!("bench:cart:{}", user(n)),
                &[
                    ("user_id", user(n)),
                    ("items", Value::Array(lines).to_string()),
                    ("created", "2026-01-01T00:00:00Z".to_owned()),
                ],
            )
            .ignore();
        }
        pipe.query_async::<()>(&mut redis).await?;
    }
    for chunk in (1..=HISTORY_USERS).collect::<Vec<_>>().chunks(100) {
        let mut pipe = redis::pipe();
        for &n in chunk {
            let orders: Vec<String> = (0..20)
                .map(|k| {
                    json!({
                        "order_id": format!("ORD-{n:05}-{k:02}"),
                        "product_id": (n * 31 + k * 17) % PRODUCTS + 1,
                        "qty": 1 + k % 3,
                        "price": Product::nth((n * 31 + k * 17) % PRODUCTS).price,
                        "ts": 1_767_225_600 + u64::from(k) * 3_600,
                    })
                    .to_string()
                })
                .collect();
            pipe.rpush(format!("bench:history:{}", user(n)), orders)
                .ignore();
        }
        pipe.query_async::<()>(&mut redis).await?;
    }
    for chunk in (0..PRODUCTS).collect::<Vec<_>>().chunks(5_000) {
        let members: Vec<(u32, String)> = chunk
            .iter()
            .map(|&i| (i * 7 % 10_000, format!("product:{}", i + 1)))
            .collect();
        redis
            .zadd_multiple::<_, _, _, ()>("bench:popular", &members)
            .await?;
    }
    let mut pipe = redis::pipe();
    for n in 1..=100 {
        pipe.set(format!("bench:ratelimit:{}", user(n)), 0).ignore();
    }
    pipe.query_async::<()>(&mut redis).await?;
    Ok(())
}
