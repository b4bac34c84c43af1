//! I/O statements in the adjoint: the forward sweep runs them as written
//! (output, OPEN, CLOSE, INQUIRE, internal files); a READ is a passive
//! overwrite of the items it defines, so its reverse sweep resets their
//! adjoints (where they may be nonzero) and restores the values TBR
//! records before it.
//!
//! Contract: the reverse of a READ first resets the adjoints, with the
//! values the READ left (an implied DO is replayed with its own variable),
//! then pops what the forward sweep pushed, in reverse order. An I/O
//! statement with ERR=, END= or EOR= jumps ends a basic block of a unit
//! reversed by blocks: the block's id is recorded after what the
//! statement records and before it runs. Refused: such a statement that
//! defines a value recorded with its block, and a READ list that defines
//! an index of one of its items whose adjoint it resets.

use super::dispatch::Gen;
use super::sweep::Line;
use dfort_analysis::address_report::Choice;
use dfort_ir::dp::{io_targets, target};
use dfort_ir::dump::expr as print;
use dfort_ir::*;

impl Gen<'_> {
    /// The I/O statement `id`, `text` as written.
    pub(super) fn io(
        &mut self,
        id: StmtId,
        span: Span,
        writes: &[Expr],
        text: &str,
        branches: &[u32],
        label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        if !branches.is_empty() && !inp.reversal.by_blocks {
            // Refused by the facts ([`dfort_analysis::refusals`]).
            return Vec::new();
        }
        // Reset the adjoints of the items the READ defines.
        let mut rev = Vec::new();
        let defined: Vec<SymbolId> = io_targets(writes).iter().map(|(s, _)| *s).collect();
        for item in writes {
            let mut lines = Vec::new();
            self.reset_item(id, span, item, &defined, &mut lines);
            rev.extend(lines.into_iter().map(Line::Plain));
        }
        // Record what TBR asks for, before the READ.
        let recorded = inp.recorded(id);
        let mut pushed: Vec<String> = Vec::new();
        for (s, _) in io_targets(writes) {
            if !recorded.contains(&s) {
                continue;
            }
            // A variable the list defines in several items, or in an
            // implied DO, is saved whole.
            let item = match dfort_ir::dp::single_io_item(writes, s) {
                Some(one) => print(unit, one),
                None => unit.symbol(s).name.clone(),
            };
            // What the tape cannot hold the facts refuse
            // ([`dfort_analysis::refusals`]).
            if pushed.contains(&item) {
                continue;
            }
            self.out.trace.push(id, s);
            if inp.undo.exact.contains_id(s) {
                self.out.trace.recovery(None, s, Choice::Stored);
            }
            pushed.push(item);
        }
        let mut label = label;
        for item in &pushed {
            self.out
                .fwd
                .line(&format!("{label}call dfort_push({item})"));
            label.clear();
        }
        if !branches.is_empty() {
            // The statement may jump (ERR=, END=, EOR=): the basic block
            // it ends is left before it runs, after what it records.
            let own_work = !rev.is_empty() || !pushed.is_empty();
            self.leave_before_jumping_io(id, own_work, &mut label);
        }
        self.out.fwd.line(&format!("{label}{text}"));
        for item in pushed.iter().rev() {
            rev.push(Line::Plain(format!("call dfort_pop({item})")));
        }
        rev
    }

    /// The lines that reset the adjoint of READ item `item` where a
    /// derivative may be nonzero after it; `defined` are the variables
    /// the whole list defines.
    fn reset_item(
        &mut self,
        id: StmtId,
        span: Span,
        item: &Expr,
        defined: &[SymbolId],
        out: &mut Vec<String>,
    ) {
        let inp = self.inp;
        let unit = &inp.unit;
        if let ExprKind::ImpliedDo { items, var, bounds } = &item.kind {
            // Its own variable is an index the replay sets.
            let outer: Vec<SymbolId> = defined.iter().copied().filter(|d| d != var).collect();
            let mut body = Vec::new();
            for it in items {
                self.reset_item(id, span, it, &outer, &mut body);
            }
            if !body.is_empty() {
                let b: Vec<String> = bounds.iter().map(|e| print(unit, e)).collect();
                out.push(format!("do {} = {}", unit.symbol(*var).name, b.join(", ")));
                out.extend(body.into_iter().map(|l| format!("  {l}")));
                out.push("end do".into());
            }
            return;
        }
        let Some((t, _)) = target(item) else { return };
        if !(inp.has_adjoint(t) && inp.act.useful_after(id, t)) {
            return;
        }
        let mut indices = dfort_ir::bitset::BitSet::default();
        dfort_ir::dp::index_vars(unit, item, &mut indices);
        if let Some(&d) = defined.iter().find(|d| indices.contains_id(**d)) {
            self.out.refuse(
                span,
                format!(
                    "this READ defines `{}`, an index of `{}`, whose derivative it resets: read them in two statements",
                    unit.symbol(d).name,
                    unit.symbol(t).name
                ),
            );
        }
        if let Some(b) = inp.bref(item) {
            let zero = crate::derived::zero(inp.program, unit, item, "_b");
            out.push(format!("{b} = {zero}"));
        }
    }
}
