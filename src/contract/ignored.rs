//! The fields a document gives that its type has no place for. The contract lets fields be added,
//! so serde skips them; a misspelt one (`"wieght": 2`) would then change nothing without a word.
//! The answer names them instead: each path once, with `[*]` for an index where the same field
//! recurs across a list's elements (`jobs[*].model`), so that a field every job carries is one
//! entry and a typo in one job keeps its index (`jobs[3].wieght`).

use indexmap::IndexMap;
use serde_ignored::Path;

/// An answer names at most this many paths ([`named`]); past them it says how many it left out.
pub const MAX_NAMED: usize = 32;

/// The ignored fields of one document, in the order they were met.
#[derive(Debug, Default)]
pub struct IgnoredFields {
    /// Per path with `[*]` for every index: the first path met with its indices, and how many.
    patterns: IndexMap<String, (String, usize)>,
    /// The pattern being written: a field that recurs allocates nothing.
    scratch: String,
}

impl IgnoredFields {
    /// Notes one field serde skipped.
    pub fn note(&mut self, path: &Path) {
        self.scratch.clear();
        write_path(path, None, &mut self.scratch);
        if let Some((_, count)) = self.patterns.get_mut(self.scratch.as_str()) {
            *count += 1;
            return;
        }
        let mut exact = String::new();
        write_path(path, Some(&mut exact), &mut String::new());
        self.patterns.insert(self.scratch.clone(), (exact, 1));
    }

    /// The paths, each once: the exact one where it occurred once, else the pattern.
    pub fn into_paths(self) -> Vec<String> {
        (self.patterns.into_iter()).map(|(pattern, (exact, count))| if count == 1 { exact } else { pattern }).collect()
    }
}

/// `paths` as an answer names them: the first [`MAX_NAMED`], then how many were left out.
pub fn named(mut paths: Vec<String>) -> Vec<String> {
    if paths.len() > MAX_NAMED {
        let left_out = paths.len() - MAX_NAMED;
        paths.truncate(MAX_NAMED);
        paths.push(format!("({left_out} more not named)"));
    }
    paths
}

/// Appends `path` with `[*]` for every index to `pattern`, and in the contract's notation
/// (`jobs[3].wieght`) to `exact` if given.
fn write_path(path: &Path, mut exact: Option<&mut String>, pattern: &mut String) {
    use std::fmt::Write;
    match path {
        Path::Root => {}
        Path::Seq { parent, index } => {
            write_path(parent, exact.as_deref_mut(), pattern);
            if let Some(exact) = exact {
                let _ = write!(exact, "[{index}]");
            }
            pattern.push_str("[*]");
        }
        Path::Map { parent, key } => {
            write_path(parent, exact.as_deref_mut(), pattern);
            // A key below the root follows a dot; a pattern and its path are empty together.
            let dot = if pattern.is_empty() { "" } else { "." };
            pattern.push_str(dot);
            pattern.push_str(key);
            if let Some(exact) = exact {
                exact.push_str(dot);
                exact.push_str(key);
            }
        }
        Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => {
            write_path(parent, exact, pattern)
        }
    }
}
