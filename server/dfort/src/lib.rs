//! The `dfort` crate's library part: everything the `dfort` binary's
//! commands are made of, so that the end-to-end tests and the developer
//! drivers of `cargo xtask` (benchmarks, fuzzer, consistency check) use
//! the product itself — the workspace configuration (`dfort.toml`), the
//! language server (`dfort lsp`, which the protocol tests drive in
//! process), and the `analyze`, `tangent`, `adjoint` and `verify`
//! commands with their helpers (root loading, the analysis JSON, the
//! gfortran build and run steps). The binary (main.rs) only parses the
//! command line and dispatches.

// The command modules name this crate `dfort::…`, as the binary did.
extern crate self as dfort;

pub mod adjoint;
pub mod analyze;
pub mod check;
pub mod config;
pub mod config_edit;
mod form;
pub mod import;
pub mod lsp;
pub mod preprocess;
pub mod report;
pub mod rules;
pub mod session;
pub mod tangent;
pub mod verify;

pub use form::FormArgs;
