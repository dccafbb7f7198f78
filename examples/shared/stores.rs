//! The `--store` URLs of the `site` and `todo` examples: where the server's records are kept
//! when they outlive a process and are shared by replicas.

/// Whether `url` names a PostgreSQL database.
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Whether `url` names a Redis (or Valkey) server.
pub fn is_redis(url: &str) -> bool {
    url.starts_with("redis://")
}

/// `url` without its password, to be printed.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = &url[scheme + 3..at];
            let user = user.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Why a build without `feature` cannot use `url` (`example` names the example to build).
pub fn needs(feature: &str, example: &str) -> String {
    format!(
        "a {feature}:// URL needs a build with the `{feature}` feature: cargo run --features {feature} --example {example} -- ..."
    )
}

/// The PostgreSQL store at `url`.
#[cfg(feature = "postgres")]
pub async fn postgres(url: &str, _: &str) -> Result<impl abilities::store::Store, String> {
    abilities::store::PostgresStore::connect(url)
        .await
        .map_err(|e| format!("cannot use the store {}: {e}", redact(url)))
}

/// The PostgreSQL store at `url`: not in this build.
#[cfg(not(feature = "postgres"))]
pub async fn postgres(_: &str, example: &str) -> Result<abilities::store::MemoryStore, String> {
    Err(needs("postgres", example))
}

/// The Redis store at `url`.
#[cfg(feature = "redis")]
pub async fn redis(url: &str, _: &str) -> Result<impl abilities::store::Store, String> {
    abilities::store::RedisStore::connect(url)
        .await
        .map_err(|e| format!("cannot use the store {}: {e}", redact(url)))
}

/// The Redis store at `url`: not in this build.
#[cfg(not(feature = "redis"))]
pub async fn redis(_: &str, example: &str) -> Result<abilities::store::MemoryStore, String> {
    Err(needs("redis", example))
}
