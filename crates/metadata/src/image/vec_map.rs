//! Sorted-vector map and set for the small collections of group state.
//!
//! A member's tasks are usually one sub-topology with a handful of partitions, and a B-tree
//! spends a whole node (hundreds of bytes) on one entry. These keep their entries in one sorted
//! `Vec`, so a one-entry map costs one entry, while iterating in key order exactly as
//! `BTreeMap`/`BTreeSet` do: the assignor and the records written depend on that order.
//! Lookups are binary searches; inserts shift, which is cheap at these sizes, and appending in
//! key order (how replay and the assignor build them) never shifts.
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::iter::FusedIterator;

use thin_vec::ThinVec;

/// A map ordered by key, stored as a sorted vector of `(key, value)` pairs: a [`ThinVec`], whose
/// length and capacity live in its allocation, so that a map takes 8 bytes where it is held (a
/// member's three task maps 24, not 72) and an empty one allocates nothing.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VecMap<K, V> {
    entries: ThinVec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap::new()
    }
}

impl<K, V> VecMap<K, V> {
    pub const fn new() -> Self {
        VecMap {
            entries: ThinVec::new(),
        }
    }

    /// Entries it has room for.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Gives back spare capacity; maps that stay in the state should not carry growth slack.
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }

    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter {
            inner: self.entries.iter(),
        }
    }

    pub fn iter_mut(&mut self) -> IterMut<'_, K, V> {
        IterMut {
            inner: self.entries.iter_mut(),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator + Clone + '_ {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator + Clone + '_ {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn values_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator + '_ {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    pub fn first_key_value(&self) -> Option<(&K, &V)> {
        self.entries.first().map(|(k, v)| (k, v))
    }

    pub fn last_key_value(&self) -> Option<(&K, &V)> {
        self.entries.last().map(|(k, v)| (k, v))
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }
}

impl<K: Ord, V> VecMap<K, V> {
    /// Where `key` is, or would go. A lookup reads only what its search reads: in a large
    /// fleet every entry read is a cache miss.
    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// [`VecMap::find`] for an insert: appends in key order (how replay and the assignor build
    /// maps) are answered without a search.
    fn find_slot<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.entries.last() {
            None => Err(0),
            Some((last, _)) if last.borrow() < key => Err(self.entries.len()),
            _ => self.find(key),
        }
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    pub fn get_key_value<Q>(&self, key: &Q) -> Option<(&K, &V)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| {
            let (k, v) = &self.entries[i];
            (k, v)
        })
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.find(key) {
            Ok(i) => Some(&mut self.entries[i].1),
            Err(_) => None,
        }
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    /// As `BTreeMap::insert`: the old value comes back and the stored key is kept.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find_slot(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                make_room(&mut self.entries);
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.remove_entry(key).map(|(_, v)| v)
    }

    pub fn remove_entry<Q>(&mut self, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.find(key) {
            Ok(i) => Some(self.entries.remove(i)),
            Err(_) => None,
        }
    }

    pub fn entry(&mut self, key: K) -> Entry<'_, K, V> {
        match self.find_slot(&key) {
            Ok(index) => Entry::Occupied(OccupiedEntry { map: self, index }),
            Err(index) => Entry::Vacant(VacantEntry {
                map: self,
                key,
                index,
            }),
        }
    }

    /// Sorts `entries` by key; of equal keys the last value wins, as repeated inserts into a
    /// `BTreeMap` would leave it.
    fn from_vec(mut entries: Vec<(K, V)>) -> Self {
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable, so equal keys stay in insertion order for the dedup below.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.dedup_by(|later, kept| {
                if later.0 == kept.0 {
                    std::mem::swap(&mut later.1, &mut kept.1);
                    true
                } else {
                    false
                }
            });
        }
        VecMap {
            entries: ThinVec::from(entries),
        }
    }
}

/// A view into one key of a [`VecMap`], as `btree_map::Entry`.
pub enum Entry<'a, K, V> {
    Occupied(OccupiedEntry<'a, K, V>),
    Vacant(VacantEntry<'a, K, V>),
}

pub struct OccupiedEntry<'a, K, V> {
    map: &'a mut VecMap<K, V>,
    index: usize,
}

pub struct VacantEntry<'a, K, V> {
    map: &'a mut VecMap<K, V>,
    key: K,
    index: usize,
}

impl<'a, K, V> Entry<'a, K, V> {
    pub fn key(&self) -> &K {
        match self {
            Entry::Occupied(e) => e.key(),
            Entry::Vacant(e) => &e.key,
        }
    }

    pub fn or_insert(self, default: V) -> &'a mut V {
        self.or_insert_with(|| default)
    }

    pub fn or_insert_with(self, default: impl FnOnce() -> V) -> &'a mut V {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(default()),
        }
    }

    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }

    pub fn and_modify(self, f: impl FnOnce(&mut V)) -> Self {
        match self {
            Entry::Occupied(mut e) => {
                f(e.get_mut());
                Entry::Occupied(e)
            }
            vacant => vacant,
        }
    }
}

impl<'a, K, V> OccupiedEntry<'a, K, V> {
    pub fn key(&self) -> &K {
        &self.map.entries[self.index].0
    }

    pub fn get(&self) -> &V {
        &self.map.entries[self.index].1
    }

    pub fn get_mut(&mut self) -> &mut V {
        &mut self.map.entries[self.index].1
    }

    pub fn into_mut(self) -> &'a mut V {
        &mut self.map.entries[self.index].1
    }

    pub fn insert(&mut self, value: V) -> V {
        std::mem::replace(self.get_mut(), value)
    }

    pub fn remove(self) -> V {
        self.map.entries.remove(self.index).1
    }
}

impl<'a, K, V> VacantEntry<'a, K, V> {
    pub fn key(&self) -> &K {
        &self.key
    }

    pub fn insert(self, value: V) -> &'a mut V {
        make_room(&mut self.map.entries);
        self.map.entries.insert(self.index, (self.key, value));
        &mut self.map.entries[self.index].1
    }
}

/// Room for one more element, growing by a quarter (at least one) rather than doubling: these
/// collections stay in the state for as long as their group, and a group's members (about 200
/// bytes each) left up to half their room unused after doubling. Still amortized O(1) per insert.
pub(super) fn make_room<T>(items: &mut ThinVec<T>) {
    if items.len() == items.capacity() {
        items.reserve_exact((items.len() / 4).max(1));
    }
}

/// `map[key]`, as `BTreeMap`'s: panics when the key is missing (tests read maps this way).
impl<K, Q, V> std::ops::Index<&Q> for VecMap<K, V>
where
    K: Ord + Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        match self.get(key) {
            Some(value) => value,
            None => panic!("no entry for the key in the VecMap"),
        }
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for VecMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for VecMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        VecMap::from_vec(iter.into_iter().collect())
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for VecMap<K, V> {
    fn from(entries: [(K, V); N]) -> Self {
        VecMap::from_vec(Vec::from(entries))
    }
}

impl<K: Ord, V> Extend<(K, V)> for VecMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K, V> IntoIterator for VecMap<K, V> {
    type Item = (K, V);
    type IntoIter = thin_vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a VecMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, K, V> IntoIterator for &'a mut VecMap<K, V> {
    type Item = (&'a K, &'a mut V);
    type IntoIter = IterMut<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// `(&key, &value)` in key order.
pub struct Iter<'a, K, V> {
    inner: std::slice::Iter<'a, (K, V)>,
}

impl<K, V> Clone for Iter<'_, K, V> {
    fn clone(&self) -> Self {
        Iter {
            inner: self.inner.clone(),
        }
    }
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<K, V> DoubleEndedIterator for Iter<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|(k, v)| (k, v))
    }
}

impl<K, V> ExactSizeIterator for Iter<'_, K, V> {}
impl<K, V> FusedIterator for Iter<'_, K, V> {}

/// `(&key, &mut value)` in key order.
pub struct IterMut<'a, K, V> {
    inner: std::slice::IterMut<'a, (K, V)>,
}

impl<'a, K, V> Iterator for IterMut<'a, K, V> {
    type Item = (&'a K, &'a mut V);

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(k, v)| (&*k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<K, V> DoubleEndedIterator for IterMut<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|(k, v)| (&*k, v))
    }
}

impl<K, V> ExactSizeIterator for IterMut<'_, K, V> {}
impl<K, V> FusedIterator for IterMut<'_, K, V> {}

/// A set ordered by value, stored as a sorted vector without duplicates.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VecSet<T> {
    items: Vec<T>,
}

impl<T> Default for VecSet<T> {
    fn default() -> Self {
        VecSet { items: Vec::new() }
    }
}

impl<T> VecSet<T> {
    pub const fn new() -> Self {
        VecSet { items: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn clear(&mut self) {
        self.items.clear();
    }

    pub fn shrink_to_fit(&mut self) {
        self.items.shrink_to_fit();
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    pub fn as_slice(&self) -> &[T] {
        &self.items
    }

    pub fn first(&self) -> Option<&T> {
        self.items.first()
    }

    pub fn last(&self) -> Option<&T> {
        self.items.last()
    }

    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.items.retain(keep);
    }
}

impl<T: Ord> VecSet<T> {
    fn find<Q>(&self, value: &Q) -> Result<usize, usize>
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.items.last() {
            None => return Err(0),
            Some(last) if last.borrow() < value => return Err(self.items.len()),
            _ => {}
        }
        self.items.binary_search_by(|x| x.borrow().cmp(value))
    }

    pub fn contains<Q>(&self, value: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(value).is_ok()
    }

    /// As `BTreeSet::insert`: false when the value was already there.
    pub fn insert(&mut self, value: T) -> bool {
        match self.find(&value) {
            Ok(_) => false,
            Err(i) => {
                self.items.insert(i, value);
                true
            }
        }
    }

    pub fn remove<Q>(&mut self, value: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.find(value) {
            Ok(i) => {
                self.items.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    pub fn is_subset(&self, other: &VecSet<T>) -> bool {
        self.len() <= other.len() && self.iter().all(|x| other.contains(x))
    }

    pub fn is_superset(&self, other: &VecSet<T>) -> bool {
        other.is_subset(self)
    }

    pub fn is_disjoint(&self, other: &VecSet<T>) -> bool {
        !self.iter().any(|x| other.contains(x))
    }

    /// Values in both, in order.
    pub fn intersection<'a>(
        &'a self,
        other: &'a VecSet<T>,
    ) -> impl Iterator<Item = &'a T> + Clone + 'a {
        self.iter().filter(move |x| other.contains(*x))
    }

    /// Values in `self` but not in `other`, in order.
    pub fn difference<'a>(
        &'a self,
        other: &'a VecSet<T>,
    ) -> impl Iterator<Item = &'a T> + Clone + 'a {
        self.iter().filter(move |x| !other.contains(*x))
    }

    /// Values in either, in order, each once.
    pub fn union<'a>(&'a self, other: &'a VecSet<T>) -> impl Iterator<Item = &'a T> + Clone + 'a {
        Union {
            a: self.as_slice(),
            b: other.as_slice(),
        }
    }

    fn from_vec(mut items: Vec<T>) -> Self {
        if !items.windows(2).all(|w| w[0] < w[1]) {
            items.sort_unstable();
            items.dedup();
        }
        items.shrink_to_fit();
        VecSet { items }
    }
}

/// Merge of two sorted, duplicate-free slices.
struct Union<'a, T> {
    a: &'a [T],
    b: &'a [T],
}

impl<T> Clone for Union<'_, T> {
    fn clone(&self) -> Self {
        Union {
            a: self.a,
            b: self.b,
        }
    }
}

impl<'a, T: Ord> Iterator for Union<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        match (self.a.split_first(), self.b.split_first()) {
            (None, None) => None,
            (Some((x, rest)), None) => {
                self.a = rest;
                Some(x)
            }
            (None, Some((y, rest))) => {
                self.b = rest;
                Some(y)
            }
            (Some((x, ra)), Some((y, rb))) => match x.cmp(y) {
                Ordering::Less => {
                    self.a = ra;
                    Some(x)
                }
                Ordering::Greater => {
                    self.b = rb;
                    Some(y)
                }
                Ordering::Equal => {
                    self.a = ra;
                    self.b = rb;
                    Some(x)
                }
            },
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for VecSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<T: Ord> FromIterator<T> for VecSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        VecSet::from_vec(iter.into_iter().collect())
    }
}

impl<T: Ord, const N: usize> From<[T; N]> for VecSet<T> {
    fn from(items: [T; N]) -> Self {
        VecSet::from_vec(Vec::from(items))
    }
}

impl<T: Ord> Extend<T> for VecSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let before = self.items.len();
        self.items.extend(iter);
        if self.items.len() == before {
            return;
        }
        // Values appended in order past the old maximum keep the vector sorted; anything else
        // is re-sorted once rather than inserted one by one.
        let start = before.saturating_sub(1);
        if !self.items[start..].windows(2).all(|w| w[0] < w[1]) {
            self.items.sort_unstable();
            self.items.dedup();
        }
    }
}

impl<'a, T: Ord + Copy + 'a> Extend<&'a T> for VecSet<T> {
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, iter: I) {
        self.extend(iter.into_iter().copied());
    }
}

impl<T> IntoIterator for VecSet<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a VecSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    /// A map built one insert at a time (a group's members as they join) keeps at most a
    /// quarter of its room unused, where doubling left up to half; one entry takes one slot.
    #[test]
    fn a_map_grown_by_inserts_keeps_little_room_unused() {
        let mut map = VecMap::new();
        map.insert(7, [0u8; 192]);
        assert_eq!(map.entries.capacity(), 1);
        for n in 2..=1000 {
            // Both insert paths, in an order that is not the keys' order.
            let key = (n * 7919) % 1009;
            if n % 2 == 0 {
                map.insert(key, [0; 192]);
            } else {
                map.entry(key).or_insert([0; 192]);
            }
            let (len, room) = (map.len(), map.entries.capacity());
            assert!(
                room <= len + len / 4 + 1,
                "{len} entries in room for {room}"
            );
        }
    }

    #[test]
    fn map_iterates_in_key_order_whatever_the_insertion_order() {
        let mut m = VecMap::new();
        for k in ["b", "d", "a", "c"] {
            assert_eq!(m.insert(k.to_string(), k.len()), None);
        }
        assert_eq!(
            m.keys().map(String::as_str).collect::<Vec<_>>(),
            ["a", "b", "c", "d"]
        );
        assert_eq!(m.iter().next_back().map(|(k, _)| k.as_str()), Some("d"));
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn map_insert_replaces_the_value_and_returns_the_old_one() {
        let mut m: VecMap<String, i32> = VecMap::new();
        assert_eq!(m.insert("x".into(), 1), None);
        assert_eq!(m.insert("x".into(), 2), Some(1));
        assert_eq!(m.get("x"), Some(&2));
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn map_remove_and_lookup_by_borrowed_key() {
        let mut m: VecMap<String, i32> = [
            ("a".to_string(), 1),
            ("b".to_string(), 2),
            ("c".to_string(), 3),
        ]
        .into();
        assert!(m.contains_key("b"));
        assert_eq!(m.remove("b"), Some(2));
        assert_eq!(m.remove("b"), None);
        assert!(!m.contains_key("b"));
        *m.get_mut("c").unwrap() += 10;
        assert_eq!(m.get("c"), Some(&13));
        assert_eq!(m.get("zz"), None);
        assert_eq!(m.keys().cloned().collect::<Vec<_>>(), ["a", "c"]);
    }

    #[test]
    fn map_tuple_keys_look_up_like_a_btree_map() {
        let m: VecMap<(String, i32), i32> = [
            (("1".to_string(), 2), 7),
            (("0".to_string(), 5), 3),
            (("0".to_string(), 1), 4),
        ]
        .into();
        assert_eq!(m.get(&("0".to_string(), 5)), Some(&3));
        assert_eq!(
            m.keys().map(|(s, p)| (s.as_str(), *p)).collect::<Vec<_>>(),
            [("0", 1), ("0", 5), ("1", 2)]
        );
    }

    #[test]
    fn map_entry_or_default_inserts_once_and_returns_the_slot() {
        let mut m: VecMap<String, VecSet<i32>> = VecMap::new();
        m.entry("b".into()).or_default().insert(2);
        m.entry("a".into()).or_default().insert(1);
        m.entry("b".into()).or_default().insert(0);
        assert_eq!(m.len(), 2);
        assert_eq!(
            m.get("b").map(|s| s.iter().copied().collect::<Vec<_>>()),
            Some(vec![0, 2])
        );
        assert_eq!(
            *m.entry("c".into()).or_insert(VecSet::from([9])),
            VecSet::from([9])
        );
        assert_eq!(m.keys().cloned().collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    #[test]
    fn map_collect_keeps_the_last_value_of_a_repeated_key_as_btree_map_does() {
        let pairs = [("b", 1), ("a", 2), ("b", 3), ("a", 4), ("c", 5)];
        let v: VecMap<&str, i32> = pairs.iter().copied().collect();
        let b: BTreeMap<&str, i32> = pairs.iter().copied().collect();
        assert_eq!(
            v.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(),
            b.into_iter().collect::<Vec<_>>()
        );
    }

    #[test]
    fn map_extend_overwrites_like_insert() {
        let mut m: VecMap<i32, &str> = [(1, "a"), (3, "c")].into();
        m.extend([(2, "b"), (3, "C")]);
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [(1, "a"), (2, "b"), (3, "C")]
        );
    }

    #[test]
    fn map_equality_ignores_capacity_and_insertion_order() {
        let mut a: VecMap<i32, i32> = VecMap::new();
        a.insert(2, 20);
        a.insert(1, 10);
        let b: VecMap<i32, i32> = [(1, 10), (2, 20)].into();
        assert_eq!(a, b);
        assert_ne!(a, [(1, 10)].into());
        assert_ne!(a, [(1, 10), (2, 21)].into());
    }

    #[test]
    fn map_retain_and_values_mut() {
        let mut m: VecMap<i32, i32> = (0..6).map(|i| (i, i * 10)).collect();
        m.retain(|k, v| {
            *v += 1;
            k % 2 == 0
        });
        for v in m.values_mut() {
            *v *= 2;
        }
        assert_eq!(
            m.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(),
            [(0, 2), (2, 42), (4, 82)]
        );
    }

    #[test]
    fn map_debug_looks_like_a_btree_map() {
        let v: VecMap<&str, i32> = [("b", 2), ("a", 1)].into();
        let b: BTreeMap<&str, i32> = [("b", 2), ("a", 1)].into();
        assert_eq!(format!("{v:?}"), format!("{b:?}"));
    }

    #[test]
    fn collected_map_and_set_have_no_spare_capacity() {
        let m: VecMap<i32, i32> = [(3, 0), (1, 0), (3, 1)].into_iter().collect();
        assert_eq!(m.entries.capacity(), m.len());
        let s: VecSet<i32> = [5, 1, 5, 3].into_iter().collect();
        assert_eq!(s.items.capacity(), s.len());
    }

    #[test]
    fn set_is_sorted_and_duplicate_free() {
        let s: VecSet<i32> = [3, 1, 2, 3, 1].into_iter().collect();
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [1, 2, 3]);
        let mut t = VecSet::new();
        assert!(t.insert(5));
        assert!(t.insert(0));
        assert!(!t.insert(5));
        assert_eq!(t.into_iter().collect::<Vec<_>>(), [0, 5]);
    }

    #[test]
    fn set_insert_remove_contains() {
        let mut s: VecSet<i32> = VecSet::new();
        for p in [4, 2, 8, 6] {
            s.insert(p);
        }
        assert!(s.contains(&6));
        assert!(s.remove(&6));
        assert!(!s.remove(&6));
        assert!(!s.contains(&6));
        assert_eq!(s.first(), Some(&2));
        assert_eq!(s.last(), Some(&8));
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn set_extend_merges_in_order_out_of_order_and_with_duplicates() {
        let mut s: VecSet<i32> = [1, 5].into();
        s.extend([6, 7]);
        assert_eq!(s.as_slice(), [1, 5, 6, 7]);
        s.extend([5, 0, 3, 3]);
        assert_eq!(s.as_slice(), [0, 1, 3, 5, 6, 7]);
        s.extend(&[7]);
        assert_eq!(s.as_slice(), [0, 1, 3, 5, 6, 7]);
        let mut e: VecSet<i32> = VecSet::new();
        e.extend([2, 2]);
        assert_eq!(e.as_slice(), [2]);
    }

    #[test]
    fn set_operations_match_btree_set() {
        let (xs, ys) = ([1, 3, 5, 7, 9], [3, 4, 5, 10]);
        let (a, b): (VecSet<i32>, VecSet<i32>) = (xs.into(), ys.into());
        let (ba, bb): (BTreeSet<i32>, BTreeSet<i32>) = (xs.into(), ys.into());
        let v = |i: &mut dyn Iterator<Item = &i32>| i.copied().collect::<Vec<_>>();
        assert_eq!(v(&mut a.intersection(&b)), v(&mut ba.intersection(&bb)));
        assert_eq!(v(&mut a.difference(&b)), v(&mut ba.difference(&bb)));
        assert_eq!(v(&mut b.difference(&a)), v(&mut bb.difference(&ba)));
        assert_eq!(v(&mut a.union(&b)), v(&mut ba.union(&bb)));
        assert!(VecSet::from([3, 5]).is_subset(&a));
        assert!(!VecSet::from([3, 4]).is_subset(&a));
        assert!(VecSet::<i32>::new().is_subset(&a));
        assert!(a.is_superset(&VecSet::from([1, 9])));
        assert!(a.is_disjoint(&VecSet::from([2, 4])));
    }

    #[test]
    fn set_equality_and_order_match_btree_set() {
        let a: VecSet<i32> = [2, 1].into();
        let b: VecSet<i32> = [1, 2].into();
        assert_eq!(a, b);
        assert!(VecSet::from([1, 2]) < VecSet::from([1, 3]));
        assert_eq!(
            BTreeSet::from([1, 2]) < BTreeSet::from([1, 3]),
            VecSet::from([1, 2]) < VecSet::from([1, 3])
        );
        assert_eq!(format!("{a:?}"), format!("{:?}", BTreeSet::from([1, 2])));
    }
}
