//! A broker's `server.properties`, read with the rules of Java's `Properties.load` (what Kafka
//! uses): `#`/`!` comments, a trailing odd backslash continues the line (the next line's
//! leading blanks dropped), the key ends at the first unescaped `=`, `:` or blank, escapes
//! `\t \n \r \f \uXXXX`, and a later key wins over an earlier one.
use std::collections::BTreeMap;
use std::path::Path;

use super::BrokerError;

/// The keys and values of a properties file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerProperties {
    entries: BTreeMap<String, String>,
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

impl BrokerProperties {
    /// Reads a file; bytes that are not UTF-8 are read as ISO-8859-1, as Java does.
    pub fn load(path: impl AsRef<Path>) -> Result<BrokerProperties, BrokerError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| BrokerError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => e.into_bytes().iter().map(|b| char::from(*b)).collect(),
        };
        BrokerProperties::parse(&text).map_err(|e| match e {
            BrokerError::Properties { line, reason, .. } => BrokerError::Properties {
                path: Some(path.display().to_string()),
                line,
                reason,
            },
            other => other,
        })
    }

    pub fn parse(text: &str) -> Result<BrokerProperties, BrokerError> {
        let mut entries = BTreeMap::new();
        for (line, logical) in logical_lines(text) {
            let (key, value) = split(&logical);
            let error = |reason: &str| BrokerError::Properties {
                path: None,
                line,
                reason: reason.to_string(),
            };
            let key = unescape(key).ok_or_else(|| error("malformed \\uxxxx escape"))?;
            let value = unescape(value).ok_or_else(|| error("malformed \\uxxxx escape"))?;
            if key.is_empty() {
                return Err(error("a value without a key"));
            }
            entries.insert(key, value);
        }
        Ok(BrokerProperties { entries })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.entries.insert(key.into(), value.into());
    }

    /// Every key and value, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for BrokerProperties {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        BrokerProperties {
            entries: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

/// Joins continued lines. Returns each logical line (escapes still in place) with the number
/// of the line it started on.
fn logical_lines(text: &str) -> Vec<(usize, Vec<char>)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Vec<char>)> = None;
    // `lines` splits at \n and \r\n; a lone \r also ends a line in Java.
    let natural = text.split('\n').flat_map(|l| {
        let l = l.strip_suffix('\r').unwrap_or(l);
        l.split('\r')
    });
    for (index, raw) in natural.enumerate() {
        let trimmed = raw.trim_start_matches(is_blank);
        let (start, mut chars) = match current.take() {
            Some(continued) => {
                // An empty continuation line ends the logical line.
                if trimmed.is_empty() {
                    out.push(continued);
                    continue;
                }
                continued
            }
            None if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') => {
                continue
            }
            None => (index + 1, Vec::new()),
        };
        chars.extend(trimmed.chars());
        let backslashes = chars.iter().rev().take_while(|c| **c == '\\').count();
        if backslashes % 2 == 1 {
            chars.pop();
            current = Some((start, chars));
        } else {
            out.push((start, chars));
        }
    }
    out.extend(current);
    out
}

/// Splits a logical line into raw key and raw value.
fn split(chars: &[char]) -> (&[char], &[char]) {
    let mut i = 0;
    let mut escaped = false;
    while i < chars.len() {
        let c = chars[i];
        if !escaped && (c == '=' || c == ':' || is_blank(c)) {
            break;
        }
        escaped = c == '\\' && !escaped;
        i += 1;
    }
    let key = &chars[..i];
    let mut j = i;
    while j < chars.len() && is_blank(chars[j]) {
        j += 1;
    }
    // One separator, and the blanks after it.
    if j < chars.len() && (chars[j] == '=' || chars[j] == ':') {
        j += 1;
        while j < chars.len() && is_blank(chars[j]) {
            j += 1;
        }
    }
    (key, &chars[j.min(chars.len())..])
}

/// Resolves escapes; `None` for a malformed `\u`. `\uXXXX` is a UTF-16 unit, as in Java.
fn unescape(raw: &[char]) -> Option<String> {
    let mut units: Vec<u16> = Vec::with_capacity(raw.len());
    let mut chars = raw.iter().copied();
    while let Some(c) = chars.next() {
        let c = if c == '\\' {
            match chars.next() {
                None => break,
                Some('t') => '\t',
                Some('n') => '\n',
                Some('r') => '\r',
                Some('f') => '\u{c}',
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() != 4 || !hex.chars().all(|h| h.is_ascii_hexdigit()) {
                        return None;
                    }
                    units.push(u16::from_str_radix(&hex, 16).ok()?);
                    continue;
                }
                Some(other) => other,
            }
        } else {
            c
        };
        let mut buf = [0u16; 2];
        units.extend_from_slice(c.encode_utf16(&mut buf));
    }
    Some(String::from_utf16_lossy(&units))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, String)> {
        BrokerProperties::parse(text)
            .unwrap()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn separators_comments_and_blanks() {
        let text = "# comment\n! also a comment\n\na=1\nb : 2\nc 3\n  d=  4 \ne\nf=\n";
        assert_eq!(
            parse(text),
            pairs(&[
                ("a", "1"),
                ("b", "2"),
                ("c", "3"),
                ("d", "4 "),
                ("e", ""),
                ("f", "")
            ])
        );
    }

    #[test]
    fn continuations_escapes_and_overrides() {
        let text = "list=a,\\\n    b,\\\r\n    c\nkey\\=with\\:sep=v\\tx\nu=\\u00e9t\\u00e9\nlist2=x\\\\\nx=1\nx=2\r";
        assert_eq!(
            parse(text),
            pairs(&[
                ("key=with:sep", "v\tx"),
                ("list", "a,b,c"),
                ("list2", "x\\"),
                ("u", "été"),
                ("x", "2")
            ])
        );
    }

    #[test]
    fn bad_input_is_an_error_with_a_line() {
        let e = BrokerProperties::parse("a=1\nb=\\u12\n").unwrap_err();
        assert!(matches!(e, BrokerError::Properties { line: 2, .. }), "{e}");
        let e = BrokerProperties::parse("a=1\n=x\n").unwrap_err();
        assert!(matches!(e, BrokerError::Properties { line: 2, .. }), "{e}");
    }
}
