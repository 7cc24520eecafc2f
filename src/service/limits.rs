//! Admission of CPU-bound work: a fixed pool of N solver threads off the async runtime, at most
//! Q more jobs waiting (each for a bounded time); past that, 429 at once, never an unbounded queue.
//!
//! The solver threads take the next job themselves as soon as they finish one: no round trip
//! through the async runtime between two solves, so the cores stay busy under load.

use super::config::MAX_CONCURRENT_SOLVES;
use super::error::{ApiError, ApiResult};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Seconds a client turned away is told to wait (`Retry-After`).
pub const RETRY_AFTER_SECONDS: u64 = 1;

/// Stack of a solver thread: parsing and the LP backends get room to spare.
const SOLVER_STACK_BYTES: usize = 8 << 20;

/// Runs the work and returns how to deliver its result, which the solver thread calls after it
/// has released the job's slot (so a client that sends its next request as soon as it has the
/// answer never finds its own finished job still counted).
type Job = Box<dyn FnOnce() -> Deliver + Send>;
type Deliver = Box<dyn FnOnce() + Send>;

#[derive(Debug, Default)]
struct Counts {
    /// Jobs admitted and not finished: waiting plus running.
    admitted: AtomicUsize,
    running: AtomicUsize,
}

/// The solver pool and its admission bound.
#[derive(Debug)]
pub struct SolveLimiter {
    jobs: Mutex<Sender<Job>>,
    counts: Arc<Counts>,
    max_running: usize,
    max_admitted: usize,
    max_wait: Duration,
}

impl SolveLimiter {
    /// Starts `running` solver threads (1 to `MAX_CONCURRENT_SOLVES`), `nice` steps below the
    /// calling thread's priority, with room for `queued` more jobs that wait at most `max_wait`
    /// for a thread.
    pub fn new(running: u32, queued: u32, max_wait: Duration, nice: i32) -> SolveLimiter {
        // One thread per unit: the bound keeps a huge count from exhausting the process's threads.
        let wanted = running.clamp(1, MAX_CONCURRENT_SOLVES) as usize;
        let (sender, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let counts = Arc::new(Counts::default());
        let mut max_running = 0;
        for i in 0..wanted {
            let (receiver, counts) = (receiver.clone(), counts.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("arbiter-solver-{i}"))
                .stack_size(SOLVER_STACK_BYTES)
                .spawn(move || solver_thread(&receiver, &counts, nice));
            match spawned {
                Ok(_) => max_running += 1,
                Err(e) => tracing::error!(error = %e, "cannot start a solver thread"),
            }
        }
        if max_running < wanted {
            // Admission counts the threads there are, so the queue bound still holds.
            tracing::warn!(wanted, started = max_running, "fewer solver threads than asked for");
        }
        SolveLimiter {
            jobs: Mutex::new(sender),
            counts,
            max_running,
            max_admitted: max_running.saturating_add(queued as usize),
            max_wait,
        }
    }

    /// Solves running now.
    pub fn running(&self) -> usize {
        self.counts.running.load(Ordering::Relaxed)
    }

    /// Solves admitted and waiting for a solver thread.
    pub fn queued(&self) -> usize {
        self.counts.admitted.load(Ordering::Relaxed).saturating_sub(self.running())
    }

    pub fn max_running(&self) -> usize {
        self.max_running
    }

    /// `Overloaded` if a job submitted now would be turned away (the queue is full): lets a
    /// handler refuse before reading a large body. `run` still decides.
    pub fn check(&self) -> ApiResult<()> {
        if self.counts.admitted.load(Ordering::Acquire) >= self.max_admitted {
            return Err(ApiError::Overloaded { retry_after: RETRY_AFTER_SECONDS });
        }
        Ok(())
    }

    /// Runs `work` on a solver thread and returns its result. `Overloaded` (429) at once when
    /// the queue is full, or when the job waited `max_wait` without a thread; a job whose
    /// request is gone before it starts is dropped unrun. A panic in `work` is a 500.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
        let overloaded = || ApiError::Overloaded { retry_after: RETRY_AFTER_SECONDS };
        let admitted = self
            .counts
            .admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max_admitted).then_some(n + 1));
        if admitted.is_err() {
            return Err(overloaded());
        }
        let (answer, mut result) = tokio::sync::oneshot::channel();
        let started = Arc::new(AtomicBool::new(false));
        // The tenant's place among its concurrent solves (with tokens), held until the job has
        // run or been dropped unrun, even if the request is gone before.
        let permit = super::quotas::current_permit();
        let job: Job = {
            let started = started.clone();
            Box::new(move || -> Deliver {
                if answer.is_closed() {
                    return Box::new(|| {});
                }
                started.store(true, Ordering::Release);
                let result = catch_unwind(AssertUnwindSafe(work));
                drop(permit);
                Box::new(move || {
                    let _ = answer.send(result);
                })
            })
        };
        let sent = self.jobs.lock().unwrap_or_else(|p| p.into_inner()).send(job);
        if sent.is_err() {
            self.counts.admitted.fetch_sub(1, Ordering::AcqRel);
            return Err(ApiError::Internal("the solver pool is gone".into()));
        }
        let finished = tokio::select! {
            finished = &mut result => Some(finished),
            _ = tokio::time::sleep(self.max_wait) => None,
        };
        let finished = match finished {
            Some(finished) => finished,
            // Still waiting for a thread: give up (the job will be dropped unrun).
            None if !started.load(Ordering::Acquire) => return Err(overloaded()),
            None => result.await,
        };
        match finished {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(_panic)) => Err(ApiError::Internal("the request's work panicked; the server keeps serving".into())),
            Err(_) => Err(overloaded()),
        }
    }
}

fn solver_thread(jobs: &Mutex<Receiver<Job>>, counts: &Counts, nice: i32) {
    lower_priority(nice);
    loop {
        let job = match jobs.lock().unwrap_or_else(|p| p.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        counts.running.fetch_add(1, Ordering::AcqRel);
        let deliver = job();
        counts.running.fetch_sub(1, Ordering::AcqRel);
        counts.admitted.fetch_sub(1, Ordering::AcqRel);
        deliver();
    }
}

/// Runs short blocking work (a store write) off the async runtime, with no solver slot.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        if e.is_panic() {
            ApiError::Internal("the request's work panicked; the server keeps serving".into())
        } else {
            ApiError::Internal(format!("the request's work was cancelled: {e}"))
        }
    })
}

/// Lowers this thread's CPU priority `nice` steps below the process's (Linux: per-thread nice),
/// so request handling wins the CPU over solves.
fn lower_priority(nice: i32) {
    if nice <= 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread's own id; failure only leaves the priority.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (current + nice).min(19));
    }
}
