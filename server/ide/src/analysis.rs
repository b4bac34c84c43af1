//! The analyses a snapshot carries: the facts of the analysis crate's one
//! entry point ([`dfort_analysis::facts`]) for the host's request — by
//! default every procedure nobody calls, with the configured roots'
//! lists — so the editor shows exactly what the generators and the CLI
//! decide.

pub use dfort_analysis::facts::{ProgramFacts as Analysis, Request, UnitFacts};
pub use dfort_analysis::roots::RootSpec;
