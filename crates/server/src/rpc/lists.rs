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
