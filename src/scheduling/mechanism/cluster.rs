//! The cluster the mechanism places jobs on: servers of `gpus_per_server` GPUs per worker type,
//! GPU ids like `v100/<server>/<gpu>` unique across the cluster, and which GPUs are healthy.

use crate::error::{quoted, ArbiterError, ErrorCode, Result};
use crate::problem::WorkerType;
use std::ops::Range;

/// A GPU of the cluster: a dense index, in worker-type, then server, then slot order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuId(pub u32);

/// A server of the cluster: a dense index over all worker types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerId(pub u32);

/// What can fail or return: one GPU, or a whole server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worker {
    Gpu(GpuId),
    Server(ServerId),
}

#[derive(Debug, Clone)]
struct TypeLayout {
    name: String,
    servers: Range<u32>,
    gpus: Range<u32>,
}

#[derive(Debug, Clone)]
struct Server {
    worker_type: usize,
    /// Position among the servers of its type: the `<server>` of a GPU id.
    index_in_type: u32,
    gpus: Range<u32>,
}

/// Servers and GPUs per worker type, and their health.
#[derive(Debug, Clone)]
pub struct Cluster {
    types: Vec<TypeLayout>,
    servers: Vec<Server>,
    /// Per GPU: the server it sits in.
    gpu_server: Vec<u32>,
    healthy: Vec<bool>,
    healthy_per_type: Vec<u32>,
}

impl Cluster {
    /// Lays out `count` GPUs of each type on servers of `gpus_per_server`; when the count is not a
    /// multiple, the last server of the type holds the rest.
    pub fn new(worker_types: &[WorkerType]) -> Cluster {
        let mut cluster = Cluster {
            types: Vec::with_capacity(worker_types.len()),
            servers: Vec::new(),
            gpu_server: Vec::new(),
            healthy: Vec::new(),
            healthy_per_type: Vec::with_capacity(worker_types.len()),
        };
        for (w, wt) in worker_types.iter().enumerate() {
            let count = wt.count as u32;
            let per_server = wt.gpus_per_server.max(1);
            let first_server = cluster.servers.len() as u32;
            let first_gpu = cluster.gpu_server.len() as u32;
            let mut placed = 0;
            while placed < count {
                let size = per_server.min(count - placed);
                let server = cluster.servers.len() as u32;
                let start = first_gpu + placed;
                cluster.servers.push(Server {
                    worker_type: w,
                    index_in_type: server - first_server,
                    gpus: start..start + size,
                });
                cluster.gpu_server.extend(std::iter::repeat_n(server, size as usize));
                placed += size;
            }
            cluster.types.push(TypeLayout {
                name: wt.name.clone(),
                servers: first_server..cluster.servers.len() as u32,
                gpus: first_gpu..first_gpu + count,
            });
            cluster.healthy_per_type.push(count);
        }
        cluster.healthy = vec![true; cluster.gpu_server.len()];
        cluster
    }

    pub fn num_types(&self) -> usize {
        self.types.len()
    }

    pub fn num_gpus(&self) -> usize {
        self.gpu_server.len()
    }

    pub fn num_servers(&self) -> usize {
        self.servers.len()
    }

    pub fn type_name(&self, w: usize) -> &str {
        &self.types[w].name
    }

    pub fn type_index(&self, name: &str) -> Option<usize> {
        self.types.iter().position(|t| t.name == name)
    }

    /// All GPUs of type `w`, healthy or not.
    pub fn gpus_of_type(&self, w: usize) -> impl Iterator<Item = GpuId> {
        self.types[w].gpus.clone().map(GpuId)
    }

    /// How many GPUs of type `w` there are, healthy or not.
    pub fn gpu_count(&self, w: usize) -> u32 {
        self.types[w].gpus.len() as u32
    }

    pub fn servers_of_type(&self, w: usize) -> impl Iterator<Item = ServerId> {
        self.types[w].servers.clone().map(ServerId)
    }

    pub fn server_gpus(&self, s: ServerId) -> impl Iterator<Item = GpuId> {
        self.servers[s.0 as usize].gpus.clone().map(GpuId)
    }

    pub fn gpu_server(&self, g: GpuId) -> ServerId {
        ServerId(self.gpu_server[g.0 as usize])
    }

    pub fn gpu_type(&self, g: GpuId) -> usize {
        self.servers[self.gpu_server[g.0 as usize] as usize].worker_type
    }

    /// `<type>/<server>/<gpu>`, the GPU's id on the wire.
    pub fn gpu_name(&self, g: GpuId) -> String {
        let s = &self.servers[self.gpu_server[g.0 as usize] as usize];
        format!("{}/{}/{}", self.types[s.worker_type].name, s.index_in_type, g.0 - s.gpus.start)
    }

    /// `<type>/<server>`, the server's id on the wire.
    pub fn server_name(&self, id: ServerId) -> String {
        let s = &self.servers[id.0 as usize];
        format!("{}/{}", self.types[s.worker_type].name, s.index_in_type)
    }

    pub fn is_healthy(&self, g: GpuId) -> bool {
        self.healthy[g.0 as usize]
    }

    /// Healthy GPUs of type `w`: the capacity the policy and the rounds work with.
    pub fn healthy_count(&self, w: usize) -> u32 {
        self.healthy_per_type[w]
    }

    /// Reads `<type>/<server>` (a server) or `<type>/<server>/<gpu>` (one GPU).
    pub fn worker(&self, name: &str) -> Result<Worker> {
        let refuse = |why: String| {
            ArbiterError::at(
                ErrorCode::UnknownWorker,
                "worker",
                format!("{why}; a worker is `<type>/<server>` or `<type>/<server>/<gpu>`"),
            )
        };
        let mut parts = name.split('/');
        let type_name = parts.next().unwrap_or_default();
        let w = self.type_index(type_name).ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::UnknownWorkerType,
                "worker",
                format!("worker type {} is not in the cluster", quoted(type_name)),
            )
        })?;
        let layout = &self.types[w];
        let server: u32 =
            parts.next().and_then(|s| s.parse().ok()).filter(|s| *s < layout.servers.len() as u32).ok_or_else(
                || {
                    let servers = numbered("server", "servers", layout.servers.len());
                    refuse(format!("{} names no server: type {type_name} has {servers}", quoted(name)))
                },
            )?;
        let server = ServerId(layout.servers.start + server);
        let worker = match parts.next() {
            None => Worker::Server(server),
            Some(gpu) => {
                let gpus = &self.servers[server.0 as usize].gpus;
                let gpu: u32 = gpu.parse().ok().filter(|g| *g < gpus.len() as u32).ok_or_else(|| {
                    refuse(format!(
                        "{} names no GPU: that server has {}",
                        quoted(name),
                        numbered("GPU", "GPUs", gpus.len())
                    ))
                })?;
                Worker::Gpu(GpuId(gpus.start + gpu))
            }
        };
        if parts.next().is_some() {
            return Err(refuse(format!("{} has too many parts", quoted(name))));
        }
        Ok(worker)
    }

    /// Refuses a `Worker` whose index is not in this cluster.
    pub fn check(&self, worker: Worker) -> Result<Worker> {
        let (index, len, what) = match worker {
            Worker::Gpu(g) => (g.0 as usize, self.num_gpus(), "GPU"),
            Worker::Server(s) => (s.0 as usize, self.num_servers(), "server"),
        };
        if index >= len {
            return Err(ArbiterError::at(
                ErrorCode::UnknownWorker,
                "worker",
                format!("{what} index {index} is not in the cluster, which has {len}"),
            ));
        }
        Ok(worker)
    }

    /// The GPUs of a worker from this cluster (`worker` or `check`).
    fn gpus_of(&self, worker: Worker) -> Range<u32> {
        match worker {
            Worker::Gpu(g) => g.0..g.0 + 1,
            Worker::Server(s) => self.servers[s.0 as usize].gpus.clone(),
        }
    }

    /// Whether every GPU of the worker is already `healthy` (or failed): marking it so would
    /// change nothing.
    pub fn health_is(&self, worker: Worker, healthy: bool) -> bool {
        self.gpus_of(worker).all(|g| self.healthy[g as usize] == healthy)
    }

    /// Marks a GPU or every GPU of a server healthy or failed; returns whether anything changed.
    /// The worker must come from this cluster (`worker` or `check`).
    pub(super) fn set_health(&mut self, worker: Worker, healthy: bool) -> bool {
        let mut changed = false;
        for g in self.gpus_of(worker) {
            if self.healthy[g as usize] != healthy {
                self.healthy[g as usize] = healthy;
                let w = self.gpu_type(GpuId(g));
                if healthy {
                    self.healthy_per_type[w] += 1;
                } else {
                    self.healthy_per_type[w] -= 1;
                }
                changed = true;
            }
        }
        changed
    }
}

/// The indices `0..n` of a kind of worker, as a person reads them: `servers 0 to 3`, `one
/// server, 0`, `no servers` (a range such as `0..1` reads as two servers to most).
fn numbered(one: &str, many: &str, n: usize) -> String {
    match n {
        0 => format!("no {many}"),
        1 => format!("one {one}, 0"),
        n => format!("{many} 0 to {}", n - 1),
    }
}
