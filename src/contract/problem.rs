//! The validated, index-based problem every policy works on: worker types and jobs as dense
//! indices, the throughput matrix as a dense row-major `f64` matrix, ids kept for the response.
//! Validation happens here, once; past `Problem::from_request` every number is finite and in range.

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::policies::PolicyKind;
use crate::request::{JobSpec, Request};

/// One accelerator type of the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerType {
    pub name: String,
    /// GPUs of this type.
    pub count: f64,
    pub gpus_per_server: u32,
    pub cost_per_hour: Option<f64>,
}

/// One training job, with everything a policy may read besides its throughput row.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: String,
    pub scale_factor: u32,
    pub weight: f64,
    pub steps_remaining: Option<f64>,
    pub time_elapsed: f64,
    pub isolated_time_elapsed: f64,
    pub slo_seconds: Option<f64>,
    pub entity: Option<String>,
    pub arrival: f64,
}

/// Dense `jobs × worker types` matrix, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Matrix {
    pub fn zeros(rows: usize, cols: usize) -> Matrix {
        Matrix { rows, cols, data: vec![0.0; rows * cols] }
    }
    pub fn filled(rows: usize, cols: usize, value: f64) -> Matrix {
        Matrix { rows, cols, data: vec![value; rows * cols] }
    }
    /// The matrix of `rows`, each as long as the first (no rows: 0 × 0).
    pub fn from_rows<R: AsRef<[f64]>>(rows: &[R]) -> Matrix {
        let mut matrix = Matrix::zeros(rows.len(), rows.first().map_or(0, |r| r.as_ref().len()));
        for (r, row) in rows.iter().enumerate() {
            matrix.row_mut(r).copy_from_slice(row.as_ref());
        }
        matrix
    }
    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    pub fn row(&self, r: usize) -> &[f64] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }
    pub fn row_mut(&mut self, r: usize) -> &mut [f64] {
        &mut self.data[r * self.cols..(r + 1) * self.cols]
    }
    /// The rows in order (a matrix of no columns has its rows all empty).
    pub fn row_iter(&self) -> impl Iterator<Item = &[f64]> + '_ {
        let width = self.cols.max(1);
        let data = if self.cols == 0 { &[][..] } else { &self.data[..] };
        data.chunks_exact(width).chain(std::iter::repeat_n(&[][..], if self.cols == 0 { self.rows } else { 0 }))
    }
    pub fn get(&self, r: usize, c: usize) -> f64 {
        self.data[r * self.cols + c]
    }
    pub fn set(&mut self, r: usize, c: usize, value: f64) {
        self.data[r * self.cols + c] = value;
    }
}

/// How an entity shares its weight among its live children (jobs and sub-entities).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// In proportion to the children's own weights.
    Fairness,
    /// All of it to the earliest-arrived child that still has an unfrozen job.
    Fifo,
}

/// A node of the entity tree (`hierarchical`).
#[derive(Debug, Clone, PartialEq)]
pub struct Entity {
    pub name: String,
    pub weight: f64,
    pub sharing: Sharing,
    pub parent: Option<usize>,
}

/// A pair of jobs that may share GPUs, with each one's throughput while paired (per type).
#[derive(Debug, Clone, PartialEq)]
pub struct Colocation {
    pub jobs: [usize; 2],
    /// `throughput[w] = [steps/s of jobs[0], steps/s of jobs[1]]` on type `w`.
    pub throughput: Vec<[f64; 2]>,
}

/// A request that passed validation.
#[derive(Debug, Clone)]
pub struct Problem {
    pub policy: PolicyKind,
    pub heterogeneity_aware: bool,
    pub space_sharing: bool,
    pub worker_types: Vec<WorkerType>,
    pub jobs: Vec<Job>,
    /// Measured steps/s of each job alone on each type (0: cannot run there).
    pub measured: Matrix,
    /// The matrix the policy optimizes over: `measured`, or all ones when heterogeneity-agnostic.
    pub throughput: Matrix,
    pub colocations: Vec<Colocation>,
    /// Placement sensitivity: measured steps/s of each multi-GPU job with its GPUs spread over
    /// servers (0: not given). `None` when no job gives one.
    pub unconsolidated: Option<Matrix>,
    /// Space sharing keeps a colocation on a type only above this combined normalized throughput.
    pub colocation_threshold: f64,
    /// Requested number of POP partitions (`None`: chosen by size).
    pub partitions: Option<usize>,
    /// What follows a bottleneck policy's optimum (`solver::tie_break`).
    pub tie_break: crate::solver::tie_break::TieBreak,
    /// Whether the policy is solved over round configurations, so whole-GPU rounds can deliver
    /// the allocation (`solver::realizable`).
    pub realizable: crate::solver::realizable::Realizable,
    /// The entity tree (empty unless the request has `entities`).
    pub entities: Vec<Entity>,
    /// `job_entity[m]`: the entity job m belongs to.
    pub job_entity: Vec<Option<usize>>,
    /// The request's solve budget, in seconds.
    pub max_solve_seconds: Option<f64>,
    /// How the exact engine solves `max_ratio` (`max_min_ratio::Method`).
    pub method: crate::max_min_ratio::Method,
    /// GPU prices of an earlier decomposition on this cluster (a session's last solve): where the
    /// next one starts instead of a sample. Never part of a request; only a warm start, the
    /// certificate decides.
    pub warm_prices: Option<Vec<f64>>,
    /// The same for the tie-break's second solve (its GPU prices, a session's last).
    pub warm_tie_break_prices: Option<Vec<f64>>,
    /// How hard the decomposition tries before the plain LP solves instead. Never part of a
    /// request; the library may set it (tests send small instances through samples and rounds).
    pub decomposition: crate::max_min_ratio::DecompositionOptions,
}

/// The smallest magnitude of a nonzero number the contract takes (throughputs, steps, weights,
/// times, prices), and the largest: the formulations multiply and divide a few of them at once
/// (a makespan is steps over a throughput, a floor a weight times an equal share), and within
/// these bounds every such product or quotient stays finite and normal in double precision. A
/// throughput of 5·10⁻³²⁴ steps/s made a job's makespan infinite; one of 1.7·10³⁰⁸ made a sum
/// of them overflow, and the LP solver refused the model.
pub const SMALLEST: f64 = 1e-100;
/// See [`SMALLEST`].
pub const LARGEST: f64 = 1e100;

/// Whether `value` is 0 or of magnitude within [`SMALLEST`] and [`LARGEST`] (so finite).
pub fn in_range(value: f64) -> bool {
    value == 0.0 || (SMALLEST..=LARGEST).contains(&value.abs())
}

/// `value` as a message shows it: in scientific notation when very large or very small, where
/// the plain form would run to hundreds of digits.
pub fn shown(value: f64) -> String {
    if value != 0.0 && value.is_finite() && !(1e-6..1e15).contains(&value.abs()) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// Why `value` is not a number the contract takes as `what`, at least `min`: it must be finite,
/// at least `min`, and 0 or of magnitude within [`SMALLEST`] and [`LARGEST`].
pub fn refusal(value: f64, min: f64, what: &str) -> Option<String> {
    if !value.is_finite() || value < min {
        return Some(format!("{what} must be a finite number ≥ {}, got {}", shown(min), shown(value)));
    }
    if !in_range(value) {
        return Some(out_of_range(what, value, min <= 0.0));
    }
    None
}

/// Why `value`, outside [`in_range`], is refused as `what`; `zero` says whether 0 is taken too.
pub fn out_of_range(what: &str, value: f64, zero: bool) -> String {
    let zero = if zero { "0 or " } else { "" };
    format!("{what} must be {zero}of magnitude between {SMALLEST:e} and {LARGEST:e}, got {}", shown(value))
}

fn finite_at_least(value: f64, min: f64, field: impl Fn() -> String, what: &str) -> Result<f64> {
    match refusal(value, min, what) {
        Some(why) => Err(ArbiterError::at(ErrorCode::InvalidNumber, field(), why)),
        None => Ok(value),
    }
}

/// [`refusal`] for a number that must be above 0.
pub fn positive_refusal(value: f64, what: &str) -> Option<String> {
    if !value.is_finite() || value <= 0.0 {
        return Some(format!("{what} must be a finite number > 0, got {}", shown(value)));
    }
    if !in_range(value) {
        return Some(format!("{what} must be of magnitude between {SMALLEST:e} and {LARGEST:e}, got {}", shown(value)));
    }
    None
}

/// `value` if it is a number above 0 within the contract's magnitudes ([`positive_refusal`]),
/// else `invalid_number` at `field()`.
pub fn positive(value: f64, field: impl Fn() -> String, what: &str) -> Result<f64> {
    match positive_refusal(value, what) {
        Some(why) => Err(ArbiterError::at(ErrorCode::InvalidNumber, field(), why)),
        None => Ok(value),
    }
}

/// The most GPUs one job may occupy. Capacity rows mix every job's scale factor, and solvers
/// treat coefficients below 1e-9 of a row's largest as zero; this ceiling keeps the ratio of any
/// two scale factors within 1e6, so no job's share of a capacity row is ever dropped.
pub const MAX_SCALE_FACTOR: u32 = 1 << 20;

/// A job's per-type steps/s map (`throughput` or `unconsolidated_throughput`, at `path`) as
/// `(type index, value)` for the entries with a value: unknown types and bad numbers are refused
/// with the entry's field.
///
/// `path` is formatted only for an error: at 65,536 jobs, formatting every job's paths up front
/// took 6% of `arbiter solve`.
fn throughput_entries(
    entries: &std::collections::BTreeMap<String, Option<f64>>,
    path: &dyn Fn() -> String,
    type_index: &dyn Fn(&str) -> Option<usize>,
) -> Result<Vec<(usize, f64)>> {
    let mut out = Vec::with_capacity(entries.len());
    for (name, value) in entries {
        let field = || format!("{}.{name}", path());
        let w = type_index(name).ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::UnknownWorkerType,
                field(),
                format!("worker type {name:?} is not in cluster.worker_types"),
            )
        })?;
        if let Some(v) = value {
            out.push((w, finite_at_least(*v, 0.0, field, "a throughput")?));
        }
    }
    Ok(out)
}

/// `value` if it is a whole number ≥ 0 and at most `most`; a refusal names `least..=most`, the
/// range the caller takes (it refuses values below `least` itself, with its own code).
fn whole(value: f64, field: impl Fn() -> String, what: &str, (least, most): (u32, u32)) -> Result<f64> {
    finite_at_least(value, 0.0, &field, what)?;
    if value.fract() != 0.0 || value > most as f64 {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            field(),
            format!("{what} must be a whole number from {least} to {most}, got {}", shown(value)),
        ));
    }
    Ok(value)
}

impl Problem {
    /// Parses and validates JSON text in one step.
    pub fn from_json(text: &str) -> Result<Problem> {
        Problem::from_request(&Request::from_json(text)?)
    }

    /// Validates a request; every refusal names the offending field.
    pub fn from_request(req: &Request) -> Result<Problem> {
        let policy = PolicyKind::named(&req.policy)?;
        let worker_types = validate_worker_types(req)?;
        let total_gpus: f64 = worker_types.iter().map(|w| w.count).sum();
        if total_gpus <= 0.0 {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "cluster.worker_types",
                "the cluster has no GPUs: at least one worker type needs count ≥ 1",
            ));
        }
        let type_index = |name: &str| worker_types.iter().position(|w| w.name == name);

        let mut seen = std::collections::HashMap::with_capacity(req.jobs.len());
        let mut jobs = Vec::with_capacity(req.jobs.len());
        let mut measured = Matrix::zeros(req.jobs.len(), worker_types.len());
        let mut unconsolidated: Option<Matrix> = None;
        for (m, spec) in req.jobs.iter().enumerate() {
            if let Some(first) = seen.insert(spec.id.as_str(), m) {
                return Err(ArbiterError::at(
                    ErrorCode::DuplicateJobId,
                    format!("jobs[{m}].id"),
                    format!("job id {:?} is already used by jobs[{first}]", spec.id),
                ));
            }
            jobs.push(validate_job(m, spec, policy)?);
            for (w, v) in throughput_entries(&spec.throughput, &|| format!("jobs[{m}].throughput"), &type_index)? {
                measured.set(m, w, v);
            }
            let runnable = (0..worker_types.len()).any(|w| measured.get(m, w) > 0.0 && worker_types[w].count > 0.0);
            if !runnable {
                return Err(ArbiterError::at(
                    ErrorCode::JobCannotRun,
                    format!("jobs[{m}].throughput"),
                    format!("job {:?} has no positive throughput on any worker type with GPUs", spec.id),
                ));
            }
            let path = || format!("jobs[{m}].unconsolidated_throughput");
            for (w, v) in throughput_entries(&spec.unconsolidated_throughput, &path, &type_index)? {
                if !policy.supports_placement_sensitivity() {
                    return Err(ArbiterError::at(
                        ErrorCode::Unsupported,
                        format!("{}.{}", path(), worker_types[w].name),
                        format!(
                            "{} does not model placement sensitivity; leave out unconsolidated_throughput",
                            policy.name()
                        ),
                    ));
                }
                // One GPU is always consolidated: only multi-GPU jobs have the second column.
                if jobs[m].scale_factor > 1 && v > 0.0 {
                    unconsolidated
                        .get_or_insert_with(|| Matrix::zeros(req.jobs.len(), worker_types.len()))
                        .set(m, w, v);
                }
            }
        }
        if policy == PolicyKind::MinCostSlo && !jobs.is_empty() && jobs.iter().all(|j| j.slo_seconds.is_none()) {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                "jobs[0].slo_seconds",
                "min_cost_slo needs slo_seconds on at least one job",
            ));
        }

        let space_sharing = req.space_sharing.unwrap_or(false);
        let colocations = validate_colocations(req, &jobs, &seen, &type_index, worker_types.len())?;
        if space_sharing && !policy.supports_space_sharing() {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "space_sharing",
                format!("{} does not support space sharing; send space_sharing: false", policy.name()),
            ));
        }
        let colocation_threshold = match req.colocation_threshold {
            Some(t) => finite_at_least(t, 0.0, || "colocation_threshold".to_string(), "colocation_threshold")?,
            None => crate::space_sharing::DEFAULT_THRESHOLD,
        };
        let partitions = match req.partitions {
            Some(k) => {
                let k = whole(k, || "partitions".to_string(), "partitions", (1, u32::MAX))?;
                if k < 1.0 {
                    return Err(ArbiterError::at(
                        ErrorCode::InvalidNumber,
                        "partitions",
                        "partitions must be at least 1 (1: solve whole)",
                    ));
                }
                Some(k as usize)
            }
            None => None,
        };
        let tie_break = match req.tie_break.as_deref() {
            None => Default::default(),
            Some(name) => crate::solver::tie_break::TieBreak::named(name)?,
        };
        let method = match req.method.as_deref() {
            None => Default::default(),
            Some(name) => crate::max_min_ratio::Method::from_name(name).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "method",
                    format!("unknown method {name:?}; expected \"auto\", \"lp\" or \"decomposition\""),
                )
            })?,
        };
        let entities = validate_entities(req)?;
        let job_entity = validate_job_entities(req, &entities, policy)?;
        let heterogeneity_aware = req.heterogeneity_aware.unwrap_or(true);
        let throughput = if heterogeneity_aware {
            measured.clone()
        } else {
            // The contract (and Gavel, whose reference cases grade it) takes every T as 1, also
            // where the measured throughput is 0; effective throughputs show what that time is worth.
            Matrix::filled(jobs.len(), worker_types.len(), 1.0)
        };
        Ok(Problem {
            policy,
            heterogeneity_aware,
            space_sharing,
            worker_types,
            jobs,
            measured,
            throughput,
            colocations,
            unconsolidated,
            colocation_threshold,
            partitions,
            tie_break,
            realizable: crate::solver::realizable::Realizable::from_flag(req.realizable, Default::default()),
            method,
            warm_prices: None,
            warm_tie_break_prices: None,
            decomposition: Default::default(),
            entities,
            job_entity,
            max_solve_seconds: req
                .max_solve_seconds
                .map(|s| positive(s, || "max_solve_seconds".to_string(), "max_solve_seconds"))
                .transpose()?,
        })
    }

    /// `T^u` in the policy's units: the measured unconsolidated throughput, or, when
    /// heterogeneity-agnostic, the fraction of the consolidated speed it keeps (solo counts 1).
    pub fn unconsolidated_throughput(&self) -> Option<Matrix> {
        let measured = self.unconsolidated.as_ref()?;
        let mut t = measured.clone();
        if !self.heterogeneity_aware {
            for m in 0..t.rows() {
                for w in 0..t.cols() {
                    let solo = self.measured.get(m, w);
                    t.set(m, w, if solo > 0.0 { measured.get(m, w) / solo * self.throughput.get(m, w) } else { 0.0 });
                }
            }
        }
        Some(t)
    }

    /// Per type, `(s, GPUs)` for every scale factor s > 1 of the jobs: the GPUs that can hold
    /// jobs of size s consolidated. With `g` GPUs per server, `F` full servers and `r` GPUs on a
    /// last partial one: `s·(⌊g/s⌋·F + ⌊r/s⌋)` when `s ≤ g` (whole jobs inside servers), else
    /// `s·⌊F / ⌈s/g⌉⌋` (jobs on the fewest servers possible). Empty without placement sensitivity.
    pub fn consolidated_slots(&self) -> Vec<Vec<(u32, f64)>> {
        if self.unconsolidated.is_none() {
            return Vec::new();
        }
        let mut sizes: Vec<u32> = self.jobs.iter().map(|j| j.scale_factor).filter(|&s| s > 1).collect();
        sizes.sort_unstable();
        sizes.dedup();
        self.worker_types
            .iter()
            .map(|wt| {
                let g = wt.gpus_per_server.max(1) as f64;
                let (full, rest) = ((wt.count / g).floor(), wt.count - (wt.count / g).floor() * g);
                sizes
                    .iter()
                    .map(|&s| {
                        let s_f = s as f64;
                        let slots = if s_f <= g {
                            (g / s_f).floor() * full + (rest / s_f).floor()
                        } else {
                            (full / (s_f / g).ceil()).floor()
                        };
                        (s, slots * s_f)
                    })
                    .collect()
            })
            .collect()
    }

    /// The same policy, cluster and settings with no jobs (no rows, no colocations): what a
    /// sub-problem starts from without copying the whole request.
    pub fn clone_without_jobs(&self) -> Problem {
        Problem {
            policy: self.policy,
            heterogeneity_aware: self.heterogeneity_aware,
            space_sharing: self.space_sharing,
            worker_types: self.worker_types.clone(),
            jobs: Vec::new(),
            measured: Matrix::zeros(0, self.num_types()),
            throughput: Matrix::zeros(0, self.num_types()),
            colocations: Vec::new(),
            unconsolidated: None,
            colocation_threshold: self.colocation_threshold,
            partitions: self.partitions,
            tie_break: self.tie_break,
            realizable: self.realizable,
            method: self.method,
            warm_prices: self.warm_prices.clone(),
            warm_tie_break_prices: self.warm_tie_break_prices.clone(),
            decomposition: self.decomposition,
            entities: self.entities.clone(),
            job_entity: Vec::new(),
            max_solve_seconds: self.max_solve_seconds,
        }
    }

    /// A problem with a cluster and a policy but no jobs yet (jobs arrive later, as in a session).
    pub fn empty(policy: PolicyKind, heterogeneity_aware: bool, worker_types: Vec<WorkerType>) -> Problem {
        let types = worker_types.len();
        Problem {
            policy,
            heterogeneity_aware,
            space_sharing: false,
            worker_types,
            jobs: Vec::new(),
            measured: Matrix::zeros(0, types),
            throughput: Matrix::zeros(0, types),
            colocations: Vec::new(),
            unconsolidated: None,
            colocation_threshold: crate::space_sharing::DEFAULT_THRESHOLD,
            partitions: None,
            tie_break: Default::default(),
            realizable: Default::default(),
            method: Default::default(),
            warm_prices: None,
            warm_tie_break_prices: None,
            decomposition: Default::default(),
            entities: Vec::new(),
            job_entity: Vec::new(),
            max_solve_seconds: None,
        }
    }

    pub fn num_jobs(&self) -> usize {
        self.jobs.len()
    }

    pub fn num_types(&self) -> usize {
        self.worker_types.len()
    }

    pub fn total_gpus(&self) -> f64 {
        self.worker_types.iter().map(|w| w.count).sum()
    }

    /// `X_equal[w] = count_w / Σ_v count_v`: every job's equal time share of every type.
    pub fn equal_share(&self) -> Vec<f64> {
        let total = self.total_gpus();
        self.worker_types.iter().map(|w| w.count / total).collect()
    }

    /// `thr_equal_m = Σ_w T[m][w] X_equal[w]`, the throughput normalized throughputs divide by.
    pub fn equal_share_throughput(&self) -> Vec<f64> {
        let share = self.equal_share();
        self.throughput.row_iter().map(|row| dot(row, &share)).collect()
    }

    /// `X_isolated[m][w] = (count_w / M) / sf_m`, each row scaled down to sum to at most 1.
    pub fn isolated_allocation(&self) -> Matrix {
        let share = self.isolated_share();
        let mut x = Matrix::zeros(self.num_jobs(), self.num_types());
        for (m, job) in self.jobs.iter().enumerate() {
            isolated_row(&share, job.scale_factor, x.row_mut(m));
        }
        x
    }

    /// `thr_iso_m = Σ_w T[m][w] X_isolated[m][w]`, row by row (without the matrix).
    pub fn isolated_throughput(&self) -> Vec<f64> {
        let share = self.isolated_share();
        let mut x = vec![0.0; share.len()];
        (self.jobs.iter().zip(self.throughput.row_iter()))
            .map(|(job, row)| {
                isolated_row(&share, job.scale_factor, &mut x);
                dot(row, &x)
            })
            .collect()
    }

    /// `count_w / M`: each type's GPUs over the jobs.
    fn isolated_share(&self) -> Vec<f64> {
        let n = self.num_jobs() as f64;
        self.worker_types.iter().map(|wt| wt.count / n).collect()
    }

    /// The job's steps remaining; validation guarantees it for the policies that need it.
    pub fn steps_remaining(&self, m: usize) -> f64 {
        self.jobs[m].steps_remaining.unwrap_or(0.0)
    }
}

/// A job's row of `X_isolated` into `row`: `share_w / sf`, scaled down to sum to at most 1.
fn isolated_row(share: &[f64], scale_factor: u32, row: &mut [f64]) {
    row.iter_mut().zip(share).for_each(|(x, s)| *x = s / scale_factor as f64);
    let sum: f64 = row.iter().sum();
    if sum > 1.0 {
        row.iter_mut().for_each(|v| *v /= sum);
    }
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn validate_worker_types(req: &Request) -> Result<Vec<WorkerType>> {
    if req.cluster.worker_types.is_empty() {
        return Err(ArbiterError::at(
            ErrorCode::MissingField,
            "cluster.worker_types",
            "the cluster needs at least one worker type",
        ));
    }
    let needs_cost = matches!(req.policy.as_str(), "min_cost" | "min_cost_slo");
    let mut types = Vec::with_capacity(req.cluster.worker_types.len());
    for (name, spec) in &req.cluster.worker_types {
        if name.is_empty() {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "cluster.worker_types",
                "a worker type needs a name (\"\" is a key here)",
            ));
        }
        let field = |f: &str| format!("cluster.worker_types.{name}.{f}");
        let count = whole(spec.count, || field("count"), "a GPU count", (0, u32::MAX))?;
        let gpus_per_server = match spec.gpus_per_server {
            Some(g) => {
                let g = whole(g, || field("gpus_per_server"), "gpus_per_server", (1, u32::MAX))?;
                positive(g, || field("gpus_per_server"), "gpus_per_server")? as u32
            }
            None => count.max(1.0) as u32,
        };
        let cost_per_hour = match spec.cost_per_hour {
            Some(c) if needs_cost => Some(positive(c, || field("cost_per_hour"), "cost_per_hour")?),
            Some(c) => Some(finite_at_least(c, 0.0, || field("cost_per_hour"), "cost_per_hour")?),
            None if needs_cost => {
                return Err(ArbiterError::at(
                    ErrorCode::MissingField,
                    field("cost_per_hour"),
                    format!("{} needs cost_per_hour on every worker type", req.policy),
                ))
            }
            None => None,
        };
        types.push(WorkerType { name: name.clone(), count, gpus_per_server, cost_per_hour });
    }
    Ok(types)
}

/// Longest id a session takes for a job. A session's job is addressed by its id in a URL path
/// (`/v1/sessions/{id}/jobs/{job}`), and a server answers a path past 64 KiB with 414 and no
/// body: a job with a 100,000-character id could be added but never removed.
pub const MAX_JOB_ID_CHARACTERS: usize = 1024;

/// Refuses an empty job id, and for a session (`addressed`) one longer than
/// [`MAX_JOB_ID_CHARACTERS`]; `field` is the id's path in the request.
pub fn check_job_id(id: &str, field: impl Into<String>, addressed: bool) -> Result<()> {
    if id.is_empty() {
        return Err(ArbiterError::at(ErrorCode::MissingField, field, "a job id must not be empty"));
    }
    let length = id.chars().count();
    if addressed && length > MAX_JOB_ID_CHARACTERS {
        return Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            field,
            format!(
                "a job id {} is too long: a session's job is addressed by its id in a URL, so ids are at most \
                 {MAX_JOB_ID_CHARACTERS} characters",
                crate::error::quoted(id)
            ),
        ));
    }
    Ok(())
}

fn validate_job(m: usize, spec: &JobSpec, policy: PolicyKind) -> Result<Job> {
    let field = |f: &str| format!("jobs[{m}].{f}");
    check_job_id(&spec.id, field("id"), false)?;
    let scale_factor = match spec.scale_factor {
        None => 1,
        Some(sf) => {
            let sf =
                // Below 1 or above the largest, the checks below name it; in between, whole.
                if sf.is_finite() && !(1.0..=MAX_SCALE_FACTOR as f64).contains(&sf) {
                    sf
                } else {
                    whole(sf, || field("scale_factor"), "a scale factor", (1, MAX_SCALE_FACTOR))?
                };
            if sf < 1.0 {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidScaleFactor,
                    field("scale_factor"),
                    "a scale factor must be at least 1 (the GPUs the job occupies)",
                ));
            }
            if sf > MAX_SCALE_FACTOR as f64 {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidScaleFactor,
                    field("scale_factor"),
                    format!("a scale factor must be at most {MAX_SCALE_FACTOR} GPUs, got {sf}"),
                ));
            }
            sf as u32
        }
    };
    let weight = positive(spec.weight.unwrap_or(1.0), || field("weight"), "a weight")?;
    let steps_remaining = match spec.steps_remaining {
        Some(r) => Some(finite_at_least(r, 0.0, || field("steps_remaining"), "steps_remaining")?),
        None if policy.needs_steps_remaining() || (policy == PolicyKind::MinCostSlo && spec.slo_seconds.is_some()) => {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                field("steps_remaining"),
                format!("{} needs steps_remaining on every job", policy.name()),
            ))
        }
        None => None,
    };
    let time_elapsed =
        finite_at_least(spec.time_elapsed.unwrap_or(0.0), 0.0, || field("time_elapsed"), "time_elapsed")?;
    let isolated_time_elapsed = finite_at_least(
        spec.isolated_time_elapsed.unwrap_or(0.0),
        0.0,
        || field("isolated_time_elapsed"),
        "isolated_time_elapsed",
    )?;
    let slo_seconds = spec.slo_seconds.map(|s| positive(s, || field("slo_seconds"), "slo_seconds")).transpose()?;
    let arrival = finite_at_least(spec.arrival.unwrap_or(m as f64), 0.0, || field("arrival"), "arrival")?;
    Ok(Job {
        id: spec.id.clone(),
        scale_factor,
        weight,
        steps_remaining,
        time_elapsed,
        isolated_time_elapsed,
        slo_seconds,
        entity: spec.entity.clone(),
        arrival,
    })
}

fn validate_entities(req: &Request) -> Result<Vec<Entity>> {
    let Some(specs) = &req.entities else {
        return Ok(Vec::new());
    };
    let names: Vec<&String> = specs.keys().collect();
    let mut entities = Vec::with_capacity(specs.len());
    for (name, spec) in specs {
        let field = |f: &str| format!("entities.{name}.{f}");
        let weight = positive(spec.weight.unwrap_or(1.0), || field("weight"), "an entity weight")?;
        let sharing = match spec.policy.as_deref() {
            None | Some("fairness") => Sharing::Fairness,
            Some("fifo") => Sharing::Fifo,
            Some(other) => {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidEntity,
                    field("policy"),
                    format!("unknown intra-entity policy {other:?}; expected \"fairness\" or \"fifo\""),
                ))
            }
        };
        let parent = match &spec.parent {
            None => None,
            Some(p) => Some(names.iter().position(|n| *n == p).ok_or_else(|| {
                ArbiterError::at(ErrorCode::InvalidEntity, field("parent"), format!("unknown entity {p:?}"))
            })?),
        };
        entities.push(Entity { name: name.clone(), weight, sharing, parent });
    }
    // Walking up from any entity must reach a root within as many steps as there are entities.
    for (e, entity) in entities.iter().enumerate() {
        let mut at = entity.parent;
        for _ in 0..=entities.len() {
            match at {
                Some(p) if p == e => {
                    return Err(ArbiterError::at(
                        ErrorCode::InvalidEntity,
                        format!("entities.{}.parent", entity.name),
                        format!("entity {:?} is nested inside itself", entity.name),
                    ))
                }
                Some(p) => at = entities[p].parent,
                None => break,
            }
        }
    }
    Ok(entities)
}

fn validate_job_entities(req: &Request, entities: &[Entity], policy: PolicyKind) -> Result<Vec<Option<usize>>> {
    req.jobs
        .iter()
        .enumerate()
        .map(|(m, job)| match &job.entity {
            Some(name) => entities.iter().position(|e| &e.name == name).map(Some).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::InvalidEntity,
                    format!("jobs[{m}].entity"),
                    format!("entity {name:?} is not in entities"),
                )
            }),
            None if policy == PolicyKind::Hierarchical => Err(ArbiterError::at(
                ErrorCode::MissingField,
                format!("jobs[{m}].entity"),
                "hierarchical needs an entity on every job",
            )),
            None => Ok(None),
        })
        .collect()
}

fn validate_colocations(
    req: &Request,
    jobs: &[Job],
    index: &std::collections::HashMap<&str, usize>,
    type_index: &dyn Fn(&str) -> Option<usize>,
    num_types: usize,
) -> Result<Vec<Colocation>> {
    let mut out = Vec::new();
    let mut offered = std::collections::HashMap::new();
    for (k, spec) in req.colocations.iter().flatten().enumerate() {
        let field = |f: &str| format!("colocations[{k}].{f}");
        let mut pair = [0usize; 2];
        for (i, id) in spec.jobs.iter().enumerate() {
            pair[i] = *index.get(id.as_str()).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::InvalidColocation,
                    field(&format!("jobs[{i}]")),
                    format!("unknown job {id:?}"),
                )
            })?;
        }
        if pair[0] == pair[1] {
            return Err(ArbiterError::at(
                ErrorCode::InvalidColocation,
                field("jobs"),
                "a colocation needs two different jobs",
            ));
        }
        if jobs[pair[0]].scale_factor != jobs[pair[1]].scale_factor {
            return Err(ArbiterError::at(
                ErrorCode::InvalidColocation,
                field("jobs"),
                format!(
                    "jobs {:?} and {:?} have scale factors {} and {}; only equal scale factors can share GPUs",
                    spec.jobs[0], spec.jobs[1], jobs[pair[0]].scale_factor, jobs[pair[1]].scale_factor
                ),
            ));
        }
        // One pair, one set of colocated throughputs: (a, b) and (b, a) would say two things.
        if let Some(first) = offered.insert((pair[0].min(pair[1]), pair[0].max(pair[1])), k) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidColocation,
                field("jobs"),
                format!("jobs {:?} and {:?} are already paired by colocations[{first}]", spec.jobs[0], spec.jobs[1]),
            ));
        }
        let mut throughput = vec![[0.0; 2]; num_types];
        for (name, values) in &spec.throughput {
            let w = type_index(name).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::UnknownWorkerType,
                    field(&format!("throughput.{name}")),
                    format!("worker type {name:?} is not in cluster.worker_types"),
                )
            })?;
            for (i, v) in values.iter().enumerate() {
                throughput[w][i] =
                    finite_at_least(*v, 0.0, || field(&format!("throughput.{name}[{i}]")), "a colocated throughput")?;
            }
        }
        out.push(Colocation { jobs: pair, throughput });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_takes_job_ids_a_url_can_address() {
        let longest = "é".repeat(MAX_JOB_ID_CHARACTERS);
        assert!(check_job_id(&longest, "job.id", true).is_ok());
        let longer = format!("{longest}x");
        let refused = check_job_id(&longer, "job.id", true).unwrap_err();
        assert_eq!((refused.code, refused.field.as_deref()), (ErrorCode::MalformedRequest, Some("job.id")));
        assert!(refused.message.len() < 300, "{}", refused.message);
        // A request's jobs are never addressed by URL: any length.
        assert!(check_job_id(&longer, "jobs[0].id", false).is_ok());
        assert_eq!(check_job_id("", "job.id", false).unwrap_err().code, ErrorCode::MissingField);
    }

    #[test]
    fn a_pair_is_offered_once() {
        let request = |colocations: &str| {
            format!(
                r#"{{"policy": "max_min_fairness", "space_sharing": true,
                     "cluster": {{"worker_types": {{"v100": {{"count": 2}}}}}},
                     "jobs": [{{"id": "a", "throughput": {{"v100": 1}}}}, {{"id": "b", "throughput": {{"v100": 1}}}}],
                     "colocations": [{colocations}]}}"#
            )
        };
        let ab = r#"{"jobs": ["a", "b"], "throughput": {"v100": [0.6, 0.7]}}"#;
        let ba = r#"{"jobs": ["b", "a"], "throughput": {"v100": [0.9, 0.2]}}"#;
        assert!(Problem::from_json(&request(ab)).is_ok());
        let refused = Problem::from_json(&request(&format!("{ab}, {ba}"))).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidColocation);
        assert_eq!(refused.field.as_deref(), Some("colocations[1].jobs"));
        assert!(refused.message.contains("already paired by colocations[0]"), "{}", refused.message);
    }
}
