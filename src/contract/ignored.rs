//! The fields a document gives that its type has no place for. The contract lets fields be added,
//! so serde skips them; a misspelt one (`"wieght": 2`) would then change nothing without a word.
//! The answer names them instead: each path once, with `[*]` for an index where the same field
//! recurs across a list's elements (`jobs[*].model`), so that a field every job carries is one
//! entry and a typo in one job keeps its index (`jobs[3].wieght`).

use indexmap::IndexMap;
use serde_ignored::Path;

/// An answer names at most this many paths ([`IgnoredFields::named`]); past them it says how many
/// it left out.
pub const MAX_NAMED: usize = 32;

/// Distinct paths kept, at most: past them a field is only counted, so that a body of millions of
/// distinct unknown keys costs no more memory than one with a thousand.
pub const MAX_KEPT: usize = 1024;

/// The ignored fields of one document, in the order they were met.
#[derive(Debug, Default)]
pub struct IgnoredFields {
    /// Per path with `[*]` for every index: the first path met with its indices, and how many.
    patterns: IndexMap<String, (String, usize)>,
    /// Fields met at a path not kept, once [`MAX_KEPT`] were.
    unkept: usize,
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
        if self.patterns.len() == MAX_KEPT {
            self.unkept += 1;
            return;
        }
        let mut exact = String::new();
        write_path(path, Some(&mut exact), &mut String::new());
        self.patterns.insert(self.scratch.clone(), (exact, 1));
    }

    /// Whether nothing was skipped.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.unkept == 0
    }

    /// Keeps only the paths `other` skipped too (what two readings of one document both skip);
    /// the fields `other` did not keep are not counted as skipped by both.
    pub fn retain_in(&mut self, other: &IgnoredFields) {
        self.patterns.retain(|pattern, _| other.patterns.contains_key(pattern));
        if other.unkept == 0 {
            self.unkept = 0;
        }
    }

    /// Forgets a path read by other means (`pattern`: with `[*]` for its indices).
    pub fn forget(&mut self, pattern: &str) {
        self.patterns.shift_remove(pattern);
    }

    /// The paths as an answer names them, each once (the exact path where it occurred once, else
    /// the pattern), at most [`MAX_NAMED`], then how many more there were.
    pub fn named(self) -> Vec<String> {
        let more = self.patterns.len().saturating_sub(MAX_NAMED) + self.unkept;
        let mut paths: Vec<String> = (self.patterns.into_iter().take(MAX_NAMED))
            .map(|(pattern, (exact, count))| if count == 1 { exact } else { pattern })
            .collect();
        if more > 0 {
            paths.push(format!("({more} more not named)"));
        }
        paths
    }
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
