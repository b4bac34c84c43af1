//! dfort's analyses (pipeline: syntax → ir → **analysis** → codegen):
//! activity and TBR for reverse-mode AD, on one shared dataflow engine
//! (paper 000, Hascoët, Naumann, Pascual). Each analysis is a module with
//! its contract at the top. Analyses do no I/O and never panic on user
//! input.

pub mod activity;
pub mod address_report;
pub mod bitset;
pub mod checkpoint;
pub mod counted_while;
pub mod decisions;
pub mod dep;
pub mod derivatives;
pub mod dp;
pub mod effects;
pub mod engine;
pub mod explain;
pub mod facts;
pub mod incremental;
pub mod interproc;
pub mod liveness;
pub mod pointers;
pub mod prepare;
pub mod recovery;
pub mod reversal;
pub mod roles;
pub mod roots;
pub mod shape;
pub mod structure;
pub mod tbr;
pub mod undo;
