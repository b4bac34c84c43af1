//! What a rerun of the interprocedural analyses may reuse from the
//! previous run. Paper 000 computes Dep and TBR summaries bottom-up over
//! the call graph (§4.1, §5.1) and calling contexts top-down (§4.2,
//! §5.2): a unit's results are a function of its own IR, of what it reads
//! of its callees (their summaries and interfaces) and of its calling
//! context. A unit none of whose inputs changed keeps its previous
//! results; [`crate::interproc`] and [`crate::tbr`] recompute the others.
//!
//! Contract: [`Changes`] relates a new program to the one the previous
//! results were computed on, with the same unit numbering. `body[u]` is
//! false only when unit `u` is identical in both programs (its IR after
//! linking, call targets included); `interface[u]` is true when what a
//! caller reads of `u` changed: its name, kind, the dummy arguments'
//! names, types, intents and ranks, or the function result's type.

use dfort_ir::{IdVec, Program, Unit, UnitId};

/// Which units of a program changed since the previous analysis.
#[derive(Clone, Debug)]
pub struct Changes {
    pub body: IdVec<UnitId, bool>,
    pub interface: IdVec<UnitId, bool>,
}

impl Changes {
    /// The changes from `old` to `new`, given which units' IR changed.
    /// `None` when the programs are not numbered alike (then nothing can
    /// be reused).
    pub fn between(old: &Program, new: &Program, body: IdVec<UnitId, bool>) -> Option<Changes> {
        if old.units.len() != new.units.len() || body.len() != new.units.len() {
            return None;
        }
        let interface = body
            .iter()
            .zip(old.units.iter().zip(&new.units))
            .map(|(changed, (a, b))| *changed && !same_interface(a, b))
            .collect();
        Some(Changes { body, interface })
    }

    /// No unit of `program` changed.
    pub fn unchanged(program: &Program) -> Changes {
        let n = program.units.len();
        Changes {
            body: IdVec::from_elem(false, n),
            interface: IdVec::from_elem(false, n),
        }
    }

    /// The units whose Dep summary must be recomputed: changed ones and
    /// callers of units whose interface changed.
    pub fn summary_seeds(&self, program: &Program) -> Vec<UnitId> {
        program
            .units
            .iter()
            .filter(|u| self.inputs_changed(program, u.id, |_| false))
            .map(|u| u.id)
            .collect()
    }

    /// Whether unit `u` itself changed, or a callee whose interface
    /// changed or for which `callee_changed` holds.
    pub fn inputs_changed(
        &self,
        program: &Program,
        u: UnitId,
        callee_changed: impl Fn(UnitId) -> bool,
    ) -> bool {
        self.body.get(u).copied().unwrap_or(true)
            || program
                .call_graph
                .callees(u)
                .any(|c| self.interface.get(c).copied().unwrap_or(true) || callee_changed(c))
    }
}

/// Whether a caller reads the same of `a` and `b`. What callers keep of
/// a callee — the contexts they give it, its summary's rows — is indexed
/// by the callee's symbol ids (its formals', its globals', and past its
/// symbols the slots of globals only its callees declare), so the symbol
/// table must be the same, name for name, id for id (an edit that turned
/// a declaration into a continuation renumbered every symbol after it;
/// robustness test, case 45f01bcc).
pub fn same_interface(a: &Unit, b: &Unit) -> bool {
    if a.symbols.len() != b.symbols.len()
        || a.symbols
            .iter()
            .zip(&b.symbols)
            .any(|(x, y)| x.name != y.name)
    {
        return false;
    }
    let same_symbol = |x: dfort_ir::SymbolId, y: dfort_ir::SymbolId| {
        let (x, y) = (a.symbol(x), b.symbol(y));
        x.name == y.name && x.ty == y.ty && x.intent == y.intent && x.rank() == y.rank()
    };
    a.name == b.name
        && a.kind == b.kind
        && a.args.len() == b.args.len()
        && a.args.iter().zip(&b.args).all(|(x, y)| same_symbol(*x, *y))
        && match (a.result, b.result) {
            (Some(x), Some(y)) => same_symbol(x, y),
            (None, None) => true,
            _ => false,
        }
}
