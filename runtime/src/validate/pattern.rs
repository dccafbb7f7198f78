//! The patterns of `pattern` and `patternProperties`: ECMA-262 regular expressions (with the
//! `u` flag, as JSON Schema reads them), translated for the `regex` crate where the two differ
//! in what they match, and refused where the translation would not be faithful.

/// A `pattern` (or a `patternProperties` key): an unanchored search.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub(super) source: String,
    pub(super) regex: regex::Regex,
}

/// ECMA-262's white space and line terminators, the `\s` of a JSON Schema pattern.
const ECMA_SPACE: &str =
    "\\t\\n\\x0B\\x0C\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF";

/// ECMA-262's `\d` and `\w` are ASCII, even with the `u` flag.
const ECMA_DIGIT: &str = "0-9";
const ECMA_WORD: &str = "0-9A-Za-z_";

/// A JSON Schema pattern (ECMA-262) in the `regex` crate's syntax, where the two differ in
/// what a pattern matches:
/// - `.` stops at every ECMA line terminator (`\r`, U+2028, U+2029 too);
/// - `\s`/`\S` take ECMA's white space, which is wider than ASCII, and `\d`, `\w`, `\b` are
///   ASCII as in ECMA;
/// - `\cX` is the control character X names, and `\b` inside a class a backspace;
/// - `\p{..}` and `\P{..}` (general categories, scripts, binary properties) are Unicode's.
///
/// `None` for what this does not translate (`\S`, `\D`, `\W` inside a class, a range with a
/// set such as `\d` at either end, the empty classes `[]` and `[^]`, `--` inside a class), nor
/// the `regex` crate's own syntax (inline flags, `\A`, `\z`, `\<`, `\>`, `\b{..}`).
fn ecma(source: &str) -> Option<String> {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    let mut class = false;
    // Inside a class, what came last: a range would join a set's bounds to its neighbour.
    let mut last = Last::Start;
    while let Some(c) = chars.next() {
        if class {
            let set = c == '\\' && chars.peek().is_some_and(|e| "sSdDwW".contains(*e));
            if set && last == Last::RangeDash {
                return None;
            }
            last = match c {
                _ if set => Last::Set,
                '-' if last == Last::Set && chars.peek() != Some(&']') => return None,
                '-' if last != Last::Start => Last::RangeDash,
                _ => Last::Other,
            };
        }
        match c {
            '\\' => escape(chars.next()?, class, &mut chars, &mut out)?,
            '[' if !class => {
                class = true;
                last = Last::Start;
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
            // A literal in an ECMA class; a nested class in the `regex` crate's.
            '[' => out.push_str("\\["),
            // Class set operations (`&&`, `~~`, `--`) are the `regex` crate's, not ECMA's.
            '&' | '~' if class => {
                out.push('\\');
                out.push(c);
            }
            '-' if class && chars.peek() == Some(&'-') => return None,
            // Inline flags (`(?i)`, `(?-u)`) are the `regex` crate's, not ECMA's.
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

/// What came last inside a class.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    /// Nothing yet (a `-` here is a literal).
    Start,
    /// A set escape (`\d`, `\w`, `\s`).
    Set,
    /// A `-` that makes a range with what comes next.
    RangeDash,
    Other,
}

/// One escape (`\` and `c`), in or out of a class, written to `out`.
fn escape(
    c: char,
    class: bool,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut String,
) -> Option<()> {
    let set = |out: &mut String, members: &str, negated: bool| {
        match (class, negated) {
            (true, false) => out.push_str(members),
            // A negated set inside a class would need set operations to translate.
            (true, true) => return None,
            (false, false) => {
                out.push('[');
                out.push_str(members);
                out.push(']');
            }
            (false, true) => {
                out.push_str("[^");
                out.push_str(members);
                out.push(']');
            }
        }
        Some(())
    };
    match c {
        's' | 'S' => set(out, ECMA_SPACE, c == 'S')?,
        'd' | 'D' => set(out, ECMA_DIGIT, c == 'D')?,
        'w' | 'W' => set(out, ECMA_WORD, c == 'W')?,
        // A backspace inside a class; an ASCII word boundary outside.
        'b' if class => out.push_str("\\x08"),
        'b' | 'B' if chars.peek() == Some(&'{') => return None,
        'b' | 'B' => {
            out.push_str("(?-u:\\");
            out.push(c);
            out.push(')');
        }
        // `\cJ` is U+000A: the letter's code modulo 32.
        'c' => {
            let letter = chars.next().filter(char::is_ascii_alphabetic)?;
            out.push_str(&format!("\\x{:02X}", (letter as u8) % 32));
        }
        // The `regex` crate's own: anchors and word boundaries ECMA does not have.
        'A' | 'z' | '<' | '>' => return None,
        other => {
            out.push('\\');
            out.push(other);
        }
    }
    Some(())
}

/// Compile `source`, or say why it is not checked (the reason follows the pattern's place in
/// the refusal).
pub(super) fn pattern(source: &str) -> Result<Pattern, String> {
    let translated = ecma(source).ok_or_else(|| {
        "`\\S`, `\\D` or `\\W` inside a class, an empty class, or syntax ECMA-262 does not have"
            .to_owned()
    })?;
    regex::Regex::new(&translated)
        .map(|regex| Pattern {
            source: source.to_owned(),
            regex,
        })
        .map_err(|e| format!("the built-in regular expressions read: {e}"))
}
