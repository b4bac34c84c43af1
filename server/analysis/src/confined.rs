//! SAVE'd state that no derivative reads (paper 000 §4.1–4.2: a variable
//! none of whose values flows into an active one is not useful), so that
//! the adjoint may run its procedure again with another value of it — a
//! counter of the warnings written, a timer, an error count.
//!
//! Contract: [`reaches_derivative`] closes the forward influence of the
//! given SAVE'd locals over the units given (the root's call tree),
//! flow- and context-insensitively, to a fixpoint: a statement is
//! influenced when it names an influenced variable (or references a
//! function whose result is influenced) or runs under an influenced condition, bound or selector;
//! every variable an influenced statement writes is influenced — locals,
//! arguments and globals (COMMON members, module, host and SAVE'd
//! variables, also those its callees write: a call whose actuals read an
//! influenced value is influenced as a whole, so that a procedure's own
//! statements are influenced only through globals, whatever its caller
//! passes); a formal the callee changes from an influenced value
//! influences the actual; an influenced jump (GO TO, EXIT, CYCLE, RETURN, ERR=/END=)
//! puts every statement of its unit under influence. It answers whether
//! an influenced variable has a derivative. Syntactic and conservative.

use crate::dep::{global_key, GlobalKey};
use crate::effects::{stmt_effects, LocalEffects, ProgramEffects};
use dfort_ir::bitset::BitSet;
use dfort_ir::chunk_vec::ChunkVec;
use dfort_ir::dp::vars;
use dfort_ir::queries::formal_index;
use dfort_ir::*;
use std::collections::{BTreeSet, HashMap};

/// What may carry a derivative, by unit (the root's derivative set).
pub struct WithDerivative<'d> {
    pub symbols: &'d ChunkVec<UnitId, BitSet>,
    pub commons: &'d BTreeSet<(String, u32)>,
    pub module_vars: &'d BTreeSet<(UnitId, SymbolId)>,
}

/// Whether the values of the SAVE'd locals `seeds` (procedure, symbol)
/// may reach a variable with a derivative in `units` (see the module's
/// contract).
pub fn reaches_derivative(
    program: &Program,
    effects: &ProgramEffects,
    units: &[UnitId],
    seeds: &[(UnitId, SymbolId)],
    with_d: &WithDerivative,
) -> bool {
    let mut named: HashMap<GlobalKey, Vec<(UnitId, SymbolId)>> = HashMap::new();
    let mut views = HashMap::new();
    for &u in units {
        let unit = program.unit(u);
        for s in unit.symbols.indices() {
            if let Some(k) = global_key(program, unit, s) {
                named.entry(k).or_default().push((u, s));
            }
        }
        views.insert(u, BitSet::new(unit.symbols.len()));
    }
    let mut flow = Flow {
        program,
        effects,
        globals: BTreeSet::new(),
        named,
        views,
        jumped: BTreeSet::new(),
        rw: HashMap::new(),
        grew: false,
    };
    for &(u, s) in seeds {
        flow.influence(u, s);
    }
    loop {
        flow.grew = false;
        for &u in units {
            let unit = program.unit(u);
            let controlled = flow.jumped.contains(&u);
            flow.spread(unit, &unit.body, controlled);
        }
        if !flow.grew {
            break;
        }
    }
    let global_d = flow.globals.iter().any(|k| match k {
        GlobalKey::Common { block, index } => with_d.commons.contains(&(block.clone(), *index)),
        GlobalKey::Shared { unit, symbol } => with_d.module_vars.contains(&(*unit, *symbol)),
    });
    global_d
        || units.iter().any(|&u| {
            let d = with_d.symbols.get(u);
            flow.views
                .get(&u)
                .is_some_and(|v| d.is_some_and(|d| d.intersects(v)))
        })
}

/// The influence closed so far.
struct Flow<'p> {
    program: &'p Program,
    effects: &'p ProgramEffects,
    /// Influenced globals.
    globals: BTreeSet<GlobalKey>,
    /// The symbols that name each global, by unit.
    named: HashMap<GlobalKey, Vec<(UnitId, SymbolId)>>,
    /// Influenced symbols of each unit: its own, and the globals it names.
    views: HashMap<UnitId, BitSet>,
    /// Units with an influenced jump: all their statements are influenced.
    jumped: BTreeSet<UnitId>,
    /// Each statement's reads and writes, computed once.
    rw: HashMap<(UnitId, StmtId), LocalEffects>,
    /// Whether this round influenced something new.
    grew: bool,
}

impl Flow<'_> {
    /// Marks symbol `s` of unit `u` influenced (a global: everywhere).
    fn influence(&mut self, u: UnitId, s: SymbolId) {
        let unit = self.program.unit(u);
        match global_key(self.program, unit, s) {
            Some(k) => self.influence_global(k),
            None => {
                if let Some(v) = self.views.get_mut(&u) {
                    self.grew |= v.insert_id(s);
                }
            }
        }
    }

    fn influence_global(&mut self, k: GlobalKey) {
        if self.globals.contains(&k) {
            return;
        }
        for (u, s) in self.named.get(&k).into_iter().flatten() {
            if let Some(v) = self.views.get_mut(u) {
                v.insert_id(*s);
            }
        }
        self.globals.insert(k);
        self.grew = true;
    }

    fn influenced(&self, u: UnitId, s: SymbolId) -> bool {
        self.views.get(&u).is_some_and(|v| v.contains_id(s))
    }

    fn spread(&mut self, unit: &Unit, ids: &[StmtId], controlled: bool) {
        for &id in ids {
            let st = unit.stmt(id);
            // What the statement names: a callee's own reads of globals
            // are followed in the callee.
            let mut named = BitSet::new(unit.symbols.len());
            for e in st.kind.exprs() {
                vars(unit, e, &mut named);
            }
            crate::aliases::close(unit, &mut named);
            let reads_influenced = self
                .views
                .get(&unit.id)
                .is_some_and(|v| named.intersects(v));
            let callees = callees(st);
            let touched = controlled
                || reads_influenced
                || callees.iter().any(|(c, _)| self.result_influenced(*c));
            for (c, args) in &callees {
                self.bind(unit, *c, args);
            }
            if touched {
                let (program, effects) = (self.program, self.effects);
                let rw = self.rw.entry((unit.id, id)).or_insert_with(|| {
                    let mut rw = LocalEffects::default();
                    stmt_effects(program, unit, st, effects, &mut rw);
                    rw
                });
                let writes: Vec<SymbolId> = rw.writes.ids().collect();
                for w in writes {
                    self.influence(unit.id, w);
                }
                for (c, _) in &callees {
                    let written: Vec<GlobalKey> =
                        self.effects[*c].written_globals.iter().cloned().collect();
                    for k in written {
                        self.influence_global(k);
                    }
                }
                if jumps(&st.kind) && self.jumped.insert(unit.id) {
                    self.grew = true;
                }
            }
            for b in st.kind.blocks() {
                self.spread(unit, b, touched);
            }
        }
    }

    /// Whether the result of `c`, a function, is influenced.
    fn result_influenced(&self, c: UnitId) -> bool {
        self.program
            .unit(c)
            .result
            .is_some_and(|r| self.influenced(c, r))
    }

    /// The actuals, in `unit`'s call of `c` with `args`, of the formals
    /// `c` may change from an influenced value: influenced.
    fn bind(&mut self, unit: &Unit, c: UnitId, args: &[Arg]) {
        let callee = self.program.unit(c);
        for (pos, a) in args.iter().enumerate() {
            let Some(k) = formal_index(callee, pos, a) else {
                continue;
            };
            let out = callee.args.get(k).is_some_and(|&f| self.influenced(c, f))
                && self.effects[c].written_formals.contains(&(k as u32));
            if let (true, Some((t, _))) = (out, dfort_ir::dp::target(&a.value)) {
                self.influence(unit.id, t);
            }
        }
    }
}

/// The procedures with source `st` calls or references, with their
/// actual arguments.
fn callees(st: &Stmt) -> Vec<(UnitId, &[Arg])> {
    let mut out = Vec::new();
    if let StmtKind::Call {
        target: CallTarget::Unit(c),
        args,
        ..
    } = &st.kind
    {
        out.push((*c, args.as_slice()));
    }
    for e in st.kind.exprs() {
        out.extend(dfort_ir::queries::function_references(e));
    }
    out
}

/// Whether `k` may transfer control elsewhere than to the next statement:
/// a jump, or I/O with ERR=, END= or EOR=.
fn jumps(k: &StmtKind) -> bool {
    k.is_jump() || matches!(k, StmtKind::Io { branches, .. } if !branches.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `var` of `unit` reaches `x` or `y` of any unit (the
    /// variables given a derivative here).
    fn reaches(src: &str, unit: &str, var: &str) -> bool {
        let p = crate::test_support::program(src);
        let effects = crate::effects::all(&p);
        let symbols: ChunkVec<UnitId, BitSet> = ChunkVec::from_fn(p.units.len(), |i| {
            let u = &p.units[i];
            let mut b = BitSet::new(u.symbols.len());
            for i in u.symbols.indices() {
                if ["x", "y"].contains(&u.symbol(i).name.as_str()) {
                    b.insert_id(i);
                }
            }
            b
        });
        let u = p.all_units().find(|u| u.name == unit).expect("unit");
        let s = u
            .symbols
            .indices()
            .find(|&i| u.symbol(i).name == var)
            .expect("symbol");
        let units: Vec<UnitId> = p.all_units().map(|u| u.id).collect();
        let none = BTreeSet::new();
        let with_d = WithDerivative {
            symbols: &symbols,
            commons: &none,
            module_vars: &BTreeSet::new(),
        };
        reaches_derivative(&p, &effects, &units, &[(u.id, s)], &with_d)
    }

    const WARN: &str = "
subroutine warn(x, y)
  real(8), intent(in) :: x
  real(8), intent(inout) :: y
  integer, save :: nwarn = 0
  integer :: left
  character(len=40) :: msg
  if (x > 10d0 .and. nwarn < 3) then
    nwarn = nwarn + 1
    left = 3 - nwarn
    write(msg, '(a,i2)') 'left ', left
    call say(msg)
  end if
  y = y + x*x
end subroutine
subroutine say(m)
  character(len=*), intent(in) :: m
  integer :: nerr
  common /io/ nerr
  print *, trim(m)
  nerr = nerr + 1
end subroutine
subroutine head(x, y)
  real(8), intent(in) :: x
  real(8), intent(inout) :: y
  call warn(x, y)
  y = y*x
end subroutine
";

    #[test]
    fn a_warning_counter_reaches_no_derivative() {
        assert!(!reaches(WARN, "warn", "nwarn"));
        // A routine that reads the influenced error count only to write it
        // is not influenced as a whole where it is called.
        let reader = WARN.replace("  y = y*x\n", "  y = y*x\n  call report(y)\n")
            + "subroutine report(y)\n  real(8) :: y\n  integer :: nerr\n  common /io/ nerr\n  y = y*y\n  if (nerr > 0) print *, nerr\nend subroutine\n";
        assert!(!reaches(&reader, "warn", "nwarn"));
    }

    #[test]
    fn state_that_reaches_an_active_value_does() {
        // Through an argument, a local, a COMMON member read back, and
        // a condition around active work.
        let to_arg = WARN.replace("    left = 3 - nwarn", "    left = 3 - nwarn\n    y = 2*y");
        assert!(reaches(&to_arg, "warn", "nwarn"));
        let through_local = WARN.replace("  y = y + x*x", "  y = y + x*x*left");
        assert!(reaches(&through_local, "warn", "nwarn"));
        let through_common = WARN.replace(
            "  y = y*x\n",
            "  y = y*x\n  call scale(y)\n",
        ) + "subroutine scale(y)\n  real(8) :: y\n  integer :: nerr\n  common /io/ nerr\n  y = y*dble(nerr)\nend subroutine\n";
        assert!(reaches(&through_common, "warn", "nwarn"));
        // The RETURN decides whether `y` is updated.
        let jump = WARN.replace(
            "    call say(msg)\n",
            "    call say(msg)\n    if (left == 0) return\n",
        );
        assert!(reaches(&jump, "warn", "nwarn"));
    }
}
