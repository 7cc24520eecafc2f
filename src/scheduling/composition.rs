//! Compositions by name: which stage fills each slot of the pipeline, parsed from
//! `accept_x=1.2`-style names (command line) or JSON (`{"admission": {"accept_x": 1.2},
//! "scheduling": "las", "placement": "consolidated"}`), with the contract's errors. An LP policy
//! in the scheduling slot, with the default admission, placement and preemption, is Gavel's
//! composition: it runs as the existing round mechanism (`crate::mechanism`), unchanged.

use super::admission::{AcceptAll, AcceptX, Admission};
use super::ltgf::Ltgf;
use super::placement::{Bandwidth, Consolidated, FirstFree, Placement, ProfileGuided, Random, Skew};
use super::policies::{parameter_list, Fifo, FifoPriority, Las, Optimus, Scheduling, Srtf, Themis, Tiresias};
use super::preemption::{Lease, LeaseTerm, NonPreemptive, Preemption};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::policies::PolicyKind;
use serde::{Deserialize, Serialize};

/// The list policies, by name.
pub const LIST_POLICIES: [&str; 9] =
    ["fifo", "fifo_priority", "las", "tiresias", "srtf", "optimus", "themis", "ltgf", "ltgf_quota"];
pub const ADMISSIONS: [&str; 3] = ["accept_all", "accept_x", "fifo_threshold"];
pub const PLACEMENTS: [&str; 6] = ["first_free", "consolidated", "random", "profile_guided", "skew", "bandwidth"];
pub const PREEMPTIONS: [&str; 3] = ["lease", "lease_term", "none"];

/// The scheduling slot: a list policy with its parameters (none, one, or Tiresias' queue
/// thresholds, `tiresias=3600/36000`), or an LP policy's allocation (Gavel's mechanism).
#[derive(Debug, Clone, PartialEq)]
pub enum SchedulingSpec {
    List { name: String, parameters: Vec<f64> },
    Allocation(PolicyKind),
}

/// One stage name with its optional numeric parameter (`accept_x=1.2`).
#[derive(Debug, Clone, PartialEq)]
pub struct StageSpec {
    pub name: String,
    pub parameter: Option<f64>,
}

impl StageSpec {
    fn render(&self) -> String {
        match self.parameter {
            Some(p) => format!("{}={p}", self.name),
            None => self.name.clone(),
        }
    }
}

/// A composition of the four stages.
#[derive(Debug, Clone, PartialEq)]
pub struct Composition {
    pub admission: StageSpec,
    pub scheduling: SchedulingSpec,
    pub placement: StageSpec,
    pub preemption: StageSpec,
}

/// The JSON form: each stage a name (`"las"`) or a one-entry object (`{"accept_x": 1.2}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompositionRequest {
    #[schema(value_type = Option<Stage>, inline)]
    pub admission: Option<serde_json::Value>,
    #[schema(value_type = Option<Stage>, inline)]
    pub scheduling: Option<serde_json::Value>,
    #[schema(value_type = Option<Stage>, inline)]
    pub placement: Option<serde_json::Value>,
    #[schema(value_type = Option<Stage>, inline)]
    pub preemption: Option<serde_json::Value>,
}

/// A stage's schema in the OpenAPI document, as [`Composition::from_request`] reads it: a name
/// (`"las"`, or `"accept_x=1.2"` with its parameter) or an object of one entry, the name and a
/// number (`{"accept_x": 1.2}`).
pub struct Stage;

impl utoipa::PartialSchema for Stage {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Type};
        let name = ObjectBuilder::new().schema_type(Type::String).description(Some(
            "A stage name (`\"tiresias\"`), or `name=value` with its parameter (Tiresias' queue thresholds \
                 as `tiresias=3600/36000`)",
        ));
        let parameter: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> = OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Number))
            .item(ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::Number)).min_items(Some(1)))
            .into();
        let with_parameter = ObjectBuilder::new()
            .schema_type(Type::Object)
            .min_properties(Some(1))
            .max_properties(Some(1))
            .additional_properties(Some(parameter))
            .description(Some(
                "One entry: the stage's name and its parameter (`{\"accept_x\": 1.2}`); Tiresias' queue \
                 thresholds as a list (`{\"tiresias\": [3600, 36000]}`)",
            ));
        OneOfBuilder::new().item(name).item(with_parameter).into()
    }
}

impl utoipa::ToSchema for Stage {}

fn unknown(slot: &str, name: &str, known: &[&str]) -> ArbiterError {
    ArbiterError::at(
        ErrorCode::UnknownPolicy,
        slot,
        format!("unknown {slot} stage {name:?}; expected one of: {}", known.join(", ")),
    )
}

fn bad_parameter(slot: &str, message: String) -> ArbiterError {
    ArbiterError::at(ErrorCode::InvalidNumber, slot, message)
}

/// `value`, the parameter of stage `name` in `slot`, as a finite number.
fn number(slot: &str, name: &str, value: &str) -> Result<f64> {
    let x: f64 = value.trim().parse().ok().filter(|v: &f64| v.is_finite()).ok_or_else(|| {
        bad_parameter(slot, format!("{slot} parameter of {name:?} must be a finite number, got {value:?}"))
    })?;
    if !crate::problem::in_range(x) {
        let what = format!("{slot} parameter of {name:?}");
        return Err(bad_parameter(slot, crate::problem::out_of_range(&what, x, false)));
    }
    Ok(x)
}

/// Splits `name=value` (value a finite number).
pub fn parse_stage(slot: &str, text: &str) -> Result<StageSpec> {
    let text = text.trim();
    match text.split_once('=') {
        None => Ok(StageSpec { name: text.to_string(), parameter: None }),
        Some((name, value)) => {
            Ok(StageSpec { name: name.trim().to_string(), parameter: Some(number(slot, name, value)?) })
        }
    }
}

impl Composition {
    /// Gavel's composition around an LP policy: every job admitted, the policy's allocation,
    /// consolidated placement, lease renewal.
    pub fn gavel(policy: PolicyKind) -> Composition {
        Composition {
            admission: StageSpec { name: "accept_all".into(), parameter: None },
            scheduling: SchedulingSpec::Allocation(policy),
            placement: StageSpec { name: "consolidated".into(), parameter: None },
            preemption: StageSpec { name: "lease".into(), parameter: None },
        }
    }

    /// From the command line's flags: `--policy` is the scheduling slot of an LP policy;
    /// `--scheduling` any scheduling (list or LP); the other slots default to Gavel's.
    pub fn from_flags(
        policy: Option<&str>,
        admission: Option<&str>,
        scheduling: Option<&str>,
        placement: Option<&str>,
        preemption: Option<&str>,
    ) -> Result<Composition> {
        let scheduling = match (policy, scheduling) {
            (Some(_), Some(_)) => {
                return Err(ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "scheduling",
                    "give --policy (an LP policy) or --scheduling, not both",
                ))
            }
            (Some(p), None) => SchedulingSpec::Allocation(PolicyKind::named(p.trim())?),
            (None, Some(s)) => parse_scheduling(s)?,
            (None, None) => {
                return Err(ArbiterError::at(
                    ErrorCode::MissingField,
                    "scheduling",
                    "a simulation needs --policy or --scheduling",
                ))
            }
        };
        let mut c = Composition { scheduling, ..Composition::gavel(PolicyKind::MaxMinFairness) };
        if let Some(a) = admission {
            c.admission = parse_stage("admission", a)?;
        }
        if let Some(p) = placement {
            c.placement = parse_stage("placement", p)?;
        }
        if let Some(p) = preemption {
            c.preemption = parse_stage("preemption", p)?;
        }
        c.validate()?;
        Ok(c)
    }

    /// From the JSON form; absent slots are Gavel's, and an absent scheduling slot is `default`.
    pub fn from_request(request: &CompositionRequest, default: PolicyKind) -> Result<Composition> {
        let stage = |slot: &str, v: &serde_json::Value| -> Result<String> {
            match v {
                serde_json::Value::String(s) => Ok(s.clone()),
                serde_json::Value::Object(m) if m.len() == 1 => {
                    let (k, v) = m.iter().next().expect("one entry");
                    let bad = || {
                        let list = if slot == "scheduling" { " (or a list of them)" } else { "" };
                        bad_parameter(slot, format!("{slot}.{k} must be a number{list}, got {v}"))
                    };
                    match v {
                        serde_json::Value::Array(items) if slot == "scheduling" && items.is_empty() => {
                            Err(bad_parameter(slot, format!("{slot}.{k} lists no number: give at least one")))
                        }
                        // Tiresias' queue thresholds: `{"tiresias": [3600, 36000]}`.
                        serde_json::Value::Array(items) if slot == "scheduling" && !items.is_empty() => {
                            let numbers =
                                items.iter().map(|x| x.as_f64().ok_or_else(bad)).collect::<Result<Vec<_>>>()?;
                            Ok(format!("{k}={}", parameter_list(&numbers)))
                        }
                        _ => v.as_f64().map(|x| format!("{k}={x}")).ok_or_else(bad),
                    }
                }
                _ => Err(ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    slot,
                    format!("{slot} must be a stage name or {{\"name\": number}}, got {v}"),
                )),
            }
        };
        let text = |slot: &str, v: &Option<serde_json::Value>| v.as_ref().map(|v| stage(slot, v)).transpose();
        let scheduling = text("scheduling", &request.scheduling)?;
        Composition::from_flags(
            scheduling.is_none().then_some(default.name()),
            text("admission", &request.admission)?.as_deref(),
            scheduling.as_deref(),
            text("placement", &request.placement)?.as_deref(),
            text("preemption", &request.preemption)?.as_deref(),
        )
    }

    /// Gavel's composition: an LP allocation with the default stages, run by the mechanism.
    pub fn is_gavel(&self) -> bool {
        matches!(self.scheduling, SchedulingSpec::Allocation(_))
            && Composition { scheduling: self.scheduling.clone(), ..Composition::gavel(PolicyKind::MaxMinFairness) }
                == *self
    }

    /// Checks every name and parameter (and that an LP policy comes with Gavel's other stages).
    pub fn validate(&self) -> Result<()> {
        self.admission()?;
        self.placement(0)?;
        self.preemption()?;
        match &self.scheduling {
            SchedulingSpec::List { .. } => {
                self.list_scheduling()?;
            }
            SchedulingSpec::Allocation(p) if !self.is_gavel() => {
                // Named by the first stage that is not Gavel's.
                let gavel = Composition::gavel(*p);
                let field = [
                    ("admission", self.admission == gavel.admission),
                    ("placement", self.placement == gavel.placement),
                    ("preemption", self.preemption == gavel.preemption),
                ]
                .into_iter()
                .find_map(|(slot, same)| (!same).then_some(slot))
                .unwrap_or("scheduling");
                return Err(ArbiterError::at(
                    ErrorCode::Unsupported,
                    field,
                    format!(
                        "the LP policy {} runs as Gavel's mechanism, with accept_all admission, consolidated placement \
                         and lease preemption; other stages compose with the list policies ({})",
                        p.name(),
                        LIST_POLICIES.join(", ")
                    ),
                ));
            }
            SchedulingSpec::Allocation(_) => {}
        }
        Ok(())
    }

    /// `accept_x=1.2+las+consolidated+lease`.
    pub fn name(&self) -> String {
        let scheduling = match &self.scheduling {
            SchedulingSpec::List { name, parameters } if parameters.is_empty() => name.clone(),
            SchedulingSpec::List { name, parameters } => {
                format!("{name}={}", parameter_list(parameters))
            }
            SchedulingSpec::Allocation(p) => p.name().to_string(),
        };
        format!("{}+{}+{}+{}", self.admission.render(), scheduling, self.placement.render(), self.preemption.render())
    }

    pub fn admission(&self) -> Result<Box<dyn Admission>> {
        let a = &self.admission;
        match (a.name.as_str(), a.parameter) {
            ("accept_all", None) => Ok(Box::new(AcceptAll)),
            ("accept_x" | "fifo_threshold", Some(x)) if x > 0.0 => Ok(Box::new(AcceptX { x })),
            ("accept_x" | "fifo_threshold", p) => Err(bad_parameter(
                "admission",
                match p {
                    Some(x) => format!("{} needs a threshold x > 0 (e.g. accept_x=1.2), got {x}", a.name),
                    None => format!("{} needs a threshold x > 0 (e.g. accept_x=1.2)", a.name),
                },
            )),
            ("accept_all", Some(_)) => Err(bad_parameter("admission", "accept_all takes no parameter".into())),
            (name, _) => Err(unknown("admission", name, &ADMISSIONS)),
        }
    }

    /// The list policy of the scheduling slot.
    pub fn list_scheduling(&self) -> Result<Box<dyn Scheduling>> {
        let (name, parameters) = match &self.scheduling {
            SchedulingSpec::List { name, parameters } => (name.as_str(), parameters.as_slice()),
            SchedulingSpec::Allocation(p) => {
                return Err(ArbiterError::at(
                    ErrorCode::Unsupported,
                    "scheduling",
                    format!("{} is an LP policy, run by Gavel's mechanism", p.name()),
                ))
            }
        };
        let none = |s: Box<dyn Scheduling>| match parameters {
            [] => Ok(s),
            _ => Err(bad_parameter("scheduling", format!("{name} takes no parameter"))),
        };
        match name {
            "fifo" => none(Box::new(Fifo)),
            "fifo_priority" => none(Box::new(FifoPriority)),
            "las" => none(Box::new(Las)),
            "srtf" => none(Box::new(Srtf)),
            "optimus" => none(Box::new(Optimus)),
            "themis" => none(Box::new(Themis)),
            "ltgf" => none(Box::new(Ltgf { quota: false })),
            "ltgf_quota" => none(Box::new(Ltgf { quota: true })),
            "tiresias" => match parameters {
                [] => Ok(Box::new(Tiresias::default())),
                t if t.iter().all(|&x| x > 0.0) && t.windows(2).all(|w| w[0] < w[1]) => {
                    Ok(Box::new(Tiresias { thresholds: t.to_vec(), ..Tiresias::default() }))
                }
                t => Err(bad_parameter(
                    "scheduling",
                    format!("tiresias' thresholds must be GPU-seconds > 0 in increasing order, got {t:?}"),
                )),
            },
            other => Err(unknown("scheduling", other, &LIST_POLICIES)),
        }
    }

    /// The placement stage; `seed` seeds `random` when it names no seed.
    pub fn placement(&self, seed: u64) -> Result<Box<dyn Placement>> {
        let p = &self.placement;
        let none = |s: Box<dyn Placement>| match p.parameter {
            None => Ok(s),
            Some(_) => Err(bad_parameter("placement", format!("{} takes no parameter", p.name))),
        };
        match p.name.as_str() {
            "first_free" => none(Box::new(FirstFree)),
            "consolidated" => none(Box::new(Consolidated)),
            "profile_guided" => none(Box::new(ProfileGuided)),
            "bandwidth" => none(Box::new(Bandwidth)),
            "random" => match p.parameter {
                None => Ok(Box::new(Random::new(seed))),
                // Whole numbers up to 2⁵³ are exact in a JSON number.
                Some(s) if (0.0..=9_007_199_254_740_992.0).contains(&s) && s.fract() == 0.0 => {
                    Ok(Box::new(Random::new(s as u64)))
                }
                Some(s) => Err(bad_parameter(
                    "placement",
                    format!("random's seed must be a whole number from 0 to 2^53, got {}", crate::problem::shown(s)),
                )),
            },
            "skew" => match p.parameter {
                None => Ok(Box::new(Skew::default())),
                Some(t) if t >= 0.0 => Ok(Box::new(Skew { threshold: t })),
                Some(t) => Err(bad_parameter("placement", format!("skew's threshold must be ≥ 0, got {t}"))),
            },
            other => Err(unknown("placement", other, &PLACEMENTS)),
        }
    }

    pub fn preemption(&self) -> Result<Box<dyn Preemption>> {
        let p = &self.preemption;
        match (p.name.as_str(), p.parameter) {
            ("lease", None) => Ok(Box::new(Lease::default())),
            ("lease", Some(s)) if s >= 0.0 => Ok(Box::new(Lease { restart_seconds: s })),
            ("lease", Some(s)) => {
                Err(bad_parameter("preemption", format!("lease's restart overhead must be ≥ 0 seconds, got {s}")))
            }
            ("lease_term", None) => Ok(Box::new(LeaseTerm::default())),
            ("lease_term", Some(s)) if s > 0.0 && s.is_finite() => Ok(Box::new(LeaseTerm { seconds: s })),
            ("lease_term", Some(s)) => {
                Err(bad_parameter("preemption", format!("a lease term must be a finite number > 0 seconds, got {s}")))
            }
            ("none", None) => Ok(Box::new(NonPreemptive)),
            ("none", Some(_)) => Err(bad_parameter("preemption", "none takes no parameter".into())),
            ("fitgpp" | "lrtp" | "rand", _) => Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "preemption",
                format!(
                    "{} preempts on nodes of cores, memory and GPUs with grace periods, not in these rounds: \
                     FitGpp sessions (`/v1/fitgpp/sessions`), or `arbiter simulate` on a FitGpp workload \
                     (docs/fitgpp.md); this pipeline's are lease, lease_term, none",
                    p.name
                ),
            )),
            (other, _) => Err(unknown("preemption", other, &PREEMPTIONS)),
        }
    }
}

/// A scheduling name: a list policy's with its parameters (`name=value`, several as
/// `tiresias=3600/36000`; `list_scheduling` says which policy takes how many), else an LP
/// policy's. `fifo` is the list policy here (Blox's FIFO); the LP `fifo` is `--policy fifo`.
pub fn parse_scheduling(text: &str) -> Result<SchedulingSpec> {
    let text = text.trim();
    let (name, parameters) = match text.split_once('=') {
        None => (text, Vec::new()),
        Some((name, values)) => {
            let name = name.trim();
            (name, values.split('/').map(|v| number("scheduling", name, v)).collect::<Result<_>>()?)
        }
    };
    if !LIST_POLICIES.contains(&name) {
        if let Some(kind) = PolicyKind::from_name(text) {
            return Ok(SchedulingSpec::Allocation(kind));
        }
        let mut known: Vec<&str> = LIST_POLICIES.to_vec();
        // FIFO is both a list policy and an LP policy: named once.
        known.extend(PolicyKind::ALL.iter().map(|p| p.name()).filter(|p| !LIST_POLICIES.contains(p)));
        return Err(unknown("scheduling", name, &known));
    }
    Ok(SchedulingSpec::List { name: name.to_string(), parameters })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(a: Option<&str>, s: &str, p: Option<&str>, q: Option<&str>) -> Result<Composition> {
        Composition::from_flags(None, a, Some(s), p, q)
    }

    #[test]
    fn parses_the_issue_example() {
        let c = flags(Some("accept_x=1.2"), "tiresias", Some("consolidated"), Some("lease")).unwrap();
        assert_eq!(c.name(), "accept_x=1.2+tiresias+consolidated+lease");
        assert_eq!(c.admission().unwrap().name(), "accept_x=1.2");
        assert!(!c.is_gavel());
        let json: CompositionRequest = serde_json::from_str(
            r#"{"admission": {"accept_x": 1.2}, "scheduling": "las", "placement": "consolidated"}"#,
        )
        .unwrap();
        let c = Composition::from_request(&json, PolicyKind::MaxMinFairness).unwrap();
        assert_eq!(c.name(), "accept_x=1.2+las+consolidated+lease");
    }

    #[test]
    fn a_policy_alone_is_gavels_composition() {
        let c = Composition::from_flags(Some("max_min_fairness"), None, None, None, None).unwrap();
        assert!(c.is_gavel());
        assert_eq!(c, Composition::gavel(PolicyKind::MaxMinFairness));
        let c = Composition::from_request(&CompositionRequest::default(), PolicyKind::Fifo).unwrap();
        assert_eq!(c, Composition::gavel(PolicyKind::Fifo));
    }

    #[test]
    fn refuses_unknown_names_and_bad_parameters() {
        let code = |r: Result<Composition>| r.unwrap_err();
        let e = code(flags(None, "lass", None, None));
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::UnknownPolicy, Some("scheduling")));
        assert_eq!(code(flags(Some("accept_y"), "las", None, None)).code, ErrorCode::UnknownPolicy);
        assert_eq!(code(flags(Some("accept_x"), "las", None, None)).code, ErrorCode::InvalidNumber);
        assert_eq!(code(flags(Some("accept_x=-1"), "las", None, None)).code, ErrorCode::InvalidNumber);
        assert_eq!(code(flags(Some("accept_x=abc"), "las", None, None)).code, ErrorCode::InvalidNumber);
        assert_eq!(code(flags(None, "las", Some("spread"), None)).code, ErrorCode::UnknownPolicy);
        assert_eq!(code(flags(None, "las", None, Some("lease=-3"))).code, ErrorCode::InvalidNumber);
        assert_eq!(code(flags(None, "fifo=2", None, None)).code, ErrorCode::InvalidNumber);
        assert_eq!(code(flags(Some("accept_x=1.2"), "max_min_fairness", None, None)).code, ErrorCode::Unsupported);
        assert_eq!(code(Composition::from_flags(Some("las"), None, None, None, None)).code, ErrorCode::UnknownPolicy);
        assert_eq!(
            code(Composition::from_flags(Some("fifo"), None, Some("las"), None, None)).code,
            ErrorCode::MalformedRequest
        );
        let bad: CompositionRequest = serde_json::from_str(r#"{"admission": {"accept_x": "high"}}"#).unwrap();
        assert_eq!(code(Composition::from_request(&bad, PolicyKind::Fifo)).code, ErrorCode::InvalidNumber);
        for thresholds in ["tiresias=3600/1800", "tiresias=0/3600", "tiresias=3600/x", "tiresias=3600/", "tiresias=-5"]
        {
            let e = code(flags(None, thresholds, None, None));
            assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some("scheduling")), "{thresholds}");
        }
        for json in [r#"{"scheduling": {"tiresias": []}}"#, r#"{"scheduling": {"tiresias": [3600, "x"]}}"#] {
            let bad: CompositionRequest = serde_json::from_str(json).unwrap();
            assert_eq!(
                code(Composition::from_request(&bad, PolicyKind::Fifo)).code,
                ErrorCode::InvalidNumber,
                "{json}"
            );
        }
        let bad: CompositionRequest = serde_json::from_str(r#"{"admission": {"accept_x": [1.2]}}"#).unwrap();
        assert_eq!(code(Composition::from_request(&bad, PolicyKind::Fifo)).code, ErrorCode::InvalidNumber);
        // An empty list of thresholds says so (it read "must be a number, got []").
        let empty: CompositionRequest = serde_json::from_str(r#"{"scheduling": {"tiresias": []}}"#).unwrap();
        let message = code(Composition::from_request(&empty, PolicyKind::Fifo)).message;
        assert!(message.contains("scheduling.tiresias lists no number"), "{message}");
    }

    /// Tiresias with several queues, by flag and by JSON; its name parses back to itself.
    #[test]
    fn tiresias_takes_its_queue_thresholds() {
        let c = flags(None, "tiresias=3600/36000", None, None).unwrap();
        assert_eq!(c.name(), "accept_all+tiresias=3600/36000+consolidated+lease");
        assert_eq!(c.list_scheduling().unwrap().name(), "tiresias=3600/36000");
        let json: CompositionRequest = serde_json::from_str(r#"{"scheduling": {"tiresias": [3600, 36000]}}"#).unwrap();
        assert_eq!(Composition::from_request(&json, PolicyKind::Fifo).unwrap(), c);
        let again = flags(None, &c.list_scheduling().unwrap().name(), None, None).unwrap();
        assert_eq!(again, c);
        let one = flags(None, "tiresias=7200", None, None).unwrap();
        assert_eq!(one.list_scheduling().unwrap().name(), "tiresias=7200");
        assert_eq!(flags(None, "tiresias", None, None).unwrap().list_scheduling().unwrap().name(), "tiresias");
    }
}
