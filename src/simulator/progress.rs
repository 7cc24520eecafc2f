//! A one-line progress bar on standard error, drawn only when standard error is a terminal, so
//! scripts and pipes see nothing but the output file.

use super::Progress;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const WIDTH: usize = 30;
const REDRAW: Duration = Duration::from_millis(100);

/// Draws `Progress` updates at most ten times a second.
pub struct ProgressBar {
    enabled: bool,
    last: Option<Instant>,
    label: String,
}

impl ProgressBar {
    /// A bar labelled `label`, drawn if standard error is a terminal.
    pub fn new(label: impl Into<String>) -> ProgressBar {
        ProgressBar { enabled: std::io::stderr().is_terminal(), last: None, label: label.into() }
    }

    pub fn update(&mut self, p: Progress) {
        if !self.enabled || self.last.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        self.last = Some(Instant::now());
        let done = if p.measured_total == 0 { 1.0 } else { p.measured_finished as f64 / p.measured_total as f64 };
        let filled = (done * WIDTH as f64).round() as usize;
        let _ = write!(
            std::io::stderr().lock(),
            "\r{} [{}{}] {}/{} jobs, {} active, {:.1} h simulated ",
            self.label,
            "#".repeat(filled),
            "-".repeat(WIDTH - filled.min(WIDTH)),
            p.measured_finished,
            p.measured_total,
            p.active_jobs,
            p.now_seconds / 3600.0
        );
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        if self.enabled && self.last.is_some() {
            let _ = write!(std::io::stderr().lock(), "\r{}\r", " ".repeat(WIDTH + self.label.len() + 60));
        }
    }
}
