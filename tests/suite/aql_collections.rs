//! MCP-AQL collection answers over 10,000 SQLite rows, every figure checked against the SQL
//! truth the test computes with its own queries: the `todo` example's `list_todos`, which
//! pushes the whole query into SQL, and two handlers that do not (one pages itself and must
//! say its totals are unknown, one returns the whole collection for the runtime to query).

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use abilities_examples::todo;

use crate::support;

use crate::support::Lines;
use abilities::{AbilityError, Server, State, Surface, ability};
use rusqlite::Connection;
use serde_json::{Value, json};

const ROWS: i64 = 10_000;

/// Todo rows as a handler without any query support reads them: its own page.
#[ability(semantic = "READ")]
fn list_paged_plain(
    db: State<Plain>,
    #[param(default = 50)] limit: u32,
    #[param(default = 0)] offset: u32,
) -> Result<Vec<todo::Todo>, AbilityError> {
    db.rows(&format!("ORDER BY id LIMIT {limit} OFFSET {offset}"))
}

/// Todo rows with a limit that has no declared default: the handler picks its own.
#[ability(semantic = "READ")]
fn list_limited(db: State<Plain>, limit: Option<u32>) -> Result<Vec<todo::Todo>, AbilityError> {
    db.rows(&format!("ORDER BY id LIMIT {}", limit.unwrap_or(20)))
}

/// Every todo row: an operation without paging of its own returns its whole collection.
#[ability(semantic = "READ")]
fn list_every_todo(db: State<Plain>) -> Result<Vec<todo::Todo>, AbilityError> {
    db.rows("ORDER BY id")
}

/// A second connection to the same database, for the handlers above.
struct Plain(std::sync::Mutex<Connection>);

impl Plain {
    fn rows(&self, tail: &str) -> Result<Vec<todo::Todo>, AbilityError> {
        let conn = self
            .0
            .lock()
            .map_err(|_| AbilityError::internal("poisoned"))?;
        let mut statement = conn
            .prepare(&format!(
                "SELECT id, title, completed, priority FROM todos {tail}"
            ))
            .map_err(|e| AbilityError::internal(e.to_string()))?;
        let rows = statement
            .query_map([], |r| {
                Ok(todo::Todo {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    completed: r.get(2)?,
                    priority: r.get(3)?,
                })
            })
            .map_err(|e| AbilityError::internal(e.to_string()))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| AbilityError::internal(e.to_string()))
    }
}

struct Fixture {
    lines: Lines,
    truth: Connection,
    next_id: u64,
    dir: std::path::PathBuf,
}

impl Fixture {
    async fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "abilities-aql-collections-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let path = dir.join("todo.db");
        let db = todo::TodoDb::open(&path).expect("the database opens");
        let mut truth = Connection::open(&path).expect("a second connection");
        let tx = truth.transaction().expect("a transaction");
        {
            let mut insert = tx
                .prepare("INSERT INTO todos (title, completed, priority) VALUES (?1, ?2, ?3)")
                .expect("insert");
            // Ids 4..: the example seeds three rows first.
            for i in 0..ROWS - 3 {
                let priority = ["low", "medium", "high"][(i % 3) as usize];
                insert
                    .execute(rusqlite::params![format!("task {i}"), i % 4 == 0, priority])
                    .expect("a row");
            }
        }
        tx.commit().expect("committed");
        let plain = Plain(std::sync::Mutex::new(
            Connection::open(&path).expect("a third connection"),
        ));
        let here = abilities::Registry::collect_in(module_path!()).expect("valid");
        let server = Server::builder()
            .registry(
                here.merged(&todo::registry().expect("valid"))
                    .expect("valid"),
            )
            .state(db)
            .state(plain)
            .surface(Surface::aql_semantic())
            .build()
            .expect("valid");
        let lines = Lines::initialized(&server).await;
        Self {
            lines,
            truth,
            next_id: 10,
            dir,
        }
    }

    async fn read(&mut self, operation: &str, params: Value) -> Value {
        self.next_id += 1;
        let result = self
            .lines
            .call(
                self.next_id,
                "mcp_aql_read",
                json!({"operation": operation, "params": params}),
            )
            .await;
        let envelope: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
                .expect("JSON");
        support::assert_aql_envelope(&envelope);
        envelope
    }

    fn count(&self, filter: &str) -> u64 {
        self.truth
            .query_row(&format!("SELECT COUNT(*) FROM todos {filter}"), [], |r| {
                r.get::<_, i64>(0)
            })
            .expect("count")
            .unsigned_abs()
    }

    fn ids(&self, tail: &str) -> Vec<i64> {
        let mut statement = self
            .truth
            .prepare(&format!("SELECT id FROM todos {tail}"))
            .expect("ids");
        statement
            .query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("ids")
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ids(answer: &Value) -> Vec<i64> {
    answer["data"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("items: {answer}"))
        .iter()
        .filter_map(|t| t["id"].as_i64())
        .collect()
}

#[tokio::test]
async fn pushed_down_figures_equal_the_sql_truth() {
    let mut f = Fixture::new("pushdown").await;
    let total = f.count("");
    assert_eq!(total, ROWS.unsigned_abs());

    // Count and group-by over the whole collection, not the operation's page of 50.
    let counted = f
        .read(
            "list_todos",
            json!({"aggregate": {"n": {"count": true}, "by": {"group_by": "priority"}}}),
        )
        .await;
    assert_eq!(counted["data"]["aggregations"]["n"], total, "{counted}");
    for priority in ["low", "medium", "high"] {
        assert_eq!(
            counted["data"]["aggregations"]["by"][priority],
            f.count(&format!("WHERE priority = '{priority}'")),
            "{priority}: {counted}"
        );
    }
    assert!(counted.get("warnings").is_none(), "{counted}");

    // first/after through the whole collection.
    let mut seen = Vec::new();
    let mut after = Value::Null;
    loop {
        let page = f
            .read(
                "list_todos",
                json!({"first": 1000, "after": after, "fields": ["id"]}),
            )
            .await;
        assert_eq!(page["data"]["pageInfo"]["totalCount"], total, "{page}");
        seen.extend(ids(&page));
        if page["data"]["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = page["data"]["pageInfo"]["endCursor"].clone();
        assert!(seen.len() <= 10_000, "paging does not end");
    }
    assert_eq!(seen, f.ids("ORDER BY id"));

    // The operation's own limit and offset, past its default page of 50.
    let deep = f
        .read("list_todos", json!({"limit": 100, "offset": 9950}))
        .await;
    assert_eq!(ids(&deep), f.ids("ORDER BY id LIMIT 100 OFFSET 9950"));
    assert_eq!(
        deep["data"]["pagination"],
        json!({"limit": 100, "offset": 9950, "returned": 50, "total_items": total, "has_more": false})
    );

    // contains, in and gt, each pushed into SQL, with its true total.
    for (filter, sql) in [
        (
            json!({"title": {"contains": "task 99"}}),
            "WHERE instr(title, 'task 99') > 0",
        ),
        (
            json!({"id": {"in": [5, 9999, 12345]}}),
            "WHERE id IN (5, 9999, 12345)",
        ),
        (json!({"id": {"gt": 9990}}), "WHERE id > 9990"),
        (
            json!({"completed": true, "priority": {"ne": "low"}}),
            "WHERE completed = 1 AND priority <> 'low'",
        ),
    ] {
        let found = f
            .read(
                "list_todos",
                json!({"filter": filter, "first": 1000, "fields": ["id"]}),
            )
            .await;
        let truth = f.count(sql);
        assert_eq!(found["data"]["pageInfo"]["totalCount"], truth, "{found}");
        let expected: Vec<i64> = f.ids(&format!("{sql} ORDER BY id LIMIT 1000"));
        assert_eq!(ids(&found), expected, "{filter}");
        assert_eq!(
            found["data"]["pageInfo"]["hasNextPage"],
            truth > 1000,
            "{found}"
        );
    }

    // Sorted descending on a column, counted with the operation's own filter.
    let sorted = f
        .read(
            "list_todos",
            json!({"completed": false, "sort": {"field": "id", "order": "desc"}, "limit": 3}),
        )
        .await;
    assert_eq!(
        ids(&sorted),
        f.ids("WHERE completed = 0 ORDER BY id DESC LIMIT 3")
    );
    assert_eq!(
        sorted["data"]["pagination"]["total_items"],
        f.count("WHERE completed = 0")
    );

    // Group-by under a filter.
    let grouped = f
        .read(
            "list_todos",
            json!({"filter": {"completed": true}, "aggregate": {"by": {"group_by": "priority"}}}),
        )
        .await;
    for priority in ["low", "medium", "high"] {
        assert_eq!(
            grouped["data"]["aggregations"]["by"][priority],
            f.count(&format!("WHERE completed = 1 AND priority = '{priority}'")),
            "{grouped}"
        );
    }
}

#[tokio::test]
async fn a_handler_that_pages_itself_never_reports_a_false_total() {
    let mut f = Fixture::new("plain").await;
    // A full page of the operation's own: the total is unknown, and the answer says so.
    let page = f.read("list_paged_plain", json!({"offset": 100})).await;
    assert_eq!(ids(&page), f.ids("ORDER BY id LIMIT 50 OFFSET 100"));
    assert_eq!(
        page["data"]["pagination"],
        json!({"limit": 50, "offset": 100, "returned": 50, "total_items": null, "has_more": null}),
        "{page}"
    );
    assert_eq!(
        page["warnings"][0]["code"], "VALIDATION_TRUNCATED_WARNING",
        "{page}"
    );

    // An aggregation over a page is not the collection's: null, with the warning.
    let counted = f
        .read(
            "list_paged_plain",
            json!({"aggregate": {"n": {"count": true}}}),
        )
        .await;
    assert_eq!(
        counted["data"]["aggregations"]["n"],
        Value::Null,
        "{counted}"
    );
    assert_eq!(
        counted["warnings"][0]["code"],
        "VALIDATION_TRUNCATED_WARNING"
    );

    // A filter the handler does not apply sees only its page: no total is claimed.
    let filtered = f
        .read(
            "list_paged_plain",
            json!({"filter": {"title": {"contains": "task 999"}}}),
        )
        .await;
    assert_eq!(
        filtered["data"]["pagination"]["total_items"],
        Value::Null,
        "{filtered}"
    );
    assert!(filtered["warnings"].is_array(), "{filtered}");

    // list_todos reports its total, but a condition SQL does not take (`contains` on a
    // number) is applied here to its page: the total is not claimed.
    let fallback = f
        .read("list_todos", json!({"filter": {"id": {"contains": 5}}}))
        .await;
    assert_eq!(
        fallback["data"]["pagination"]["total_items"],
        Value::Null,
        "{fallback}"
    );
    assert_eq!(
        fallback["warnings"][0]["code"],
        "VALIDATION_TRUNCATED_WARNING"
    );
    // Unfiltered, its own page and its reported total are the truth.
    let reported = f
        .read("list_todos", json!({"offset": 20, "limit": 5}))
        .await;
    assert_eq!(
        reported["data"]["pagination"],
        json!({"limit": 5, "offset": 20, "returned": 5, "total_items": ROWS, "has_more": true}),
        "{reported}"
    );

    // A limit the runtime cannot know (the handler's own default): no total is claimed.
    let unknown = f.read("list_limited", json!({})).await;
    assert_eq!(ids(&unknown).len(), 20);
    assert_eq!(
        unknown["data"]["pagination"]["total_items"],
        Value::Null,
        "{unknown}"
    );
    // A filter applied here to a later page, even one it keeps whole, says nothing of the
    // items before the page.
    let later = f
        .read(
            "list_paged_plain",
            json!({"offset": 9990, "filter": {"priority": {"ne": "none"}}}),
        )
        .await;
    assert_eq!(ids(&later).len(), 10);
    assert_eq!(
        later["data"]["pagination"]["total_items"],
        Value::Null,
        "{later}"
    );
    // Nothing past the end: the collection ends before the offset, its size is unknown.
    let past = f.read("list_paged_plain", json!({"offset": 20000})).await;
    assert_eq!(
        past["data"]["pagination"]["total_items"],
        Value::Null,
        "{past}"
    );

    // The last page, not full: where the collection ends is known, and so is its total.
    let last = f.read("list_paged_plain", json!({"offset": 9990})).await;
    assert_eq!(
        last["data"]["pagination"],
        json!({"limit": 50, "offset": 9990, "returned": 10, "total_items": ROWS, "has_more": false}),
        "{last}"
    );
    assert!(last.get("warnings").is_none(), "{last}");
}

#[tokio::test]
async fn a_whole_collection_is_queried_exactly_by_the_runtime() {
    let mut f = Fixture::new("whole").await;
    let counted = f
        .read(
            "list_every_todo",
            json!({"filter": {"title": {"contains": "task 12"}}, "aggregate": {"n": {"count": true}}}),
        )
        .await;
    assert_eq!(
        counted["data"]["aggregations"]["n"],
        f.count("WHERE instr(title, 'task 12') > 0")
    );
    let page = f
        .read(
            "list_every_todo",
            json!({"filter": {"id": {"gt": 100}}, "limit": 10, "offset": 9000, "fields": ["id"]}),
        )
        .await;
    assert_eq!(
        ids(&page),
        f.ids("WHERE id > 100 ORDER BY id LIMIT 10 OFFSET 9000")
    );
    assert_eq!(
        page["data"]["pagination"]["total_items"],
        f.count("WHERE id > 100")
    );

    // A page size past the most a page holds is clamped, and the answer says so.
    let clamped = f
        .read("list_every_todo", json!({"limit": 1e9, "fields": ["id"]}))
        .await;
    assert_eq!(clamped["data"]["pagination"]["limit"], 1000, "{clamped}");
    assert_eq!(clamped["data"]["pagination"]["returned"], 1000);
    assert_eq!(
        clamped["warnings"][0]["details"],
        json!({"param_name": "limit", "requested": 1_000_000_000u64, "limit": 1000})
    );
}

#[tokio::test]
async fn what_is_not_understood_is_refused() {
    let mut f = Fixture::new("refused").await;
    let operator = f
        .read("list_todos", json!({"filter": {"id": {"like": "%"}}}))
        .await;
    assert_eq!(operator["success"], false);
    assert_eq!(
        operator["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{operator}"
    );
    assert_eq!(
        operator["error"]["details"]["valid_operators"],
        json!(["eq", "ne", "gt", "gte", "lt", "lte", "in", "contains"])
    );

    let field = f
        .read("list_todos", json!({"fields": ["id", "nope"]}))
        .await;
    assert_eq!(
        field["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{field}"
    );
    assert_eq!(
        field["error"]["details"]["valid_fields"],
        json!(["id", "title", "completed", "priority"])
    );

    let fraction = f.read("list_every_todo", json!({"first": 1.5})).await;
    assert_eq!(
        fraction["error"]["code"], "VALIDATION_INVALID_TYPE",
        "{fraction}"
    );

    // The operation's own limit keeps its own range.
    let own = f.read("list_todos", json!({"limit": 1e9})).await;
    assert_eq!(own["success"], false, "{own}");

    // A top-level parameter that `params` also has is ignored, and the answer says so.
    f.next_id += 1;
    let result = f
        .lines
        .call(
            f.next_id,
            "mcp_aql_read",
            json!({"operation": "list_every_todo", "limit": 5, "params": {"limit": 3, "fields": ["id"]}}),
        )
        .await;
    let both: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(both["data"]["pagination"]["limit"], 3, "{both}");
    assert_eq!(
        both["warnings"],
        json!([{"code": "VALIDATION_IGNORED_PARAM_WARNING", "message": "Top-level 'limit' was ignored: 'params.limit' is used", "severity": "low", "details": {"param_name": "limit"}}])
    );

    // The operation's own offset is a page: not with a cursor.
    let mixed = f.read("list_todos", json!({"offset": 5, "first": 2})).await;
    assert_eq!(mixed["error"]["code"], "VALIDATION_INVALID_TYPE", "{mixed}");
}
