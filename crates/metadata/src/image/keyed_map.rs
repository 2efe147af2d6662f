//! A sorted-vector map whose values hold their own keys: a group's members by member id, where
//! a [`VecMap`](super::vec_map::VecMap) kept every id twice (its key and the member's own
//! field), 24 bytes per member.
use std::borrow::Borrow;
use std::fmt;

use thin_vec::ThinVec;

use super::vec_map::make_room;

/// A value that holds the key it is kept under. The key must not change while the value is in
/// a [`KeyedMap`] (a member's id never does).
pub trait Keyed {
    type Key: Ord;

    fn key(&self) -> &Self::Key;
}

/// Values ordered by the keys they hold, in one sorted [`ThinVec`]: read as a map of key to
/// value, as a `BTreeMap` is (lookups by a borrowed key, iteration in key order).
#[derive(Clone, PartialEq, Eq)]
pub struct KeyedMap<V> {
    values: ThinVec<V>,
}

impl<V> Default for KeyedMap<V> {
    fn default() -> Self {
        KeyedMap {
            values: ThinVec::new(),
        }
    }
}

impl<V: Keyed> KeyedMap<V> {
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// (key, value) in key order.
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = (&V::Key, &V)> + ExactSizeIterator + Clone + '_ {
        self.values.iter().map(|v| (v.key(), v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &V::Key> + ExactSizeIterator + Clone {
        self.values.iter().map(V::key)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator + Clone {
        self.values.iter()
    }

    /// The values, to change anything but their keys.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator {
        self.values.iter_mut()
    }

    pub fn retain(&mut self, keep: impl FnMut(&mut V) -> bool) {
        self.values.retain_mut(keep);
    }

    /// Where `key` is, or would go, reading only what the search reads (see `VecMap`'s).
    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        V::Key: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.values.binary_search_by(|v| v.key().borrow().cmp(key))
    }

    /// [`KeyedMap::find`] for an insert: appends in key order answer without a search.
    fn find_slot<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        V::Key: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.values.last() {
            None => Err(0),
            Some(last) if last.key().borrow() < key => Err(self.values.len()),
            _ => self.find(key),
        }
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        V::Key: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &self.values[i])
    }

    /// The value kept under `key`, to change anything but its key.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        V::Key: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let at = self.find(key).ok()?;
        Some(&mut self.values[at])
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        V::Key: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    /// Keeps `value` under its key; the value it replaces comes back.
    pub fn insert(&mut self, value: V) -> Option<V> {
        match self.find_slot(value.key()) {
            Ok(at) => Some(std::mem::replace(&mut self.values[at], value)),
            Err(at) => {
                make_room(&mut self.values);
                self.values.insert(at, value);
                None
            }
        }
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        V::Key: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let at = self.find(key).ok()?;
        Some(self.values.remove(at))
    }

    /// The value kept under `key`, kept now as `make` makes it (with that key) if there was
    /// none.
    pub fn get_or_insert_with<Q>(&mut self, key: &Q, make: impl FnOnce() -> V) -> &mut V
    where
        V::Key: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let at = match self.find_slot(key) {
            Ok(at) => at,
            Err(at) => {
                make_room(&mut self.values);
                self.values.insert(at, make());
                at
            }
        };
        &mut self.values[at]
    }

    /// Sorts `values` by key; of equal keys the last wins, as repeated inserts leave it.
    fn from_vec(mut values: Vec<V>) -> Self {
        if !values.windows(2).all(|w| w[0].key() < w[1].key()) {
            values.reverse();
            // Stable: of equal keys the last inserted comes first, and dedup keeps the first.
            values.sort_by(|a, b| a.key().cmp(b.key()));
            values.dedup_by(|later, kept| later.key() == kept.key());
        }
        KeyedMap {
            values: ThinVec::from(values),
        }
    }
}

/// `map[key]`, as `BTreeMap`'s: panics when the key is missing (tests read maps this way).
impl<V: Keyed, Q: Ord + ?Sized> std::ops::Index<&Q> for KeyedMap<V>
where
    V::Key: Borrow<Q>,
{
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        match self.get(key) {
            Some(value) => value,
            None => panic!("no entry for the key in the KeyedMap"),
        }
    }
}

impl<V: Keyed + fmt::Debug> fmt::Debug for KeyedMap<V>
where
    V::Key: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V: Keyed> FromIterator<V> for KeyedMap<V> {
    fn from_iter<I: IntoIterator<Item = V>>(iter: I) -> Self {
        KeyedMap::from_vec(iter.into_iter().collect())
    }
}

impl<V: Keyed, const N: usize> From<[V; N]> for KeyedMap<V> {
    fn from(values: [V; N]) -> Self {
        KeyedMap::from_vec(Vec::from(values))
    }
}

impl<V> IntoIterator for KeyedMap<V> {
    type Item = V;
    type IntoIter = thin_vec::IntoIter<V>;

    fn into_iter(self) -> Self::IntoIter {
        self.values.into_iter()
    }
}

/// (key, value) of one value.
type KeyAndValue<'a, V> = (&'a <V as Keyed>::Key, &'a V);

impl<'a, V: Keyed> IntoIterator for &'a KeyedMap<V> {
    type Item = KeyAndValue<'a, V>;
    type IntoIter = std::iter::Map<std::slice::Iter<'a, V>, fn(&'a V) -> KeyAndValue<'a, V>>;

    fn into_iter(self) -> Self::IntoIter {
        self.values.iter().map(|v| (v.key(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Member {
        id: String,
        epoch: i32,
    }

    impl Keyed for Member {
        type Key = String;

        fn key(&self) -> &String {
            &self.id
        }
    }

    fn member(id: &str, epoch: i32) -> Member {
        Member {
            id: id.into(),
            epoch,
        }
    }

    #[test]
    fn values_are_found_by_the_keys_they_hold_and_iterate_in_key_order() {
        let mut map = KeyedMap::default();
        assert_eq!(map.insert(member("b", 1)), None);
        assert_eq!(map.insert(member("a", 2)), None);
        assert_eq!(map.insert(member("c", 3)), None);
        assert_eq!(map.insert(member("b", 4)), Some(member("b", 1)), "replaced");
        let order: Vec<(&str, i32)> = map.iter().map(|(k, v)| (k.as_str(), v.epoch)).collect();
        assert_eq!(order, [("a", 2), ("b", 4), ("c", 3)]);
        assert_eq!(map.get("c").map(|m| m.epoch), Some(3));
        assert!(map.get("d").is_none() && !map.contains_key("d"));
        map.get_or_insert_with("d", || member("d", 5)).epoch += 1;
        map.get_or_insert_with("d", || member("d", 0)).epoch += 1;
        assert_eq!(map["d"].epoch, 7, "made once, then found");
        assert_eq!(map.remove("a"), Some(member("a", 2)));
        assert_eq!(map.keys().collect::<Vec<_>>(), ["b", "c", "d"]);
    }

    #[test]
    fn collected_values_are_sorted_and_the_last_of_a_key_wins() {
        let map: KeyedMap<Member> = [member("b", 1), member("a", 2), member("b", 3)].into();
        let order: Vec<(&str, i32)> = map.values().map(|v| (v.id.as_str(), v.epoch)).collect();
        assert_eq!(order, [("a", 2), ("b", 3)]);
    }
}
