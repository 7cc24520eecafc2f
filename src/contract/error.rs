//! The contract's error object: a stable `code`, a human `message` and the offending `field` path.
//! Every refusal the library makes is one of these; the CLI and the HTTP layer only render it.

use serde::Serialize;
use std::fmt;

/// What went wrong, as a stable machine-readable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The body is not JSON, or a field has the wrong JSON type.
    MalformedRequest,
    /// `policy` names no policy of the contract.
    UnknownPolicy,
    /// A throughput or colocation names a worker type the cluster does not have.
    UnknownWorkerType,
    /// Two jobs share an id.
    DuplicateJobId,
    /// A number is NaN, infinite, negative or otherwise out of its range.
    InvalidNumber,
    /// A scale factor is 0 or not a whole number. (One above every type's GPU count is accepted:
    /// the LP, as the contract and Gavel define it, gives such a job a fraction of its time.)
    InvalidScaleFactor,
    /// A job has no positive throughput on any worker type the cluster has.
    JobCannotRun,
    /// A colocation names unknown jobs, a job twice, or jobs of unequal scale factors.
    InvalidColocation,
    /// An entity is unknown, nests in a cycle, or names an unknown intra-entity policy.
    InvalidEntity,
    /// A session event names a job the session does not have.
    UnknownJob,
    /// A session event names a GPU or server the cluster does not have.
    UnknownWorker,
    /// A field the chosen policy needs is absent.
    MissingField,
    /// The request asks for something this version does not do.
    Unsupported,
    /// Too few throughputs are measured to estimate the others at the chosen rank, or the
    /// reference matrix has too few jobs.
    TooFewMeasurements,
    /// The problem has no feasible allocation (for example SLOs that cannot all be met).
    Infeasible,
    /// The LP solver failed.
    SolverFailed,
    /// The solve budget (`max_solve_seconds`, or the server's ceiling) ran out.
    Timeout,
}

/// Longest piece of a request (an id, a name, a path) a message repeats whole. A longer one is
/// cut to its first this many characters and its length, so a message never grows with the request.
pub const ECHOED_CHARACTERS: usize = 64;

/// `text` for a message, cut as [`ECHOED_CHARACTERS`] says.
pub fn clipped(text: &str) -> String {
    echoed(text, false)
}

/// `text` for a message, quoted, cut as [`ECHOED_CHARACTERS`] says.
pub fn quoted(text: &str) -> String {
    echoed(text, true)
}

fn echoed(text: &str, quote: bool) -> String {
    let length = text.chars().count();
    let head: String = text.chars().take(ECHOED_CHARACTERS).collect();
    let head = if quote { format!("{head:?}") } else { head };
    if length <= ECHOED_CHARACTERS {
        head
    } else {
        format!("{head}… ({length} characters)")
    }
}

impl ErrorCode {
    /// The HTTP status the contract gives this code.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::Infeasible | ErrorCode::Unsupported => 422,
            ErrorCode::UnknownJob | ErrorCode::UnknownWorker => 404,
            ErrorCode::SolverFailed => 500,
            ErrorCode::Timeout => 504,
            _ => 400,
        }
    }
}

/// The contract's error object, `{"error": {"code", "message", "field"}}` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ArbiterError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Jobs an infeasibility is about (for example the jobs whose SLOs cannot all be met).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
}

impl ArbiterError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ArbiterError { code, message: message.into(), field: None, jobs: Vec::new() }
    }

    pub fn at(code: ErrorCode, field: impl Into<String>, message: impl Into<String>) -> Self {
        ArbiterError { field: Some(field.into()), ..ArbiterError::new(code, message) }
    }

    pub fn with_jobs(mut self, jobs: Vec<String>) -> Self {
        self.jobs = jobs;
        self
    }

    /// The same error, named at `to` where it was named at `from` or inside it (`from.x` becomes
    /// `to.x`, `from[0]` becomes `to[0]`): a field of the library's call under the name the
    /// caller's input gives it.
    pub fn field_renamed(mut self, from: &str, to: &str) -> Self {
        if let Some(rest) = self.field.as_deref().and_then(|f| f.strip_prefix(from)) {
            if rest.is_empty() || rest.starts_with('.') || rest.starts_with('[') {
                self.field = Some(format!("{to}{rest}"));
            }
        }
        self
    }

    /// The same error named inside `root` where it was named as a field of it (`root.x` becomes
    /// `x`): a field of the library's call named as in a request body that is that value.
    pub fn field_within(mut self, root: &str) -> Self {
        let inside = self.field.as_deref().and_then(|f| f.strip_prefix(root)).and_then(|rest| rest.strip_prefix('.'));
        if let Some(rest) = inside {
            self.field = Some(rest.to_string());
        }
        self
    }

    /// The wire form: `{"error": {...}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "error": self })
    }
}

impl fmt::Display for ArbiterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: {}", field, self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ArbiterError {}

pub type Result<T> = std::result::Result<T, ArbiterError>;

impl From<crate::lp::SolveError> for ArbiterError {
    fn from(e: crate::lp::SolveError) -> ArbiterError {
        let code = match e {
            crate::lp::SolveError::TimeLimit => ErrorCode::Timeout,
            _ => ErrorCode::SolverFailed,
        };
        ArbiterError::new(code, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renamed_field_keeps_the_path_inside_it() {
        let named = |field: &str| ArbiterError::at(ErrorCode::MalformedRequest, field, "bad");
        let renamed = |field: &str| named(field).field_renamed("throughputs", "reference").field;
        assert_eq!(renamed("throughputs").as_deref(), Some("reference"));
        assert_eq!(renamed("throughputs.v100.A").as_deref(), Some("reference.v100.A"));
        assert_eq!(renamed("throughputs[2]").as_deref(), Some("reference[2]"));
        // Another field that only starts with the same letters is left alone.
        assert_eq!(renamed("throughputs_total").as_deref(), Some("throughputs_total"));
        assert_eq!(renamed("jobs[0].throughputs").as_deref(), Some("jobs[0].throughputs"));
    }

    #[test]
    fn a_field_within_the_body_loses_the_name_of_the_body() {
        let named = |field: &str| ArbiterError::at(ErrorCode::MalformedRequest, field, "bad");
        let within = |field: &str| named(field).field_within("job").field;
        assert_eq!(within("job.memory_gb").as_deref(), Some("memory_gb"));
        assert_eq!(within("job.throughput.v100").as_deref(), Some("throughput.v100"));
        // The body itself, another root and a name that only starts the same stay as they were.
        assert_eq!(within("job").as_deref(), Some("job"));
        assert_eq!(within("jobs[0].id").as_deref(), Some("jobs[0].id"));
        assert_eq!(within("jobs.id").as_deref(), Some("jobs.id"));
    }

    #[test]
    fn an_echoed_text_is_whole_up_to_its_limit_then_its_head_and_length() {
        let at_limit = "é".repeat(ECHOED_CHARACTERS);
        assert_eq!(quoted(&at_limit), format!("{at_limit:?}"));
        assert_eq!(clipped(&at_limit), at_limit);
        let over = "é".repeat(ECHOED_CHARACTERS + 1);
        assert_eq!(quoted(&over), format!("{at_limit:?}… ({} characters)", ECHOED_CHARACTERS + 1));
        assert_eq!(clipped(&over), format!("{at_limit}… ({} characters)", ECHOED_CHARACTERS + 1));
    }
}
