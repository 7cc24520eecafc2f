//! `arbiter token`: create a token (printed once, stored as its digest), list the tokens (never a
//! digest or a secret), revoke one, set or clear a tenant's quota overrides. Every change rewrites
//! the file atomically with mode 0600; a running server sees it within about a second.
//! A refusal is the contract's error object, naming the flag or argument at fault.

use super::file::{check_name, now_rfc3339, TenantQuotas, TokenFile, TokenRecord};
use super::secret::{digest, generate, random_hex};
use super::Scope;
use crate::error::{ArbiterError, ErrorCode};
use clap::{Args, Subcommand};
use std::fmt::Write;
use std::path::PathBuf;

/// `arbiter token ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it, once, on standard output; only its SHA-256 digest is kept.
    Create(CreateArgs),
    /// List the tokens: id, tenant, scopes, created, revoked (no secrets, no digests).
    List {
        #[command(flatten)]
        file: FileArg,
    },
    /// Revoke a token by its id; a running server refuses it within about a second.
    Revoke {
        #[command(flatten)]
        file: FileArg,
        /// The token's id.
        id: String,
    },
    /// Set a tenant's quota overrides (the server's `--tenant-*` flags apply to what is left
    /// out), or clear them; with neither, print them. A running server applies them within about
    /// a second.
    Quota(QuotaArgs),
}

#[derive(Debug, Clone, Args)]
pub struct QuotaArgs {
    #[command(flatten)]
    pub file: FileArg,
    /// The tenant.
    pub tenant: String,
    /// Live sessions the tenant may own.
    #[arg(long)]
    pub max_sessions: Option<u64>,
    /// Active jobs in one of its sessions.
    #[arg(long)]
    pub max_jobs_per_session: Option<u64>,
    /// Its requests that solve at once.
    #[arg(long)]
    pub max_concurrent_solves: Option<u64>,
    /// Its requests per second (a token bucket refilled at this rate).
    #[arg(long)]
    pub requests_per_second: Option<f64>,
    /// The bucket's size.
    #[arg(long)]
    pub burst: Option<u64>,
    /// Remove every override of the tenant: the server's flags apply again.
    #[arg(long, conflicts_with_all = ["max_sessions", "max_jobs_per_session", "max_concurrent_solves", "requests_per_second", "burst"])]
    pub clear: bool,
}

#[derive(Debug, Clone, Args)]
pub struct FileArg {
    /// The token file (created by the first `token create`, with mode 0600).
    #[arg(long, env = "ARBITER_TOKENS", value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub file: FileArg,
    /// The tenant the token acts for: sessions it creates belong to this tenant.
    #[arg(long)]
    pub tenant: String,
    /// Comma-separated scopes: solve, sessions:read, sessions:write, metrics, admin (admin implies
    /// every other and sees every tenant's sessions).
    #[arg(long = "scope", value_name = "SCOPES")]
    pub scopes: String,
    /// The token's id, unique in the file (shown in logs and session audits); default `tok-` and
    /// 8 random hex digits.
    #[arg(long)]
    pub id: Option<String>,
}

/// Runs a token command; what to print on standard output, or why it failed.
pub fn run(command: &TokenCommand) -> Result<String, ArbiterError> {
    match command {
        TokenCommand::Create(args) => create(args),
        TokenCommand::List { file } => list(&TokenFile::read(&file.file).map_err(refused("file"))?),
        TokenCommand::Revoke { file, id } => revoke(&file.file, id),
        TokenCommand::Quota(args) => quota(args),
    }
}

/// A refusal of the command line at `field` (the flag or argument, as `arbiter solve` names its
/// own): `malformed_request` with `message`.
fn refused(field: &'static str) -> impl Fn(String) -> ArbiterError {
    move |message| ArbiterError::at(ErrorCode::MalformedRequest, field, message)
}

/// The operating system gave no randomness for a token or an id.
fn no_randomness(message: String) -> ArbiterError {
    ArbiterError::new(ErrorCode::MalformedRequest, message)
}

/// The overrides the file would refuse, refused before it is touched, at their flags.
fn check_overrides(args: &QuotaArgs) -> Result<(), ArbiterError> {
    if let Some(rate) = args.requests_per_second.filter(|r| !(r.is_finite() && *r > 0.0)) {
        let why = format!("requests per second must be a finite number > 0, got {rate}");
        return Err(ArbiterError::at(ErrorCode::InvalidNumber, "requests_per_second", why));
    }
    if args.burst == Some(0) {
        return Err(ArbiterError::at(ErrorCode::InvalidNumber, "burst", "the burst must be at least 1"));
    }
    Ok(())
}

fn quota(args: &QuotaArgs) -> Result<String, ArbiterError> {
    check_name("tenant", &args.tenant).map_err(refused("tenant"))?;
    check_overrides(args)?;
    let set = TenantQuotas {
        max_sessions: args.max_sessions,
        max_jobs_per_session: args.max_jobs_per_session,
        max_concurrent_solves: args.max_concurrent_solves,
        requests_per_second: args.requests_per_second,
        burst: args.burst,
    };
    let shown = |q: Option<&TenantQuotas>| {
        let text = match q {
            Some(q) => quotas_json(q),
            None => "none (the server's flags)".to_string(),
        };
        Ok(format!("tenant {}: {text}\n", args.tenant))
    };
    if !args.clear && set == TenantQuotas::default() {
        return shown(TokenFile::read_or_new(&args.file.file).map_err(refused("file"))?.tenants.get(&args.tenant));
    }
    let now = TokenFile::update(&args.file.file, |file| {
        if args.clear {
            file.tenants.remove(&args.tenant);
            return Ok(None);
        }
        let q = file.tenants.entry(args.tenant.clone()).or_default();
        q.max_sessions = set.max_sessions.or(q.max_sessions);
        q.max_jobs_per_session = set.max_jobs_per_session.or(q.max_jobs_per_session);
        q.max_concurrent_solves = set.max_concurrent_solves.or(q.max_concurrent_solves);
        q.requests_per_second = set.requests_per_second.or(q.requests_per_second);
        q.burst = set.burst.or(q.burst);
        Ok(Some(*q))
    })
    .map_err(refused("file"))?;
    shown(now.as_ref())
}

/// A tenant's overrides as one line of JSON.
fn quotas_json(q: &TenantQuotas) -> String {
    serde_json::to_string(q).unwrap_or_default()
}

fn create(args: &CreateArgs) -> Result<String, ArbiterError> {
    check_name("tenant", &args.tenant).map_err(refused("tenant"))?;
    let scopes = Scope::parse_list(&args.scopes).map_err(refused("scope"))?;
    if let Some(id) = &args.id {
        check_name("token id", id).map_err(refused("id"))?;
    }
    let token = generate().map_err(no_randomness)?;
    let id = TokenFile::try_update(&args.file.file, |file| {
        let id = match &args.id {
            Some(id) if file.tokens.iter().any(|t| &t.id == id) => {
                let why = format!("a token with id {id:?} is already in {}", args.file.file.display());
                return Err(refused("id")(why));
            }
            Some(id) => id.clone(),
            None => loop {
                let id = format!("tok-{}", random_hex(4).map_err(no_randomness)?);
                if !file.tokens.iter().any(|t| t.id == id) {
                    break id;
                }
            },
        };
        file.tokens.push(TokenRecord {
            id: id.clone(),
            tenant: args.tenant.clone(),
            scopes: scopes.clone(),
            sha256: digest(&token),
            created: now_rfc3339(),
            revoked: None,
        });
        Ok(id)
    })
    .map_err(refused("file"))??;
    let names: Vec<&str> = scopes.iter().map(|s| s.name()).collect();
    eprintln!(
        "token {id:?} for tenant {:?} ({}) added to {}; it is printed once, below, and cannot be shown again",
        args.tenant,
        names.join(","),
        args.file.file.display()
    );
    Ok(format!("{token}\n"))
}

fn list(file: &TokenFile) -> Result<String, ArbiterError> {
    let rows: Vec<[String; 5]> = file
        .tokens
        .iter()
        .map(|t| {
            let scopes: Vec<&str> = t.scopes.iter().map(|s| s.name()).collect();
            [
                t.id.clone(),
                t.tenant.clone(),
                scopes.join(","),
                t.created.clone(),
                t.revoked.clone().unwrap_or("-".into()),
            ]
        })
        .collect();
    let header = ["ID", "TENANT", "SCOPES", "CREATED", "REVOKED"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    for (tenant, q) in &file.tenants {
        let _ = writeln!(out, "tenant {tenant}: {}", quotas_json(q));
    }
    Ok(out)
}

fn revoke(path: &std::path::Path, id: &str) -> Result<String, ArbiterError> {
    let already = TokenFile::try_update(path, |file| -> Result<Option<String>, ArbiterError> {
        let token = file
            .tokens
            .iter_mut()
            .find(|t| t.id == id)
            .ok_or_else(|| refused("id")(format!("no token with id {id:?} in {}", path.display())))?;
        Ok(match &token.revoked {
            Some(when) => Some(when.clone()),
            None => {
                token.revoked = Some(now_rfc3339());
                None
            }
        })
    })
    .map_err(refused("file"))??;
    Ok(match already {
        Some(when) => format!("token {id:?} was already revoked at {when}\n"),
        None => format!("token {id:?} revoked\n"),
    })
}
