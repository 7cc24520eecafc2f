//! Reading JSON text into the contract's types, with refusals that name the field they were found
//! at. A well-formed document is read once, at serde_json's own speed; only a refused one is read
//! again with its path tracked, so naming the field costs nothing on the requests that are fine.

use super::error::{ArbiterError, ErrorCode};
use super::ignored::IgnoredFields;
use serde::de::DeserializeOwned;

/// Why a text is not a `T`: serde's message and, when it is below the document's root, the field
/// path (`jobs[3].throughput`).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub path: Option<String>,
    pub message: String,
}

impl Refusal {
    /// The contract's error object for it: `malformed_request` at its path, its message after
    /// `prefix`.
    pub fn into_error(self, prefix: &str) -> ArbiterError {
        // A required field that is absent is named itself, under the object that lacks it.
        if let Some(name) = absent_field(&self.message) {
            let field = self.path.as_deref().map_or_else(|| name.to_string(), |object| format!("{object}.{name}"));
            return ArbiterError::at(ErrorCode::MissingField, field, format!("{prefix}{}", self.message));
        }
        let error = ArbiterError::new(ErrorCode::MalformedRequest, format!("{prefix}{}", self.message));
        ArbiterError { field: self.path, ..error }
    }
}

/// The field serde reports absent (its message starts "missing field `name`").
fn absent_field(message: &str) -> Option<&str> {
    let name = message.strip_prefix("missing field `")?.split('`').next()?;
    (!name.is_empty()).then_some(name)
}

/// The UTF-8 byte-order mark some editors (Windows Notepad, PowerShell's `Out-File`) put before
/// a document.
pub const BYTE_ORDER_MARK: char = '\u{feff}';

/// `text` without a leading byte-order mark. JSON has no place for one (RFC 8259 lets a reader
/// ignore it), and serde reads it as a stray character: every reader of a document the contract
/// takes strips it first.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix(BYTE_ORDER_MARK).unwrap_or(text)
}

/// The text of the file `input`, or of standard input for `-`, as every command that reads a
/// document takes it; a refusal says what could not be read.
pub fn read_input(input: &str) -> Result<String, ArbiterError> {
    let text = if input == "-" { std::io::read_to_string(std::io::stdin()) } else { std::fs::read_to_string(input) };
    text.map_err(|e| ArbiterError::new(ErrorCode::MalformedRequest, format!("cannot read {input}: {e}")))
}

/// `text` (after any byte-order mark) as a `T`, with nothing but whitespace after it. Every
/// object of `T` (a struct) must be a JSON object: an array is refused where one is expected,
/// which serde would otherwise read as the struct's fields in order.
pub fn read<T: DeserializeOwned>(text: &str) -> Result<T, Refusal> {
    let text = without_bom(text);
    let mut de = serde_json::Deserializer::from_str(text);
    match T::deserialize(objects::Objects(&mut de)).and_then(|value| de.end().map(|()| value)) {
        Ok(value) => Ok(value),
        Err(_) => Err(refusal::<T>(text, true)),
    }
}

/// [`read`], and the fields the text gives that `T` has no place for, which serde skipped
/// (`ignored::IgnoredFields`: each path once, `[*]` where it recurs across a list).
///
/// Tracking every path costs a quarter more than [`read`], so the text is read as `read` reads
/// it, noting only whether serde skipped anything; only then is it read again for the paths.
pub fn read_noting<T: DeserializeOwned>(text: &str) -> Result<(T, IgnoredFields), Refusal> {
    objects::SKIPPED.set(false);
    let value = read::<T>(text)?;
    if !objects::SKIPPED.get() {
        return Ok((value, IgnoredFields::default()));
    }
    let mut de = serde_json::Deserializer::from_str(without_bom(text));
    let mut ignored = IgnoredFields::default();
    // It read once; it reads the same way again.
    let _: Result<T, _> = serde_ignored::deserialize(&mut de, |path| ignored.note(&path));
    Ok((value, ignored))
}

/// [`read`] as documents were read before an array was refused where an object is expected:
/// for a session's stored bodies, which replay as they were taken (every live body is read by
/// [`read`] first).
pub fn read_stored<T: DeserializeOwned>(text: &str) -> Result<T, Refusal> {
    let text = without_bom(text);
    serde_json::from_str(text).map_err(|_| refusal::<T>(text, false))
}

/// The refusal of a text that does not read as a `T`: read again, tracking the path.
fn refusal<T: DeserializeOwned>(text: &str, objects: bool) -> Refusal {
    let mut de = serde_json::Deserializer::from_str(text);
    let read = match objects {
        true => serde_path_to_error::deserialize::<_, T>(objects::Objects(&mut de)),
        false => serde_path_to_error::deserialize::<_, T>(&mut de),
    };
    let (path, message) = match read {
        Err(e) => (e.path().to_string(), e.into_inner().to_string()),
        // The value read; what follows it did not.
        Ok(_) => match de.end() {
            Err(e) => (".".to_string(), e.to_string()),
            Ok(()) => (".".to_string(), "the document does not read the same way twice".to_string()),
        },
    };
    // A segment serde could not name (`?`, where a document was cut short) says nothing.
    let mut path = path.as_str();
    while let Some(rest) = path.strip_suffix(".?").or_else(|| path.strip_suffix("?")) {
        path = rest;
    }
    let path = match path {
        "" | "." => None,
        path => Some(path.to_string()),
    };
    // A key given twice is refused at the object that holds it: name the key.
    let twice = message.strip_prefix("duplicate field `").and_then(|rest| rest.split('`').next());
    let path = match (path, twice) {
        (None, Some(key)) => Some(key.to_string()),
        (Some(object), Some(key)) => Some(format!("{object}.{key}")),
        (path, None) => path,
    };
    Refusal { path, message }
}

/// A deserializer that reads as the one it wraps, except that a struct (or a struct variant) is
/// read from a JSON object only: given an array, it is refused as a sequence where the struct was
/// expected. Every value below is read through it too (elements, keys and values, variants).
/// Maps, lists and tuples read as before.
mod objects {
    use serde::de::{
        DeserializeSeed, Deserializer, EnumAccess, Error, MapAccess, SeqAccess, Unexpected, VariantAccess, Visitor,
    };
    use std::cell::Cell;
    use std::fmt;

    thread_local! {
        /// Set when a value was skipped (a key its struct has no field for) since it was last
        /// cleared: a read runs on one thread, start to end.
        pub static SKIPPED: Cell<bool> = const { Cell::new(false) };
    }

    /// A deserializer, seed, sequence, map, enum or variant read through.
    pub struct Objects<T>(pub T);

    /// A visitor whose sequences and maps are read through; `object`: it reads a struct.
    struct Wrapped<V> {
        visitor: V,
        object: bool,
    }

    fn wrap<V>(visitor: V) -> Wrapped<V> {
        Wrapped { visitor, object: false }
    }

    macro_rules! forward_deserialize {
        ($($method:ident)*) => {$(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method(wrap(visitor))
            }
        )*};
    }

    impl<'de, D: Deserializer<'de>> Deserializer<'de> for Objects<D> {
        type Error = D::Error;

        forward_deserialize! {
            deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
            deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
            deserialize_f32 deserialize_f64 deserialize_char deserialize_str deserialize_string
            deserialize_bytes deserialize_byte_buf deserialize_option deserialize_unit deserialize_seq
            deserialize_map deserialize_identifier
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            SKIPPED.set(true);
            self.0.deserialize_ignored_any(wrap(visitor))
        }

        fn deserialize_unit_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_unit_struct(name, wrap(visitor))
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_newtype_struct(name, wrap(visitor))
        }

        fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, D::Error> {
            self.0.deserialize_tuple(len, wrap(visitor))
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_tuple_struct(name, len, wrap(visitor))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_struct(name, fields, Wrapped { visitor, object: true })
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_enum(name, variants, wrap(visitor))
        }

        fn is_human_readable(&self) -> bool {
            self.0.is_human_readable()
        }
    }

    macro_rules! forward_visit {
        ($($method:ident($ty:ty))*) => {$(
            fn $method<E: Error>(self, v: $ty) -> Result<V::Value, E> {
                self.visitor.$method(v)
            }
        )*};
    }

    impl<'de, V: Visitor<'de>> Visitor<'de> for Wrapped<V> {
        type Value = V::Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.visitor.expecting(f)
        }

        forward_visit! {
            visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64) visit_i128(i128)
            visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64) visit_u128(u128) visit_f32(f32)
            visit_f64(f64) visit_char(char) visit_str(&str) visit_borrowed_str(&'de str) visit_string(String)
            visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
        }

        fn visit_none<E: Error>(self) -> Result<V::Value, E> {
            self.visitor.visit_none()
        }

        fn visit_unit<E: Error>(self) -> Result<V::Value, E> {
            self.visitor.visit_unit()
        }

        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
            self.visitor.visit_some(Objects(deserializer))
        }

        fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
            self.visitor.visit_newtype_struct(Objects(deserializer))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
            match self.object {
                true => Err(A::Error::invalid_type(Unexpected::Seq, &self.visitor)),
                false => self.visitor.visit_seq(Objects(seq)),
            }
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
            self.visitor.visit_map(Objects(map))
        }

        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
            self.visitor.visit_enum(Objects(data))
        }
    }

    impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Objects<S> {
        type Value = S::Value;

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
            self.0.deserialize(Objects(deserializer))
        }
    }

    impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Objects<A> {
        type Error = A::Error;

        fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
            self.0.next_element_seed(Objects(seed))
        }

        fn size_hint(&self) -> Option<usize> {
            self.0.size_hint()
        }
    }

    impl<'de, A: MapAccess<'de>> MapAccess<'de> for Objects<A> {
        type Error = A::Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
            self.0.next_key_seed(Objects(seed))
        }

        fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
            self.0.next_value_seed(Objects(seed))
        }

        fn size_hint(&self) -> Option<usize> {
            self.0.size_hint()
        }
    }

    impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Objects<A> {
        type Error = A::Error;
        type Variant = Objects<A::Variant>;

        fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self::Variant), A::Error> {
            let (value, variant) = self.0.variant_seed(Objects(seed))?;
            Ok((value, Objects(variant)))
        }
    }

    impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Objects<A> {
        type Error = A::Error;

        fn unit_variant(self) -> Result<(), A::Error> {
            self.0.unit_variant()
        }

        fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
            self.0.newtype_variant_seed(Objects(seed))
        }

        fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
            self.0.tuple_variant(len, wrap(visitor))
        }

        fn struct_variant<V: Visitor<'de>>(
            self,
            fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, A::Error> {
            self.0.struct_variant(fields, Wrapped { visitor, object: true })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Job {
        id: String,
        weight: f64,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Body {
        jobs: Vec<Job>,
    }

    #[test]
    fn a_well_formed_document_reads() {
        let body: Body = read(r#"{"jobs": [{"id": "a", "weight": 1.5}]}"#).unwrap();
        assert_eq!(body, Body { jobs: vec![Job { id: "a".into(), weight: 1.5 }] });
    }

    #[test]
    fn a_refusal_names_its_field() {
        let e = read::<Body>(r#"{"jobs": [{"id": "a", "weight": 1}, {"id": "b", "weight": "x"}]}"#).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("jobs[1].weight"));
        assert!(e.message.contains("invalid type"), "{}", e.message);
    }

    #[test]
    fn an_absent_required_field_is_named_under_its_object() {
        let e = read::<Body>(r#"{"jobs": [{"id": "a", "weight": 1}, {"id": "b"}]}"#).unwrap_err().into_error("");
        assert_eq!(e.code, ErrorCode::MissingField);
        assert_eq!(e.field.as_deref(), Some("jobs[1].weight"));
        let e = read::<Body>("{}").unwrap_err().into_error("");
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::MissingField, Some("jobs")));
    }

    #[test]
    fn a_syntax_error_at_the_root_has_no_path() {
        let e = read::<Body>("{").unwrap_err();
        assert_eq!(e.path, None);
        assert!(e.message.contains("EOF"), "{}", e.message);
    }

    #[test]
    fn a_leading_byte_order_mark_is_ignored() {
        let body: Body = read("\u{feff}{\"jobs\": []}").unwrap();
        assert_eq!(body, Body { jobs: vec![] });
        assert_eq!(without_bom("\u{feff}{}"), "{}");
        assert_eq!(without_bom("{}"), "{}");
        // Only at the start: anywhere else it is a stray character.
        assert!(read::<Body>("{\"jobs\": []}\u{feff}").is_err());
    }

    #[test]
    fn a_key_given_twice_is_named_and_a_cut_document_names_no_unknown_segment() {
        let e = read::<Body>(r#"{"jobs": [{"id": "a", "id": "b", "weight": 1}]}"#).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("jobs[0].id"), "{}", e.message);
        let e = read::<Body>(r#"{"jobs": [], "jobs": []}"#).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("jobs"), "{}", e.message);
        let e = read::<Body>(r#"{"jobs": [{"id": "a", "weight": 1}, {"id": "#).unwrap_err();
        assert!(e.path.as_deref().is_none_or(|p| !p.contains('?')), "{:?}", e.path);
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Cluster {
        worker_types: std::collections::BTreeMap<String, Type>,
        servers: Option<Vec<Vec<u32>>>,
        pair: Option<(u32, u32)>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Type {
        count: u32,
        gpus_per_server: u32,
    }

    #[test]
    fn an_array_where_an_object_is_expected_is_refused_at_its_field() {
        let e = read::<Cluster>(r#"{"worker_types": {"v100": [4, 1]}}"#).unwrap_err().into_error("");
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::MalformedRequest, Some("worker_types.v100")), "{e}");
        assert!(e.message.contains("invalid type: sequence, expected struct Type"), "{}", e.message);
        let e = read::<Body>(r#"{"jobs": [{"id": "a", "weight": 1}, ["b", 2]]}"#).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("jobs[1]"), "{}", e.message);
        let e = read::<Body>(r#"[[{"id": "a", "weight": 1}]]"#).unwrap_err();
        assert_eq!(e.path, None, "{}", e.message);
        // Lists, nested lists and tuples are arrays, as before; a stored document reads as it did.
        let text = r#"{"worker_types": {"v100": {"count": 4, "gpus_per_server": 1}}, "servers": [[0, 1], []], "pair": [1, 2]}"#;
        let cluster: Cluster = read(text).unwrap();
        assert_eq!((cluster.servers, cluster.pair), (Some(vec![vec![0, 1], vec![]]), Some((1, 2))));
        let stored: Cluster = read_stored(r#"{"worker_types": {"v100": [4, 1]}}"#).unwrap();
        assert_eq!(stored.worker_types["v100"], Type { count: 4, gpus_per_server: 1 });
    }

    #[test]
    fn fields_with_no_place_are_named_once_each() {
        let text = r#"{"jobs": [{"id": "a", "weight": 1, "model": "x"}, {"id": "b", "wieght": 2, "weight": 1, "model": "y"}],
            "tag": {"deep": [1]}}"#;
        let (body, ignored) = read_noting::<Body>(text).unwrap();
        assert_eq!(body.jobs.len(), 2);
        assert_eq!(ignored.named(), ["jobs[*].model", "jobs[1].wieght", "tag"]);
        let (_, none) = read_noting::<Body>(r#"{"jobs": [{"id": "a", "weight": 1}]}"#).unwrap();
        assert!(none.is_empty());
        assert!(none.named().is_empty());
        // Still refused as `read` refuses: an array for an object, names kept.
        let e = read_noting::<Body>(r#"{"jobs": [["a", 1]], "x": 1}"#).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("jobs[0]"), "{}", e.message);
    }

    #[test]
    fn past_the_named_paths_the_rest_are_counted() {
        let fields: Vec<String> = (0..40).map(|i| format!(r#""extra{i}": 0"#)).collect();
        let text = format!(r#"{{"jobs": [], {}}}"#, fields.join(", "));
        let (_, ignored) = read_noting::<Body>(&text).unwrap();
        let ignored = ignored.named();
        assert_eq!(ignored.len(), super::super::ignored::MAX_NAMED + 1);
        assert_eq!(ignored.last().map(String::as_str), Some("(8 more not named)"));
        // Past the paths kept, fields are counted, not kept.
        let many = super::super::ignored::MAX_KEPT + 10;
        let fields: Vec<String> = (0..many).map(|i| format!(r#""extra{i}": 0"#)).collect();
        let (_, ignored) = read_noting::<Body>(&format!(r#"{{"jobs": [], {}}}"#, fields.join(", "))).unwrap();
        let ignored = ignored.named();
        assert_eq!(ignored.last().cloned(), Some(format!("({} more not named)", many - 32)));
    }

    #[test]
    fn text_after_the_document_is_refused() {
        let e = read::<Body>(r#"{"jobs": []} {"#).unwrap_err();
        assert_eq!(e.path, None);
        assert!(e.message.contains("trailing characters"), "{}", e.message);
        assert!(read::<Body>("{\"jobs\": []}\n  ").is_ok());
    }
}
