// cargo run --release -p abilities-bench --example shop_api -- --seed redis://127.0.0.1:6390
//! The HTTP API the shop workload's tools call (see `bench/shared/shop.rs`): 100,000 products
//! in memory, served as JSON.
//!
//! - `GET /products/search?category=&min_price=&max_price=&limit=`: the category's products in
//!   the price range, cheapest first, `{category, total_found, products}`;
//! - `GET /products/{id}`: one product (404 for an unknown id);
//! - `POST /cart/calculate` `{user_id, items: [{product_id, quantity}]}`: `{order_id, user_id,
//!   subtotal, tax, shipping, discount, total, items_count}` (8.5% tax; shipping 5.99, free and
//!   10% off from 100);
//! - `GET /health`.
//!
//! `--seed REDIS_URL` first fills that Redis database with the workload's carts, histories,
//! popularity and counters (replacing what it held).

#[path = "../shared/shop.rs"]
#[allow(
    dead_code,
    reason = "the servers use the tools; this uses the catalog and the seed"
)]
mod shop;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Parser;
use serde::Deserialize;
use serde_json::json;
use shop::{CartItem, PRODUCTS, Product};

/// Serve the shop API.
#[derive(Parser)]
struct Args {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8100")]
    addr: SocketAddr,
    /// Seed this Redis database first (`redis://127.0.0.1:6390`).
    #[arg(long)]
    seed: Option<String>,
}

/// The catalog, and each category's products sorted by price.
struct Catalog {
    products: Vec<Product>,
    by_category: HashMap<String, Vec<usize>>,
    orders: AtomicU64,
}

impl Catalog {
    fn new() -> Self {
        let products: Vec<Product> = (0..PRODUCTS).map(Product::nth).collect();
        let mut by_category: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, p) in products.iter().enumerate() {
            by_category.entry(p.category.clone()).or_default().push(i);
        }
        for indices in by_category.values_mut() {
            indices.sort_by(|a, b| {
                products[*a]
                    .price
                    .total_cmp(&products[*b].price)
                    .then(a.cmp(b))
            });
        }
        Self {
            products,
            by_category,
            orders: AtomicU64::new(0),
        }
    }
}

#[derive(Deserialize)]
struct Search {
    category: String,
    #[serde(default)]
    min_price: f64,
    #[serde(default = "no_max")]
    max_price: f64,
    #[serde(default = "ten")]
    limit: usize,
}

fn no_max() -> f64 {
    f64::MAX
}

fn ten() -> usize {
    10
}

async fn search(State(catalog): State<Arc<Catalog>>, Query(q): Query<Search>) -> Response {
    let indices = catalog
        .by_category
        .get(&q.category)
        .map_or(&[][..], Vec::as_slice);
    let price = |i: &usize| catalog.products[*i].price;
    let from = indices.partition_point(|i| price(i) < q.min_price);
    let to = indices.partition_point(|i| price(i) <= q.max_price);
    let found = indices.get(from..to.max(from)).unwrap_or_default();
    let products: Vec<&Product> = found
        .iter()
        .take(q.limit)
        .map(|i| &catalog.products[*i])
        .collect();
    Json(json!({"category": q.category, "total_found": found.len(), "products": products}))
        .into_response()
}

async fn product(State(catalog): State<Arc<Catalog>>, Path(id): Path<u32>) -> Response {
    match id
        .checked_sub(1)
        .and_then(|i| catalog.products.get(i as usize))
    {
        Some(p) => Json(p).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "no such product"})),
        )
            .into_response(),
    }
}

#[derive(Deserialize)]
struct Cart {
    user_id: String,
    items: Vec<CartItem>,
}

fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

async fn calculate(State(catalog): State<Arc<Catalog>>, Json(cart): Json<Cart>) -> Response {
    let mut subtotal = 0.0;
    for item in &cart.items {
        let Some(p) = item
            .product_id
            .checked_sub(1)
            .and_then(|i| catalog.products.get(i as usize))
        else {
            let error = format!("no product {}", item.product_id);
            return (StatusCode::NOT_FOUND, Json(json!({"error": error}))).into_response();
        };
        subtotal += p.price * f64::from(item.quantity);
    }
    let subtotal = cents(subtotal);
    let tax = cents(subtotal * 0.085);
    let (shipping, discount) = if subtotal >= 100.0 {
        (0.0, cents(subtotal * 0.1))
    } else {
        (5.99, 0.0)
    };
    let order = catalog.orders.fetch_add(1, Ordering::Relaxed) + 1;
    Json(json!({
        "order_id": format!("ORD-{}-{order}", cart.user_id.replace('-', "")),
        "user_id": cart.user_id,
        "subtotal": subtotal,
        "tax": tax,
        "shipping": shipping,
        "discount": discount,
        "total": cents(subtotal + tax + shipping - discount),
        "items_count": cart.items.len(),
    }))
    .into_response()
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let run = async {
        if let Some(redis) = &args.seed {
            shop::seed(redis).await?;
            eprintln!("seeded {redis}");
        }
        let router = Router::new()
            .route("/products/search", get(search))
            .route("/products/{id}", get(product))
            .route("/cart/calculate", post(calculate))
            .route("/health", get(|| async { "ok" }))
            .with_state(Arc::new(Catalog::new()));
        let listener = tokio::net::TcpListener::bind(args.addr).await?;
        println!("http://{}", listener.local_addr()?);
        axum::serve(listener, router).await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
