//! Discovery in large catalogs, an extension of `introspect` (advertised as
//! `_protocol.capabilities.operation_search`): `search` ranks operations by keywords over their
//! names, categories, parameters and descriptions; `category` and `endpoint` filter; `first`
//! and `after` page the matches. The index is built once, with the operation table.

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::Operation;
use crate::{AbilityError, ErrorCode, Registry};

/// The parameters of a discovery request, beside `query: "operations"`.
pub(crate) const PARAMS: [&str; 5] = ["search", "category", "endpoint", "first", "after"];

/// The most different words a search may have (each is a scan of the index).
const MAX_TERMS: usize = 16;

/// A page's default size, and the most it holds.
const DEFAULT_PAGE: usize = 20;
const MAX_PAGE: usize = 100;
/// [`MAX_PAGE`], as `first` is read.
const MAX: u64 = 100;

/// How much a match counts, by where the word is.
const IN_NAME: u8 = 4;
const IN_CATEGORY: u8 = 3;
const IN_PARAMETER: u8 = 2;
const IN_DESCRIPTION: u8 = 1;

/// Words that say nothing about what an operation does.
const STOP: [&str; 20] = [
    "a", "an", "and", "as", "at", "be", "by", "for", "from", "in", "is", "it", "its", "of", "on",
    "or", "the", "this", "to", "with",
];

/// Every word of every operation, sorted, with where it was found: prefix searches are a
/// binary search and a short scan.
#[derive(Debug, Default)]
pub(crate) struct Index {
    words: Vec<(String, u32, u8)>,
    /// Each operation's category, lower-cased.
    categories: Vec<Option<String>>,
    /// The categories and endpoint families there are, sorted.
    known_categories: Vec<String>,
    known_endpoints: Vec<String>,
    /// A digest of the catalog (every operation's name and words, in order): a cursor is
    /// good for the catalog it was issued for only.
    digest: u64,
}

impl Index {
    pub(crate) fn new(operations: &[Operation], registry: &Registry) -> Self {
        let mut words: Vec<(String, u32, u8)> = Vec::new();
        let mut categories = Vec::with_capacity(operations.len());
        for (i, op) in operations.iter().enumerate() {
            let Ok(index) = u32::try_from(i) else { break };
            let ability = registry.at(op.ability);
            let category = ability.and_then(|a| a.category()).map(str::to_lowercase);
            let mut own: HashMap<String, u8> = HashMap::new();
            let mut add = |text: &str, weight: u8| {
                for word in words_of(text) {
                    let best = own.entry(word).or_insert(weight);
                    *best = (*best).max(weight);
                }
            };
            add(&op.name, IN_NAME);
            add(&op.family, IN_CATEGORY);
            if let Some(category) = &category {
                add(category, IN_CATEGORY);
            }
            for param in &op.params {
                add(&param.name, IN_PARAMETER);
            }
            if let Some(ability) = ability {
                add(ability.description(), IN_DESCRIPTION);
            }
            words.extend(own.into_iter().map(|(word, weight)| (word, index, weight)));
            categories.push(category);
        }
        words.sort_unstable();
        let mut digest = Fnv::new();
        for op in operations {
            digest.part(op.name.as_bytes());
        }
        for (word, op, weight) in &words {
            digest.part(word.as_bytes());
            digest.part(&op.to_le_bytes());
            digest.part(&[*weight]);
        }
        let mut known_categories: Vec<String> = categories.iter().flatten().cloned().collect();
        known_categories.sort_unstable();
        known_categories.dedup();
        let mut known_endpoints: Vec<String> =
            operations.iter().map(|o| o.family.clone()).collect();
        known_endpoints.sort_unstable();
        known_endpoints.dedup();
        Self {
            words,
            categories,
            known_categories,
            known_endpoints,
            digest: digest.0,
        }
    }

    /// The operations matching every filter of `request`, best first for a search (ties in
    /// table order).
    fn matches(&self, operations: &[Operation], request: &Request) -> Vec<usize> {
        let keep = |i: usize| {
            let op = &operations[i];
            request
                .endpoint
                .as_ref()
                .is_none_or(|e| op.family.eq_ignore_ascii_case(e))
                && request.category.as_ref().is_none_or(|c| {
                    self.categories
                        .get(i)
                        .and_then(Option::as_ref)
                        .is_some_and(|own| own == c)
                })
        };
        let Some(terms) = &request.terms else {
            return (0..operations.len()).filter(|i| keep(*i)).collect();
        };
        // Per operation: how many terms it matches, and how well. A term matches a word
        // that starts with it as written or made singular.
        let mut scores: Vec<(u16, u32)> = vec![(0, 0); operations.len()];
        for forms in terms {
            let mut best: HashMap<u32, u8> = HashMap::new();
            for term in forms {
                let start = self
                    .words
                    .partition_point(|(w, _, _)| w.as_str() < term.as_str());
                for (word, op, weight) in &self.words[start..] {
                    if !word.starts_with(term.as_str()) {
                        break;
                    }
                    let entry = best.entry(*op).or_insert(0);
                    *entry = (*entry).max(*weight);
                }
            }
            for (op, weight) in best {
                if let Some(score) = scores.get_mut(op as usize) {
                    score.0 += 1;
                    score.1 += u32::from(weight);
                }
            }
        }
        let mut found: Vec<usize> = (0..operations.len())
            .filter(|i| scores[*i].0 > 0 && keep(*i))
            .collect();
        found.sort_by(|a, b| scores[*b].cmp(&scores[*a]).then(a.cmp(b)));
        found
    }
}

/// The words of `text`, each as written and made singular: lower-case runs of letters and
/// digits (snake and kebab names split), without stop words.
fn forms_of(text: &str) -> impl Iterator<Item = Vec<String>> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .map(|word| {
            let one = singular(&word);
            if one == word {
                vec![word]
            } else {
                vec![word, one]
            }
        })
}

/// Every form of every word of `text`, for the index.
fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    forms_of(text).flatten()
}

/// An English plural made singular, for the usual cases: `companies` -> `company`,
/// `boxes` / `bonuses` / `matches` -> `box` / `bonus` / `match`, `invoices` -> `invoice`;
/// `status`, `address`, `analysis` stay. A word it gets wrong (`movies` -> `movy`) still
/// matches as written.
fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies").filter(|s| s.len() > 1) {
        return format!("{stem}y");
    }
    if let Some(stem) = word.strip_suffix("es")
        && stem.len() > 2
        && ["s", "x", "z", "ch", "sh"]
            .iter()
            .any(|end| stem.ends_with(end))
    {
        return stem.to_owned();
    }
    match word.strip_suffix('s') {
        Some(stem) if stem.len() > 2 && !["s", "u", "i"].iter().any(|end| stem.ends_with(end)) => {
            stem.to_owned()
        }
        _ => word.to_owned(),
    }
}

/// A discovery request as read from `introspect`'s parameters.
struct Request {
    /// Each term's forms (as written, singular).
    terms: Option<Vec<Vec<String>>>,
    search: Option<String>,
    category: Option<String>,
    endpoint: Option<String>,
    first: usize,
    after: usize,
}

/// A whole number, written as an integer or as a float without a fraction (`5.0`).
fn whole(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= 1e15)
            .map(|f| f as u64)
    })
}

/// Whether `params` ask for discovery rather than the whole list.
pub(crate) fn asked(params: &Map<String, Value>) -> bool {
    PARAMS
        .iter()
        .any(|k| params.get(*k).is_some_and(|v| !v.is_null()))
}

fn invalid(param: &str, message: String) -> AbilityError {
    AbilityError::new(ErrorCode::ValidationInvalidValue, message)
        .with_details(json!({ "param_name": param }))
}

fn text(params: &Map<String, Value>, key: &str) -> Result<Option<String>, AbilityError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err(invalid(
            key,
            format!("Parameter '{key}' is empty: leave it out, or say what to look for"),
        )),
        Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(AbilityError::new(
            ErrorCode::ValidationInvalidType,
            format!("Parameter '{key}' expected 'string'"),
        )),
    }
}

/// FNV-1a over length-prefixed parts: stable across processes and replicas, unlike the std
/// hasher, and no two lists of parts run together.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn part(&mut self, bytes: &[u8]) {
        let length = (bytes.len() as u64).to_le_bytes();
        for byte in length.iter().chain(bytes) {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The fingerprint a cursor carries: the filters and the catalog it was issued for.
fn fingerprint(request: &Request, catalog: u64) -> u64 {
    let mut hash = Fnv::new();
    for part in [&request.search, &request.category, &request.endpoint] {
        hash.part(part.as_deref().unwrap_or("").as_bytes());
    }
    hash.part(&catalog.to_le_bytes());
    hash.0
}

fn encode_cursor(position: usize, fingerprint: u64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("d:{position}:{fingerprint:x}"))
}

fn decode_cursor(text: &str) -> Option<(usize, u64)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (position, fingerprint) = text.strip_prefix("d:")?.split_once(':')?;
    Some((
        position.parse().ok()?,
        u64::from_str_radix(fingerprint, 16).ok()?,
    ))
}

fn read(params: &Map<String, Value>, index: &Index) -> Result<Request, AbilityError> {
    let search = text(params, "search")?;
    let terms = search.as_deref().map(terms_of).transpose()?;
    let first = match params.get("first") {
        None | Some(Value::Null) => DEFAULT_PAGE,
        Some(value) => match whole(value) {
            Some(n @ 1..=MAX) => usize::try_from(n).unwrap_or(MAX_PAGE),
            _ => {
                return Err(AbilityError::new(
                    ErrorCode::ValidationInvalidType,
                    format!("Parameter 'first' expected an integer from 1 to {MAX_PAGE}"),
                )
                .with_details(json!({"param_name": "first"})));
            }
        },
    };
    let category = text(params, "category")?.map(|c| c.to_lowercase());
    let endpoint = text(params, "endpoint")?.map(|e| e.to_lowercase());
    known("category", category.as_deref(), &index.known_categories)?;
    known("endpoint", endpoint.as_deref(), &index.known_endpoints)?;
    let mut request = Request {
        terms,
        category,
        endpoint,
        search,
        first,
        after: 0,
    };
    if let Some(cursor) = text(params, "after")? {
        let mine = fingerprint(&request, index.digest);
        request.after = match decode_cursor(&cursor) {
            Some((position, fingerprint)) if fingerprint == mine => position,
            Some(_) => {
                return Err(invalid(
                    "after",
                    "Parameter 'after' is a cursor of another search, or of the catalog before it changed: send the same search, category and endpoint as the page it came from, or start again without 'after'".to_owned(),
                ));
            }
            None => {
                return Err(invalid(
                    "after",
                    "Parameter 'after' is not a cursor this server issued".to_owned(),
                ));
            }
        };
    }
    Ok(request)
}

/// The words of a search, each in the forms it matches: at least one, at most
/// [`MAX_TERMS`].
fn terms_of(search: &str) -> Result<Vec<Vec<String>>, AbilityError> {
    let mut terms: Vec<Vec<String>> = forms_of(search).collect();
    terms.sort_unstable();
    terms.dedup();
    if terms.len() > MAX_TERMS {
        return Err(invalid(
            "search",
            format!(
                "Parameter 'search' has {} different words: use at most {MAX_TERMS}, the ones that matter most",
                terms.len()
            ),
        ));
    }
    if terms.is_empty() {
        return Err(invalid(
            "search",
            format!("Parameter 'search' has no word to look for in '{search}'"),
        ));
    }
    Ok(terms)
}

/// A `category` or `endpoint` filter (`key`) some operation has, or the refusal naming those
/// that do.
fn known<S: AsRef<str>>(key: &str, given: Option<&str>, known: &[S]) -> Result<(), AbilityError> {
    let Some(given) = given else {
        return Ok(());
    };
    if known.iter().any(|k| k.as_ref() == given) {
        return Ok(());
    }
    let shown: String = given.chars().take(100).collect();
    let names: Vec<&str> = known.iter().map(AsRef::as_ref).collect();
    Err(AbilityError::new(
        ErrorCode::ValidationInvalidValue,
        format!(
            "No operation has the {key} '{shown}': use one of {}",
            names
                .iter()
                .take(50)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .with_details(json!({ "param_name": key, "valid_values": names })))
}

/// The operations a discovery request asks for, as `OperationInfo` entries by `info`, and
/// what the page is (`_protocol.discovery`): how many matched, the cursor of the next page.
pub(crate) fn discover(
    index: &Index,
    operations: &[Operation],
    params: &Map<String, Value>,
    info: impl Fn(&Operation) -> Value,
) -> Result<(Vec<Value>, Value), AbilityError> {
    let request = read(params, index)?;
    let found = index.matches(operations, &request);
    let page: Vec<Value> = found
        .iter()
        .skip(request.after)
        .take(request.first)
        .map(|&i| info(&operations[i]))
        .collect();
    let end = request.after.saturating_add(page.len());
    let more = end < found.len();
    let mut page_info = Map::new();
    for (key, value) in [
        ("search", &request.search),
        ("category", &request.category),
        ("endpoint", &request.endpoint),
    ] {
        if let Some(value) = value {
            page_info.insert(key.into(), json!(value));
        }
    }
    page_info.insert("matched".into(), json!(found.len()));
    page_info.insert("returned".into(), json!(page.len()));
    page_info.insert("has_more".into(), json!(more));
    if more {
        page_info.insert(
            "next_cursor".into(),
            json!(encode_cursor(end, fingerprint(&request, index.digest))),
        );
    }
    Ok((page, Value::Object(page_info)))
}

#[cfg(test)]
mod tests {
    use super::{singular, words_of};

    #[test]
    fn words_are_split_lowered_and_singular() {
        let words: Vec<String> = words_of("List the Invoices of billing/list-invoices").collect();
        assert_eq!(
            words,
            [
                "list", "invoices", "invoice", "billing", "list", "invoices", "invoice"
            ]
        );
        for (plural, one) in [
            ("companies", "company"),
            ("bonuses", "bonus"),
            ("boxes", "box"),
            ("matches", "match"),
            ("invoices", "invoice"),
            ("address", "address"),
            ("status", "status"),
            ("analysis", "analysis"),
            ("bus", "bus"),
        ] {
            assert_eq!(singular(plural), one, "{plural}");
        }
    }
}
