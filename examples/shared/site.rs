//! The seeds' WordPress walkthrough: posts on SQLite (a file) or, with the `postgres`
//! feature, PostgreSQL (shared by replicas) and the abilities over them. Used by the `site`
//! example, the benches (`rmcp_site`, `bare_site`, `e2e`, `token_report`) and the tests.

use std::path::Path;
use std::sync::Mutex;

use abilities::{
    AbilityError, Context, State, ability,
    aql::{CollectionQuery, Window},
};
use rusqlite::{Connection, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::pushdown;

use pushdown::{Dialect, Kind, Record};

/// The abilities of this module (and no other the program links), for `Server::builder().registry(..)`.
pub fn registry() -> Result<abilities::Registry, abilities::registry::RegistryError> {
    abilities::Registry::collect_in(module_path!())
}

/// A kind of content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(
    missing_docs,
    reason = "doc comments here would become schema descriptions, which the wire answers pin"
)]
pub enum PostType {
    Post,
    Page,
    Attachment,
}

impl PostType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Post => "post",
            Self::Page => "page",
            Self::Attachment => "attachment",
        }
    }
}

/// Publication status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Draft,
    Publish,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Publish => "publish",
        }
    }
}

/// A post as the site stores it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
struct Post {
    id: i64,
    post_type: String,
    title: String,
    content: String,
    status: String,
    /// The user who wrote it, if anyone did.
    author_id: Option<i64>,
}

/// The site's database.
pub enum Db {
    /// A SQLite file (or memory): one process.
    Sqlite(Mutex<Connection>),
    /// PostgreSQL: every replica connected to it sees the same posts.
    #[cfg(feature = "postgres")]
    #[allow(
        dead_code,
        reason = "the `site` example serves PostgreSQL; others only SQLite"
    )]
    Postgres(deadpool_postgres::Pool),
}

/// The seed of a new database: (type, title, status, author).
const SEED: [(&str, &str, &str, Option<i64>); 5] = [
    ("post", "Hello world", "publish", Some(1)),
    ("post", "Second thoughts", "publish", Some(2)),
    ("post", "Unfinished", "draft", Some(1)),
    ("page", "About", "publish", None),
    ("attachment", "logo.png", "publish", None),
];

const POST_COLUMNS: &[(&str, Kind)] = &[
    ("id", Kind::Integer),
    ("post_type", Kind::Text),
    ("title", Kind::Text),
    ("content", Kind::Text),
    ("status", Kind::Text),
    ("author_id", Kind::Integer),
];

impl Db {
    /// Open the database at `path` (`:memory:` for one in memory), seeding a new one.
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
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
             );",
        )?;
        // A database made before posts had authors.
        let has_author: i64 = conn.query_row(
            "SELECT COUNT(*) FROM pragma_table_info('posts') WHERE name = 'author_id'",
            [],
            |r| r.get(0),
        )?;
        if has_author == 0 {
            conn.execute_batch("ALTER TABLE posts ADD COLUMN author_id INTEGER")?;
        }
        let users: i64 = conn.query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?;
        if users == 0 {
            conn.execute_batch("INSERT INTO users (name) VALUES ('Ada'), ('Grace');")?;
        }
        let count: i64 = conn.query_row("SELECT COUNT(*) FROM posts", [], |r| r.get(0))?;
        if count == 0 {
            for (post_type, title, status, author) in SEED {
                conn.execute(
                    "INSERT INTO posts (post_type, title, content, status, author_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![post_type, title, format!("{title}, in full."), status, author],
                )?;
            }
        }
        Ok(Self::Sqlite(Mutex::new(conn)))
    }

    /// Connect to the PostgreSQL database at `url`, creating (once, whichever replica comes
    /// first) and seeding the tables.
    #[cfg(feature = "postgres")]
    #[allow(
        dead_code,
        reason = "the `site` example serves PostgreSQL; others only SQLite"
    )]
    pub async fn connect(url: &str) -> Result<Self, String> {
        let pool = pushdown::pg_pool(url)?;
        let mut client = pool.get().await.map_err(|e| e.to_string())?;
        let tx = client.transaction().await.map_err(|e| e.to_string())?;
        tx.batch_execute(
            "SELECT pg_advisory_xact_lock(7471);
             CREATE TABLE IF NOT EXISTS users (
                 id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                 name TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS posts (
                 id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                 post_type TEXT NOT NULL,
                 title TEXT NOT NULL,
                 content TEXT NOT NULL,
                 status TEXT NOT NULL,
                 author_id BIGINT REFERENCES users (id)
             );",
        )
        .await
        .map_err(|e| e.to_string())?;
        let count = |table: &'static str| {
            let tx = &tx;
            async move {
                tx.query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])
                    .await
                    .map(|row| row.get::<_, i64>(0))
                    .map_err(|e| e.to_string())
            }
        };
        if count("users").await? == 0 {
            tx.batch_execute("INSERT INTO users (name) VALUES ('Ada'), ('Grace');")
                .await
                .map_err(|e| e.to_string())?;
        }
        if count("posts").await? == 0 {
            for (post_type, title, status, author) in SEED {
                tx.execute(
                    "INSERT INTO posts (post_type, title, content, status, author_id) VALUES ($1, $2, $3, $4, $5)",
                    &[&post_type, &title, &format!("{title}, in full."), &status, &author],
                )
                .await
                .map_err(|e| e.to_string())?;
            }
        }
        tx.commit().await.map_err(|e| e.to_string())?;
        Ok(Self::Postgres(pool))
    }

    /// Published posts of one type.
    pub async fn count(&self, post_type: PostType) -> Result<u64, AbilityError> {
        let count: i64 = match self {
            Self::Sqlite(lock) => pushdown::sqlite(lock)?
                .query_row(
                    "SELECT COUNT(*) FROM posts WHERE post_type = ?1 AND status = 'publish'",
                    [post_type.as_str()],
                    |r| r.get(0),
                )
                .map_err(pushdown::db_error)?,
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => pushdown::pg(pool)
                .await?
                .query_one(
                    "SELECT COUNT(*) FROM posts WHERE post_type = $1 AND status = 'publish'",
                    &[&post_type.as_str()],
                )
                .await
                .map_err(pushdown::db_error)?
                .get(0),
        };
        Ok(count.unsigned_abs())
    }

    /// Posts: `sql` (SQLite, `?1`.. for `values`) or `pg_sql` (PostgreSQL, `$1`..).
    async fn posts(
        &self,
        sql: &str,
        pg_sql: &str,
        values: &[rusqlite::types::Value],
    ) -> Result<Vec<Post>, AbilityError> {
        #[cfg(not(feature = "postgres"))]
        let _ = pg_sql; // PostgreSQL's statement, run with the `postgres` feature
        match self {
            Self::Sqlite(lock) => {
                let conn = pushdown::sqlite(lock)?;
                let mut statement = conn.prepare(sql).map_err(pushdown::db_error)?;
                statement
                    .query_map(rusqlite::params_from_iter(values), Post::from_sqlite)
                    .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
                    .map_err(pushdown::db_error)
            }
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => Ok(pushdown::pg(pool)
                .await?
                .query(pg_sql, &pushdown::pg_params(values))
                .await
                .map_err(pushdown::db_error)?
                .iter()
                .map(Post::from_postgres)
                .collect()),
        }
    }

    /// The rows of a list operation (see `pushdown::list`).
    async fn list<T: Record>(
        &self,
        query: &CollectionQuery,
        listing: impl Fn(Dialect) -> pushdown::Listing<'static>,
        own: Window,
    ) -> Result<Vec<T>, AbilityError> {
        match self {
            Self::Sqlite(lock) => {
                let conn = pushdown::sqlite(lock)?;
                let (rows, _) = pushdown::list(&conn, query, listing(Dialect::Sqlite), own)
                    .map_err(pushdown::db_error)?;
                Ok(rows)
            }
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => {
                let plan =
                    pushdown::plan(query, listing(Dialect::Postgres), own, Dialect::Postgres);
                let client = pushdown::pg(pool).await?;
                if plan.pushed_down {
                    let total: i64 = client
                        .query_one(&plan.count, &pushdown::pg_params(&plan.count_values))
                        .await
                        .map_err(pushdown::db_error)?
                        .get(0);
                    query.paged(total.unsigned_abs());
                }
                Ok(client
                    .query(&plan.select, &pushdown::pg_params(&plan.values))
                    .await
                    .map_err(pushdown::db_error)?
                    .iter()
                    .map(T::from_postgres)
                    .collect())
            }
        }
    }

    /// Run one write: `sql` (SQLite) or `pg_sql` (PostgreSQL) with `values`; rows changed.
    async fn write(
        &self,
        sql: &str,
        pg_sql: &str,
        values: &[rusqlite::types::Value],
    ) -> Result<u64, AbilityError> {
        #[cfg(not(feature = "postgres"))]
        let _ = pg_sql; // PostgreSQL's statement, run with the `postgres` feature
        match self {
            Self::Sqlite(lock) => pushdown::sqlite(lock)?
                .execute(sql, rusqlite::params_from_iter(values))
                .map(|n| n as u64)
                .map_err(pushdown::db_error),
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => pushdown::pg(pool)
                .await?
                .execute(pg_sql, &pushdown::pg_params(values))
                .await
                .map_err(pushdown::db_error),
        }
    }

    /// Insert one row: `sql` (SQLite) or `pg_sql` (PostgreSQL, `RETURNING id`); its id.
    async fn insert(
        &self,
        sql: &str,
        pg_sql: &str,
        values: &[rusqlite::types::Value],
    ) -> Result<i64, AbilityError> {
        #[cfg(not(feature = "postgres"))]
        let _ = pg_sql; // PostgreSQL's statement, run with the `postgres` feature
        match self {
            Self::Sqlite(lock) => {
                let conn = pushdown::sqlite(lock)?;
                conn.execute(sql, rusqlite::params_from_iter(values))
                    .map_err(pushdown::db_error)?;
                Ok(conn.last_insert_rowid())
            }
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => Ok(pushdown::pg(pool)
                .await?
                .query_one(pg_sql, &pushdown::pg_params(values))
                .await
                .map_err(pushdown::db_error)?
                .get(0)),
        }
    }
}

impl Record for Post {
    fn from_sqlite(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            post_type: row.get(1)?,
            title: row.get(2)?,
            content: row.get(3)?,
            status: row.get(4)?,
            author_id: row.get(5)?,
        })
    }

    #[cfg(feature = "postgres")]
    fn from_postgres(row: &tokio_postgres::Row) -> Self {
        Self {
            id: row.get(0),
            post_type: row.get(1),
            title: row.get(2),
            content: row.get(3),
            status: row.get(4),
            author_id: row.get(5),
        }
    }
}

/// Count published posts of one type.
#[ability(
    semantic = "READ",
    flatten,
    name = "my-plugin/count-posts",
    category = "site"
)]
async fn count_posts(db: State<Db>, post_type: PostType) -> Result<u64, AbilityError> {
    db.count(post_type).await
}

/// Get one post by id.
#[ability(semantic = "READ", title = "Get post", category = "posts")]
async fn wp_get_post(
    db: State<Db>,
    #[param(description = "The post id.")] id: i64,
) -> Result<Post, AbilityError> {
    let select = "SELECT id, post_type, title, content, status, author_id FROM posts";
    db.posts(
        &format!("{select} WHERE id = ?1"),
        &format!("{select} WHERE id = $1"),
        &[id.into()],
    )
    .await?
    .pop()
    .ok_or_else(|| {
        AbilityError::not_found(format!("post {id} does not exist"))
            .with_details(serde_json::json!({"resource_type": "post", "resource_id": id}))
    })
}

/// How many posts a page holds: 1 to 100.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct PageSize(#[schemars(range(min = 1, max = 100))] pub u8);

/// List posts, newest first.
#[ability(semantic = "READ", title = "List posts", category = "posts")]
async fn wp_list_posts(
    db: State<Db>,
    query: CollectionQuery,
    #[param(description = "Only posts of this type.")] post_type: Option<PostType>,
    #[param(description = "Only posts with this status.")] status: Option<Status>,
    #[param(description = "At most this many posts (1-100).", default = PageSize(10))]
    limit: PageSize,
    #[param(description = "Skip this many posts first.", default = 0)] offset: u64,
) -> Result<Vec<Post>, AbilityError> {
    let listing = |dialect| pushdown::Listing {
        table: "posts",
        columns: POST_COLUMNS,
        filter: match dialect {
            Dialect::Sqlite => {
                "WHERE (?1 IS NULL OR post_type = ?1) AND (?2 IS NULL OR status = ?2)"
            }
            Dialect::Postgres => {
                "WHERE ($1::TEXT IS NULL OR post_type = $1) AND ($2::TEXT IS NULL OR status = $2)"
            }
        },
        values: vec![
            post_type.map(|t| t.as_str().to_owned()).into(),
            status.map(|s| s.as_str().to_owned()).into(),
        ],
        tiebreak: "id DESC",
    };
    let own = Window::new(offset, u64::from(limit.0));
    db.list(&query, listing, own).await
}

/// A user of the site.
#[derive(Debug, Serialize, JsonSchema)]
struct User {
    id: i64,
    name: String,
}

impl Record for User {
    fn from_sqlite(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            name: row.get(1)?,
        })
    }

    #[cfg(feature = "postgres")]
    fn from_postgres(row: &tokio_postgres::Row) -> Self {
        Self {
            id: row.get(0),
            name: row.get(1),
        }
    }
}

/// List the site's users.
#[ability(semantic = "READ", title = "List users", category = "users")]
async fn wp_list_users(
    db: State<Db>,
    query: CollectionQuery,
    #[param(description = "At most this many users (1-100).", default = PageSize(10))]
    limit: PageSize,
    #[param(description = "Skip this many users first.", default = 0)] offset: u64,
) -> Result<Vec<User>, AbilityError> {
    let listing = |_| pushdown::Listing {
        table: "users",
        columns: &[("id", Kind::Integer), ("name", Kind::Text)],
        filter: "WHERE 1 = 1",
        values: Vec::new(),
        tiebreak: "id",
    };
    let own = Window::new(offset, u64::from(limit.0));
    db.list(&query, listing, own).await
}

/// MCP-AQL for the site: a post's `author` is the user its `author_id` names.
pub fn aql(aql: abilities::aql::Aql) -> abilities::aql::Aql {
    aql.relation("wp_list_posts", "author", "author_id", "wp_list_users")
}

/// Create a post. With `dry_run`, validate and return the would-be post without saving it.
#[ability(semantic = "CREATE", title = "Create post", category = "posts")]
async fn wp_create_post(
    db: State<Db>,
    #[param(description = "The title.")] title: String,
    #[param(description = "The body.", default = String::new())] content: String,
    #[param(description = "Publish now, or keep as a draft.", default = Status::Draft)]
    status: Status,
    #[param(description = "Only validate; save nothing.", default = false)] dry_run: bool,
) -> Result<Post, AbilityError> {
    let title = title.trim().to_owned();
    if title.is_empty() {
        return Err(AbilityError::invalid("the title cannot be empty"));
    }
    let mut post = Post {
        id: 0,
        post_type: "post".into(),
        title,
        content,
        status: status.as_str().into(),
        author_id: None,
    };
    if dry_run {
        return Ok(post);
    }
    let values = [
        post.title.clone().into(),
        post.content.clone().into(),
        post.status.clone().into(),
    ];
    post.id = db
        .insert(
            "INSERT INTO posts (post_type, title, content, status) VALUES ('post', ?1, ?2, ?3)",
            "INSERT INTO posts (post_type, title, content, status) VALUES ('post', $1, $2, $3) RETURNING id",
            &values,
        )
        .await?;
    Ok(post)
}

/// What a deletion reports.
#[derive(Serialize, JsonSchema)]
struct Deleted {
    deleted: bool,
}

/// Delete a post for good.
#[ability(
    semantic = "DELETE",
    title = "Delete post",
    category = "posts",
    permission = "posts:delete"
)]
async fn wp_delete_post(
    db: State<Db>,
    #[param(description = "The post id.")] id: i64,
) -> Result<Deleted, AbilityError> {
    let deleted = db
        .write(
            "DELETE FROM posts WHERE id = ?1",
            "DELETE FROM posts WHERE id = $1",
            &[id.into()],
        )
        .await?;
    match deleted {
        0 => Err(AbilityError::not_found(format!("post {id} does not exist"))),
        _ => Ok(Deleted { deleted: true }),
    }
}

/// Every post, exported.
#[derive(Debug, Serialize, JsonSchema)]
struct Export {
    /// How many posts were exported.
    exported: u64,
    posts: Vec<Post>,
}

/// How long an export works first, in milliseconds: 0 to 600000.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct DelayMs(#[schemars(range(max = 600_000))] pub u64);

/// Export every post. Works `delay_ms` first, reporting progress; a background task when the
/// client can have one.
#[ability(
    semantic = "EXECUTE",
    title = "Export posts",
    category = "posts",
    task = "optional"
)]
async fn wp_export_posts(
    ctx: &Context,
    db: State<Db>,
    #[param(description = "Work this long first, in milliseconds (0-600000).", default = DelayMs(0))]
    delay_ms: DelayMs,
) -> Result<Export, AbilityError> {
    const STEPS: u64 = 10;
    for step in 0..STEPS {
        ctx.progress(step as f64, Some(STEPS as f64), Some("exporting"))
            .await;
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms.0 / STEPS)).await;
    }
    let all = "SELECT id, post_type, title, content, status, author_id FROM posts ORDER BY id";
    let posts = db.posts(all, all, &[]).await?;
    ctx.progress(STEPS as f64, Some(STEPS as f64), Some("exported"))
        .await;
    Ok(Export {
        exported: posts.len() as u64,
        posts,
    })
}

/// The hand-written skills of the site (`examples/skills`: a publishing workflow across its
/// abilities, with reference files in a sub-directory), embedded and checked at compile time.
pub fn skills() -> Result<Vec<abilities::skill::Skill>, abilities::skill::SkillError> {
    abilities::skills!("../skills")
}

/// The categories of the site's abilities, each with what its generated skill is about.
pub const SKILL_CATEGORIES: [(&str, &str); 3] = [
    ("posts", "Read, list, write and delete the site's posts."),
    ("users", "Find the site's users."),
    ("site", "What the site holds, in figures."),
];
