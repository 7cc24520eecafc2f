//! The `arbiter` binary: the allocator, then the command line of `arbiter::cli`.

use std::process::ExitCode;

/// mimalloc, overriding `malloc` too (HiGHS allocates through it): ~20% less CPU per solve than
/// glibc's allocator when solves run on several threads (docs/service.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    arbiter::cli::main()
}
