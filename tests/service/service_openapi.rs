//! The checked-in `openapi/openapi.json` is the document this code generates (regenerate with
//! `ARBITER_UPDATE_OPENAPI=1 cargo test --release --test service service_openapi`, or
//! `cargo run --release -- openapi --output openapi/openapi.json`), it is OpenAPI 3.1, it lists
//! every route, and its examples are real answers.

use serde_json::Value;

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json");

#[test]
fn checked_in_document_is_up_to_date() {
    let generated = arbiter::service::openapi::json();
    if std::env::var_os("ARBITER_UPDATE_OPENAPI").is_some() {
        std::fs::write(PATH, &generated).expect("write openapi/openapi.json");
        return;
    }
    let checked_in = std::fs::read_to_string(PATH).unwrap_or_default();
    assert!(
        checked_in == generated,
        "openapi/openapi.json is out of date; regenerate it with \
         `ARBITER_UPDATE_OPENAPI=1 cargo test --release --test service service_openapi`"
    );
}

#[test]
fn document_is_openapi_3_1_with_every_route_and_real_examples() {
    let doc: Value = serde_json::from_str(&arbiter::service::openapi::json()).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/v1/allocations", "post"),
        ("/v1/sessions", "get"),
        ("/v1/sessions", "post"),
        ("/v1/sessions/{id}", "get"),
        ("/v1/sessions/{id}", "delete"),
        ("/v1/sessions/{id}/jobs", "post"),
        ("/v1/sessions/{id}/jobs/{job}", "delete"),
        ("/v1/sessions/{id}/jobs/{job}/progress", "post"),
        ("/v1/sessions/{id}/throughputs", "put"),
        ("/v1/sessions/{id}/workers/{worker}/fail", "post"),
        ("/v1/sessions/{id}/workers/{worker}/return", "post"),
        ("/v1/sessions/{id}/allocation", "get"),
        ("/v1/sessions/{id}/allocation", "post"),
        ("/v1/sessions/{id}/rounds", "post"),
        ("/v1/fitgpp/sessions", "post"),
        ("/v1/fitgpp/sessions/{id}", "get"),
        ("/v1/fitgpp/sessions/{id}", "delete"),
        ("/v1/fitgpp/sessions/{id}/jobs", "post"),
        ("/v1/fitgpp/sessions/{id}/advance", "post"),
        ("/healthz", "get"),
        ("/metrics", "get"),
        ("/openapi.json", "get"),
    ] {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} is not documented");
    }

    // The allocation example is the demo request and the response this build gives it.
    let op = &paths["/v1/allocations"]["post"];
    let request = &op["requestBody"]["content"]["application/json"]["example"];
    let expected: Value = serde_json::to_value(arbiter::demo::request("max_min_fairness")).unwrap();
    assert_eq!(request, &expected);
    let response = &op["responses"]["200"]["content"]["application/json"]["example"];
    let solved = arbiter::solve_json(&request.to_string(), arbiter::lp::Backend::default()).unwrap();
    // Through text, as the document went: serde_json's float parsing is not always exact.
    let mut solved: Value = serde_json::from_str(&serde_json::to_string(&solved).unwrap()).unwrap();
    solved["stats"]["solve_seconds"] = response["stats"]["solve_seconds"].clone();
    solved["stats"]["realizable"]["seconds"] = response["stats"]["realizable"]["seconds"].clone();
    assert_eq!(response, &solved);
    for status in ["400", "413", "422", "429", "504"] {
        let example = &op["responses"][status]["content"]["application/json"]["example"];
        assert!(example["error"]["code"].is_string(), "no real error example for {status}: {example}");
    }
    let round =
        &paths["/v1/sessions/{id}/rounds"]["post"]["responses"]["200"]["content"]["application/json"]["example"];
    assert!(!round["placements"].as_array().unwrap().is_empty(), "{round}");
    assert!(doc["components"]["schemas"]["ErrorResponse"].is_object());
    // The FitGpp example is a real preemption: the BE job's grace deadline, then the TE job's start.
    let te =
        &paths["/v1/fitgpp/sessions/{id}/jobs"]["post"]["responses"]["200"]["content"]["application/json"]["example"];
    assert_eq!(te["preemptions"][0]["grace_deadline"], 720.0, "{te}");
    let advanced = &paths["/v1/fitgpp/sessions/{id}/advance"]["post"]["responses"]["200"]["content"]
        ["application/json"]["example"];
    assert_eq!(advanced["started"][0]["job"], "debug-vit", "{advanced}");
    // FitGpp's wire types have names of their own: the sessions' `JobView` is still theirs.
    let schemas = &doc["components"]["schemas"];
    assert!(schemas["JobView"]["properties"]["scale_factor"].is_object(), "{}", schemas["JobView"]);
    assert!(schemas["FitGppJobView"]["properties"]["kind"].is_object());

    // The bearer scheme, and on every operation but the open ones the scope it needs and its
    // 401 and 429 (403 where a scope is needed); the audit's query parameter.
    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!((bearer["type"].as_str(), bearer["scheme"].as_str()), (Some("http"), Some("bearer")), "{bearer}");
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let open = path == "/" || path == "/healthz" || path == "/openapi.json";
            assert_eq!(op.get("security").is_none(), open, "{method} {path}: {:?}", op.get("security"));
            if open {
                continue;
            }
            for status in ["401", "403"] {
                let example = &op["responses"][status]["content"]["application/json"]["example"];
                assert!(example["error"]["code"].is_string(), "{method} {path}: no {status}");
            }
            let too_many = op["responses"]["429"]["description"].as_str().unwrap_or_default();
            assert!(too_many.contains("rate_limited"), "{method} {path}: 429 {too_many:?}");
        }
    }
    let scope = |path: &str, method: &str| paths[path][method]["security"][0]["bearer"][0].clone();
    assert_eq!(scope("/v1/allocations", "post"), "solve");
    assert_eq!(scope("/v1/sessions/{id}", "get"), "sessions:read");
    assert_eq!(scope("/v1/sessions/{id}/rounds", "post"), "sessions:write");
    assert_eq!(scope("/v1/fitgpp/sessions/{id}", "delete"), "sessions:write");
    assert_eq!(scope("/metrics", "get"), "metrics");
    let unauthorized = &paths["/v1/sessions"]["get"]["responses"]["401"];
    assert!(unauthorized["headers"]["WWW-Authenticate"].is_object(), "{unauthorized}");
    let audit =
        paths["/v1/sessions/{id}"]["get"]["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "audit");
    assert_eq!(audit.expect("the audit parameter")["in"], "query");
    assert!(schemas["AuditView"]["properties"]["events"].is_object());
}

/// The body limit is a layer over every route, so every operation that takes a body can be
/// refused it for its size: each lists 413 with a real `payload_too_large` example.
#[test]
fn every_operation_taking_a_body_documents_413() {
    let doc: Value = serde_json::from_str(&arbiter::service::openapi::json()).unwrap();
    let mut with_body = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op.get("requestBody").is_none() {
                continue;
            }
            with_body += 1;
            let example = &op["responses"]["413"]["content"]["application/json"]["example"];
            assert_eq!(example["error"]["code"], "payload_too_large", "{method} {path}: no 413 with its example");
        }
    }
    assert!(with_body >= 9, "{with_body} operations take a body");
}

/// What the document says of the bodies' fields is what the server reads.
#[test]
fn body_schemas_match_what_the_server_reads() {
    let doc: Value = serde_json::from_str(&arbiter::service::openapi::json()).unwrap();
    let schemas = &doc["components"]["schemas"];
    // A composition's stage is a name or a one-entry object; the server takes both.
    for slot in ["admission", "scheduling", "placement", "preemption"] {
        let text = schemas["CompositionRequest"]["properties"][slot].to_string();
        assert!(text.contains(r#""type":"string""#) && text.contains(r#""type":"object""#), "{slot}: {text}");
    }
    let named = arbiter::scheduling::CompositionRequest {
        scheduling: Some(Value::from("tiresias")),
        admission: Some(serde_json::json!({"accept_x": 1.2})),
        ..Default::default()
    };
    arbiter::scheduling::Composition::from_request(&named, arbiter::PolicyKind::MaxMinFairness)
        .expect("a stage by name and a stage with its parameter");
    // A job's scale factor: a whole number from 1 to MAX_SCALE_FACTOR, `2.0` read as 2.
    let scale = &schemas["JobSpec"]["properties"]["scale_factor"];
    assert_eq!(scale["minimum"], 1, "{scale}");
    assert_eq!(scale["maximum"], arbiter::problem::MAX_SCALE_FACTOR, "{scale}");
    assert_eq!(scale["multipleOf"], 1, "{scale}");
    let mut request = arbiter::demo::request("max_min_fairness");
    request.jobs[0].scale_factor = Some(2.0);
    assert_eq!(arbiter::Problem::from_request(&request).unwrap().jobs[0].scale_factor, 2);
    for refused in [2.5, 0.0, arbiter::problem::MAX_SCALE_FACTOR as f64 + 1.0] {
        request.jobs[0].scale_factor = Some(refused);
        assert!(arbiter::Problem::from_request(&request).is_err(), "scale_factor {refused} was accepted");
    }
    // The fields a session reads in a job beyond the contract's (docs/estimator.md).
    let job = &schemas["JobSpec"]["properties"];
    assert_eq!(job["estimated_throughput"]["type"], "object", "{job}");
    assert_eq!(job["profile"]["type"], "boolean", "{job}");
}
