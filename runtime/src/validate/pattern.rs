//! The patterns of `pattern` and `patternProperties`: ECMA-262 regular expressions, as JSON
//! Schema reads them, translated for `regex-lite` where the two differ in what they match, and
//! refused where the translation would not be faithful.

/// A `pattern` (or a `patternProperties` key): an unanchored search.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub(super) source: String,
    pub(super) regex: regex_lite::Regex,
}

/// ECMA-262's white space and line terminators, the `\s` of a JSON Schema pattern.
const ECMA_SPACE: &str =
    "\\t\\n\\x0B\\x0C\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF";

/// A JSON Schema pattern (ECMA-262) in `regex-lite`'s syntax, where the two differ in what a
/// pattern matches: `.` stops at every ECMA line terminator (`\r`, U+2028, U+2029 too) and
/// `\s`/`\S` take ECMA's white space, which is wider than ASCII. `None` for what this does not
/// translate (`\S` inside a class, the empty classes `[]` and `[^]`), nor regex-lite's own
/// syntax (inline flags, `\A`, `\z`, `\<`, `\>`, `\b{..}`).
fn ecma(source: &str) -> Option<String> {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    let mut class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                's' if class => out.push_str(ECMA_SPACE),
                's' => {
                    out.push('[');
                    out.push_str(ECMA_SPACE);
                    out.push(']');
                }
                'S' if class => return None,
                // regex-lite's own: anchors and word boundaries ECMA does not have.
                'A' | 'z' | '<' | '>' => return None,
                'b' | 'B' if chars.peek() == Some(&'{') => return None,
                'S' => {
                    out.push_str("[^");
                    out.push_str(ECMA_SPACE);
                    out.push(']');
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            },
            '[' if !class => {
                class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                if chars.peek() == Some(&']') {
                    return None;
                }
            }
            ']' if class => {
                class = false;
                out.push(']');
            }
            // A literal in an ECMA class; a nested class in regex-lite's.
            '[' => out.push_str("\\["),
            // Inline flags (`(?i)`, `(?-u)`) are regex-lite's, not ECMA's.
            '(' if !class
                && chars.peek() == Some(&'?')
                && chars
                    .clone()
                    .nth(1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '-') =>
            {
                return None;
            }
            '.' if !class => out.push_str("[^\\n\\r\\u2028\\u2029]"),
            other => out.push(other),
        }
    }
    Some(out)
}

/// Compile `source`, or say why it is not checked (the reason follows the pattern's place in
/// the refusal).
pub(super) fn pattern(source: &str) -> Result<Pattern, String> {
    let translated = ecma(source).ok_or_else(|| {
        "`\\S` inside a class, an empty class, or syntax ECMA-262 does not have".to_owned()
    })?;
    regex_lite::Regex::new(&translated)
        .map(|regex| Pattern {
            source: source.to_owned(),
            regex,
        })
        .map_err(|e| format!("the built-in regular expressions read: {e}"))
}
