//! The lists of a request, as Kafka reads them.

/// A request's list without repeats: the first occurrence of each item, in order (Kafka reads
/// these lists into sets). Linear in the list, where a scan per item would be quadratic.
pub fn first_occurrences<T: std::hash::Hash + Eq + Clone>(
    items: impl IntoIterator<Item = T>,
) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .collect()
}

/// The bucket count of a Java `HashMap` (default capacity 16, load factor 0.75) after
/// `entries` insertions.
pub fn java_table_size(entries: usize) -> usize {
    let mut size = 16usize;
    while entries > size / 4 * 3 {
        size *= 2;
    }
    size
}

/// `names` (distinct, in insertion order) in the iteration order of a Java `HashSet` of
/// `table` buckets: by bucket (the spread `String.hashCode`), insertion order within one.
pub fn java_hash_set_order(names: Vec<&str>, table: usize) -> Vec<&str> {
    let bucket = |name: &str| {
        let h = name.encode_utf16().fold(0i32, |h, unit| {
            h.wrapping_mul(31).wrapping_add(i32::from(unit))
        }) as u32;
        ((h ^ (h >> 16)) as usize) & (table - 1)
    };
    let mut ordered: Vec<(usize, usize, &str)> = names
        .into_iter()
        .enumerate()
        .map(|(i, n)| (bucket(n), i, n))
        .collect();
    ordered.sort_unstable();
    ordered.into_iter().map(|(_, _, n)| n).collect()
}
