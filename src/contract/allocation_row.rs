//! One job's row of an allocation as a response carries it: the time on each worker type, keyed
//! by the type's name. Every row of a response shares one list of the names, so a row costs one
//! allocation (its times) where a map of its own costs one per name and a hash table: at 65,536
//! jobs that was most of building a response. It reads, compares, serializes and deserializes as
//! the map `{type: time}` it stands for, in the names' order.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

#[derive(Clone)]
pub struct AllocationRow {
    names: Arc<[String]>,
    times: Vec<f64>,
}

impl AllocationRow {
    /// The row of `times[w]` on the type named `names[w]`; the times back if the lengths differ.
    pub fn new(names: Arc<[String]>, times: Vec<f64>) -> Result<AllocationRow, Vec<f64>> {
        if names.len() == times.len() {
            Ok(AllocationRow { names, times })
        } else {
            Err(times)
        }
    }

    /// The row of `times[w]` on `names[w]`, sharing `names` when there is a time per name, and
    /// otherwise of its own names, as far as both go (as zipping them into a map would).
    pub fn of(names: &Arc<[String]>, times: Vec<f64>) -> AllocationRow {
        AllocationRow::new(names.clone(), times).unwrap_or_else(|times| names.iter().cloned().zip(times).collect())
    }

    /// The time on the type named `name`.
    pub fn get(&self, name: &str) -> Option<&f64> {
        self.names.iter().position(|n| n == name).map(|w| &self.times[w])
    }

    /// The times in the order of the names.
    pub fn times(&self) -> &[f64] {
        &self.times
    }

    /// `(type, time)` in the order of the names.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &f64)> {
        self.into_iter()
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> {
        self.names.iter()
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = &f64> {
        self.times.iter()
    }

    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }
}

impl<'a> IntoIterator for &'a AllocationRow {
    type Item = (&'a String, &'a f64);
    type IntoIter = std::iter::Zip<std::slice::Iter<'a, String>, std::slice::Iter<'a, f64>>;

    fn into_iter(self) -> Self::IntoIter {
        self.names.iter().zip(self.times.iter())
    }
}

/// `row["v100"]`, like a map's index: a name the row lacks panics (use [`AllocationRow::get`]).
impl<Q: AsRef<str> + ?Sized> std::ops::Index<&Q> for AllocationRow {
    type Output = f64;

    fn index(&self, name: &Q) -> &f64 {
        let name = name.as_ref();
        self.get(name).unwrap_or_else(|| panic!("the allocation row has no worker type {name:?}"))
    }
}

/// A row of its own names (a test's or a client's); a later duplicate name overwrites, as in a map.
impl FromIterator<(String, f64)> for AllocationRow {
    fn from_iter<I: IntoIterator<Item = (String, f64)>>(pairs: I) -> AllocationRow {
        let (mut names, mut times) = (Vec::<String>::new(), Vec::new());
        for (name, time) in pairs {
            match names.iter().position(|n| *n == name) {
                Some(w) => times[w] = time,
                None => {
                    names.push(name);
                    times.push(time);
                }
            }
        }
        AllocationRow { names: names.into(), times }
    }
}

/// Equal as maps: the same names with the same times, in any order.
impl PartialEq for AllocationRow {
    fn eq(&self, other: &AllocationRow) -> bool {
        self.len() == other.len() && self.iter().all(|(name, time)| other.get(name) == Some(time))
    }
}

impl fmt::Debug for AllocationRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for AllocationRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (name, time) in self {
            map.serialize_entry(name, time)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for AllocationRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<AllocationRow, D::Error> {
        struct RowVisitor;
        impl<'de> Visitor<'de> for RowVisitor {
            type Value = AllocationRow;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from worker type to time")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AllocationRow, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
                while let Some(pair) = map.next_entry::<String, f64>()? {
                    pairs.push(pair);
                }
                Ok(pairs.into_iter().collect())
            }
        }
        deserializer.deserialize_map(RowVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::AllocationRow;
    use std::sync::Arc;

    fn names() -> Arc<[String]> {
        ["v100", "p100", "k80"].map(String::from).into()
    }

    #[test]
    fn a_row_reads_and_writes_as_the_map_it_stands_for() {
        let row = AllocationRow::of(&names(), vec![0.5, 0.0, 0.25]);
        assert_eq!(row["p100"], 0.0);
        assert_eq!(row[&"k80".to_string()], 0.25);
        assert_eq!(row.get("a100"), None);
        let json = serde_json::to_string(&row).unwrap();
        assert_eq!(json, r#"{"v100":0.5,"p100":0.0,"k80":0.25}"#);
        let back: AllocationRow = serde_json::from_str(&json).unwrap();
        assert_eq!(back, row);
        assert_eq!(format!("{row:?}"), r#"{"v100": 0.5, "p100": 0.0, "k80": 0.25}"#);
    }

    #[test]
    fn rows_are_equal_as_maps() {
        let row = AllocationRow::new(names(), vec![0.5, 0.0, 0.25]).unwrap();
        let reordered: AllocationRow =
            [("k80", 0.25), ("v100", 0.5), ("p100", 0.0)].map(|(n, t)| (n.to_string(), t)).into_iter().collect();
        assert_eq!(row, reordered);
        let other: AllocationRow =
            [("v100", 0.5), ("p100", 0.0)].map(|(n, t)| (n.to_string(), t)).into_iter().collect();
        assert_ne!(row, other);
        let changed = AllocationRow::new(names(), vec![0.5, 0.1, 0.25]).unwrap();
        // Fewer times than names: the names as far as the times go.
        let short = AllocationRow::of(&names(), vec![0.5, 0.0]);
        assert_eq!(short, other);
        assert_ne!(row, changed);
        // A duplicate name in a map overwrites, as serde_json's maps do.
        let dup: AllocationRow = serde_json::from_str(r#"{"v100":0.1,"v100":0.2}"#).unwrap();
        assert_eq!((dup.len(), dup["v100"]), (1, 0.2));
        assert_eq!(AllocationRow::new(names(), vec![1.0]).err(), Some(vec![1.0]));
    }
}
