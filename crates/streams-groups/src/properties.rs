//! Java `.properties` files (`java.util.Properties.load`), for `--command-config`.
//!
//! Supported: `#`/`!` comment lines, `=`, `:` or whitespace between key and value, backslash
//! line continuations (leading whitespace of the next line dropped), and the escapes `\t`, `\n`,
//! `\r`, `\f`, `\uXXXX` and `\<any>` (the character itself). Later keys override earlier ones.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: malformed \\uxxxx encoding")]
pub struct PropertiesError {
    pub line: usize,
}

/// Parses properties text into key → value.
pub fn parse_properties(text: &str) -> Result<BTreeMap<String, String>, PropertiesError> {
    let mut properties = BTreeMap::new();
    for (line_number, logical) in logical_lines(text) {
        let (key, value) = split_key_value(&logical);
        let key = unescape(key).ok_or(PropertiesError { line: line_number })?;
        let value = unescape(value).ok_or(PropertiesError { line: line_number })?;
        properties.insert(key, value);
    }
    Ok(properties)
}

/// Logical lines (continuations joined, comments and blank lines dropped), each with the
/// 1-based number of the natural line it starts on.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut current: Option<(usize, String)> = None;
    // `lines()` splits on \n and strips a trailing \r; Java also ends lines at a lone \r.
    let natural = text.lines().flat_map(|l| l.split('\r')).enumerate();
    for (i, raw) in natural {
        let continuing = current.is_some();
        let trimmed = raw.trim_start_matches([' ', '\t', '\x0c']);
        if !continuing
            && (trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!'))
        {
            continue;
        }
        let trailing_backslashes = trimmed.chars().rev().take_while(|c| *c == '\\').count();
        let continues = trailing_backslashes % 2 == 1;
        let content = if continues {
            &trimmed[..trimmed.len() - 1]
        } else {
            trimmed
        };
        let entry = current.get_or_insert_with(|| (i + 1, String::new()));
        entry.1.push_str(content);
        if !continues {
            lines.extend(current.take());
        }
    }
    // A continuation on the last line just ends the input.
    lines.extend(current);
    lines
}

/// Splits at the first unescaped `=`, `:` or whitespace, then skips whitespace and at most one
/// `=`/`:` before the value.
fn split_key_value(line: &str) -> (&str, &str) {
    let is_space = |c: char| c == ' ' || c == '\t' || c == '\x0c';
    let mut escaped = false;
    let mut key_end = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || is_space(c) {
            key_end = i;
            break;
        }
    }
    let key = &line[..key_end];
    let mut rest = line[key_end..].trim_start_matches(is_space);
    if let Some(stripped) = rest.strip_prefix(['=', ':']) {
        rest = stripped.trim_start_matches(is_space);
    }
    (key, rest)
}

/// Resolves escapes; `None` for a malformed `\u`.
fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut pending_high: Option<u16> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            None => {}
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                if hex.len() != 4 {
                    return None;
                }
                let unit = u16::from_str_radix(&hex, 16).ok()?;
                // Java strings are UTF-16, so a pair of \u escapes can spell one character.
                match (pending_high.take(), unit) {
                    (Some(high), 0xDC00..=0xDFFF) => {
                        out.extend(char::decode_utf16([high, unit]).map_while(Result::ok))
                    }
                    (_, 0xD800..=0xDBFF) => pending_high = Some(unit),
                    (_, unit) => out.push(
                        char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER),
                    ),
                }
            }
            Some(other) => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<(String, String)> {
        parse_properties(text).unwrap().into_iter().collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn separators_comments_and_blank_lines() {
        let text = "# comment\n! also\n\n  client.id = tool\nrequest.timeout.ms:5000\nkey value with spaces\nempty=\nbare\n";
        assert_eq!(
            parsed(text),
            pairs(&[
                ("bare", ""),
                ("client.id", "tool"),
                ("empty", ""),
                ("key", "value with spaces"),
                ("request.timeout.ms", "5000")
            ])
        );
    }

    #[test]
    fn continuations_escapes_and_overrides() {
        let text =
            "a=one\\\n    two\r\nb\\=c=d\\te\nx=1\nx=2\nu=\\u0041\\ud83d\\ude00\nodd=ends\\\\\n";
        assert_eq!(
            parsed(text),
            pairs(&[
                ("a", "onetwo"),
                ("b=c", "d\te"),
                ("odd", "ends\\"),
                ("u", "A\u{1F600}"),
                ("x", "2")
            ])
        );
        assert_eq!(
            parse_properties("k=\\u12\n"),
            Err(PropertiesError { line: 1 })
        );
        assert_eq!(
            parse_properties("\n\nk=\\uzzzz\n"),
            Err(PropertiesError { line: 3 })
        );
    }
}
