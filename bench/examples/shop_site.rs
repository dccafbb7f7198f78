// cargo run --release -p abilities-bench --example shop_site -- --http 127.0.0.1:8101
//! The shop workload's three tools (`bench/shared/shop.rs`) as abilities: what `shop_rmcp`
//! serves by hand with rmcp, with the same I/O per call (Redis and the `shop_api` example).

#[path = "../shared/shop.rs"]
#[allow(dead_code, reason = "the seed and the catalog are the API's")]
mod shop;

use std::net::SocketAddr;
use std::process::ExitCode;

use abilities::{AbilityError, Server, State, ability};
use clap::Parser;
use shop::{
    CartArgs, CartItem, CartResult, CheckoutArgs, CheckoutResult, SearchArgs, SearchResult, Shop,
    ShopError,
};

/// Serve the shop's tools.
#[derive(Parser)]
struct Args {
    /// Serve streamable HTTP at /mcp on this address instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// Redis.
    #[arg(long, default_value = "redis://127.0.0.1:6390")]
    redis: String,
    /// The shop API (the `shop_api` example).
    #[arg(long, default_value = "http://127.0.0.1:8100")]
    api: String,
}

fn failed(error: ShopError) -> AbilityError {
    AbilityError::failed(error.to_string())
}

/// Search the catalog: a category's products in a price range, cheapest first, with the ten
/// most popular products' ids.
#[ability(semantic = "READ")]
async fn search_products(
    shop: State<Shop>,
    #[param(default = "Electronics".to_owned())] category: String,
    #[param(default = 50.0)] min_price: f64,
    #[param(default = 500.0)] max_price: f64,
    #[param(default = 10)] limit: u32,
) -> Result<SearchResult, AbilityError> {
    let args = SearchArgs {
        category,
        min_price,
        max_price,
        limit,
    };
    shop.search_products(args).await.map_err(failed)
}

/// A user's cart, with their five most recent orders.
#[ability(semantic = "READ")]
async fn get_user_cart(
    shop: State<Shop>,
    #[param(default = shop::user(42))] user_id: String,
) -> Result<CartResult, AbilityError> {
    shop.get_user_cart(CartArgs { user_id })
        .await
        .map_err(failed)
}

/// Check out a cart: price it, count the user's orders and record the order.
#[ability(semantic = "CREATE")]
async fn checkout(
    shop: State<Shop>,
    #[param(default = shop::user(42))] user_id: String,
    #[param(default = vec![CartItem { product_id: 42, quantity: 2 }, CartItem { product_id: 1337, quantity: 1 }])]
    items: Vec<CartItem>,
) -> Result<CheckoutResult, AbilityError> {
    shop.checkout(CheckoutArgs { user_id, items })
        .await
        .map_err(failed)
}

#[tokio::main]
async fn main() -> ExitCode {
    // The same logging set-up as `shop_rmcp`, so both pay the same for it.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp=error".into()),
        )
        .init();
    let args = Args::parse();
    let run = async {
        let shop = Shop::connect(&args.redis, &args.api, "abilities").await?;
        let server = Server::builder()
            .name("shop", "0.1.0")
            .state(shop)
            .build()?;
        match args.http {
            Some(addr) => server.serve_http(addr).await?,
            None => server.serve_stdio().await?,
        }
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
