//! A reader for Java `.properties` files with the rules of `java.util.Properties.load`, plus
//! the line on which each key was written, so that config errors can point at it.
//!
//! The rules, in short: natural lines end at `\n`, `\r` or `\r\n`; a line whose first
//! non-blank character is `#` or `!` is a comment; a line ending in an odd number of
//! backslashes continues on the next one, whose leading blanks are dropped; the key ends at the
//! first unescaped `=`, `:` or blank, and one `=`/`:` plus the blanks around it separate it from
//! the value; `\t \n \r \f \uXXXX` are escapes and a backslash before any other character
//! stands for that character. Blanks are space, tab and form feed. The value keeps trailing
//! blanks, as in Java.

use std::collections::BTreeMap;

/// A value and the 1-based line its logical line started on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: String,
    pub line: usize,
}

/// The parsed file. A key written twice keeps the last value (as in Java); the earlier lines
/// are remembered so the caller can warn about them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    pub entries: BTreeMap<String, Entry>,
    /// `(key, earlier line, later line)` for every overridden key.
    pub overridden: Vec<(String, usize, usize)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertiesError {
    #[error("malformed \\uxxxx escape")]
    MalformedUnicodeEscape { line: usize },
    /// Java would accept this as the empty key; it is always a typo, so we refuse it.
    #[error("a value without a key")]
    EmptyKey { line: usize },
}

impl PropertiesError {
    pub fn line(&self) -> usize {
        match self {
            PropertiesError::MalformedUnicodeEscape { line }
            | PropertiesError::EmptyKey { line } => *line,
        }
    }
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\u{c}'
}

/// Parses the text of a properties file.
pub fn parse(text: &str) -> Result<Properties, PropertiesError> {
    let mut props = Properties::default();
    for logical in logical_lines(text) {
        let (key, value) = split_key_value(&logical.chars);
        let key = unescape(key, logical.line)?;
        let value = unescape(value, logical.line)?;
        if key.is_empty() {
            return Err(PropertiesError::EmptyKey { line: logical.line });
        }
        if let Some(previous) = props.entries.insert(
            key.clone(),
            Entry {
                value,
                line: logical.line,
            },
        ) {
            props.overridden.push((key, previous.line, logical.line));
        }
    }
    Ok(props)
}

/// One key/value line after joining continuations, escapes still in place.
struct LogicalLine {
    chars: Vec<char>,
    line: usize,
}

/// Splits the text into natural lines, numbered from 1, without their terminators.
fn natural_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let bytes = text.as_bytes();
    let (mut start, mut i, mut number) = (0, 0, 1);
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push((number, &text[start..i]));
                i += 1;
            }
            b'\r' => {
                lines.push((number, &text[start..i]));
                i += if bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
            }
            _ => {
                i += 1;
                continue;
            }
        }
        start = i;
        number += 1;
    }
    if start < bytes.len() {
        lines.push((number, &text[start..]));
    }
    lines
}

fn logical_lines(text: &str) -> Vec<LogicalLine> {
    let mut out = Vec::new();
    let mut current: Option<LogicalLine> = None;
    for (number, raw) in natural_lines(text) {
        let trimmed = raw.trim_start_matches(is_blank);
        match current.as_mut() {
            None => {
                // Blank and comment lines only count at the start of a logical line: a
                // continuation that looks like a comment is still part of the value.
                if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
                    continue;
                }
                current = Some(LogicalLine {
                    chars: Vec::new(),
                    line: number,
                });
            }
            Some(_) if trimmed.is_empty() => {
                // An empty continuation line ends the logical line (Java's LineReader).
                out.extend(current.take());
                continue;
            }
            Some(_) => {}
        }
        let Some(logical) = current.as_mut() else {
            continue;
        };
        logical.chars.extend(trimmed.chars());
        if ends_with_odd_backslashes(&logical.chars) {
            logical.chars.pop();
        } else {
            out.extend(current.take());
        }
    }
    // A backslash on the very last line continues into nothing; it was already dropped.
    out.extend(current);
    out
}

fn ends_with_odd_backslashes(chars: &[char]) -> bool {
    chars.iter().rev().take_while(|c| **c == '\\').count() % 2 == 1
}

/// Splits a logical line into raw key and raw value (escapes still in place).
fn split_key_value(chars: &[char]) -> (&[char], &[char]) {
    let mut key_end = 0;
    let mut value_start = chars.len();
    let mut has_separator = false;
    let mut escaped = false;
    while key_end < chars.len() {
        let c = chars[key_end];
        if !escaped && (c == '=' || c == ':') {
            value_start = key_end + 1;
            has_separator = true;
            break;
        }
        if !escaped && is_blank(c) {
            value_start = key_end + 1;
            break;
        }
        escaped = c == '\\' && !escaped;
        key_end += 1;
    }
    while value_start < chars.len() {
        let c = chars[value_start];
        if !is_blank(c) {
            if !has_separator && (c == '=' || c == ':') {
                has_separator = true;
            } else {
                break;
            }
        }
        value_start += 1;
    }
    (&chars[..key_end], &chars[value_start..])
}

/// Resolves escapes. `\uXXXX` is a UTF-16 code unit as in Java, so a surrogate pair written as
/// two escapes becomes one character; a lone surrogate becomes U+FFFD.
fn unescape(raw: &[char], line: usize) -> Result<String, PropertiesError> {
    let mut units: Vec<u16> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        i += 1;
        if c != '\\' {
            let mut buf = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut buf));
            continue;
        }
        let Some(&next) = raw.get(i) else { break };
        i += 1;
        let unit = match next {
            't' => '\t' as u16,
            'n' => '\n' as u16,
            'r' => '\r' as u16,
            'f' => 0x0c,
            'u' => {
                let hex: String = raw
                    .get(i..i + 4)
                    .ok_or(PropertiesError::MalformedUnicodeEscape { line })?
                    .iter()
                    .collect();
                i += 4;
                u16::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.chars().all(|h| h.is_ascii_hexdigit()))
                    .ok_or(PropertiesError::MalformedUnicodeEscape { line })?
            }
            other => {
                let mut buf = [0u16; 2];
                units.extend_from_slice(other.encode_utf16(&mut buf));
                continue;
            }
        };
        units.push(unit);
    }
    Ok(String::from_utf16_lossy(&units))
}

/// Decodes file bytes: UTF-8 when valid, else ISO-8859-1, which is what Java's
/// `Properties.load(InputStream)` (used by Kafka) assumes.
pub fn decode_file_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|b| char::from(*b)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(text: &str) -> BTreeMap<String, (String, usize)> {
        parse(text)
            .unwrap()
            .entries
            .into_iter()
            .map(|(k, e)| (k, (e.value, e.line)))
            .collect()
    }

    fn one(text: &str) -> (String, String) {
        let entries = parse(text).unwrap().entries;
        assert_eq!(entries.len(), 1, "{entries:?}");
        let (k, e) = entries.into_iter().next().unwrap();
        (k, e.value)
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn separators() {
        assert_eq!(one("a=b"), kv("a", "b"));
        assert_eq!(one("a:b"), kv("a", "b"));
        assert_eq!(one("a b"), kv("a", "b"));
        assert_eq!(one("a \t = \t b"), kv("a", "b"));
        assert_eq!(one("a : b"), kv("a", "b"));
        assert_eq!(one("a   b c"), kv("a", "b c"));
        // Only one separator is eaten: the second `=` belongs to the value.
        assert_eq!(one("a==b"), kv("a", "=b"));
        assert_eq!(one("a = = b"), kv("a", "= b"));
        assert_eq!(one("a :=b"), kv("a", "=b"));
        assert_eq!(one("key"), kv("key", ""));
        assert_eq!(one("key="), kv("key", ""));
        assert_eq!(one("key   "), kv("key", ""));
    }

    #[test]
    fn whitespace_rules() {
        assert_eq!(one("   \t\u{c}key=value"), kv("key", "value"));
        // Trailing blanks of a value are kept, as in Java.
        assert_eq!(one("key=value  "), kv("key", "value  "));
        // Other Unicode spaces are not blanks.
        assert_eq!(one("\u{a0}key=v"), kv("\u{a0}key", "v"));
    }

    #[test]
    fn comments_and_blank_lines() {
        let m = get("# c\n! c\n   # indented comment\n\n  \t \nk=v\n#k2=v2\n");
        assert_eq!(m.len(), 1);
        assert_eq!(m["k"], ("v".to_owned(), 6));
        // `#` inside a value or key is literal.
        assert_eq!(one("k=v # not a comment"), kv("k", "v # not a comment"));
        assert_eq!(one("k#x=v"), kv("k#x", "v"));
        // A comment line ending in a backslash does not continue.
        assert_eq!(get("# comment \\\nk=v")["k"], ("v".to_owned(), 2));
    }

    #[test]
    fn line_terminators_and_numbers() {
        let m = get("a=1\r\nb=2\rc=3\nd=4");
        assert_eq!(m["a"], ("1".to_owned(), 1));
        assert_eq!(m["b"], ("2".to_owned(), 2));
        assert_eq!(m["c"], ("3".to_owned(), 3));
        assert_eq!(m["d"], ("4".to_owned(), 4));
    }

    #[test]
    fn continuations() {
        let m = get("k = a,\\\n    b,\\\n\t c\nnext=1\n");
        assert_eq!(m["k"], ("a,b,c".to_owned(), 1));
        assert_eq!(m["next"], ("1".to_owned(), 4));
        // An even number of backslashes is an escaped backslash, not a continuation.
        let m = get("k=a\\\\\nn=1");
        assert_eq!(m["k"].0, "a\\");
        assert_eq!(m["n"].0, "1");
        // Three backslashes: one escaped backslash plus a continuation.
        assert_eq!(get("k=a\\\\\\\n b")["k"].0, "a\\b");
        // A continuation line that looks like a comment is part of the value.
        assert_eq!(get("k=a\\\n#b")["k"].0, "a#b");
        // An empty continuation line ends the value; the following line is a new entry.
        let m = get("k=a\\\n   \nn=1");
        assert_eq!(m["k"].0, "a");
        assert_eq!(m["n"], ("1".to_owned(), 3));
        // Backslash at end of file is dropped.
        assert_eq!(one("k=a\\"), kv("k", "a"));
        // The key itself can be continued.
        assert_eq!(one("ke\\\n  y=v"), kv("key", "v"));
        // Continuation across \r\n.
        assert_eq!(get("k=a\\\r\n  b\r\n")["k"].0, "ab");
    }

    #[test]
    fn escapes() {
        assert_eq!(one(r"k=a\tb\nc\rd\fe"), kv("k", "a\tb\nc\rd\u{c}e"));
        assert_eq!(one(r"k=\a\b\:\=\ \#"), kv("k", "ab:= #"));
        assert_eq!(one(r"my\ key\:x\=y=v"), kv("my key:x=y", "v"));
        assert_eq!(one(r"k=\u0041\u00e9\u20AC"), kv("k", "Aé€"));
        // A surrogate pair written as two escapes is one character.
        assert_eq!(one(r"k=\uD83D\uDE00"), kv("k", "😀"));
        assert_eq!(one(r"k=\uD83D"), kv("k", "\u{fffd}"));
        // Escaped leading blank of a value is kept.
        assert_eq!(one(r"k=\  v"), kv("k", "  v"));
    }

    #[test]
    fn malformed_unicode_escapes_report_the_line() {
        assert_eq!(
            parse("a=1\nk=\\u12"),
            Err(PropertiesError::MalformedUnicodeEscape { line: 2 })
        );
        assert_eq!(
            parse("\n\nk=\\u12G4"),
            Err(PropertiesError::MalformedUnicodeEscape { line: 3 })
        );
        assert_eq!(
            parse("k\\uzzzz=v"),
            Err(PropertiesError::MalformedUnicodeEscape { line: 1 })
        );
        assert_eq!(
            parse("k=\\u+123"),
            Err(PropertiesError::MalformedUnicodeEscape { line: 1 })
        );
    }

    #[test]
    fn empty_keys_are_refused() {
        assert_eq!(
            parse("a=1\n=value"),
            Err(PropertiesError::EmptyKey { line: 2 })
        );
        assert_eq!(parse(": value"), Err(PropertiesError::EmptyKey { line: 1 }));
    }

    #[test]
    fn last_value_wins_and_overrides_are_recorded() {
        let p = parse("k=1\nx=0\nk=2\n").unwrap();
        assert_eq!(
            p.entries["k"],
            Entry {
                value: "2".to_owned(),
                line: 3
            }
        );
        assert_eq!(p.overridden, vec![("k".to_owned(), 1, 3)]);
    }

    #[test]
    fn decoding_falls_back_to_latin1() {
        assert_eq!(decode_file_bytes("é".as_bytes()), "é");
        assert_eq!(decode_file_bytes(&[b'k', b'=', 0xe9]), "k=é");
    }

    #[test]
    fn never_panics_on_odd_input() {
        for text in [
            "\\", "\\\\", "\\u", "=", ":", "\r", "\r\r\n\n", "k=\\", "\\\n\\\n", "a\\\n",
        ] {
            let _ = parse(text);
        }
    }
}
