//! An MCP-AQL collection query as SQL (SQLite's or PostgreSQL's): the filter as `WHERE`
//! conditions, the sort as `ORDER BY`, the page as `LIMIT` / `OFFSET`. Shared by the examples'
//! list abilities, which push the whole query down and report the true total with
//! `CollectionQuery::paged`.

use abilities::aql::{CollectionQuery, FilterOp, Window};
use rusqlite::types::Value as Sql;
use rusqlite::{Connection, Row};
use serde_json::Value;

/// What a column holds, so only conditions that compare in SQL as the runtime compares them
/// (a number with a number, text with text) go into the SQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Integer,
    Text,
    /// Stored as 0 and 1, compared with JSON booleans.
    #[allow(dead_code, reason = "each example uses the kinds its columns have")]
    Bool,
}

impl Kind {
    fn takes(self, value: &Value) -> bool {
        matches!(
            (self, value),
            (Self::Integer, Value::Number(_))
                | (Self::Text, Value::String(_))
                | (Self::Bool, Value::Bool(_))
        )
    }
}

/// Which SQL a query is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    #[allow(dead_code, reason = "each example uses the databases it serves")]
    Postgres,
}

impl Dialect {
    fn placeholder(self, n: usize) -> String {
        match self {
            Self::Sqlite => format!("?{n}"),
            Self::Postgres => format!("${n}"),
        }
    }
}

/// A row as either database returns it.
pub(crate) trait Record: Sized {
    fn from_sqlite(row: &Row<'_>) -> rusqlite::Result<Self>;
    #[cfg(feature = "postgres")]
    fn from_postgres(row: &tokio_postgres::Row) -> Self;
}

/// What a list runs: the count, the page and their values, and whether the query went into
/// the SQL whole (then the count is the query's total).
pub(crate) struct Plan {
    pub(crate) count: String,
    pub(crate) count_values: Vec<Sql>,
    pub(crate) select: String,
    pub(crate) values: Vec<Sql>,
    pub(crate) pushed_down: bool,
}

/// One list operation's SQL: `SELECT columns FROM table`, the operation's own `WHERE`
/// (its parameters' conditions, `?1`.. in `values`) and the column that makes an order total.
pub(crate) struct Listing<'a> {
    pub(crate) table: &'a str,
    pub(crate) columns: &'a [(&'a str, Kind)],
    pub(crate) filter: &'a str,
    pub(crate) values: Vec<Sql>,
    pub(crate) tiebreak: &'a str,
}

/// The rows of a list operation and how many rows match the conditions they were drawn
/// with. Under MCP-AQL with a query SQL can take whole, the query's window of every match,
/// the total also reported with `query.paged`; otherwise the operation's `own` page, in
/// `tiebreak` order, for the runtime to finish.
pub(crate) fn list<T: Record>(
    conn: &Connection,
    query: &CollectionQuery,
    listing: Listing<'_>,
    own: Window,
) -> rusqlite::Result<(Vec<T>, u64)> {
    let plan = plan(query, listing, own, Dialect::Sqlite);
    let total: i64 = conn.query_row(
        &plan.count,
        rusqlite::params_from_iter(plan.count_values.iter()),
        |r| r.get(0),
    )?;
    let total = total.unsigned_abs();
    if plan.pushed_down {
        query.paged(total);
    }
    let mut statement = conn.prepare(&plan.select)?;
    let rows = statement.query_map(rusqlite::params_from_iter(plan.values), T::from_sqlite)?;
    Ok((rows.collect::<rusqlite::Result<_>>()?, total))
}

/// The SQL of a list in `dialect` (see [`list`]).
pub(crate) fn plan(
    query: &CollectionQuery,
    listing: Listing<'_>,
    own: Window,
    dialect: Dialect,
) -> Plan {
    let Listing {
        table,
        columns,
        filter: base,
        values: own_values,
        tiebreak,
    } = listing;
    let mut filter = base.to_owned();
    let mut values = own_values.clone();
    let pushed = query.page().and_then(|window| {
        conditions(query, columns, &mut filter, &mut values, dialect)?;
        Some((window, order_by(query, columns, tiebreak)?))
    });
    let pushed_down = pushed.is_some();
    let (window, order) = match pushed {
        Some((window, order)) => (window, order),
        None => {
            filter = base.to_owned();
            values = own_values;
            (own, tiebreak.to_owned())
        }
    };
    let count = format!("SELECT COUNT(*) FROM {table} {filter}");
    let count_values = values.clone();
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let page = limit(window, &mut values, dialect);
    Plan {
        count,
        count_values,
        select: format!(
            "SELECT {} FROM {table} {filter} ORDER BY {order}{page}",
            names.join(", ")
        ),
        values,
        pushed_down,
    }
}

/// The query's conditions on `columns`, appended to `sql` as ` AND ...` with their values
/// pushed to `values` (`?N` placeholders); `None` when one cannot be written in SQL (a field
/// that is not a column, a value SQL cannot compare), and then nothing is appended. Values
/// compare as SQLite compares them (booleans are stored as 0 and 1).
pub(crate) fn conditions(
    query: &CollectionQuery,
    columns: &[(&str, Kind)],
    sql: &mut String,
    values: &mut Vec<Sql>,
    dialect: Dialect,
) -> Option<()> {
    let mut out = String::new();
    let mut added = Vec::new();
    for condition in query.filter() {
        let (column, kind) = columns.iter().find(|(c, _)| *c == condition.field)?;
        let values_compared: Vec<&Value> = match &condition.value {
            Value::Array(items) if condition.op == FilterOp::In => items.iter().collect(),
            value => vec![value],
        };
        if !values_compared.iter().all(|v| kind.takes(v)) {
            return None;
        }
        // PostgreSQL's columns are typed: a fraction does not compare with an integer column
        // there (the runtime compares it).
        if dialect == Dialect::Postgres
            && *kind == Kind::Integer
            && !values_compared.iter().all(|v| v.is_i64())
        {
            return None;
        }
        let mut placeholder = |value: &Value| -> Option<String> {
            added.push(sql_value(value)?);
            Some(dialect.placeholder(values.len() + added.len()))
        };
        let clause = match condition.op {
            FilterOp::In => {
                let items = condition.value.as_array()?;
                if items.is_empty() {
                    "1 = 0".to_owned()
                } else {
                    let marks: Option<Vec<String>> = items.iter().map(&mut placeholder).collect();
                    format!("{column} IN ({})", marks?.join(", "))
                }
            }
            FilterOp::Contains => {
                // A substring of a text column, case-sensitive, as the runtime compares.
                let part = Value::String(condition.value.as_str()?.to_owned());
                let mark = placeholder(&part)?;
                match dialect {
                    Dialect::Sqlite => {
                        format!("typeof({column}) = 'text' AND instr({column}, {mark}) > 0")
                    }
                    // Text columns only (the kind says so): strpos is case-sensitive too.
                    Dialect::Postgres => format!("strpos({column}, {mark}) > 0"),
                }
            }
            op => {
                // IS / IS NOT: a NULL column is unequal to every value, as in the runtime.
                let (eq, ne) = match dialect {
                    Dialect::Sqlite => ("IS", "IS NOT"),
                    Dialect::Postgres => ("IS NOT DISTINCT FROM", "IS DISTINCT FROM"),
                };
                let symbol = match op {
                    FilterOp::Eq => eq,
                    FilterOp::Ne => ne,
                    FilterOp::Gt => ">",
                    FilterOp::Gte => ">=",
                    FilterOp::Lt => "<",
                    FilterOp::Lte => "<=",
                    _ => return None,
                };
                format!("{column} {symbol} {}", placeholder(&condition.value)?)
            }
        };
        out.push_str(" AND ");
        out.push_str(&clause);
    }
    sql.push_str(&out);
    values.extend(added);
    Some(())
}

/// The query's sort on `columns` as an `ORDER BY` list, `tiebreak` last so pages are
/// stable; `None` when a key is not a column.
pub(crate) fn order_by(
    query: &CollectionQuery,
    columns: &[(&str, Kind)],
    tiebreak: &str,
) -> Option<String> {
    let mut keys = Vec::new();
    for key in query.sort() {
        let (column, _) = columns.iter().find(|(c, _)| *c == key.field)?;
        // NULLs last, whatever the order, as the runtime sorts.
        keys.push(format!(
            "{column} IS NULL, {column} {}",
            if key.descending { "DESC" } else { "ASC" }
        ));
    }
    keys.push(tiebreak.to_owned());
    Some(keys.join(", "))
}

/// ` LIMIT ? OFFSET ?` for a window (no limit: SQLite's `LIMIT -1`, PostgreSQL's largest).
pub(crate) fn limit(window: Window, values: &mut Vec<Sql>, dialect: Dialect) -> String {
    let unlimited = match dialect {
        Dialect::Sqlite => -1,
        Dialect::Postgres => i64::MAX,
    };
    let limit = i64::try_from(window.limit).unwrap_or(unlimited);
    let offset = i64::try_from(window.offset).unwrap_or(i64::MAX);
    values.push(limit.into());
    values.push(offset.into());
    format!(
        " LIMIT {} OFFSET {}",
        dialect.placeholder(values.len() - 1),
        dialect.placeholder(values.len())
    )
}

/// A JSON filter value as an SQL value (booleans as 0/1, as stored).
pub(crate) fn sql_value(value: &Value) -> Option<Sql> {
    match value {
        Value::Bool(b) => Some(i64::from(*b).into()),
        Value::Number(n) => n
            .as_i64()
            .map(Into::into)
            .or_else(|| n.as_f64().map(Into::into)),
        Value::String(s) => Some(s.clone().into()),
        _ => None,
    }
}

/// The values of a pushed-down query as PostgreSQL parameters.
#[cfg(feature = "postgres")]
#[allow(dead_code, reason = "each example uses the databases it serves")]
pub(crate) fn pg_params(
    values: &[rusqlite::types::Value],
) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
    use rusqlite::types::Value as Sql;
    values
        .iter()
        .map(|value| -> &(dyn tokio_postgres::types::ToSql + Sync) {
            match value {
                Sql::Integer(i) => i,
                Sql::Real(f) => f,
                Sql::Text(t) => t,
                Sql::Blob(b) => b,
                Sql::Null => &Null,
            }
        })
        .collect()
}

/// SQL NULL for a parameter of any type (an `Option::None` is typed, and PostgreSQL's
/// client refuses it for a column of another type).
#[cfg(feature = "postgres")]
#[derive(Debug)]
struct Null;

#[cfg(feature = "postgres")]
impl tokio_postgres::types::ToSql for Null {
    fn to_sql(
        &self,
        _: &tokio_postgres::types::Type,
        _: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        Ok(tokio_postgres::types::IsNull::Yes)
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// A pool of connections to the PostgreSQL database at `url`.
#[cfg(feature = "postgres")]
#[allow(dead_code, reason = "each example uses the databases it serves")]
pub(crate) fn pg_pool(url: &str) -> Result<deadpool_postgres::Pool, String> {
    let mut config = deadpool_postgres::Config::new();
    config.url = Some(url.to_owned());
    config
        .create_pool(
            Some(deadpool_postgres::Runtime::Tokio1),
            tokio_postgres::NoTls,
        )
        .map_err(|e| e.to_string())
}

/// A database failure, logged; the caller is told only that the database failed.
#[allow(dead_code, reason = "each example uses the databases it serves")]
pub(crate) fn db_error(error: impl std::fmt::Display) -> abilities::AbilityError {
    tracing::error!(%error, "database error");
    abilities::AbilityError::internal("the database failed")
}

/// The SQLite connection behind `lock`.
#[allow(dead_code, reason = "each example uses the databases it serves")]
pub(crate) fn sqlite(
    lock: &std::sync::Mutex<Connection>,
) -> Result<std::sync::MutexGuard<'_, Connection>, abilities::AbilityError> {
    lock.lock()
        .map_err(|_| abilities::AbilityError::internal("the database is unavailable"))
}

/// A connection of `pool`.
#[cfg(feature = "postgres")]
#[allow(dead_code, reason = "each example uses the databases it serves")]
pub(crate) async fn pg(
    pool: &deadpool_postgres::Pool,
) -> Result<deadpool_postgres::Object, abilities::AbilityError> {
    pool.get().await.map_err(db_error)
}
