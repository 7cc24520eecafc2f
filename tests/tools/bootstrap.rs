//! `scripts/bootstrap --dry-run` against fake roots: what it would install on machines that hold
//! exactly the given files, whatever this machine has installed. The checks mirror how the build
//! looks for its tools, bindgen's libclang among them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fake root in a fresh temporary directory, removed on drop.
struct FakeRoot(PathBuf);

impl FakeRoot {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("arbiter-bootstrap-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        FakeRoot(dir)
    }

    /// Creates an empty file (an executable one under a `bin` directory).
    fn file(&self, path: &str) -> &Self {
        let full = self.0.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(&full, "").unwrap();
        if path.contains("bin/") {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&full, fs::Permissions::from_mode(0o755)).unwrap();
        }
        self
    }

    /// An executable shell script.
    fn script(&self, path: &str, body: &str) -> &Self {
        self.file(path);
        fs::write(self.0.join(path), format!("#!/bin/sh\n{body}\n")).unwrap();
        self
    }

    /// A machine with every build tool except libclang, and a Rust as new as the build needs.
    fn with_tools(self) -> Self {
        for tool in ["cmake", "make", "g++", "cargo", "curl"] {
            self.file(&format!("usr/bin/{tool}"));
        }
        self.rustc("usr/bin", "1.95.0");
        self
    }

    /// A `rustc` in `dir` that reports `version`.
    fn rustc(&self, dir: &str, version: &str) -> &Self {
        self.script(&format!("{dir}/rustc"), &format!("echo 'rustc {version} (0000000 2026-01-01)'"))
    }

    /// Clang's resource headers, as libclang-common-*-dev ships them.
    fn with_clang_headers(self) -> Self {
        self.file("usr/lib/llvm-14/lib/clang/14.0.6/include/stddef.h");
        self
    }

    /// The packages `scripts/bootstrap --dry-run` would install on this root.
    fn would_install(&self, env: &[(&str, &str)]) -> Vec<String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bootstrap");
        let out = Command::new("bash")
            .arg(&script)
            .arg("--dry-run")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.0)
            .env("BOOTSTRAP_ROOT", &self.0)
            .envs(env.iter().copied())
            .output()
            .expect("bash runs");
        assert!(out.status.success(), "bootstrap failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
    }
}

impl Drop for FakeRoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn libclang_cpp_alone_is_not_libclang() {
    // The stock image: Clang's C++ library in LLVM's and the multiarch library directories only.
    let root = FakeRoot::new("cpp-only").with_tools().with_clang_headers();
    root.file("usr/lib/llvm-14/lib/libclang-cpp.so.14").file("usr/lib/x86_64-linux-gnu/libclang-cpp.so.14");
    assert_eq!(root.would_install(&[]), ["libclang-dev"]);
}

#[test]
fn versioned_libclang_is_found() {
    let root = FakeRoot::new("versioned").with_tools().with_clang_headers();
    root.file("usr/lib/llvm-14/lib/libclang-cpp.so.14").file("usr/lib/llvm-14/lib/libclang.so.1");
    assert!(root.would_install(&[]).is_empty());

    let multiarch = FakeRoot::new("multiarch").with_tools().with_clang_headers();
    multiarch.file("usr/lib/x86_64-linux-gnu/libclang-14.so.1");
    assert!(multiarch.would_install(&[]).is_empty());
}

#[test]
fn libclang_without_its_headers_still_needs_the_dev_package() {
    let root = FakeRoot::new("no-headers").with_tools();
    root.file("usr/lib/llvm-14/lib/libclang.so.1");
    assert_eq!(root.would_install(&[]), ["libclang-dev"]);
}

#[test]
fn libclang_path_is_the_only_place_looked_when_set() {
    let root = FakeRoot::new("libclang-path").with_tools().with_clang_headers();
    root.file("usr/lib/llvm-14/lib/libclang.so.1").file("opt/llvm/lib/libclang-cpp.so.14");
    let elsewhere = root.0.join("opt/llvm/lib");
    assert_eq!(root.would_install(&[("LIBCLANG_PATH", elsewhere.to_str().unwrap())]), ["libclang-dev"]);

    root.file("opt/llvm/lib/libclang.so");
    assert!(root.would_install(&[("LIBCLANG_PATH", elsewhere.to_str().unwrap())]).is_empty());
}

#[test]
fn an_empty_machine_needs_every_build_tool() {
    let root = FakeRoot::new("empty");
    assert_eq!(root.would_install(&[]), ["cmake", "make", "g++", "libclang-dev", "curl", "rustup"]);
}

#[test]
fn a_distribution_rust_older_than_the_build_needs_gets_rustup() {
    // Debian 12's and Ubuntu 24.04's packaged toolchains: cargo is there, but too old.
    for old in ["1.63.0", "1.75.0"] {
        let root = FakeRoot::new("old-rust").with_tools().with_clang_headers();
        root.file("usr/lib/llvm-14/lib/libclang.so.1").rustc("usr/bin", old);
        assert_eq!(root.would_install(&[]), ["rustup"], "rustc {old}");
        // rustup's newer toolchain in $HOME/.cargo/bin is the one the scripts use.
        root.rustc(".cargo/bin", "1.95.0");
        assert!(root.would_install(&[]).is_empty(), "rustc {old} beside rustup's");
    }
    // The version the build needs is Cargo.toml's rust-version.
    let manifest = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let required = manifest.lines().find_map(|l| l.strip_prefix("rust-version = ")).expect("rust-version is set");
    let required = required.trim_matches('"');
    let root = FakeRoot::new("exact-rust").with_tools().with_clang_headers();
    root.file("usr/lib/llvm-14/lib/libclang.so.1").rustc("usr/bin", &format!("{required}.0"));
    assert!(root.would_install(&[]).is_empty());
}

#[test]
fn clang_headers_beside_a_given_libclang_count() {
    // An LLVM outside the distribution's paths, named by LIBCLANG_PATH: its headers are in its
    // own lib/clang/*/include.
    let root = FakeRoot::new("llvm-elsewhere").with_tools();
    root.file("opt/llvm/lib/libclang.so").file("opt/llvm/lib/clang/17/include/stddef.h");
    let lib = root.0.join("opt/llvm/lib");
    assert!(root.would_install(&[("LIBCLANG_PATH", lib.to_str().unwrap())]).is_empty());
    // The same LLVM without its headers still needs them.
    let bare = FakeRoot::new("llvm-no-headers").with_tools();
    bare.file("opt/llvm/lib/libclang.so");
    let lib = bare.0.join("opt/llvm/lib");
    assert_eq!(bare.would_install(&[("LIBCLANG_PATH", lib.to_str().unwrap())]), ["libclang-dev"]);
}
