//! dfort's IR: lowering of syntax trees to program units with symbol
//! tables, statements, a CFG per unit and a call graph over all files
//! (pipeline: syntax → **ir** → analysis → codegen).

pub mod accumulation;
pub mod bit_rows;
pub mod bitset;
pub mod callgraph;
pub mod cfg;
pub mod chunk_vec;
pub mod dp;
pub mod dump;
pub(crate) mod generics;
pub mod hoist;
pub mod idx;
pub mod intrinsic_modules;
pub mod intrinsics;
pub mod ir;
pub mod link;
pub mod lower;
pub mod queries;
pub mod runtime;
pub mod schedule;
pub mod shared_vec;
#[cfg(test)]
mod test_support;
pub mod types;

pub use idx::{IdVec, Idx};
pub use ir::*;
pub use types::{ComponentDef, DerivativeType, TypeDef};
