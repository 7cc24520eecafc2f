//! Running the built `arbiter` binary with something on its standard input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `arbiter` with `input` on its standard input.
pub fn fed(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A refusal may come before standard input is read, or the process end before it is written.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}
