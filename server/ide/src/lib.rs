//! dfort's IDE layer: loads a set of Fortran files, runs the pipeline
//! (parse → lower → link → analyses) over them, and turns the results into
//! plain data — diagnostics, hovers, inlay hints, symbols, code actions —
//! for the CLI and the language server. Knows nothing of LSP or JSON:
//! offsets are bytes of the document text; `dfort` converts them.
//!
//! * [`host`]: the front end every command, test and the language server
//!   loads files with — incremental state and its snapshots;
//! * [`preprocessing`]: documents the C preprocessor (or `INCLUDE`)
//!   changes, and the inactive regions of their `#if`s; [`cpp_hover`]:
//!   what the hover says on the preprocessor's lines;
//! * [`analysis`], [`diagnostics`], [`hover`], [`hints`], [`navigation`],
//!   [`actions`], [`lens`], [`folding`], [`semantic`], [`references`],
//!   [`completion`], [`signature`]: one feature each, reading a
//!   [`host::Snapshot`];
//! * [`scope`]: what a place in the code sees (the statement before the
//!   cursor, the names visible in a unit), for completion and signature
//!   help; [`intrinsic_docs`]: what the editor says of each intrinsic;
//! * [`origins`]: the comments heading each block of a derivative, and
//!   going from a primal statement to its blocks and back;
//! * [`summary`]: what `dfort analyze` reports of each unit;
//! * [`render`]: the one renderer of address recovery's facts into
//!   sentences and labels, for the features above and the CLI;
//! * [`text`]: small text helpers the features share.

pub mod actions;
pub mod analysis;
pub mod completion;
pub mod cpp_hover;
pub mod diagnostics;
pub mod folding;
pub mod hints;
pub mod host;
pub mod hover;
pub mod intrinsic_docs;
pub mod lens;
pub mod navigation;
pub mod origins;
pub mod preprocessing;
pub mod references;
pub mod render;
pub mod scope;
pub mod semantic;
pub mod signature;
pub mod summary;
pub mod text;

pub use host::LoadError;
