//! The server's tokens: the token file as last read, indexed by digest, re-read when the file
//! changes. At most once a second a request looks at the file's modification time, size and
//! inode (one `stat`); only a change reads it again. A file that becomes unreadable or invalid
//! keeps the last good set, with an error in the log (once per change of the file).

use super::file::TokenFile;
use super::secret::{bearer, digest, BadHeader};
use super::Principal;
use crate::service::error::ApiError;
use crate::service::quotas::Limits;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

/// The 401's message for a request without an `Authorization` header.
pub const MISSING_TOKEN: &str = "this endpoint needs a bearer token: send `Authorization: Bearer <token>`";

/// How often the file is looked at, at most.
pub const RECHECK: Duration = Duration::from_secs(1);

/// What identifies one version of the file on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    let m = std::fs::metadata(path)?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let inode = 0;
    Ok(Stamp { modified: m.modified().ok(), len: m.len(), inode })
}

/// One good version of the file, indexed for lookups.
#[derive(Debug)]
struct Loaded {
    file: TokenFile,
    /// Digest → index into `file.tokens`, for tokens not revoked.
    active: HashMap<String, usize>,
}

impl Loaded {
    fn new(file: TokenFile) -> Loaded {
        let active = file
            .tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| t.revoked.is_none())
            .map(|(i, t)| (t.sha256.clone(), i))
            .collect();
        Loaded { file, active }
    }
}

#[derive(Debug)]
struct Watch {
    checked: Instant,
    /// The version last read, good or bad (`None`: the file was missing).
    seen: Option<Stamp>,
}

/// The live token set of `arbiter serve --tokens FILE`.
#[derive(Debug)]
pub struct Keyring {
    path: PathBuf,
    defaults: Limits,
    current: RwLock<Arc<Loaded>>,
    watch: Mutex<Watch>,
}

impl Keyring {
    /// Reads the file; a missing or invalid one is an error (the server does not start).
    pub fn open(path: &Path, defaults: Limits) -> Result<Keyring, String> {
        let seen = stamp(path).ok();
        let file = TokenFile::read(path)?;
        #[cfg(unix)]
        if let Ok(m) = std::fs::metadata(path) {
            use std::os::unix::fs::PermissionsExt;
            if m.permissions().mode() & 0o077 != 0 {
                tracing::warn!(file = %path.display(), mode = format!("{:o}", m.permissions().mode() & 0o777),
                    "the token file can be read by others than its owner; `chmod 600` it");
            }
        }
        Ok(Keyring {
            path: path.to_path_buf(),
            defaults,
            current: RwLock::new(Arc::new(Loaded::new(file))),
            watch: Mutex::new(Watch { checked: Instant::now(), seen }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn loaded(&self) -> Arc<Loaded> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Tokens that authenticate (not revoked).
    pub fn active_tokens(&self) -> usize {
        self.loaded().active.len()
    }

    /// Re-reads the file if it changed and the last look was `RECHECK` ago or more. Cheap
    /// otherwise: a clock read, and a `stat` at most once a second (skipped while another
    /// request is looking).
    pub fn refresh(&self) {
        let Ok(mut watch) = self.watch.try_lock() else { return };
        if watch.checked.elapsed() < RECHECK {
            return;
        }
        watch.checked = Instant::now();
        let now = stamp(&self.path).ok();
        if now == watch.seen {
            return;
        }
        watch.seen = now;
        if now.is_none() {
            tracing::error!(file = %self.path.display(), "the token file is gone; keeping the last good tokens");
            return;
        }
        match TokenFile::read(&self.path) {
            Ok(file) => {
                let loaded = Loaded::new(file);
                tracing::info!(file = %self.path.display(), active = loaded.active.len(), "token file re-read");
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(loaded);
            }
            Err(e) => tracing::error!(error = %e, "keeping the last good tokens"),
        }
    }

    /// The principal of a request's `Authorization` header, or why there is none (401).
    pub fn authenticate(&self, header: Option<&[u8]>) -> Result<Principal, ApiError> {
        self.refresh();
        let token = bearer(header).map_err(|e| match e {
            BadHeader::Missing => ApiError::Unauthorized { message: MISSING_TOKEN.into(), invalid: false },
            BadHeader::Malformed(why) => ApiError::Unauthorized {
                message: format!("malformed Authorization header: {why}; expected `Bearer <token>`"),
                invalid: true,
            },
        })?;
        let loaded = self.loaded();
        let record = loaded.active.get(&digest(token)).map(|&i| &loaded.file.tokens[i]).ok_or_else(|| {
            ApiError::Unauthorized { message: "the bearer token is unknown or revoked".into(), invalid: true }
        })?;
        let limits = loaded.file.tenants.get(&record.tenant).map_or(self.defaults, |q| q.over(&self.defaults));
        Ok(Principal {
            token_id: Some(record.id.clone()),
            tenant: Some(record.tenant.clone()),
            scopes: record.scopes.clone(),
            limits: Some(limits),
        })
    }

    /// Looks at the file now, whatever the time since the last look (for tests).
    #[cfg(test)]
    fn refresh_now(&self) {
        self.watch.lock().unwrap().checked -= RECHECK;
        self.refresh();
    }
}

#[cfg(test)]
mod tests {
    use super::super::file::{TenantQuotas, TokenRecord};
    use super::super::secret::generate;
    use super::super::Scope;
    use super::*;

    fn record(id: &str, token: &str, scopes: &[Scope]) -> TokenRecord {
        TokenRecord {
            id: id.into(),
            tenant: "team-a".into(),
            scopes: scopes.to_vec(),
            sha256: digest(token),
            created: "2026-01-01T00:00:00Z".into(),
            revoked: None,
        }
    }

    fn header(token: &str) -> Vec<u8> {
        format!("Bearer {token}").into_bytes()
    }

    #[test]
    fn authenticates_reloads_and_keeps_the_last_good_set() {
        let dir = std::env::temp_dir().join(format!("arbiter-keyring-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        let (a, b) = (generate().unwrap(), generate().unwrap());
        let mut file = TokenFile::default();
        file.tokens.push(record("a", &a, &[Scope::Solve]));
        file.tenants.insert("team-a".into(), TenantQuotas { burst: Some(5), ..TenantQuotas::default() });
        file.write(&path).unwrap();

        assert!(Keyring::open(&dir.join("missing.json"), Limits::default()).is_err());
        let keyring = Keyring::open(&path, Limits::default()).unwrap();
        let p = keyring.authenticate(Some(header(&a).as_slice())).unwrap();
        assert_eq!(p.token_id.as_deref(), Some("a"));
        assert_eq!(p.tenant.as_deref(), Some("team-a"));
        assert_eq!(p.scopes, [Scope::Solve]);
        assert_eq!(p.limits.unwrap().burst, 5);
        assert_eq!(p.limits.unwrap().max_sessions, Limits::default().max_sessions);

        let refused = |k: &Keyring, h: Option<&[u8]>| match k.authenticate(h) {
            Err(ApiError::Unauthorized { invalid, .. }) => invalid,
            other => panic!("expected 401, got {other:?}"),
        };
        assert!(!refused(&keyring, None));
        assert!(refused(&keyring, Some(b"Basic abc")));
        assert!(refused(&keyring, Some(header(&b).as_slice())));
        assert!(refused(&keyring, Some(header(&a[..a.len() - 1]).as_slice())));

        // Revoke a, add b: seen at the next look.
        file.tokens[0].revoked = Some("2026-01-02T00:00:00Z".into());
        file.tokens.push(record("b", &b, &[Scope::Admin]));
        file.write(&path).unwrap();
        keyring.refresh();
        assert!(keyring.authenticate(Some(header(&a).as_slice())).is_ok(), "not looked at again within a second");
        keyring.refresh_now();
        assert!(refused(&keyring, Some(header(&a).as_slice())));
        assert!(keyring.authenticate(Some(header(&b).as_slice())).unwrap().is_admin());
        assert_eq!(keyring.active_tokens(), 1);

        // A broken file, then a missing one: the last good set stays.
        std::fs::write(&path, "{\"version\": 1, \"tokens\": [").unwrap();
        keyring.refresh_now();
        assert!(keyring.authenticate(Some(header(&b).as_slice())).is_ok());
        std::fs::remove_file(&path).unwrap();
        keyring.refresh_now();
        assert!(keyring.authenticate(Some(header(&b).as_slice())).is_ok());
        // And a good one again is read.
        file.tokens.truncate(1);
        file.write(&path).unwrap();
        keyring.refresh_now();
        assert!(refused(&keyring, Some(header(&b).as_slice())));
        assert_eq!(keyring.active_tokens(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
