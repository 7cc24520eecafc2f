//! A session's creation request (cluster, policy, the mechanism's knobs) validated once into the
//! `Spec` that every later event of the session is read against; and a job spec into a `Job`.

use crate::error::{ArbiterError, ErrorCode};
use crate::lp::Backend;
use crate::mechanism::{Config, Mode, Session};
use crate::policies::PolicyKind;
use crate::problem::{Job, Matrix, Problem};
use crate::request::{ClusterSpec, EntitySpec, JobSpec, Request};
use crate::scheduling::{Composition, CompositionRequest, SchedulingSpec};
use crate::service::error::{ApiError, ApiResult};
use crate::service::extract::{parse_object, parse_stored};
use crate::solver::realizable::Realizable;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// `POST /v1/sessions`: a cluster run by one policy under the round-based mechanism, or by a
/// composition of list-policy stages. The cluster, policy and entities are the contract's; the
/// rest are the mechanism's knobs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct CreateSession {
    /// Any policy name of the contract: its allocation runs under Gavel's mechanism. Leave it out
    /// when `composition` names the scheduling stage.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub policy: String,
    /// The pipeline's stages by name, e.g. `{"admission": {"accept_x": 1.2}, "scheduling":
    /// "tiresias", "placement": "consolidated", "preemption": "lease"}`: a list policy in the
    /// scheduling slot decides every round (admission → scheduling → placement → preemption)
    /// instead of an allocation. Absent slots are Gavel's; with no scheduling slot, `policy` fills it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composition: Option<CompositionRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heterogeneity_aware: Option<bool>,
    pub cluster: ClusterSpec,
    /// Jobs present from the start, as in the contract; more arrive with `POST .../jobs`.
    #[serde(default)]
    pub jobs: Vec<JobSpec>,
    /// For `hierarchical`: the entities jobs belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<BTreeMap<String, EntitySpec>>,
    /// Length of a round in seconds (default 360, Gavel's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_seconds: Option<f64>,
    /// `rounds` (default: whole GPUs placed on servers, jobs chosen by priority), `ideal` (every
    /// job gets exactly its allocation's fractions, no placement) or `configurations` (whole GPUs,
    /// running the round configurations of the allocation's decomposition by deficit rounding, so
    /// each job receives what rounds can deliver of its allocation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Give GPUs the allocation leaves unused to jobs ahead of their allocation (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_conserving: Option<bool>,
    /// Solve the policy over round configurations (`max_min_fairness`, `min_makespan`,
    /// `max_sum_throughput`): an allocation whole-GPU rounds can deliver, as the request's
    /// `realizable`. Default: on, except while space sharing's pairs are in the solve (their
    /// columns make it hundreds of times slower) or past 8,192 jobs (its size budget); true:
    /// always (past the size budget the solve still keeps the fractional allocation); false: the
    /// fractional allocation of Gavel's LP. The view's `realizable_solve` says when and why it was
    /// not applied. In mode `configurations` the rounds follow its decomposition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realizable: Option<bool>,
    /// After a bottleneck policy's optimum, as the request's `tie_break`: `throughput` (default:
    /// every job kept at the level the optimum needs, the sum of normalized throughputs maximized,
    /// so no GPU is left idle that a job could use), `water_filling` (max_min_fairness) or `none`
    /// (the bare LP's vertex). Applied to every solve, fractional or realizable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_break: Option<String>,
    /// Weight of a new throughput measurement in the moving average, in (0, 1] (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_smoothing: Option<f64>,
    /// A measured throughput moving by more than this fraction makes the allocation stale (0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve_threshold: Option<f64>,
    /// Deficits carried across a recomputation are bounded by this many rounds of time (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_deficit_rounds: Option<f64>,
    /// Budget of each of this session's solves, in seconds; the server's ceiling still applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_solve_seconds: Option<f64>,
    /// Estimate every job's throughputs on the types it leaves out, from those it gives, against
    /// the server's `--reference-throughputs`; the first progress measured on such a type replaces
    /// the estimate, which the job's view keeps for comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_missing: Option<bool>,
}

/// A validated session creation: what every event of the session is checked against.
#[derive(Debug, Clone)]
pub struct Spec {
    pub create: CreateSession,
    /// The policy, nominal cluster and entities, with no jobs: each solve fills in the current
    /// jobs and the healthy GPU counts.
    pub base: Problem,
    pub config: Config,
    pub max_solve_seconds: Option<f64>,
    /// The LP policy the session's jobs are validated against (a composed session's jobs are
    /// checked as `max_min_fairness` checks them).
    pub policy: String,
}

/// `min_cost_slo` insists on at least one SLO in a request; a session may start, or take a job,
/// without one, so such input is checked as `min_cost` (the same fields otherwise).
fn validation_policy(policy: &str, jobs: &[JobSpec]) -> String {
    if policy == PolicyKind::MinCostSlo.name() && jobs.iter().all(|j| j.slo_seconds.is_none()) {
        PolicyKind::MinCost.name().to_string()
    } else {
        policy.to_string()
    }
}

/// The composition a creation body names, if any; its errors are under `composition`.
fn composition(create: &CreateSession) -> ApiResult<Option<Composition>> {
    let Some(request) = &create.composition else {
        return Ok(None);
    };
    let policy = (!create.policy.is_empty()).then(|| PolicyKind::named(&create.policy)).transpose()?;
    let default = match (&request.scheduling, policy) {
        (Some(_), Some(_)) => {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "composition.scheduling",
                "policy and composition.scheduling both name the scheduling stage: give one",
            )
            .into())
        }
        (None, None) => {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                "policy",
                "a session needs a policy, or a composition with a scheduling stage",
            )
            .into())
        }
        (_, policy) => policy.unwrap_or(PolicyKind::MaxMinFairness),
    };
    let composition = Composition::from_request(request, default).map_err(|mut e| {
        e.field = Some(e.field.map_or_else(|| "composition".into(), |f| format!("composition.{f}")));
        e
    })?;
    Ok(Some(composition))
}

impl Spec {
    /// Parses and validates a creation body into the spec and the session it starts.
    pub fn parse(text: &str) -> ApiResult<(Spec, Session)> {
        Spec::build(text, parse_object(text)?)
    }

    /// [`Spec::parse`] for a stored creation body, read as it was taken (`parse_stored`).
    pub fn parse_stored(text: &str) -> ApiResult<(Spec, Session)> {
        Spec::build(text, parse_stored(text)?)
    }

    fn build(text: &str, create: CreateSession) -> ApiResult<(Spec, Session)> {
        let composition = composition(&create)?;
        let policy = match composition.as_ref().map(|c| &c.scheduling) {
            Some(SchedulingSpec::Allocation(p)) => p.name().to_string(),
            Some(SchedulingSpec::List { .. }) => PolicyKind::MaxMinFairness.name().to_string(),
            None if create.policy.is_empty() => {
                return Err(ArbiterError::at(
                    ErrorCode::MissingField,
                    "policy",
                    "a session needs a policy, or a composition with a scheduling stage",
                )
                .into())
            }
            None => create.policy.clone(),
        };
        let request = Request {
            policy: validation_policy(&policy, &create.jobs),
            heterogeneity_aware: create.heterogeneity_aware,
            space_sharing: None,
            cluster: create.cluster.clone(),
            jobs: create.jobs.clone(),
            colocations: None,
            entities: create.entities.clone(),
            max_solve_seconds: create.max_solve_seconds,
            realizable: create.realizable,
            tie_break: create.tie_break.clone(),
            ..Request::default()
        };
        let mut problem = Problem::from_request(&request)?;
        problem.realizable = Realizable::from_flag(create.realizable, Realizable::UnlessPaired);
        if let Some(policy) = PolicyKind::from_name(&policy) {
            problem.policy = policy;
        }
        if let Some(refused) = crate::solver::tie_break::refusal(problem.tie_break, problem.policy) {
            return Err(refused.into());
        }
        let defaults = Config::default();
        let mode = match create.mode.as_deref() {
            None => Mode::Rounds,
            Some(name) => Mode::from_name(name).ok_or_else(|| {
                // A name, not a number: refused as an unknown `tie_break` is.
                ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "mode",
                    format!("unknown mode {name:?}; expected \"rounds\", \"ideal\" or \"configurations\""),
                )
            })?,
        };
        let config = Config {
            round_seconds: create.round_seconds.unwrap_or(defaults.round_seconds),
            throughput_smoothing: create.throughput_smoothing.unwrap_or(defaults.throughput_smoothing),
            resolve_threshold: create.resolve_threshold.unwrap_or(defaults.resolve_threshold),
            max_deficit_rounds: create.max_deficit_rounds.unwrap_or(defaults.max_deficit_rounds),
            work_conserving: create.work_conserving.unwrap_or(defaults.work_conserving),
            mode,
            // Solves go through `Session::solve_allocation` with a fresh budget each time; the session's
            // own backend is never asked to solve (see `events::apply`).
            backend: Backend::default(),
            ..defaults
        };
        let mut session = match composition.filter(|c| !c.is_gavel()) {
            Some(c) => Session::composed(&problem, config, &c)?,
            None => Session::from_problem(&problem, config)?,
        };
        super::estimates::mark_created(&mut session, text)?;
        let types = problem.num_types();
        let max_solve_seconds = problem.max_solve_seconds;
        let base = Problem {
            jobs: Vec::new(),
            measured: Matrix::zeros(0, types),
            throughput: Matrix::zeros(0, types),
            colocations: Vec::new(),
            job_entity: Vec::new(),
            max_solve_seconds: None,
            ..problem
        };
        Ok((Spec { create, base, config, max_solve_seconds, policy }, session))
    }

    /// A job of the contract validated as `Problem::from_request` validates one, against this
    /// session's cluster and entities; with no `arrival`, it arrives now (session time). Its
    /// fields, its steps/s per type, and per type with its GPUs spread over servers if it gives
    /// that (placement sensitivity). Field paths are relative to the job object.
    pub fn job(&self, spec: &JobSpec, now: f64) -> ApiResult<(Job, Vec<f64>, Option<Vec<f64>>)> {
        let request = Request {
            policy: validation_policy(&self.policy, std::slice::from_ref(spec)),
            heterogeneity_aware: self.create.heterogeneity_aware,
            cluster: self.create.cluster.clone(),
            jobs: vec![spec.clone()],
            entities: self.create.entities.clone(),
            ..Request::default()
        };
        let problem = Problem::from_request(&request).map_err(|e| ApiError::Arbiter(relative_to_job(e)))?;
        let mut job = problem.jobs[0].clone();
        if spec.arrival.is_none() {
            job.arrival = now;
        }
        let unconsolidated = problem.unconsolidated.as_ref().map(|u| u.row(0).to_vec());
        Ok((job, problem.measured.row(0).to_vec(), unconsolidated))
    }

    /// The budget of one solve: the one its request `asked` for, else this session's own, and
    /// never above the server's ceiling.
    pub fn budget(&self, asked: Option<f64>, ceiling: f64) -> f64 {
        asked.or(self.max_solve_seconds).map_or(ceiling, |s| s.min(ceiling))
    }
}

/// The contract's `space_sharing` and `colocations` are the stateless solve's (and the library's
/// `Session::add_colocation`, and `arbiter simulate --space-sharing`): a session over HTTP has no
/// event that adds a colocation for a job added later, so it refuses them rather than ignore them.
/// Checked at creation only: a session stored before the refusal still replays.
pub fn refuse_space_sharing(text: &str) -> ApiResult<()> {
    /// Only those two keys are read; the rest of the body is skipped, not built.
    #[derive(Deserialize)]
    struct Pairs {
        #[serde(default)]
        space_sharing: Option<serde_json::Value>,
        #[serde(default)]
        colocations: Option<serde_json::Value>,
    }
    use serde_json::Value;
    // Not an object, or not JSON: the parse that follows refuses it with its own message.
    if crate::service::extract::expect_object(text).is_err() {
        return Ok(());
    }
    let Ok(body) = serde_json::from_str::<Pairs>(text) else { return Ok(()) };
    let malformed = |field: &str, what: &str| -> ApiResult<()> {
        Err(ArbiterError::at(ErrorCode::MalformedRequest, field, format!("malformed request: {field} is {what}"))
            .into())
    };
    let sharing = match &body.space_sharing {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return malformed("space_sharing", "true or false"),
    };
    let paired = match &body.colocations {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => return malformed("colocations", "a list of pairs"),
    };
    let field = if sharing {
        Some("space_sharing")
    } else if paired {
        Some("colocations")
    } else {
        None
    };
    match field {
        Some(field) => Err(ArbiterError::at(
            ErrorCode::Unsupported,
            field,
            "sessions over HTTP do not run space sharing (no event adds a colocation for a job added \
             later); POST /v1/allocations solves a request with colocations, and `arbiter simulate \
             --space-sharing` runs them in rounds",
        )
        .into()),
        None => Ok(()),
    }
}

/// `jobs[0].throughput.v100` (the request's path) or `job.id` (the session's) → `throughput.v100`, `id`.
pub fn relative_to_job(mut e: ArbiterError) -> ArbiterError {
    if let Some(field) = e.field.take() {
        let rest = ["jobs[0]", "job"].iter().find_map(|prefix| {
            let rest = field.strip_prefix(prefix)?;
            (rest.is_empty() || rest.starts_with('.')).then(|| rest.trim_start_matches('.').to_string())
        });
        e.field = match rest {
            Some(rest) if rest.is_empty() => None,
            Some(rest) => Some(rest),
            None => Some(field),
        };
    }
    e
}

/// What a new session is refused on and a stored one is not (it replays as it was created): a
/// worker type named with a `/`, which no worker path could name (they are `<type>/<server>`),
/// and a job that could never run (`never_runs`).
pub fn refuse_at_creation(spec: &Spec, session: &Session) -> ApiResult<()> {
    refuse_worker_names(spec)?;
    refuse_never_runs(session)
}

/// The first of `refuse_at_creation`'s refusals, which an estimating session's body is checked
/// on before its rows are estimated (whether a job could never run waits for them).
pub fn refuse_worker_names(spec: &Spec) -> ApiResult<()> {
    if let Some(name) = spec.create.cluster.worker_types.keys().find(|name| name.contains('/')) {
        return Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            format!("cluster.worker_types.{name}"),
            format!("a session's worker type cannot be named with a `/` ({name:?}): its workers are addressed as `<type>/<server>`"),
        )
        .into());
    }
    Ok(())
}

/// The second of `refuse_at_creation`'s refusals: a job that could never run.
fn refuse_never_runs(session: &Session) -> ApiResult<()> {
    for (i, id) in session.job_ids().enumerate() {
        if let Some(never) = never_runs(session, id) {
            let field = format!("jobs[{i}].{}", never.field);
            return Err(ArbiterError::at(never.code, field, format!("job {id:?}: {}", never.why)).into());
        }
    }
    Ok(())
}

/// Why job `id` of `session` could never run, if it could not ("it …"): no positive throughput
/// on a type with GPUs (`job_cannot_run`), or more GPUs at once than any such type has
/// (`invalid_scale_factor`, as the contract refuses a scale factor above the cluster). Live
/// requests are refused on it (a session stored before the check still replays), and the
/// Kubernetes extender says it of such a job.
pub fn never_runs(session: &Session, id: &str) -> Option<NeverRuns> {
    let (Ok(row), Ok(job)) = (session.throughput(id), session.job(id)) else { return None };
    let cluster = session.cluster();
    let most = (0..cluster.num_types())
        .filter(|&w| row[w] > 0.0 && cluster.gpu_count(w) > 0)
        .max_by_key(|&w| cluster.gpu_count(w));
    match most {
        None => Some(NeverRuns {
            code: ErrorCode::JobCannotRun,
            field: "throughput",
            why: "it has no positive throughput on a worker type with GPUs".into(),
        }),
        Some(w) if cluster.gpu_count(w) < job.scale_factor => Some(NeverRuns {
            code: ErrorCode::InvalidScaleFactor,
            field: "scale_factor",
            why: format!(
                "it needs {} GPUs at once, and the most of one worker type it runs on is {} ({})",
                job.scale_factor,
                cluster.gpu_count(w),
                cluster.type_name(w)
            ),
        }),
        Some(_) => None,
    }
}

/// Why a job could never run (`never_runs`): the error's code, the job's field at fault, and
/// the reason ("it …").
pub struct NeverRuns {
    pub code: ErrorCode,
    pub field: &'static str,
    pub why: String,
}
