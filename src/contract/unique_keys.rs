//! Maps whose keys must be unique. JSON lets an object repeat a key, and a reader keeps the last
//! one; the contract's maps (worker types, a job's throughputs, entities, pairs' throughputs)
//! refuse it instead: a body that says two things about one worker type is malformed, not a
//! silent choice of the second. Used as `#[serde(deserialize_with = "unique_keys::map")]`.

use serde::de::{Deserialize, Deserializer, Error, MapAccess, Visitor};
use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

/// A map read from a JSON object, refusing a key it has already read.
pub fn map<'de, D, M, V>(deserializer: D) -> Result<M, D::Error>
where
    D: Deserializer<'de>,
    M: FromIterator<(String, V)>,
    V: Deserialize<'de>,
{
    deserializer.deserialize_map(Unique(PhantomData))
}

/// [`map`] for an optional field (absent or `null`: `None`).
pub fn optional<'de, D, M, V>(deserializer: D) -> Result<Option<M>, D::Error>
where
    D: Deserializer<'de>,
    M: FromIterator<(String, V)>,
    V: Deserialize<'de>,
{
    deserializer.deserialize_option(Optional(PhantomData))
}

/// [`map`] of maps: neither the outer keys nor any inner object's keys may repeat (a throughputs
/// update's rows: job → type → steps/s).
pub fn nested<'de, D, M, N, V>(deserializer: D) -> Result<M, D::Error>
where
    D: Deserializer<'de>,
    M: FromIterator<(String, N)>,
    N: FromIterator<(String, V)>,
    V: Deserialize<'de>,
{
    let rows: Vec<(String, Inner<N, V>)> = map(deserializer)?;
    Ok(rows.into_iter().map(|(key, Inner(row, _))| (key, row)).collect())
}

/// An inner object of [`nested`], read by [`map`].
struct Inner<N, V>(N, PhantomData<V>);

impl<'de, N: FromIterator<(String, V)>, V: Deserialize<'de>> Deserialize<'de> for Inner<N, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        map(deserializer).map(|row| Inner(row, PhantomData))
    }
}

/// Up to this many keys a map's keys are compared one by one; past it they go in a set.
const SCANNED: usize = 16;

struct Unique<M, V>(PhantomData<(M, V)>);

impl<'de, M: FromIterator<(String, V)>, V: Deserialize<'de>> Visitor<'de> for Unique<M, V> {
    type Value = M;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<M, A::Error> {
        // A few keys (a job's throughputs: one per worker type) are checked against those read
        // so far; a set takes over once the map outgrows that.
        let mut seen: Option<HashSet<String>> = None;
        let mut entries: Vec<(String, V)> = Vec::with_capacity(access.size_hint().unwrap_or(0));
        while let Some(key) = access.next_key::<String>()? {
            let repeated = match seen.as_mut() {
                Some(seen) => !seen.insert(key.clone()),
                None => entries.iter().any(|(read, _)| *read == key),
            };
            if repeated {
                return Err(A::Error::custom(format!("duplicate key {key:?}")));
            }
            entries.push((key, access.next_value()?));
            if seen.is_none() && entries.len() == SCANNED {
                seen = Some(entries.iter().map(|(read, _)| read.clone()).collect());
            }
        }
        Ok(entries.into_iter().collect())
    }
}

struct Optional<M, V>(PhantomData<(M, V)>);

impl<'de, M: FromIterator<(String, V)>, V: Deserialize<'de>> Visitor<'de> for Optional<M, V> {
    type Value = Option<M>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object or null")
    }

    fn visit_none<E: Error>(self) -> Result<Option<M>, E> {
        Ok(None)
    }

    fn visit_unit<E: Error>(self) -> Result<Option<M>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<M>, D::Error> {
        map(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[serde(deserialize_with = "map")]
        types: BTreeMap<String, f64>,
        #[serde(default, deserialize_with = "optional")]
        entities: Option<IndexMap<String, f64>>,
    }

    #[test]
    fn a_repeated_key_is_refused_and_distinct_ones_read() {
        let body: Body = serde_json::from_str(r#"{"types": {"a": 1, "b": 2}, "entities": {"x": 3}}"#).unwrap();
        assert_eq!(body.types.len(), 2);
        assert_eq!(body.entities.unwrap()["x"], 3.0);
        let body: Body = serde_json::from_str(r#"{"types": {}, "entities": null}"#).unwrap();
        assert!(body.entities.is_none());
        let body: Body = serde_json::from_str(r#"{"types": {}}"#).unwrap();
        assert!(body.entities.is_none());
        let e = serde_json::from_str::<Body>(r#"{"types": {"a": 1, "a": 2}}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"a\""), "{e}");
        let e = serde_json::from_str::<Body>(r#"{"types": {}, "entities": {"x": 1, "x": 1}}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"x\""), "{e}");
    }

    /// Up to `SCANNED` keys are compared one by one, then a set holds them: a key repeated within
    /// the first ones, at the switch, or after it (of a key read before it or after) is refused.
    #[test]
    fn a_repeated_key_is_refused_in_a_large_map() {
        let object = |keys: &[String]| {
            let entries: Vec<String> = keys.iter().enumerate().map(|(i, k)| format!("\"{k}\": {i}")).collect();
            format!(r#"{{"types": {{{}}}}}"#, entries.join(", "))
        };
        let keys: Vec<String> = (0..3 * SCANNED).map(|i| format!("t{i}")).collect();
        let body: Body = serde_json::from_str(&object(&keys)).unwrap();
        assert_eq!(body.types.len(), 3 * SCANNED);
        let cases = [(3, 8), (0, SCANNED - 2), (SCANNED - 1, SCANNED - 1), (0, SCANNED), (SCANNED + 1, 2 * SCANNED)];
        for (first, again) in cases {
            let mut repeated = keys.clone();
            repeated.insert(again + 1, keys[first].clone());
            let e = serde_json::from_str::<Body>(&object(&repeated)).unwrap_err();
            assert!(e.to_string().contains(&format!("duplicate key \"t{first}\"")), "{first}, {again}: {e}");
        }
    }

    #[derive(Debug, Deserialize)]
    struct Rows {
        #[serde(deserialize_with = "nested")]
        rows: IndexMap<String, BTreeMap<String, f64>>,
    }

    #[test]
    fn a_repeated_key_inside_a_row_is_refused() {
        let rows: Rows = serde_json::from_str(r#"{"rows": {"j": {"a": 1, "b": 2}, "k": {}}}"#).unwrap();
        assert_eq!(rows.rows["j"]["b"], 2.0);
        assert!(rows.rows["k"].is_empty());
        let e = serde_json::from_str::<Rows>(r#"{"rows": {"j": {"a": 1, "a": 2}}}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"a\""), "{e}");
        let e = serde_json::from_str::<Rows>(r#"{"rows": {"j": {}, "j": {}}}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"j\""), "{e}");
    }
}
