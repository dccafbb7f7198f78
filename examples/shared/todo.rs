//! The Todo manager of the MCP-AQL walkthrough: a store on SQLite and its abilities. Shared by
//! the `todo` and `axum_app` examples.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use abilities::{AbilityError, CollectionQuery, State, Window, ability};
use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[path = "pushdown.rs"]
mod pushdown;

use pushdown::Kind;

/// How urgent a todo is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Priority {
    Low,
    Medium,
    High,
}

impl Priority {
    fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// A todo item.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Todo {
    pub(crate) id: i64,
    pub(crate) title: String,
    pub(crate) completed: bool,
    pub(crate) priority: String,
}

/// A page of todos and how many there are in all, as the walkthrough's `list_todos`
/// returns them.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct TodoPage {
    /// The todos of this page.
    pub(crate) items: Vec<Todo>,
    /// Every todo the request's conditions match.
    pub(crate) total: u64,
}

/// The todo database, shared by the abilities and any other part of the application.
pub(crate) struct TodoDb(Mutex<Connection>);

impl TodoDb {
    /// Open (creating and seeding on first run) the database at `path`.
    pub(crate) fn open(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE IF NOT EXISTS todos (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 title TEXT NOT NULL,
                 completed INTEGER NOT NULL DEFAULT 0,
                 priority TEXT NOT NULL DEFAULT 'medium'
             );",
        )?;
        let count: i64 = conn.query_row("SELECT COUNT(*) FROM todos", [], |r| r.get(0))?;
        if count == 0 {
            for (title, completed, priority) in [
                ("Write the README", true, "high"),
                ("Review the schemas", false, "medium"),
                ("Water the plants", false, "low"),
            ] {
                conn.execute(
                    "INSERT INTO todos (title, completed, priority) VALUES (?1, ?2, ?3)",
                    params![title, completed, priority],
                )?;
            }
        }
        Ok(Self(Mutex::new(conn)))
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>, AbilityError> {
        self.0
            .lock()
            .map_err(|_| AbilityError::internal("the database is unavailable"))
    }

    /// Todos, optionally only completed or open ones: the page at `offset` of at most
    /// `limit`. Under MCP-AQL the whole collection query goes into the SQL (filter, sort,
    /// page and the count of every match) and the handler reports the true total; when a
    /// condition or sort key cannot be written in SQL, the runtime applies them to this
    /// page and says the total is unknown.
    pub(crate) fn list(
        &self,
        completed: Option<bool>,
        limit: u32,
        offset: u64,
        query: &CollectionQuery,
    ) -> Result<TodoPage, AbilityError> {
        let listing = pushdown::Listing {
            table: "todos",
            columns: &[
                ("id", Kind::Integer),
                ("title", Kind::Text),
                ("completed", Kind::Bool),
                ("priority", Kind::Text),
            ],
            filter: "WHERE (?1 IS NULL OR completed = ?1)",
            values: vec![completed.into()],
            tiebreak: "id",
        };
        let own = Window::new(offset, u64::from(limit));
        let (items, total) =
            pushdown::list(&*self.conn()?, query, listing, own, read_todo).map_err(db_error)?;
        Ok(TodoPage { items, total })
    }

    /// One todo.
    pub(crate) fn get(&self, id: i64) -> Result<Todo, AbilityError> {
        self.conn()?
            .query_row(
                "SELECT id, title, completed, priority FROM todos WHERE id = ?1",
                [id],
                read_todo,
            )
            .optional()
            .map_err(db_error)?
            .ok_or_else(|| AbilityError::not_found(format!("todo {id} does not exist")))
    }

    /// Add a todo.
    pub(crate) fn create(&self, title: &str, priority: Priority) -> Result<Todo, AbilityError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(AbilityError::invalid("the title cannot be empty"));
        }
        let conn = self.conn()?;
        conn.execute(
            "INSERT INTO todos (title, priority) VALUES (?1, ?2)",
            params![title, priority.as_str()],
        )
        .map_err(db_error)?;
        Ok(Todo {
            id: conn.last_insert_rowid(),
            title: title.to_owned(),
            completed: false,
            priority: priority.as_str().into(),
        })
    }
}

fn read_todo(row: &rusqlite::Row<'_>) -> rusqlite::Result<Todo> {
    Ok(Todo {
        id: row.get(0)?,
        title: row.get(1)?,
        completed: row.get(2)?,
        priority: row.get(3)?,
    })
}

fn db_error(error: rusqlite::Error) -> AbilityError {
    tracing::error!(%error, "database error");
    AbilityError::internal("the database failed")
}

/// How many todos a page holds: 1 to 100.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub(crate) struct PageSize(#[schemars(range(min = 1, max = 100))] pub(crate) u32);

/// List todos in creation order.
#[ability(semantic = "READ", category = "todos")]
fn list_todos(
    db: State<TodoDb>,
    query: CollectionQuery,
    #[param(description = "Only completed (true) or open (false) todos.")] completed: Option<bool>,
    #[param(description = "At most this many todos (1-100).", default = PageSize(50))]
    limit: PageSize,
    #[param(description = "Skip this many todos first.", default = 0)] offset: u64,
) -> Result<TodoPage, AbilityError> {
    db.list(completed, limit.0, offset, &query)
}

/// Get one todo.
#[ability(semantic = "READ", category = "todos")]
fn get_todo(
    db: State<TodoDb>,
    #[param(description = "The todo id.")] id: i64,
) -> Result<Todo, AbilityError> {
    db.get(id)
}

/// Add a todo.
#[ability(semantic = "CREATE", category = "todos")]
fn create_todo(
    db: State<TodoDb>,
    #[param(description = "What to do.")] title: String,
    #[param(default = Priority::Medium)] priority: Priority,
) -> Result<Todo, AbilityError> {
    db.create(&title, priority)
}

/// Change a todo's title, completion or priority; fields left out stay as they are.
#[ability(semantic = "UPDATE", category = "todos")]
fn update_todo(
    db: State<TodoDb>,
    #[param(description = "The todo id.")] id: i64,
    title: Option<String>,
    completed: Option<bool>,
    priority: Option<Priority>,
) -> Result<Todo, AbilityError> {
    let current = db.get(id)?;
    let title = title.map(|t| t.trim().to_owned()).unwrap_or(current.title);
    if title.is_empty() {
        return Err(AbilityError::invalid("the title cannot be empty"));
    }
    let completed = completed.unwrap_or(current.completed);
    let priority = priority.map_or(current.priority, |p| p.as_str().to_owned());
    db.conn()?
        .execute(
            "UPDATE todos SET title = ?1, completed = ?2, priority = ?3 WHERE id = ?4",
            params![title, completed, priority, id],
        )
        .map_err(db_error)?;
    Ok(Todo {
        id,
        title,
        completed,
        priority,
    })
}

/// What a deletion reports.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Deleted {
    deleted: bool,
}

/// Delete a todo.
#[ability(semantic = "DELETE", category = "todos")]
fn delete_todo(
    db: State<TodoDb>,
    #[param(description = "The todo id.")] id: i64,
) -> Result<Deleted, AbilityError> {
    match db
        .conn()?
        .execute("DELETE FROM todos WHERE id = ?1", [id])
        .map_err(db_error)?
    {
        0 => Err(AbilityError::not_found(format!("todo {id} does not exist"))),
        _ => Ok(Deleted { deleted: true }),
    }
}

/// How many todos were cleared.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Cleared {
    #[serde(rename = "deletedCount")]
    deleted_count: usize,
}

/// Delete every completed todo. An action on the whole list (EXECUTE, as the walkthrough
/// declares it) that destroys data: it is confirmed like a deletion.
#[ability(semantic = "EXECUTE", danger = "destructive", category = "todos")]
fn clear_completed(db: State<TodoDb>) -> Result<Cleared, AbilityError> {
    let deleted_count = db
        .conn()?
        .execute("DELETE FROM todos WHERE completed = 1", [])
        .map_err(db_error)?;
    Ok(Cleared { deleted_count })
}
