//! Which variables of a unit are independents and dependents: given
//! explicitly (command line or `dfort.toml`), by `!$ad independent(...)` /
//! `!$ad dependent(...)` directives in the unit, or by default from the
//! dummy arguments' intents: real `intent(in)`/`intent(inout)` dummies
//! are independents, real `intent(out)`/`intent(inout)` dummies and a
//! real function result are dependents; a real dummy without intent
//! (Fortran 77) counts as `inout`.

use dfort_ir::bitset::BitSet;
use dfort_ir::dp::differentiable;
use dfort_ir::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleSource {
    Explicit,
    Directives,
    Intents,
}

impl RoleSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RoleSource::Explicit => "command line or dfort.toml",
            RoleSource::Directives => "!$ad directives",
            RoleSource::Intents => "dummy-argument intents (default)",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roles {
    pub independents: BitSet,
    pub dependents: BitSet,
    pub source: RoleSource,
    /// Names given that are not variables of the unit.
    pub unknown: Vec<String>,
    /// Where the independents take their values, when not on entry: the
    /// chain of calls (unit, CALL statement) from the root to the call its
    /// `after` names, root first, each made once; empty: on entry.
    pub after: Vec<(UnitId, StmtId)>,
}

/// Explicit names win, then directives, then intents. Explicit lists
/// that are both empty (a `dfort.toml` root with a name only) give none:
/// directives, then intents decide.
pub fn roles(unit: &Unit, explicit: Option<(&[String], &[String])>) -> Roles {
    let explicit = explicit.filter(|(i, d)| !i.is_empty() || !d.is_empty());
    let n = unit.symbols.len();
    let mut r = Roles {
        independents: BitSet::new(n),
        dependents: BitSet::new(n),
        source: RoleSource::Intents,
        unknown: Vec::new(),
        after: Vec::new(),
    };
    let named = |r: &mut Roles, ind: &[String], dep: &[String]| {
        for (list, dependent) in [(ind, false), (dep, true)] {
            for name in list {
                let name = name.trim().to_ascii_lowercase();
                match unit.lookup(&name) {
                    Some(s) if differentiable(unit, s) => {
                        let set = if dependent {
                            &mut r.dependents
                        } else {
                            &mut r.independents
                        };
                        set.insert_id(s);
                    }
                    _ => r.unknown.push(name),
                }
            }
        }
    };
    if let Some((ind, dep)) = explicit {
        r.source = RoleSource::Explicit;
        named(&mut r, ind, dep);
        return r;
    }
    let ind: Vec<String> = unit
        .directives
        .iter()
        .filter(|d| d.name == "independent")
        .flat_map(|d| d.args.clone())
        .collect();
    let dep: Vec<String> = unit
        .directives
        .iter()
        .filter(|d| d.name == "dependent")
        .flat_map(|d| d.args.clone())
        .collect();
    if !ind.is_empty() || !dep.is_empty() {
        r.source = RoleSource::Directives;
        named(&mut r, &ind, &dep);
        return r;
    }
    for a in &unit.args {
        if !differentiable(unit, *a) {
            continue;
        }
        let intent = unit.symbol(*a).intent;
        if intent != Some(Intent::Out) {
            r.independents.insert_id(*a);
        }
        if intent != Some(Intent::In) {
            r.dependents.insert_id(*a);
        }
    }
    if let Some(res) = unit.result {
        if differentiable(unit, res) {
            r.dependents.insert_id(res);
        }
    }
    r
}
