//! The token file: JSON holding each token's id, tenant, scopes, SHA-256 digest, creation and
//! revocation times (never a token itself), and per-tenant quota overrides.
//!
//! ```json
//! {
//!   "version": 1,
//!   "tokens": [
//!     {"id": "ci", "tenant": "team-a", "scopes": ["solve", "sessions:read"],
//!      "sha256": "9f86d0...", "created": "2026-11-26T19:02:29Z"},
//!     {"id": "old", "tenant": "team-a", "scopes": ["solve"],
//!      "sha256": "60303a...", "created": "2026-10-01T08:00:00Z", "revoked": "2026-11-02T10:00:00Z"}
//!   ],
//!   "tenants": {"team-a": {"max_sessions": 20, "requests_per_second": 50, "burst": 100}}
//! }
//! ```
//!
//! Writes go to a temporary file in the same directory (mode 0600), synced, then renamed over
//! the file, under an advisory lock on `<file>.lock`, so a reader never sees half a file and two
//! `arbiter token` commands at once do not lose each other's change.

use super::secret::is_digest;
use super::Scope;
use crate::service::quotas::Limits;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The format version this code reads and writes.
pub const VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenFile {
    pub version: u32,
    #[serde(default)]
    pub tokens: Vec<TokenRecord>,
    /// Quota overrides by tenant; a quota left out is the server's flag.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tenants: BTreeMap<String, TenantQuotas>,
}

/// One token, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRecord {
    /// Unique in the file; what logs and session audits show.
    pub id: String,
    pub tenant: String,
    pub scopes: Vec<Scope>,
    /// SHA-256 of the token, 64 lowercase hex digits.
    pub sha256: String,
    /// When it was created (RFC 3339, UTC).
    pub created: String,
    /// When it was revoked (RFC 3339, UTC); a revoked token authenticates nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<String>,
}

/// A tenant's quota overrides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantQuotas {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_jobs_per_session: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_solves: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_second: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u64>,
}

impl TenantQuotas {
    /// `defaults` with these overrides applied.
    pub fn over(&self, defaults: &Limits) -> Limits {
        Limits {
            max_sessions: self.max_sessions.unwrap_or(defaults.max_sessions),
            max_jobs_per_session: self.max_jobs_per_session.unwrap_or(defaults.max_jobs_per_session),
            max_concurrent_solves: self.max_concurrent_solves.unwrap_or(defaults.max_concurrent_solves),
            requests_per_second: self.requests_per_second.unwrap_or(defaults.requests_per_second),
            burst: self.burst.unwrap_or(defaults.burst),
        }
    }
}

/// Token ids and tenant names: 1 to 64 of `A-Z a-z 0-9 . _ -`, so they are safe in logs, file
/// names and URLs.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!("{what} {name:?} must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"))
    }
}

impl Default for TokenFile {
    fn default() -> TokenFile {
        TokenFile { version: VERSION, tokens: Vec::new(), tenants: BTreeMap::new() }
    }
}

impl TokenFile {
    /// Parses and checks a file's text; errors name the offending field.
    pub fn parse(text: &str) -> Result<TokenFile, String> {
        let file: TokenFile = crate::contract::json::read(text).map_err(|e| match e.path {
            Some(path) => format!("{path}: {}", e.message),
            None => e.message,
        })?;
        file.check()?;
        Ok(file)
    }

    /// Everything the types do not say: the version, unique well-formed ids, digests, scopes and
    /// sensible quotas.
    pub fn check(&self) -> Result<(), String> {
        if self.version != VERSION {
            return Err(format!("version {} is not one this arbiter reads (it reads {VERSION})", self.version));
        }
        let mut ids = HashSet::new();
        let mut digests = HashSet::new();
        for (i, t) in self.tokens.iter().enumerate() {
            let at = |e: String| format!("tokens[{i}]: {e}");
            check_name("token id", &t.id).map_err(at)?;
            check_name("tenant", &t.tenant).map_err(at)?;
            if !ids.insert(t.id.as_str()) {
                return Err(at(format!("token id {:?} appears twice", t.id)));
            }
            if !is_digest(&t.sha256) {
                return Err(at("sha256 must be 64 lowercase hex digits".into()));
            }
            if !digests.insert(t.sha256.as_str()) {
                return Err(at("the same sha256 appears twice".into()));
            }
            if t.scopes.is_empty() {
                return Err(at("scopes is empty".into()));
            }
        }
        for (tenant, q) in &self.tenants {
            let at = |e: &str| format!("tenants.{tenant}: {e}");
            check_name("tenant", tenant).map_err(|e| at(&e))?;
            if q.requests_per_second.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
                return Err(at("requests_per_second must be a finite number > 0"));
            }
            if q.burst == Some(0) {
                return Err(at("burst must be at least 1"));
            }
        }
        Ok(())
    }

    /// Reads and checks the file at `path`.
    pub fn read(path: &Path) -> Result<TokenFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        TokenFile::parse(&text).map_err(|e| format!("{} is not a valid token file: {e}", path.display()))
    }

    /// The file at `path`, or an empty one if there is none yet.
    pub fn read_or_new(path: &Path) -> Result<TokenFile, String> {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TokenFile::default()),
            _ => TokenFile::read(path),
        }
    }

    /// Writes the file atomically with mode 0600: a temporary file beside it, synced, renamed.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        self.check()?;
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        let temp = sibling(path, &format!(".tmp-{}", std::process::id()));
        // A leftover of a process of the same id that died mid-write.
        let _ = std::fs::remove_file(&temp);
        let written = (|| -> std::io::Result<()> {
            let mut f = private_file(&temp, true)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&temp, path)?;
            // The rename itself is durable once the directory is synced (best effort).
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                if let Ok(d) = std::fs::File::open(dir) {
                    let _ = d.sync_all();
                }
            }
            Ok(())
        })();
        written.map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            format!("cannot write {}: {e}", path.display())
        })
    }

    /// Reads the file at `path` (or an empty one), lets `change` edit it, writes it back; all
    /// under the lock, so concurrent commands apply one after the other.
    pub fn update<R>(path: &Path, change: impl FnOnce(&mut TokenFile) -> Result<R, String>) -> Result<R, String> {
        TokenFile::try_update(path, change)?
    }

    /// As `update`, with `change`'s own refusal kept apart from the file's failures (which are
    /// the outer error), so each can name what was wrong: `Ok(Err(refusal))` writes nothing.
    pub fn try_update<R, E>(
        path: &Path,
        change: impl FnOnce(&mut TokenFile) -> Result<R, E>,
    ) -> Result<Result<R, E>, String> {
        let lock = Lock::take(path)?;
        let answer = TokenFile::read_or_new(path).and_then(|mut file| match change(&mut file) {
            Ok(answer) => file.write(path).map(|()| Ok(answer)),
            Err(refusal) => Ok(Err(refusal)),
        });
        lock.release(matches!(answer, Ok(Ok(_))));
        answer
    }
}

/// `path` with `suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// Opens `path` for writing with mode 0600 (`new`: it must not exist yet).
fn private_file(path: &Path, new: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if new {
        options.create_new(true);
    } else {
        options.create(true).truncate(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// An exclusive advisory lock on `<file>.lock`, released when dropped (or when the process ends).
/// A lock file this command created is removed again if the command changes nothing, so a
/// refusal leaves the directory as it was.
struct Lock {
    file: std::fs::File,
    path: PathBuf,
    created: bool,
}

impl Lock {
    fn take(path: &Path) -> Result<Lock, String> {
        let lock_path = sibling(path, ".lock");
        let cannot = |e: std::io::Error| {
            let directory = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if e.kind() == std::io::ErrorKind::NotFound && !directory.is_dir() {
                format!("cannot write {}: the directory {} does not exist", path.display(), directory.display())
            } else {
                format!("cannot lock {}: cannot open {}: {e}", path.display(), lock_path.display())
            }
        };
        loop {
            let (file, created) = match private_file(&lock_path, true) {
                Ok(file) => (file, true),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    (private_file(&lock_path, false).map_err(cannot)?, false)
                }
                Err(e) => return Err(cannot(e)),
            };
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                use std::os::unix::io::AsRawFd;
                // SAFETY: flock on a descriptor this function owns; it blocks until the lock is free.
                if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
                    let e = std::io::Error::last_os_error();
                    return Err(format!("cannot lock {}: {e}", lock_path.display()));
                }
                // The holder before this one may have removed the file it locked: this lock is on
                // that file only if it is still the one at `lock_path`; if not, take the new one.
                let held = file.metadata().map_err(cannot)?;
                match std::fs::metadata(&lock_path) {
                    Ok(now) if (now.dev(), now.ino()) == (held.dev(), held.ino()) => {}
                    Ok(_) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(cannot(e)),
                }
            }
            return Ok(Lock { file, path: lock_path, created });
        }
    }

    /// Releases the lock; `changed`: the command wrote the file, else a lock file this command
    /// created is removed (while still held, so a waiter sees it gone and takes a new one).
    fn release(self, changed: bool) {
        if self.created && !changed {
            let _ = std::fs::remove_file(&self.path);
        }
        drop(self.file);
    }
}

/// Now as RFC 3339 in UTC, whole seconds: `2026-11-26T19:02:29Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::auth::secret::digest;

    fn record(id: &str, token: &str) -> TokenRecord {
        TokenRecord {
            id: id.into(),
            tenant: "team-a".into(),
            scopes: vec![Scope::Solve],
            sha256: digest(token),
            created: "2026-01-01T00:00:00Z".into(),
            revoked: None,
        }
    }

    #[test]
    fn timestamps_are_rfc3339_in_whole_seconds() {
        let now = now_rfc3339();
        assert_eq!(now.len(), "2026-11-26T19:02:29Z".len(), "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
    }

    #[test]
    fn files_round_trip_and_bad_ones_are_refused_with_the_field() {
        let mut file = TokenFile::default();
        file.tokens.push(record("ci", "a"));
        file.tenants.insert("team-a".into(), TenantQuotas { max_sessions: Some(3), ..TenantQuotas::default() });
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(TokenFile::parse(&text).unwrap(), file);

        let bad = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut v = serde_json::to_value(&file).unwrap();
            edit(&mut v);
            TokenFile::parse(&v.to_string()).unwrap_err()
        };
        assert!(bad(&|v| v["version"] = 2.into()).contains("version 2"));
        assert!(bad(&|v| v["tokens"][0]["scopes"] = serde_json::json!(["solve", "root"])).contains("tokens[0].scopes"));
        assert!(bad(&|v| v["tokens"][0]["sha256"] = "abc".into()).contains("sha256"));
        assert!(bad(&|v| v["tokens"][0]["id"] = "has space".into()).contains("token id"));
        assert!(bad(&|v| v["tokens"][0]["tenant"] = "".into()).contains("tenant"));
        assert!(bad(&|v| v["tokens"][0]["scopes"] = serde_json::json!([])).contains("scopes"));
        assert!(bad(&|v| v["tokens"][0]["secret"] = "x".into()).contains("secret"), "unknown fields are refused");
        assert!(bad(&|v| v["tenants"]["team-a"]["max_session"] = 1.into()).contains("max_session"));
        assert!(bad(&|v| v["tenants"]["team-a"]["requests_per_second"] = 0.into()).contains("requests_per_second"));
        assert!(bad(&|v| v["tenants"]["team-a"]["burst"] = 0.into()).contains("burst"));
        assert!(bad(&|v| v["tenants"]["team-a"]["max_sessions"] = (-1).into()).contains("max_sessions"));
        assert!(bad(&|v| {
            let first = v["tokens"][0].clone();
            v["tokens"].as_array_mut().unwrap().push(first);
        })
        .contains("twice"));
        assert!(TokenFile::parse("{\"version\": 1} trailing").is_err());
        assert!(TokenFile::parse("").is_err());
    }

    #[test]
    fn overrides_replace_only_what_they_name() {
        let defaults = Limits::default();
        let q = TenantQuotas { burst: Some(7), requests_per_second: Some(0.5), ..TenantQuotas::default() };
        let limits = q.over(&defaults);
        assert_eq!(limits.burst, 7);
        assert_eq!(limits.requests_per_second, 0.5);
        assert_eq!(limits.max_sessions, defaults.max_sessions);
    }

    #[test]
    fn writes_are_atomic_and_private() {
        let dir = std::env::temp_dir().join(format!("arbiter-token-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        TokenFile::update(&path, |f| {
            f.tokens.push(record("one", "1"));
            Ok(())
        })
        .unwrap();
        TokenFile::update(&path, |f| {
            f.tokens.push(record("two", "2"));
            Ok(())
        })
        .unwrap();
        let read = TokenFile::read(&path).unwrap();
        assert_eq!(read.tokens.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["one", "two"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        // A refused change writes nothing.
        let refused = TokenFile::update(&path, |f| {
            f.tokens.push(record("one", "3"));
            Ok(())
        });
        assert!(refused.unwrap_err().contains("twice"));
        assert_eq!(TokenFile::read(&path).unwrap(), read);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
