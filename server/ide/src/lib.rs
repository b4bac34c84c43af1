//! dfort's IDE layer: loads a set of Fortran files, runs the pipeline
//! (parse → lower → link → analyses) over them, and turns the results into
//! plain data — diagnostics, hovers, inlay hints, symbols, code actions —
//! for the CLI and the language server. Knows nothing of LSP or JSON:
//! offsets are bytes of the document text; `dfort` converts them.
//!
//! * [`host`]: the front end every command, test and the language server
//!   loads files with — incremental state and its snapshots;
//! * [`analysis`], [`diagnostics`], [`hover`], [`hints`], [`navigation`],
//!   [`actions`]: one feature each, reading a [`host::Snapshot`];
//! * [`render`]: the one renderer of address recovery's facts into
//!   sentences and labels, for the features above and the CLI.

pub mod actions;
pub mod analysis;
pub mod completion;
pub mod diagnostics;
pub mod folding;
pub mod hints;
pub mod host;
pub mod hover;
pub mod intrinsic_docs;
pub mod lens;
pub mod navigation;
pub mod preprocessing;
pub mod references;
pub mod render;
pub mod scope;
pub mod semantic;
pub mod signature;
pub mod summary;
pub mod text;

pub use host::LoadError;
