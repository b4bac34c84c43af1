//! dfort's end-to-end tests, built as one test binary (the product and
//! tokio are linked once, not once per file): each file of tests/ is a
//! module of it, and tests/support/ holds the helpers they share. Run one
//! file's tests with `cargo test --test e2e cli::` (or any name filter).
//! The insta snapshots of a module `m` are tests/snapshots/e2e__m__*.snap.
//! (Not named main.rs: proptest would then keep robustness.rs's
//! regressions under tests/proptest-regressions/ instead of beside it.)

mod support;

mod address_recovery;
mod after_roots;
mod analysis;
mod architecture;
mod checkpointing;
mod cli;
mod codegen_snapshots;
mod derivatives;
mod diagnostics;
mod editor_neovim;
mod editor_vscode;
mod fixtures_compile;
mod front_end;
mod ir_snapshots;
mod lsp_protocol;
mod preprocessor;
mod robustness;
mod tangent;
