//! One adjoint routine's generator ([`Gen`]: its read-only inputs and its
//! emitter) and the dispatch of each statement to the code that writes
//! its forward sweep and returns its reverse sweep: assignments
//! ([`super::assign`]), calls ([`super::call_site`]), constructs and jumps
//! ([`super::control`]), ALLOCATE ([`super::allocate`]), pointer
//! statements ([`super::association`]); the few
//! statements with nothing to reverse are written here.
//!
//! Contract: [`Gen::block`] writes the forward sweep of a block and
//! returns its reverse sweep in the order it runs; in a unit reversed by
//! basic blocks each statement's reverse goes to its block's instead
//! ([`Gen::stmt_by_blocks`]).

use super::emitter::Emitter;
use super::inputs::RoutineInputs;
use super::sweep::Line;
use dfort_ir::*;

/// The generator of one adjoint routine.
pub(super) struct Gen<'a> {
    pub inp: &'a RoutineInputs<'a>,
    pub out: Emitter,
}

impl<'a> Gen<'a> {
    pub fn new(inp: &'a RoutineInputs<'a>) -> Gen<'a> {
        Gen {
            inp,
            out: Emitter::new(inp.id, inp.unstructured),
        }
    }

    /// Forward sweep of a block; returns the reverse sweep of the block as
    /// lines in the order they must run.
    pub fn block(&mut self, ids: &[StmtId]) -> Vec<Line> {
        let mut rev: Vec<Vec<Line>> = Vec::new();
        for id in ids {
            rev.push(self.stmt(*id));
        }
        self.without_recomputed(rev.into_iter().rev().flatten().collect())
    }

    /// A block's reverse lines without the shared values they compute
    /// again ([`super::held_values`]).
    pub fn without_recomputed(&mut self, lines: Vec<Line>) -> Vec<Line> {
        let bname = &self.inp.bname;
        let before = lines.len();
        let kept =
            super::held_values::without_recomputed(lines, |n| bname.values().any(|b| b == n));
        self.out.trace.values_held += before - kept.len();
        kept
    }

    /// Forward sweep of statement `id`; returns its reverse sweep.
    pub fn stmt(&mut self, id: StmtId) -> Vec<Line> {
        // The assignments of a WHERE go with it ([`Gen::where_construct`]).
        if self.inp.unstructured && self.out.mask.is_none() {
            return self.stmt_by_blocks(id);
        }
        let label = label_of(self.inp.unit.stmt(id));
        self.stmt_body(id, label)
    }

    /// Writes the forward sweep of statement `id` (its label, `"10 "` or
    /// empty, on its first line) and returns its reverse sweep.
    pub fn stmt_body(&mut self, id: StmtId, label: String) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let st = unit.stmt(id);
        let span = st.span;
        self.out.varied = inp.act.varied_before.get(id).cloned().unwrap_or_default();
        let passive = inp.tbr.passive_references.get(&id);
        self.out.passive_temps = inp
            .hoisted
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|h| passive.is_some_and(|p| p.contains(&h.span)))
            .map(|h| h.temp.index())
            .collect();
        let mut rev = match &st.kind {
            StmtKind::Assign { lhs, rhs } if inp.preaccumulated.contains_key(&id) => {
                self.preaccumulated_assignment(id, span, lhs, rhs, label)
            }
            StmtKind::Assign { lhs, rhs } => self.assignment(id, span, lhs, rhs, label),
            StmtKind::Call { name, args, target } => self.call(id, span, name, args, target, label),
            StmtKind::If {
                arms, else_body, ..
            } => self.if_construct(id, arms, else_body.as_deref(), label),
            StmtKind::SelectCase { selector, cases } => {
                self.select_case(id, selector, cases, label)
            }
            StmtKind::Where {
                arms, else_body, ..
            } => self.where_construct(id, span, arms, else_body.as_deref(), label),
            StmtKind::Do {
                control,
                body,
                name,
                ..
            } => self.do_loop(id, span, name.as_ref(), control, body, label),
            StmtKind::Continue => {
                self.out.fwd.line(&format!("{label}continue"));
                Vec::new()
            }
            StmtKind::Return if unit.body.last() == Some(&id) => Vec::new(),
            StmtKind::Io {
                writes,
                text,
                branches,
                ..
            } => self.io(id, span, writes, text, branches, label),
            StmtKind::Goto { .. }
            | StmtKind::ComputedGoto { .. }
            | StmtKind::ArithmeticIf { .. }
            | StmtKind::Exit { .. }
            | StmtKind::Cycle { .. }
            | StmtKind::Return => {
                self.jump(span, &st.kind, label);
                Vec::new()
            }
            // A run that stops has no reverse sweep: STOP stays as it is.
            StmtKind::Stop => {
                self.out.fwd.line(&format!("{label}stop"));
                Vec::new()
            }
            StmtKind::Allocate {
                objects,
                deallocate,
            } => self.allocate(id, objects, *deallocate, label),
            StmtKind::PointerAssign { .. } | StmtKind::Nullify { .. } => {
                self.pointer_statement(id, label)
            }
            // Refused by the facts ([`dfort_analysis::refusals`]).
            StmtKind::Unsupported { .. } => Vec::new(),
        };
        // The block says which primal statement it comes from.
        if !rev.is_empty() {
            if let Some(c) = crate::origin::comment(inp.origin, span) {
                rev.insert(0, Line::Plain(c));
            }
        }
        rev
    }
}

/// A statement's label as the forward sweep writes it (`"10 "`), or empty.
pub(super) fn label_of(st: &Stmt) -> String {
    st.label.map(|l| format!("{l} ")).unwrap_or_default()
}
