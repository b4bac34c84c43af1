//! Binomial checkpointing of a marked time loop (Griewank 1992, and
//! Griewank & Walther's Revolve, 2000): the adjoint of a counted DO loop
//! marked `!$ad binomial-ckp(nsnap)` runs its steps again from at most
//! `nsnap` snapshots instead of recording every step.
//!
//! Contract: [`marks`] finds, for each `binomial-ckp` directive of a
//! unit, the statement right after it, which must be a counted DO loop;
//! [`decide`] says what the loop's snapshots hold, or why the loop cannot
//! be checkpointed (the reason names the statement). The forward sweep
//! saves, at the loop's entry, everything the loop writes plus what it
//! reads that anything after it may change ([`Binomial::entry`] and
//! [`Binomial::carried`]), then runs the loop without recording it. The
//! reverse sweep restores that state and follows the schedule: a
//! snapshot holds only the loop-carried state — what the loop writes that
//! a step may read before writing it ([`Binomial::carried`], read before
//! a definite whole-variable write on some path through one step) — and
//! one step at a time is run with recording and reversed at once; at the
//! end the entry state is restored. Globals the unit does not declare
//! that the loop's calls change (or read, when a call of the unit changes
//! them) are saved with the state, under names the adjoint gives them
//! ([`crate::checkpoint::savable_globals`]). The schedule ([`split`]) is the
//! optimal one of the recursion "advance j steps, take a snapshot,
//! reverse the rest with one snapshot fewer, then the first j steps with
//! all of them": j is chosen so that the number of steps run again is
//! [`recomputed_steps`] `t(n, s) = r·n − β(s+1, r−1)`, with
//! `β(s, r) = C(s+r, s)` and `r` the least repetition number with
//! `n ≤ β(s, r)` (Griewank's bound, reached). The runtime
//! (`dfort_ckp_next` in `dfort_stack.f90`) applies the same rule.
//! Analysis only: no I/O, no panics on user input.

use crate::checkpoint::savable_globals;
use crate::dep::{global_key, GlobalKey};
use crate::effects::{stmt_effects, LocalEffects, ProgramEffects};
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{bound_vars, constant_int, is_variable, target};
use dfort_ir::runtime::tape_limit;
pub use dfort_ir::schedule::{beta, recomputed_steps, repetitions, split};
use dfort_ir::*;
use dfort_syntax::ad_directives::BinomialCkp;
use std::collections::BTreeSet;

/// What the checkpointed adjoint of one loop saves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binomial {
    /// How many snapshots the schedule holds at once (the entry state
    /// counts as one).
    pub snapshots: u32,
    /// The loop's index.
    pub index: SymbolId,
    /// What each snapshot holds: the loop-carried state.
    pub carried: Vec<SymbolId>,
    /// What the entry snapshot holds besides the carried state: the rest
    /// of what the loop writes, and what it reads that may change after
    /// it; restored when the loop's adjoint ends.
    pub entry: Vec<SymbolId>,
    /// Globals the unit does not declare that the loop's calls change
    /// (held by every snapshot), and that they read and a call of the unit
    /// changes (held by the entry snapshot): module variables and members
    /// of COMMON blocks, which the adjoint brings in under names of its
    /// own.
    pub hidden_carried: Vec<GlobalKey>,
    pub hidden_entry: Vec<GlobalKey>,
    /// `hidden_carried` in words (`member 1 of COMMON /forcing/`).
    pub hidden_described: Vec<String>,
    /// The bytes of one snapshot, when every array in it has constant
    /// bounds (globals the unit does not declare left out).
    pub snapshot_bytes: Option<u64>,
    /// The number of steps, when the loop's bounds are constants.
    pub steps: Option<u64>,
}

impl Binomial {
    /// Steps run again by the reverse sweep for `n` steps.
    pub fn recomputed(&self, n: u64) -> u64 {
        recomputed_steps(n, u64::from(self.snapshots))
    }
}

/// A `binomial-ckp` directive of a unit and the loop it marks.
#[derive(Clone, Debug)]
pub struct Mark {
    pub directive: Span,
    /// The statement right after the directive.
    pub stmt: Option<StmtId>,
    /// The number of snapshots, or why the directive asks for none.
    pub request: Result<BinomialCkp, String>,
}

/// The `binomial-ckp` directives of `unit`, each with the statement that
/// follows it.
pub fn marks(unit: &Unit) -> Vec<Mark> {
    unit.directives
        .iter()
        .filter(|d| d.name == "binomial-ckp")
        .map(|d| {
            let after = d.span.range.end;
            let stmt = unit
                .stmts
                .iter()
                .filter(|s| s.span.file == d.span.file && s.span.range.start >= after)
                .min_by_key(|s| (s.span.range.start, std::cmp::Reverse(s.span.range.end)))
                .map(|s| s.id);
            Mark {
                directive: d.span,
                stmt,
                request: BinomialCkp::from_args(&d.args),
            }
        })
        .collect()
}

/// What the checkpointed adjoint of the DO loop `id` of `unit` (a
/// prepared unit of `program`) saves with `snapshots` snapshots, or why
/// it cannot be checkpointed.
pub fn decide(
    program: &Program,
    unit: &Unit,
    id: StmtId,
    snapshots: u32,
    effects: &ProgramEffects,
) -> Result<Binomial, String> {
    if !unit.cfg.structured {
        return Err(format!(
            "`{}` has jumps (GO TO, arithmetic IF, or an EXIT, CYCLE or RETURN dfort cannot \
             structure): its adjoint is reversed by basic blocks, and its loops cannot be \
             checkpointed",
            unit.name
        ));
    }
    let st = unit.stmt(id);
    let StmtKind::Do {
        control:
            DoControl::Counted {
                var,
                start,
                end,
                step,
            },
        body,
        ..
    } = &st.kind
    else {
        return Err(
            "the statement after `binomial-ckp` is not a counted DO loop (a DO WHILE, a DO \
             without control, or a loop left by EXIT): the schedule needs the number of steps \
             when the loop starts"
                .into(),
        );
    };
    let mut nested = Vec::new();
    dfort_ir::queries::nested_statements(unit, body, &mut nested);
    let mut writes = BitSet::default();
    let mut reads = BitSet::default();
    writes.insert_id(*var);
    for &s in &nested {
        let inner = unit.stmt(s);
        refuse_statement(inner)?;
        let mut fx = LocalEffects::default();
        stmt_effects(program, unit, inner, effects, &mut fx);
        writes.union_with(&fx.writes);
        reads.union_with(&fx.reads);
    }
    let mut bounds = BitSet::default();
    bound_vars(unit, start, end, step.as_deref(), &mut bounds);
    if let Some(b) = bounds.ids::<SymbolId>().find(|b| writes.contains_id(*b)) {
        return Err(format!(
            "the loop changes `{}`, which its bounds read: the schedule needs the number of \
             steps when the loop starts",
            unit.symbol(b).name
        ));
    }
    let (hidden_carried, hidden_entry) = hidden_globals(program, unit, &nested, effects)?;
    // Everything the steps write, and what they read that may change from
    // the loop on (in it, or after it).
    let from_loop = crate::effects::written_from(program, unit, effects);
    let mut entry = writes.clone();
    let mut changing = reads.clone();
    if let Some(w) = from_loop.get(id) {
        changing.intersect_with(w);
    }
    entry.union_with(&changing);
    // Loop-carried: written by a step, and read by a step before a
    // definite write.
    let mut defined = BitSet::default();
    defined.insert_id(*var);
    let mut exposed = BitSet::default();
    upward_exposed(program, unit, effects, body, &mut defined, &mut exposed);
    let mut carried = writes;
    carried.intersect_with(&exposed);
    let keep = |s: &SymbolId| is_variable(unit, *s) && !unit.symbol(*s).attrs.parameter;
    let carried: Vec<SymbolId> = carried.ids::<SymbolId>().filter(keep).collect();
    let entry: Vec<SymbolId> = entry
        .ids::<SymbolId>()
        .filter(keep)
        .filter(|s| !carried.contains(s))
        .collect();
    for &s in carried.iter().chain(&entry) {
        let sym = unit.symbol(s);
        if sym.attrs.pointer || sym.attrs.allocatable {
            return Err(format!(
                "the snapshots would hold `{}`, which is {}: dfort saves only variables whose \
                 storage does not change",
                sym.name,
                if sym.attrs.pointer {
                    "a pointer"
                } else {
                    "allocatable"
                }
            ));
        }
        if let Some(limit) = tape_limit(unit, s, true) {
            return Err(format!(
                "the snapshots would hold `{}`: {}",
                sym.name,
                limit.describe(unit, s)
            ));
        }
    }
    let snapshot_bytes = carried
        .iter()
        .map(|s| variable_bytes(unit, *s))
        .sum::<Option<u64>>();
    let steps = (|| {
        let (a, b) = (constant_int(unit, start, 0)?, constant_int(unit, end, 0)?);
        let c = match step {
            Some(s) => constant_int(unit, s, 0)?,
            None => 1,
        };
        (c != 0).then(|| u64::try_from(((b - a + c) / c).max(0)).unwrap_or(0))
    })();
    Ok(Binomial {
        snapshots,
        index: *var,
        carried,
        entry,
        hidden_described: hidden_carried.iter().map(|k| k.describe(program)).collect(),
        hidden_carried,
        hidden_entry,
        snapshot_bytes,
        steps,
    })
}

/// Why a statement cannot run again in a checkpointed loop, if it cannot.
fn refuse_statement(st: &Stmt) -> Result<(), String> {
    let why = match &st.kind {
        StmtKind::Io { writes, .. } if !writes.is_empty() => {
            "a READ: its records would be read again when the steps run again"
        }
        StmtKind::Allocate { .. } => {
            "an ALLOCATE or DEALLOCATE: the snapshots do not hold allocations"
        }
        StmtKind::PointerAssign { .. } | StmtKind::Nullify { .. } => {
            "a pointer association: the snapshots do not hold associations"
        }
        StmtKind::Do { name: Some(n), .. } => {
            return Err(format!(
                "the loop holds the named DO `{n}`: the adjoint writes the step twice, and a \
                 construct name may appear only once"
            ))
        }
        _ => return Ok(()),
    };
    Err(format!("the loop holds {why}"))
}

/// The globals the loop's calls touch that `unit` does not declare, which
/// the snapshots must hold too: (carried) what a call in the loop may
/// change, and (entry) what one reads that a call of the unit may change;
/// or why one of them cannot be saved.
fn hidden_globals(
    program: &Program,
    unit: &Unit,
    nested: &[StmtId],
    effects: &ProgramEffects,
) -> Result<(Vec<GlobalKey>, Vec<GlobalKey>), String> {
    let declared: BTreeSet<GlobalKey> = unit
        .symbols
        .indices()
        .filter_map(|s| global_key(program, unit, s))
        .collect();
    let callees = |ids: &mut dyn Iterator<Item = StmtId>| -> Vec<UnitId> {
        ids.flat_map(|id| dfort_ir::queries::called_units(&unit.stmt(id).kind))
            .collect()
    };
    let inside = callees(&mut nested.iter().copied());
    let everywhere = callees(&mut unit.stmts.iter().map(|s| s.id));
    let changed_anywhere: BTreeSet<&GlobalKey> = everywhere
        .iter()
        .filter_map(|c| effects.get(*c))
        .flat_map(|e| e.written_globals.iter())
        .collect();
    let written: BTreeSet<&GlobalKey> = inside
        .iter()
        .filter_map(|c| effects.get(*c))
        .flat_map(|e| e.written_globals.iter())
        .collect();
    let read_changing: BTreeSet<&GlobalKey> = inside
        .iter()
        .filter_map(|c| effects.get(*c))
        .flat_map(|e| e.read_globals.iter())
        .filter(|k| changed_anywhere.contains(k) && !written.contains(k))
        .collect();
    let mut problems = Vec::new();
    // SAVE'd state changed in a checkpointed loop is refused up front
    // ([`crate::refusals`]): none is shared here.
    let none = BTreeSet::new();
    let carried = savable_globals(program, written, &declared, &none, &mut problems);
    let entry = savable_globals(program, read_changing, &declared, &none, &mut problems);
    if let Some(p) = problems.first() {
        return Err(match p {
            crate::checkpoint::Problem::Undeclared(k) => format!(
                "its snapshots would hold {}, which `{}` does not declare and dfort cannot \
                 bring in (declare it in `{}`)",
                k.describe(program),
                unit.name,
                unit.name
            ),
            _ => format!(
                "its snapshots would hold {}",
                p.describe(program, unit, "a procedure the loop calls", None)
            ),
        });
    }
    Ok((carried, entry))
}

/// Adds to `out` what the statements `ids` read before a definite whole
/// write on some path (`defined`: written on every path so far; updated).
fn upward_exposed(
    program: &Program,
    unit: &Unit,
    effects: &ProgramEffects,
    ids: &[StmtId],
    defined: &mut BitSet,
    out: &mut BitSet,
) {
    for &id in ids {
        let st = unit.stmt(id);
        let mut fx = LocalEffects::default();
        stmt_effects(program, unit, st, effects, &mut fx);
        let mut r = fx.reads;
        r.subtract(defined);
        out.union_with(&r);
        let mut branches = |bodies: Vec<&[StmtId]>, complete: bool, defined: &mut BitSet| {
            let mut all: Option<BitSet> = (!complete).then(|| defined.clone());
            for b in bodies {
                let mut d = defined.clone();
                upward_exposed(program, unit, effects, b, &mut d, out);
                all = Some(match all {
                    None => d,
                    Some(mut a) => {
                        a.intersect_with(&d);
                        a
                    }
                });
            }
            if let Some(a) = all {
                *defined = a;
            }
        };
        match &st.kind {
            StmtKind::Assign { lhs, .. } => {
                if let Some((t, true)) = target(lhs) {
                    defined.insert_id(t);
                }
            }
            StmtKind::If {
                arms, else_body, ..
            } => {
                let mut bodies: Vec<&[StmtId]> = arms.iter().map(|a| a.body.as_slice()).collect();
                bodies.extend(else_body.as_deref());
                branches(bodies, else_body.is_some(), defined);
            }
            StmtKind::SelectCase { cases, .. } => {
                let bodies: Vec<&[StmtId]> = cases.iter().map(|c| c.body.as_slice()).collect();
                branches(bodies, cases.iter().any(|c| c.default), defined);
            }
            StmtKind::Do { control, body, .. } => {
                let mut d = defined.clone();
                if let DoControl::Counted { var, .. } = control {
                    d.insert_id(*var);
                }
                upward_exposed(program, unit, effects, body, &mut d, out);
                if let DoControl::Counted { var, .. } = control {
                    defined.insert_id(*var);
                }
            }
            _ => {
                for b in st.kind.blocks() {
                    let mut d = defined.clone();
                    upward_exposed(program, unit, effects, b, &mut d, out);
                }
            }
        }
    }
}

/// The bytes variable `s` takes, when its type and bounds are constants.
fn variable_bytes(unit: &Unit, s: SymbolId) -> Option<u64> {
    let sym = unit.symbol(s);
    let elem: u64 = match sym.ty.base {
        BaseType::Real | BaseType::Integer | BaseType::Logical => {
            u64::from(sym.ty.kind.unwrap_or(4))
        }
        BaseType::Complex => 2 * u64::from(sym.ty.kind.unwrap_or(4)),
        BaseType::Character => sym
            .ty
            .len
            .as_deref()
            .map(|l| l.trim_start_matches('*').trim_matches(['(', ')']).trim())
            .map_or(Some(1), |l| l.parse().ok())?,
        _ => return None,
    };
    let mut n = elem;
    for d in &sym.dims {
        let lo = match &d.lower {
            Some(e) => constant_int(unit, e, 0)?,
            None => 1,
        };
        let hi = constant_int(unit, d.upper.as_ref()?, 0)?;
        n = n.checked_mul(u64::try_from((hi - lo + 1).max(0)).ok()?)?;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The optimum by exhaustive search over the first snapshot.
    fn optimum(n: u64, s: u64, memo: &mut std::collections::HashMap<(u64, u64), u64>) -> u64 {
        if n <= 1 {
            return 0;
        }
        if s == 1 {
            return n * (n - 1) / 2;
        }
        if let Some(&v) = memo.get(&(n, s)) {
            return v;
        }
        let v = (1..n)
            .map(|j| j + optimum(n - j, s - 1, memo) + optimum(j, s, memo))
            .min()
            .unwrap_or(0);
        memo.insert((n, s), v);
        v
    }

    /// The steps the schedule of [`split`] runs again.
    fn scheduled(n: u64, s: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        if s == 1 {
            return n * (n - 1) / 2;
        }
        let j = split(n, s);
        j + scheduled(n - j, s - 1) + scheduled(j, s)
    }

    #[test]
    fn the_split_reaches_the_binomial_optimum() {
        let mut memo = std::collections::HashMap::new();
        for s in 1..=6 {
            for n in 1..=150 {
                let best = optimum(n, s, &mut memo);
                assert_eq!(recomputed_steps(n, s), best, "closed form, n={n} s={s}");
                assert_eq!(scheduled(n, s), best, "schedule, n={n} s={s}");
            }
        }
    }

    #[test]
    fn griewanks_examples() {
        // One snapshot: every step runs again from the start.
        assert_eq!(recomputed_steps(10, 1), 45);
        // n = β(s, r) steps: each runs r times again at most.
        assert_eq!(beta(3, 2), 10);
        assert_eq!(recomputed_steps(10, 3), 2 * 10 - beta(4, 1));
        // 1,000 steps with 20 snapshots: 3 repetitions (231 < 1000 <= 1771).
        assert_eq!(repetitions(1000, 20), 3);
        assert_eq!(recomputed_steps(1000, 20), 3000 - beta(21, 2));
        assert_eq!(recomputed_steps(1000, 20), 2747);
    }
}
