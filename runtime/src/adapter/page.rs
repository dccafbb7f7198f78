//! Pagination of `tools/list`, `resources/list`, `resources/templates/list` and
//! `prompts/list`: pages of a configured size, opaque cursors.
//!
//! A cursor names the sort key of the last item sent, not a position, so it stays valid when
//! abilities are added or removed between pages: the next page starts after that key in the
//! list as it is then. A cursor that does not decode, or was made for another list, is
//! `-32602`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::ErrorData;

/// One page of `items` (ranked by the ascending `ranks`) after `cursor`, and the cursor of
/// the next page when there is one.
pub(crate) fn page<T: Clone>(
    list: &str,
    items: &[T],
    ranks: &[String],
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => {
            let after = decode(list, cursor)?;
            ranks.partition_point(|rank| rank.as_str() <= after.as_str())
        }
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| encode(list, &ranks[end - 1]));
    Ok((items[start.min(end)..end].to_vec(), next))
}

fn encode(list: &str, rank: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{list}\n{rank}"))
}

fn decode(list: &str, cursor: &str) -> Result<String, ErrorData> {
    let invalid = || {
        let shown: String = cursor.chars().take(100).collect();
        ErrorData::invalid_params(
            format!(
                "Invalid params for {list}: the cursor '{shown}' is not one this server gave for {list}; list again without a cursor"
            ),
            None,
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    match text.split_once('\n') {
        Some((kind, rank)) if kind == list => Ok(rank.to_owned()),
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn pages_follow_each_other_and_survive_changes() {
        let names = ranks(&["a", "b", "c", "d", "e"]);
        let (first, next) = page("tools/list", &names, &names, None, 2).unwrap();
        assert_eq!(first, ["a", "b"]);
        let next = next.unwrap();
        // "b" is removed and "bb" added before the next page: it starts after "b" all the same.
        let changed = ranks(&["a", "bb", "c", "d", "e"]);
        let (second, next) = page("tools/list", &changed, &changed, Some(&next), 2).unwrap();
        assert_eq!(second, ["bb", "c"]);
        let (last, next) = page("tools/list", &changed, &changed, next.as_deref(), 2).unwrap();
        assert_eq!((last, next), (vec!["d".to_owned(), "e".to_owned()], None));
    }

    #[test]
    fn foreign_and_malformed_cursors_are_invalid_params() {
        let names = ranks(&["a", "b", "c"]);
        let (_, next) = page("prompts/list", &names, &names, None, 1).unwrap();
        let foreign = page("tools/list", &names, &names, next.as_deref(), 1).unwrap_err();
        assert_eq!(foreign.code.0, -32602);
        for bad in ["***", "", "bm90IGEgY3Vyc29y"] {
            let error = page("tools/list", &names, &names, Some(bad), 1).unwrap_err();
            assert_eq!(error.code.0, -32602, "{bad}");
        }
    }
}
