//! dfort's IDE layer: loads a set of Fortran files, runs the pipeline
//! (parse → lower → link) over them using every core, and turns the
//! results into plain data — diagnostics with lines and columns — for the
//! CLI and, later, the language server. Knows nothing of LSP or JSON.

pub mod workspace;

pub use workspace::{FileDiagnostic, LoadError, LoadOptions, Workspace};
