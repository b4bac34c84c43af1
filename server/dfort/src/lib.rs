//! The `dfort` crate's library part: what the binary and the end-to-end
//! tests share — the workspace configuration (`dfort.toml`) and the
//! language server (`dfort lsp`), which the protocol tests drive in
//! process.

pub mod config;
pub mod lsp;
