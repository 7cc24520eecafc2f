//! The service's load test (run by `scripts/load-test` against a server it starts): posts a
//! 256-job LAS request for 30 s at 16 and at 64 concurrent clients, then times `/healthz` while 8
//! huge solves (16,384 jobs) run, and checks the goals. Traffic goes only to the given address.
//!
//! Each client holds one keep-alive connection and sends its next request when the last answer
//! is in (a closed loop); on 429 it waits the `Retry-After` it was given, as a polite client does.
//! Requests are generated here from a fixed seed, like the benches' Gavel-like workload.
//!
//! `cargo run --release --example load_test -- --addr 127.0.0.1:8080 [--seconds 30]
//!  [--clients 16,64] [--jobs 256] [--huge-jobs 16384] [--huge-solves 8] [--huge-seconds 10]`
//!
//! Against a server with `--tokens`, put a token with the `solve` scope in `LOAD_TEST_TOKEN`:
//! every request then carries it as `Authorization: Bearer` (`LOAD_TEST_AUTH=1 scripts/load-test`
//! does this). It is read from the environment, not a flag, so it shows in no process list.

#[path = "../tests/service_support/http.rs"]
mod http;
#[path = "../benches/support/workload.rs"]
mod workload;

use arbiter::request::{JobSpec, Request};
use http::Client;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};
use workload::{cluster, draw_job, model_types, throughput_map, Rng};

/// The bearer token every request carries (`LOAD_TEST_TOKEN`), if any.
static TOKEN: OnceLock<Option<String>> = OnceLock::new();

/// A client on one keep-alive connection, with the token if there is one.
fn client(addr: SocketAddr) -> Client {
    let mut client = Client::new(addr);
    client.token = TOKEN.get().cloned().flatten();
    client
}

/// `n` jobs from 26 model types × scale factors 1/2/4/8 (70/10/15/5%) on `n/4` GPUs of each of
/// three types; weight 5 for one job in five; the benches' Gavel-like workload.
fn las_request(n: usize) -> String {
    let models = model_types();
    let mut rng = Rng(0xA11_0CA7E ^ (n as u64).wrapping_mul(0x9E37_79B9));
    let jobs = (0..n)
        .map(|m| {
            let job = draw_job(&mut rng, &models);
            let steps = 10f64.powf(rng.uniform(3.0, 6.0)).round();
            JobSpec {
                id: format!("j{m}"),
                throughput: throughput_map(job.row, |t| t),
                scale_factor: Some(job.scale_factor as f64),
                weight: Some(job.weight),
                steps_remaining: Some(steps),
                ..JobSpec::default()
            }
        })
        .collect();
    let request = Request { policy: "max_min_fairness".to_string(), cluster: cluster(n), jobs, ..Request::default() };
    serde_json::to_string(&request).expect("a request serializes")
}

/// CPU seconds used so far: by the whole machine (busy, all cores), by the server process, and
/// by this client; read from /proc (Linux), zero elsewhere.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    machine: f64,
    server: f64,
    client: f64,
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn process_cpu(pid: &str) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at state; utime and stime are
    // the 14th and 15th fields of the line.
    let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<f64> = rest.split_whitespace().map(|f| f.parse().unwrap_or(0.0)).collect();
    (fields.get(11).copied().unwrap_or(0.0) + fields.get(12).copied().unwrap_or(0.0)) / ticks_per_second()
}

fn cpu_now(server_pid: Option<u32>) -> Cpu {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<f64> =
        stat.lines().next().unwrap_or("").split_whitespace().skip(1).map(|f| f.parse().unwrap_or(0.0)).collect();
    let total: f64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0.0) + fields.get(4).copied().unwrap_or(0.0);
    Cpu {
        machine: (total - idle) / ticks_per_second(),
        server: server_pid.map_or(0.0, |p| process_cpu(&p.to_string())),
        client: process_cpu("self"),
    }
}

/// Cores used over a phase: by the server, by this client, and by everything else on the machine.
fn cores(before: Cpu, after: Cpu, seconds: f64) -> (f64, f64, f64) {
    let server = (after.server - before.server) / seconds;
    let client = (after.client - before.client) / seconds;
    let machine = (after.machine - before.machine) / seconds;
    (server, client, (machine - server - client).max(0.0))
}

#[derive(Debug, Default)]
struct Tally {
    ok_latency: Vec<f64>,
    too_many: usize,
    too_many_without_retry_after: usize,
    other_4xx: usize,
    server_errors: usize,
    io_errors: usize,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

struct Phase {
    clients: usize,
    /// Cores used by the server, this client, and other processes.
    cores: (f64, f64, f64),
    seconds: f64,
    throughput: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    tally: Tally,
}

/// `clients` closed-loop clients posting `body` to /v1/allocations for `seconds`.
fn run_phase(addr: SocketAddr, server: Option<u32>, body: Arc<Vec<u8>>, clients: usize, seconds: f64) -> Phase {
    let cpu_before = cpu_now(server);
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (body, stop, tally) = (body.clone(), stop.clone(), tally.clone());
            thread::spawn(move || {
                let mut client = client(addr);
                let mut local = Tally::default();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let reply = client.post("/v1/allocations", &body);
                    // Only answers that arrive within the window count.
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    match reply {
                        Ok(reply) if reply.status == 200 => local.ok_latency.push(t.elapsed().as_secs_f64()),
                        Ok(reply) if reply.status == 429 => {
                            local.too_many += 1;
                            match reply.header("retry-after").and_then(|v| v.parse::<f64>().ok()) {
                                Some(wait) => {
                                    // One sleep, cut at the end of the phase.
                                    let until = (Instant::now() + Duration::from_secs_f64(wait.min(5.0))).min(end);
                                    thread::sleep(until.saturating_duration_since(Instant::now()));
                                }
                                None => local.too_many_without_retry_after += 1,
                            }
                        }
                        Ok(reply) if reply.status >= 500 => local.server_errors += 1,
                        Ok(_) => local.other_4xx += 1,
                        Err(_) => local.io_errors += 1,
                    }
                }
                let mut all = tally.lock().unwrap();
                all.ok_latency.extend(local.ok_latency);
                all.too_many += local.too_many;
                all.too_many_without_retry_after += local.too_many_without_retry_after;
                all.other_4xx += local.other_4xx;
                all.server_errors += local.server_errors;
                all.io_errors += local.io_errors;
            })
        })
        .collect();
    thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    let cores = cores(cpu_before, cpu_now(server), elapsed);
    for h in handles {
        let _ = h.join();
    }
    let mut tally = Arc::try_unwrap(tally).map(|m| m.into_inner().unwrap()).unwrap_or_default();
    tally.ok_latency.sort_by(f64::total_cmp);
    let lat = &tally.ok_latency;
    Phase {
        clients,
        cores,
        seconds: elapsed,
        throughput: lat.len() as f64 / elapsed,
        p50_ms: percentile(lat, 50.0) * 1e3,
        p99_ms: percentile(lat, 99.0) * 1e3,
        max_ms: lat.last().copied().unwrap_or(f64::NAN) * 1e3,
        tally,
    }
}

struct HealthPhase {
    cores: (f64, f64, f64),
    huge_completed: usize,
    huge_failed: usize,
    probes: usize,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

/// `solves` clients posting the huge request back to back for `seconds`, while `/healthz` is
/// probed every 10 ms; only probes that saw a solve running count.
fn run_health(addr: SocketAddr, server: Option<u32>, huge: Arc<Vec<u8>>, solves: usize, seconds: f64) -> HealthPhase {
    let cpu_before = cpu_now(server);
    let began = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let completed = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..solves)
        .map(|_| {
            let (huge, stop, completed, failed) = (huge.clone(), stop.clone(), completed.clone(), failed.clone());
            thread::spawn(move || {
                let mut client = client(addr);
                while !stop.load(Ordering::Relaxed) {
                    match client.post("/v1/allocations", &huge) {
                        Ok(r) if r.status == 200 => completed.fetch_add(1, Ordering::Relaxed),
                        _ => failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    let mut probe = client(addr);
    let mut latencies = Vec::new();
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        let t = Instant::now();
        if let Ok(reply) = probe.get("/healthz") {
            let latency = t.elapsed().as_secs_f64();
            let running = serde_json::from_slice::<serde_json::Value>(&reply.body)
                .ok()
                .and_then(|v| v["solves_running"].as_u64())
                .unwrap_or(0);
            if reply.status == 200 && running > 0 {
                latencies.push(latency);
            }
        }
        thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    latencies.sort_by(f64::total_cmp);
    let cores = cores(cpu_before, cpu_now(server), began.elapsed().as_secs_f64());
    HealthPhase {
        cores,
        huge_completed: completed.load(Ordering::Relaxed),
        huge_failed: failed.load(Ordering::Relaxed),
        probes: latencies.len(),
        p50_ms: percentile(&latencies, 50.0) * 1e3,
        p99_ms: percentile(&latencies, 99.0) * 1e3,
        max_ms: latencies.last().copied().unwrap_or(f64::NAN) * 1e3,
    }
}

struct Args {
    addr: SocketAddr,
    server_pid: Option<u32>,
    seconds: f64,
    clients: Vec<usize>,
    jobs: usize,
    huge_jobs: usize,
    huge_solves: usize,
    huge_seconds: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        addr: "127.0.0.1:8080".parse().unwrap(),
        server_pid: None,
        seconds: 30.0,
        clients: vec![16, 64],
        jobs: 256,
        huge_jobs: 16384,
        huge_solves: 8,
        huge_seconds: 10.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let bad = |e: &dyn std::fmt::Display| format!("bad value for {flag}: {e}");
        match flag.as_str() {
            "--addr" => args.addr = value()?.parse().map_err(|e| bad(&e))?,
            "--server-pid" => args.server_pid = Some(value()?.parse().map_err(|e| bad(&e))?),
            "--seconds" => args.seconds = value()?.parse().map_err(|e| bad(&e))?,
            "--clients" => {
                args.clients = value()?
                    .split(',')
                    .filter(|c| !c.trim().is_empty())
                    .map(|c| c.trim().parse())
                    .collect::<Result<_, _>>()
                    .map_err(|e| bad(&e))?
            }
            "--jobs" => args.jobs = value()?.parse().map_err(|e| bad(&e))?,
            "--huge-jobs" => args.huge_jobs = value()?.parse().map_err(|e| bad(&e))?,
            "--huge-solves" => args.huge_solves = value()?.parse().map_err(|e| bad(&e))?,
            "--huge-seconds" => args.huge_seconds = value()?.parse().map_err(|e| bad(&e))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if !args.addr.ip().is_loopback() {
        return Err(format!("{} is not a loopback address: this load test only targets this machine", args.addr));
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("load_test: {e}");
            std::process::exit(2);
        }
    };
    let token = std::env::var("LOAD_TEST_TOKEN").ok().filter(|t| !t.is_empty());
    let authenticated = token.is_some();
    let _ = TOKEN.set(token);
    let body = Arc::new(las_request(args.jobs).into_bytes());
    let huge = Arc::new(las_request(args.huge_jobs).into_bytes());
    let mut check = client(args.addr);
    match check.post("/v1/allocations", &body) {
        Ok(r) if r.status == 200 => {}
        Ok(r) => panic!("the server refused the load request: {} {}", r.status, r.text()),
        Err(e) => panic!("cannot reach {}: {e}", args.addr),
    }
    println!(
        "load test against http://{}: {}-job LAS request ({} bytes), closed-loop clients, {} s per phase, {}",
        args.addr,
        args.jobs,
        body.len(),
        args.seconds,
        if authenticated { "every request with a bearer token" } else { "no authentication" }
    );
    // Warm-up (not reported): connections, allocator, the solver's code paths.
    if let Some(&clients) = args.clients.first() {
        run_phase(args.addr, None, body.clone(), clients, 2.0);
    }

    println!(
        "\n| clients | seconds | ok/s | p50 ms | p99 ms | max ms | ok | 429 | 429 w/o Retry-After | other 4xx | 5xx | io errors | cores: server / client / other processes |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut phases = Vec::new();
    for &clients in &args.clients {
        let p = run_phase(args.addr, args.server_pid, body.clone(), clients, args.seconds);
        let t = &p.tally;
        println!(
            "| {} | {:.1} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} | {:.2} / {:.2} / {:.2} |",
            p.clients,
            p.seconds,
            p.throughput,
            p.p50_ms,
            p.p99_ms,
            p.max_ms,
            t.ok_latency.len(),
            t.too_many,
            t.too_many_without_retry_after,
            t.other_4xx,
            t.server_errors,
            t.io_errors,
            p.cores.0,
            p.cores.1,
            p.cores.2
        );
        phases.push(p);
    }

    let h = run_health(args.addr, args.server_pid, huge.clone(), args.huge_solves, args.huge_seconds);
    println!(
        "\n/healthz while {} clients post {}-job LAS requests ({} bytes) for {} s: {} huge solves done, {} failed; \
         {} probes with a solve running: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms \
         (cores: server {:.2}, client {:.2}, other processes {:.2})",
        args.huge_solves,
        args.huge_jobs,
        huge.len(),
        args.huge_seconds,
        h.huge_completed,
        h.huge_failed,
        h.probes,
        h.p50_ms,
        h.p99_ms,
        h.max_ms,
        h.cores.0,
        h.cores.1,
        h.cores.2
    );

    let mut goals: Vec<(String, bool)> = Vec::new();
    if let Some(p) = phases.iter().find(|p| p.clients == 16) {
        let t = &p.tally;
        let errors = t.too_many + t.other_4xx + t.server_errors + t.io_errors;
        goals.push((format!("16 clients: zero errors (got {errors})"), errors == 0));
        goals.push((format!("16 clients: p99 < 25 ms (got {:.2} ms)", p.p99_ms), p.p99_ms < 25.0));
    }
    if let (Some(p16), Some(p64)) = (phases.iter().find(|p| p.clients == 16), phases.iter().find(|p| p.clients == 64)) {
        let t = &p64.tally;
        goals.push((
            format!("64 clients: no 5xx or other errors, every 429 with Retry-After (5xx {}, other 4xx {}, io {}, 429 without Retry-After {})",
                t.server_errors, t.other_4xx, t.io_errors, t.too_many_without_retry_after),
            t.server_errors + t.other_4xx + t.io_errors + t.too_many_without_retry_after == 0,
        ));
        goals.push((
            format!("64 clients: throughput ≥ 16 clients' ({:.0} vs {:.0} ok/s)", p64.throughput, p16.throughput),
            p64.throughput >= p16.throughput,
        ));
    }
    goals.push((format!("/healthz p99 < 5 ms during huge solves (got {:.2} ms)", h.p99_ms), h.p99_ms < 5.0));
    println!();
    for (goal, met) in &goals {
        println!("{} {goal}", if *met { "MET   " } else { "MISSED" });
    }
    if goals.iter().any(|(_, met)| !met) {
        std::process::exit(1);
    }
}
