//! The analyses a snapshot carries: the facts of the analysis crate's one
//! entry point ([`dfort_analysis::facts`]) for the host's request — by
//! default every procedure nobody calls, with the configured roots'
//! lists — so the editor shows exactly what the generators and the CLI
//! decide.

pub use dfort_analysis::facts::{ProgramFacts as Analysis, Request, UnitFacts};
pub use dfort_analysis::roots::RootSpec;

use dfort_analysis::roles::{roles, Roles};
use dfort_ir::Unit;

/// The roles of `unit` for differentiation: the configured lists when the
/// unit is a configured root, else its directives or intents.
pub fn root_roles(unit: &Unit, specs: &[RootSpec]) -> Roles {
    match specs.iter().find(|r| r.name == unit.name) {
        Some(r) => roles(unit, Some((&r.independent, &r.dependent))),
        None => roles(unit, None),
    }
}
