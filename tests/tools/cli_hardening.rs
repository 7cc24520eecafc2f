//! `arbiter token` refusals as its help promises (status 2, the contract's error object on
//! stderr naming the flag at fault, the file untouched), and `arbiter solve` on a file that
//! starts with a byte-order mark.

use crate::service_support::TempDir;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn arbiter(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).env_remove("ARBITER_TOKENS").output().expect("run arbiter")
}

/// Status 2, nothing on stdout, exactly one `{"error": {...}}` on stderr with `code` and `field`.
fn refused(out: &Output, code: &str, field: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", String::from_utf8_lossy(&out.stdout));
    let error: Value =
        serde_json::from_str(stderr.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {stderr}"));
    assert_eq!(error.as_object().unwrap().len(), 1, "{error}");
    assert_eq!(error["error"]["code"], code, "{error}");
    assert_eq!(error["error"]["field"], field, "{error}");
    error["error"]["message"].as_str().unwrap().to_string()
}

fn create(file: &Path, tenant: &str, scopes: &str, id: &str) -> Output {
    let file = file.to_str().unwrap();
    arbiter(&["token", "create", "--file", file, "--tenant", tenant, "--scope", scopes, "--id", id])
}

#[test]
fn token_refusals_exit_2_with_the_error_object_and_change_nothing() {
    let help = arbiter(&["token", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("Failures exit with status 2"));

    let dir = TempDir::new("cli-hardening-tokens");
    let file = dir.path("tokens.json");
    let f = file.to_str().unwrap();
    assert!(create(&file, "team-a", "solve", "ci").status.success());
    let before = std::fs::read(&file).unwrap();

    let says = refused(&create(&file, "team-b", "solve", "ci"), "malformed_request", "id");
    assert!(says.contains("\"ci\" is already in"), "{says}");
    let says = refused(&create(&file, "team-b", "solve,root", "other"), "malformed_request", "scope");
    assert!(says.contains("unknown scope \"root\"") && says.contains("sessions:read"), "{says}");
    let says = refused(&create(&file, "team b", "solve", "other"), "malformed_request", "tenant");
    assert!(says.contains("tenant \"team b\""), "{says}");
    let says = refused(&create(&file, "team-b", "solve", "a/b"), "malformed_request", "id");
    assert!(says.contains("token id \"a/b\""), "{says}");
    let says = refused(&arbiter(&["token", "revoke", "--file", f, "nobody"]), "malformed_request", "id");
    assert!(says.contains("no token with id \"nobody\""), "{says}");
    let says = refused(&arbiter(&["token", "quota", "--file", f, "team-a", "--burst", "0"]), "invalid_number", "burst");
    assert!(says.contains("at least 1"), "{says}");
    let out = arbiter(&["token", "quota", "--file", f, "team-a", "--requests-per-second", "0"]);
    refused(&out, "invalid_number", "requests_per_second");
    assert_eq!(std::fs::read(&file).unwrap(), before, "a refusal writes nothing");

    let missing = dir.path("none.json");
    let says = refused(&arbiter(&["token", "list", "--file", missing.to_str().unwrap()]), "malformed_request", "file");
    assert!(says.contains("none.json"), "{says}");
    std::fs::write(dir.path("bad.json"), "{\"version\": 9}").unwrap();
    let out = arbiter(&[
        "token",
        "create",
        "--file",
        dir.path("bad.json").to_str().unwrap(),
        "--tenant",
        "a",
        "--scope",
        "solve",
    ]);
    assert!(refused(&out, "malformed_request", "file").contains("version 9"));

    // What succeeds still exits 0 and prints what it did.
    let out = arbiter(&["token", "revoke", "--file", f, "ci"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("revoked"));
}

/// A refused token command leaves no `<file>.lock` it created, and a file in a missing
/// directory is reported as the file named, not its lock.
#[test]
fn token_refusals_leave_no_lock_file_and_name_the_file() {
    let dir = TempDir::new("cli-hardening-token-lock");
    let names = || {
        let mut names: Vec<String> =
            std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    };
    let demo = dir.path("demo.json");
    let says =
        refused(&arbiter(&["token", "revoke", "--file", demo.to_str().unwrap(), "nobody"]), "malformed_request", "id");
    assert!(says.contains("nobody"), "{says}");
    assert!(names().is_empty(), "{:?}", names());
    std::fs::write(&demo, "{\"version\": 9}").unwrap();
    let says = refused(&create(&demo, "team-a", "solve", "ci"), "malformed_request", "file");
    assert!(says.contains("version 9"), "{says}");
    assert_eq!(names(), ["demo.json"]);

    let nowhere = dir.path("missing").join("t.json");
    let says = refused(&create(&nowhere, "team-a", "solve", "ci"), "malformed_request", "file");
    assert!(says.contains("t.json") && !says.contains(".lock") && says.contains("does not exist"), "{says}");
    assert_eq!(names(), ["demo.json"]);

    // A change that is written keeps its lock file, as before.
    std::fs::remove_file(&demo).unwrap();
    assert!(create(&demo, "team-a", "solve", "ci").status.success());
    assert_eq!(names(), ["demo.json", "demo.json.lock"]);
}

/// `arbiter openapi --output` names a file: `-` is refused (it made a file named `-`), and a
/// file that cannot be written is the error object with status 2 (it was plain text, status 1).
#[test]
fn openapi_refuses_an_output_it_cannot_write() {
    let dir = TempDir::new("cli-hardening-openapi");
    let says = refused(&arbiter(&["openapi", "--output", "-"]), "malformed_request", "output");
    assert!(says.contains("standard output"), "{says}");
    let says = refused(&arbiter(&["openapi", "--output", dir.0.to_str().unwrap()]), "malformed_request", "output");
    assert!(says.contains("cannot write"), "{says}");
    let file = dir.path("openapi.json");
    assert!(arbiter(&["openapi", "--output", file.to_str().unwrap()]).status.success());
    assert!(std::fs::read_to_string(&file).unwrap().contains("\"openapi\""));
}

#[test]
fn solve_reads_a_file_that_starts_with_a_byte_order_mark() {
    let dir = TempDir::new("cli-hardening-bom");
    let demo = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo.json")).unwrap();
    let marked = dir.path("demo.json");
    std::fs::write(&marked, [&b"\xef\xbb\xbf"[..], &demo].concat()).unwrap();
    let out = arbiter(&["solve", marked.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plain = arbiter(&["solve", concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo.json")]);
    let allocation = |out: &Output| serde_json::from_slice::<Value>(&out.stdout).unwrap()["allocation"].clone();
    assert_eq!(allocation(&out), allocation(&plain));
}
