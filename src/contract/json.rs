//! Reading JSON text into the contract's types, with refusals that name the field they were found
//! at. A well-formed document is read once, at serde_json's own speed; only a refused one is read
//! again with its path tracked, so naming the field costs nothing on the requests that are fine.

use super::error::{ArbiterError, ErrorCode};
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

/// `text` (after any byte-order mark) as a `T`, with nothing but whitespace after it.
pub fn read<T: DeserializeOwned>(text: &str) -> Result<T, Refusal> {
    let text = without_bom(text);
    serde_json::from_str(text).map_err(|_| refusal::<T>(text))
}

/// The refusal of a text that does not read as a `T`: read again, tracking the path.
fn refusal<T: DeserializeOwned>(text: &str) -> Refusal {
    let mut de = serde_json::Deserializer::from_str(text);
    let (path, message) = match serde_path_to_error::deserialize::<_, T>(&mut de) {
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

    #[test]
    fn text_after_the_document_is_refused() {
        let e = read::<Body>(r#"{"jobs": []} {"#).unwrap_err();
        assert_eq!(e.path, None);
        assert!(e.message.contains("trailing characters"), "{}", e.message);
        assert!(read::<Body>("{\"jobs\": []}\n  ").is_ok());
    }
}
