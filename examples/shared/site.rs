//! The seeds' WordPress walkthrough: posts on SQLite and the abilities over them. Shared by
//! the `site` and `token_report` examples.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use abilities::{AbilityError, CollectionQuery, Context, State, Window, ability};
use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[path = "pushdown.rs"]
mod pushdown;

use pushdown::Kind;

/// A kind of content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PostType {
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
pub(crate) struct Db(Mutex<Connection>);

impl Db {
    pub(crate) fn open(path: &Path) -> rusqlite::Result<Self> {
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
            let seed = [
                ("post", "Hello world", "publish", Some(1)),
                ("post", "Second thoughts", "publish", Some(2)),
                ("post", "Unfinished", "draft", Some(1)),
                ("page", "About", "publish", None),
                ("attachment", "logo.png", "publish", None),
            ];
            for (post_type, title, status, author) in seed {
                conn.execute(
                    "INSERT INTO posts (post_type, title, content, status, author_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![post_type, title, format!("{title}, in full."), status, author],
                )?;
            }
        }
        Ok(Self(Mutex::new(conn)))
    }

    /// Published posts of one type.
    pub(crate) fn count(&self, post_type: PostType) -> Result<u64, AbilityError> {
        let conn = self.conn()?;
        let count: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM posts WHERE post_type = ?1 AND status = 'publish'",
                [post_type.as_str()],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        Ok(count.unsigned_abs())
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>, AbilityError> {
        self.0
            .lock()
            .map_err(|_| AbilityError::internal("the database is unavailable"))
    }
}

fn db_error(error: rusqlite::Error) -> AbilityError {
    tracing::error!(%error, "database error");
    AbilityError::internal("the database failed")
}

fn read_post(row: &rusqlite::Row<'_>) -> rusqlite::Result<Post> {
    Ok(Post {
        id: row.get(0)?,
        post_type: row.get(1)?,
        title: row.get(2)?,
        content: row.get(3)?,
        status: row.get(4)?,
        author_id: row.get(5)?,
    })
}

/// Count published posts of one type.
#[ability(
    semantic = "READ",
    flatten,
    name = "my-plugin/count-posts",
    category = "site"
)]
fn count_posts(db: State<Db>, post_type: PostType) -> Result<u64, AbilityError> {
    db.count(post_type)
}

/// Get one post by id.
#[ability(semantic = "READ", title = "Get post", category = "posts")]
fn wp_get_post(
    db: State<Db>,
    #[param(description = "The post id.")] id: i64,
) -> Result<Post, AbilityError> {
    let conn = db.conn()?;
    conn.query_row(
        "SELECT id, post_type, title, content, status, author_id FROM posts WHERE id = ?1",
        [id],
        read_post,
    )
    .optional()
    .map_err(db_error)?
    .ok_or_else(|| {
        AbilityError::not_found(format!("post {id} does not exist"))
            .with_details(serde_json::json!({"resource_type": "post", "resource_id": id}))
    })
}

/// How many posts a page holds: 1 to 100.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub(crate) struct PageSize(#[schemars(range(min = 1, max = 100))] pub(crate) u8);

/// List posts, newest first.
#[ability(semantic = "READ", title = "List posts", category = "posts")]
fn wp_list_posts(
    db: State<Db>,
    query: CollectionQuery,
    #[param(description = "Only posts of this type.")] post_type: Option<PostType>,
    #[param(description = "Only posts with this status.")] status: Option<Status>,
    #[param(description = "At most this many posts (1-100).", default = PageSize(10))]
    limit: PageSize,
    #[param(description = "Skip this many posts first.", default = 0)] offset: u64,
) -> Result<Vec<Post>, AbilityError> {
    let listing = pushdown::Listing {
        table: "posts",
        columns: &[
            ("id", Kind::Integer),
            ("post_type", Kind::Text),
            ("title", Kind::Text),
            ("content", Kind::Text),
            ("status", Kind::Text),
            ("author_id", Kind::Integer),
        ],
        filter: "WHERE (?1 IS NULL OR post_type = ?1) AND (?2 IS NULL OR status = ?2)",
        values: vec![
            post_type.map(|t| t.as_str().to_owned()).into(),
            status.map(|s| s.as_str().to_owned()).into(),
        ],
        tiebreak: "id DESC",
    };
    let own = Window::new(offset, u64::from(limit.0));
    let (posts, _) =
        pushdown::list(&*db.conn()?, &query, listing, own, read_post).map_err(db_error)?;
    Ok(posts)
}

/// A user of the site.
#[derive(Debug, Serialize, JsonSchema)]
struct User {
    id: i64,
    name: String,
}

/// List the site's users.
#[ability(semantic = "READ", title = "List users", category = "users")]
fn wp_list_users(
    db: State<Db>,
    query: CollectionQuery,
    #[param(description = "At most this many users (1-100).", default = PageSize(10))]
    limit: PageSize,
    #[param(description = "Skip this many users first.", default = 0)] offset: u64,
) -> Result<Vec<User>, AbilityError> {
    let listing = pushdown::Listing {
        table: "users",
        columns: &[("id", Kind::Integer), ("name", Kind::Text)],
        filter: "WHERE 1",
        values: Vec::new(),
        tiebreak: "id",
    };
    let own = Window::new(offset, u64::from(limit.0));
    let read = |row: &rusqlite::Row<'_>| {
        Ok(User {
            id: row.get(0)?,
            name: row.get(1)?,
        })
    };
    let (users, _) = pushdown::list(&*db.conn()?, &query, listing, own, read).map_err(db_error)?;
    Ok(users)
}

/// MCP-AQL for the site: a post's `author` is the user its `author_id` names.
pub(crate) fn aql(aql: abilities::Aql) -> abilities::Aql {
    aql.relation("wp_list_posts", "author", "author_id", "wp_list_users")
}

/// Create a post. With `dry_run`, validate and return the would-be post without saving it.
#[ability(semantic = "CREATE", title = "Create post", category = "posts")]
fn wp_create_post(
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
    let conn = db.conn()?;
    conn.execute(
        "INSERT INTO posts (post_type, title, content, status) VALUES ('post', ?1, ?2, ?3)",
        params![post.title, post.content, post.status],
    )
    .map_err(db_error)?;
    post.id = conn.last_insert_rowid();
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
fn wp_delete_post(
    db: State<Db>,
    #[param(description = "The post id.")] id: i64,
) -> Result<Deleted, AbilityError> {
    let conn = db.conn()?;
    match conn
        .execute("DELETE FROM posts WHERE id = ?1", [id])
        .map_err(db_error)?
    {
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
pub(crate) struct DelayMs(#[schemars(range(max = 600_000))] pub(crate) u64);

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
    let posts = {
        let conn = db.conn()?;
        let mut statement = conn
            .prepare(
                "SELECT id, post_type, title, content, status, author_id FROM posts ORDER BY id",
            )
            .map_err(db_error)?;
        statement
            .query_map([], read_post)
            .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
            .map_err(db_error)?
    };
    ctx.progress(STEPS as f64, Some(STEPS as f64), Some("exported"))
        .await;
    Ok(Export {
        exported: posts.len() as u64,
        posts,
    })
}
