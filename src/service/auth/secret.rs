//! Token secrets: 32 bytes from the OS's random source written as `arb_<base64url>`, kept at
//! rest only as their SHA-256 digest (the token has full entropy, so a plain digest cannot be
//! searched back), and read back from an `Authorization: Bearer` header.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};
use std::fmt::Write;

/// Every token starts with this, so a leaked one is recognisable (and greppable).
pub const PREFIX: &str = "arb_";

/// Random bytes in a token.
pub const TOKEN_BYTES: usize = 32;

/// The longest credential read from a header; longer ones are malformed, not hashed.
const MAX_TOKEN_CHARS: usize = 512;

/// A fresh token: `arb_` and 32 bytes from the OS's random source in base64url (43 characters).
pub fn generate() -> Result<String, String> {
    Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(random_bytes(TOKEN_BYTES)?)))
}

/// `n` random bytes as lowercase hex (for default token ids).
pub fn random_hex(n: usize) -> Result<String, String> {
    Ok(hex(&random_bytes(n)?))
}

/// `n` bytes from the OS's random source.
fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| format!("the OS random source failed: {e}"))?;
    Ok(bytes)
}

/// The SHA-256 digest of a token, as 64 lowercase hex digits: what the token file keeps.
pub fn digest(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Whether `text` has the form of a stored digest (64 lowercase hex digits).
pub fn is_digest(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Why an `Authorization` header gave no usable credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadHeader {
    /// No `Authorization` header at all.
    Missing,
    /// There is one, but it is not `Bearer <token>`: why (not what is expected, which the
    /// caller's message says).
    Malformed(&'static str),
}

/// The token of an `Authorization` header value: `Bearer <token>`, the scheme in any case, one
/// or more spaces, a token of visible ASCII without spaces (RFC 6750's `b64token` and more).
pub fn bearer(header: Option<&[u8]>) -> Result<&str, BadHeader> {
    let value = header.ok_or(BadHeader::Missing)?;
    let value = std::str::from_utf8(value).map_err(|_| BadHeader::Malformed("the header is not ASCII"))?;
    let value = value.trim();
    // The reason only: the caller says what is expected, once.
    let (scheme, rest) = value.split_once(' ').ok_or(if value.eq_ignore_ascii_case("bearer") {
        BadHeader::Malformed("the token is empty")
    } else {
        BadHeader::Malformed("the scheme or the token is missing")
    })?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(BadHeader::Malformed("the scheme is not Bearer"));
    }
    let token = rest.trim_start_matches(' ');
    if token.is_empty() {
        return Err(BadHeader::Malformed("the token is empty"));
    }
    if token.len() > MAX_TOKEN_CHARS {
        return Err(BadHeader::Malformed("the token is too long"));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(BadHeader::Malformed("the token has spaces or characters outside visible ASCII"));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_prefixed_base64url_of_32_bytes() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert_ne!(a, b);
        let body = a.strip_prefix(PREFIX).expect("prefixed");
        assert_eq!(body.len(), 43, "{a}");
        assert_eq!(URL_SAFE_NO_PAD.decode(body).unwrap().len(), TOKEN_BYTES);
        assert!(body.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "{a}");
        assert_eq!(random_hex(4).unwrap().len(), 8);
    }

    #[test]
    fn digest_is_sha256_hex() {
        // SHA-256("abc"), FIPS 180-2's example.
        assert_eq!(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let token = generate().unwrap();
        assert!(is_digest(&digest(&token)));
        assert_ne!(digest(&token), digest(&generate().unwrap()));
        assert!(!is_digest("ABC"));
        assert!(!is_digest(&"g".repeat(64)));
        assert!(!is_digest(&digest("abc").to_uppercase()));
    }

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer(Some(b"Bearer arb_abc")), Ok("arb_abc"));
        assert_eq!(bearer(Some(b"bearer   arb_abc ")), Ok("arb_abc"));
        assert_eq!(bearer(Some(b"BEARER x")), Ok("x"));
        assert_eq!(bearer(None), Err(BadHeader::Missing));
        for bad in [
            &b"Basic dXNlcjpwYXNz"[..],
            b"Bearer",
            b"Bearer ",
            b"Bearerarb_abc",
            b"Bearer arb abc",
            b"Bearer arb_\x01",
            b"Bearer \xff\xfe",
            b"",
        ] {
            assert!(matches!(bearer(Some(bad)), Err(BadHeader::Malformed(_))), "{:?}", String::from_utf8_lossy(bad));
        }
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_CHARS + 1));
        assert!(bearer(Some(long.as_bytes())).is_err());
        // A bare scheme has no token (HTTP trims the space after it); a bare word has no scheme.
        assert_eq!(bearer(Some(b"Bearer ")), Err(BadHeader::Malformed("the token is empty")));
        assert_eq!(bearer(Some(b"arb_abc")), Err(BadHeader::Malformed("the scheme or the token is missing")));
    }
}
