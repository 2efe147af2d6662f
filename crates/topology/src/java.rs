//! Java's `String` order, which topology renderings follow so that their order matches what
//! Kafka Streams and Kafka's tools print.

use std::cmp::Ordering;

/// Java's `String.compareTo`: lexicographic over UTF-16 code units. It differs from Rust's byte
/// order only for characters above U+FFFF against U+E000..U+FFFF.
pub fn java_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The values sorted and deduplicated as a Java `TreeSet<String>` holds them.
pub fn tree_set<'a>(values: impl IntoIterator<Item = &'a String>) -> Vec<&'a str> {
    let mut sorted: Vec<&str> = values.into_iter().map(String::as_str).collect();
    sorted.sort_by(|a, b| java_cmp(a, b));
    sorted.dedup();
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorting_follows_java_string_compare_to() {
        // In UTF-8 byte order U+FF01 sorts before U+1F600; in UTF-16 the surrogate 0xD83D
        // comes first.
        let values = [
            "\u{FF01}".to_string(),
            "\u{1F600}".to_string(),
            "b".to_string(),
            "a".to_string(),
            "b".to_string(),
        ];
        assert_eq!(tree_set(&values), vec!["a", "b", "\u{1F600}", "\u{FF01}"]);
    }
}
