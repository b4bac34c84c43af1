//! A counted DO loop checkpointed with a binomial schedule, as
//! [`dfort_analysis::binomial`] decided it (`Reversal::Binomial`).
//!
//! Forward sweep: the loop's start, stride and number of steps go into
//! `dfort_clo<c>`, `dfort_cst<c>`, `dfort_cn<c>` and are pushed, then the
//! entry snapshot (what the loop writes and what it reads that may
//! change, the loop-carried state last, on top), then the loop runs
//! without recording anything. Reverse sweep: the entry snapshot and the
//! three integers are popped — the state is the loop's entry state — and
//! the entry snapshot pushed again, the carried state on top (snapshot 0
//! of the schedule); the runtime's `dfort_ckp_next` then says what to do —
//! advance (run steps without recording), take a snapshot (push the
//! carried state), restore the latest one (pop it and push it again),
//! drop it (pop), or reverse one step (run it with recording, then its
//! reverse sweep) — until it is done; the entry snapshot is popped last,
//! so the code before the loop sees the state it left.
//!
//! Contract: the body is generated once, as for any loop; the copies that
//! run it again are its forward-sweep text, with statement labels taken
//! off (a label is defined once per unit; FORMAT references keep the
//! original's) and, for the steps that run without recording, every push
//! taken out (pushes are the generator's `call dfort_push…` lines).

use super::dispatch::Gen;
use super::sweep::{emit, Line};
use crate::fortran::Writer;
use crate::trace::Reversed;
use dfort_analysis::binomial::Binomial;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

/// The reverse sweep of one checkpointed loop.
pub(super) struct Checkpointed {
    /// The loop's number among the routine's loops.
    c: usize,
    index: String,
    snapshots: u32,
    carried: Vec<String>,
    entry: Vec<String>,
    /// One step without recording (labels off).
    advance: String,
    /// One step with recording (labels off).
    taped: String,
    /// The reverse sweep of one step.
    body: Vec<Line>,
}

impl Gen<'_> {
    /// The forward sweep of checkpointed loop `id` (`do var = start, end,
    /// step` over `body`); returns its reverse sweep.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn binomial_do(
        &mut self,
        id: StmtId,
        var: SymbolId,
        start: &Expr,
        end: &Expr,
        step: Option<&Expr>,
        body: &[StmtId],
        label: String,
        how: &Binomial,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let index = unit.symbol(var).name.clone();
        let (s, e) = (print(unit, start), print(unit, end));
        let stp = step.map(|x| print(unit, x)).unwrap_or_else(|| "1".into());
        self.out.counters += 1;
        let c = self.out.counters;
        self.out.binomials.push(c);
        self.out.trace.construct(id, Reversed::Binomial);
        let names = |ids: &[SymbolId]| -> Vec<String> {
            ids.iter().map(|v| unit.symbol(*v).name.clone()).collect()
        };
        let mut carried = names(&how.carried);
        let mut entry = names(&how.entry);
        for (keys, into) in [
            (&how.hidden_carried, &mut carried),
            (&how.hidden_entry, &mut entry),
        ] {
            into.extend(keys.iter().filter_map(|k| self.hidden_global(k)));
        }
        let mut pre = vec![
            format!("dfort_clo{c} = {s}"),
            format!("dfort_cst{c} = {stp}"),
            format!("dfort_cn{c} = max(0, ({e} - dfort_clo{c} + dfort_cst{c}) / dfort_cst{c})"),
        ];
        for v in ["clo", "cst", "cn"] {
            pre.push(format!("call dfort_push(dfort_{v}{c})"));
        }
        pre.extend(entry.iter().map(|v| format!("call dfort_push({v})")));
        pre.extend(carried.iter().map(|v| format!("call dfort_push({v})")));
        self.out.labelled_lines(&label, &pre);
        // The body, once: its forward sweep into a writer of its own.
        let outer = std::mem::take(&mut self.out.fwd);
        self.out.replayed.push(var);
        self.out.loop_depth += 1;
        let plan = inp.plans.get(&id).copied();
        let body_rev = match plan {
            Some(p) => self.planned_body(p),
            None => self.block(body),
        };
        self.out.loop_depth -= 1;
        self.out.replayed.pop();
        let step_text = std::mem::replace(&mut self.out.fwd, outer).finish();
        let primal = without_pushes(&step_text);
        self.out
            .fwd
            .line(&format!("do {index} = dfort_clo{c}, {e}, dfort_cst{c}"));
        self.out.fwd.indent();
        self.out.fwd.verbatim(&primal);
        self.out.fwd.dedent();
        self.out.fwd.line("end do");
        vec![Line::Binomial(Box::new(Checkpointed {
            c,
            index,
            snapshots: how.snapshots,
            carried,
            entry,
            advance: without_labels(&primal),
            taped: without_labels(&step_text),
            body: body_rev,
        }))]
    }
}

impl Checkpointed {
    /// Writes the reverse sweep.
    pub(super) fn emit(&self, w: &mut Writer) {
        let c = self.c;
        let pop_all = |w: &mut Writer, vars: &[String]| {
            for v in vars.iter().rev() {
                w.line(&format!("call dfort_pop({v})"));
            }
        };
        let push_all = |w: &mut Writer, vars: &[String]| {
            for v in vars {
                w.line(&format!("call dfort_push({v})"));
            }
        };
        let step_at = |w: &mut Writer, k: &str| {
            w.line(&format!(
                "{} = dfort_clo{c} + {k} * dfort_cst{c}",
                self.index
            ));
        };
        w.line(&format!(
            "! binomial checkpointing: {} snapshots of the loop-carried state",
            self.snapshots
        ));
        // The state at the loop's entry, the bounds under it; the entry
        // snapshot goes back on the tape for the end, the carried state
        // on top of it as the schedule's first snapshot.
        pop_all(w, &self.carried);
        pop_all(w, &self.entry);
        for v in ["cn", "cst", "clo"] {
            w.line(&format!("call dfort_pop(dfort_{v}{c})"));
        }
        push_all(w, &self.entry);
        push_all(w, &self.carried);
        w.line(&format!(
            "call dfort_ckp_start(dfort_plan{c}, dfort_cn{c}, {})",
            self.snapshots
        ));
        w.line("do");
        w.indent();
        w.line(&format!(
            "call dfort_ckp_next(dfort_plan{c}, dfort_act{c}, dfort_from{c}, dfort_to{c})"
        ));
        w.line(&format!("if (dfort_act{c} == 0) exit"));
        w.line(&format!("select case (dfort_act{c})"));
        w.line("case (1)");
        w.indent();
        w.line(&format!("do dfort_k{c} = dfort_from{c}, dfort_to{c} - 1"));
        w.indent();
        step_at(w, &format!("dfort_k{c}"));
        w.verbatim(&self.advance);
        w.dedent();
        w.line("end do");
        w.dedent();
        w.line("case (2)");
        w.indent();
        push_all(w, &self.carried);
        w.dedent();
        w.line("case (3)");
        w.indent();
        pop_all(w, &self.carried);
        push_all(w, &self.carried);
        w.dedent();
        w.line("case (4)");
        w.indent();
        pop_all(w, &self.carried);
        w.dedent();
        w.line("case default");
        w.indent();
        step_at(w, &format!("dfort_from{c}"));
        w.verbatim(&self.taped);
        emit(w, &self.body);
        w.dedent();
        w.line("end select");
        w.dedent();
        w.line("end do");
        pop_all(w, &self.carried);
        pop_all(w, &self.entry);
    }
}

/// The statements of forward-sweep text, each as its physical lines (a
/// statement continues while a line ends with `&`).
fn statements(text: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    let mut open = false;
    for l in text.lines() {
        match out.last_mut() {
            Some(last) if open => last.push(l),
            _ => out.push(vec![l]),
        }
        open = l.trim_end().ends_with('&') && !l.trim_start().starts_with('!');
    }
    out
}

/// A line's indentation, its label (`"10 "`, or empty) and the rest.
fn split_label(line: &str) -> (&str, &str, &str) {
    let body = line.trim_start();
    let pad = &line[..line.len() - body.len()];
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && body[digits..].starts_with(' ') {
        (pad, &body[..=digits], body[digits + 1..].trim_start())
    } else {
        (pad, "", body)
    }
}

/// Forward-sweep text without its pushes: a labelled push leaves its
/// label on a `continue`.
fn without_pushes(text: &str) -> String {
    let mut out = String::new();
    for st in statements(text) {
        let (pad, label, rest) = split_label(st[0]);
        if rest.starts_with("call dfort_push") {
            if !label.is_empty() {
                out.push_str(&format!("{pad}{label}continue\n"));
            }
            continue;
        }
        for l in st {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Forward-sweep text without statement labels.
fn without_labels(text: &str) -> String {
    let mut out = String::new();
    for st in statements(text) {
        let (pad, _, rest) = split_label(st[0]);
        out.push_str(pad);
        out.push_str(rest);
        out.push('\n');
        for l in &st[1..] {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_and_labels_come_off_whole_statements() {
        let text = "x = 1\ncall dfort_push(a, &\n    & b)\n10 call dfort_push(y)\n  20 y = x &\n    & + 1\n";
        assert_eq!(
            without_pushes(text),
            "x = 1\n10 continue\n  20 y = x &\n    & + 1\n"
        );
        assert_eq!(
            without_labels(text),
            "x = 1\ncall dfort_push(a, &\n    & b)\ncall dfort_push(y)\n  y = x &\n    & + 1\n"
        );
    }
}
