//! `tasks/list` (protocol 2025-11-25): a caller's tasks a page at a time, in the order they
//! were made, a cursor naming the position of the last task of its page.

use rmcp::model::ErrorData;

use super::{DISCARDED, TaskRecord, Tasks, now_ms, store_failed};

/// How many tasks one `tasks/list` page holds.
const LIST_PAGE: usize = 50;

impl Tasks {
    /// `tasks/list` (protocol 2025-11-25): one page of `owner`'s tasks in the order they
    /// were created, and the cursor of the next page when there is one. A cursor is the
    /// position of the last task of its page; one this server did not write is refused.
    pub(crate) async fn list(
        &self,
        owner: &str,
        cursor: Option<&str>,
    ) -> Result<(Vec<TaskRecord>, Option<String>), ErrorData> {
        self.sweep().await;
        let after = match cursor {
            None => None,
            Some(cursor) => Some(position(cursor).ok_or_else(|| {
                ErrorData::invalid_params(
                    "Invalid params for tasks/list: the cursor is not one this server gave",
                    None,
                )
            })?),
        };
        let mut page = self
            .store
            .tasks_of(owner, now_ms(), after, LIST_PAGE + 1)
            .await
            .map_err(|e| store_failed(&e))?;
        let more = page.len() > LIST_PAGE;
        page.truncate(LIST_PAGE);
        let next = more
            .then(|| page.last().map(|r| format!("{}.{}", r.created_at_ms, r.id)))
            .flatten();
        page.retain(|r| r.status_message.as_deref() != Some(DISCARDED));
        let mut shown = Vec::with_capacity(page.len());
        for record in page {
            shown.push(self.unless_abandoned(record).await);
        }
        Ok((shown, next))
    }
}

/// The position a `tasks/list` cursor names: `<created_at_ms>.<id>`.
fn position(cursor: &str) -> Option<(u64, &str)> {
    let (at, id) = cursor.split_once('.')?;
    let valid = !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    valid.then_some((at.parse().ok()?, id))
}
