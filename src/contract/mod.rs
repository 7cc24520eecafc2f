//! The contract (`../shared/CONTRACT.md`) and the validated problem: the wire request, its
//! validation into a [`problem::Problem`] (dense indices, a throughput matrix), the response, and
//! the error object every refusal is. Owns the meaning of every field; knows nothing of solvers,
//! rounds or HTTP, and must not: every other layer reads a `Problem` and writes a `Response`.

pub mod allocation_row;
pub mod error;
pub mod ignored;
pub mod json;
pub mod problem;
pub mod request;
pub mod response;
pub mod unique_keys;
