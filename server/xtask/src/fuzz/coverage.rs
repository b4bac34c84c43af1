//! What the differential fuzzer must draw (issue 46), in one list: every
//! form of program unit, every kind of state a routine can reach and every
//! kind of statement the front end accepts in code dfort differentiates
//! ([`ENTRIES`]); and which of them one generated program holds ([`of`]),
//! read from the IR dfort's front end makes of it, not from the
//! generator's intentions.
//!
//! Contract: the statement kinds are classified by an exhaustive match on
//! [`StmtKind`] and [`DoControl`], so a statement the IR gains cannot be
//! accepted without a place in this list; an entry the fuzzer cannot draw
//! says why ([`Entry::excluded`]). Each fuzz run ends with a coverage line
//! (how many programs held each entry), and a test draws CI's run and
//! fails when an entry that is not excluded is never drawn.

use dfort_ir::{
    Association, BinaryOp, DoControl, ExprKind, IoKind, IoUnit, Program, Stmt, StmtKind, Storage,
    Subscript, SymbolId, Unit, UnitKind,
};
use std::collections::BTreeMap;

/// One thing the fuzzer must draw.
pub struct Entry {
    pub name: &'static str,
    /// Why the fuzzer does not draw it, when it does not.
    pub excluded: Option<&'static str>,
}

const fn drawn(name: &'static str) -> Entry {
    Entry {
        name,
        excluded: None,
    }
}

const NEVER_DIFFERENTIATED: &str = "a main program is never a root nor a callee: nothing of it is differentiated (the fuzzer's driver is the main program)";

/// Every entry, program units first, then state, then statements.
pub const ENTRIES: &[Entry] = &[
    // Program units.
    Entry {
        name: "unit: main program",
        excluded: Some(NEVER_DIFFERENTIATED),
    },
    Entry {
        name: "unit: internal procedure of a main program",
        excluded: Some(NEVER_DIFFERENTIATED),
    },
    drawn("unit: external subroutine"),
    drawn("unit: external function"),
    drawn("unit: module subroutine"),
    drawn("unit: module function"),
    drawn("unit: internal procedure of an external subroutine"),
    drawn("unit: internal procedure of an external function"),
    drawn("unit: internal procedure of a module procedure"),
    drawn("unit: internal function"),
    drawn("unit: recursive procedure"),
    drawn("unit: elemental procedure"),
    drawn("unit: pure procedure"),
    drawn("unit: statement function"),
    // State a routine reaches.
    drawn("state: dummy argument"),
    drawn("state: function result"),
    drawn("state: local variable"),
    drawn("state: SAVE'd local"),
    drawn("state: changed SAVE'd local no derivative reads"),
    drawn("adjoint: SAVE'd state shared between the adjoint's routines (copies of the procedures changing it)"),
    drawn("roles: independents taken after a call of the root (--after)"),
    drawn("adjoint: a call in a counted loop run in split mode (its callee records an order less than it computes)"),
    drawn("adjoint: a call in a counted loop to a callee without loops run in split mode (it records fewer values than a snapshot would save)"),
    drawn("adjoint: a call in a counted loop run in split mode, its callee recording elements of the arrays a snapshot would save"),
    drawn("adjoint: an element set afresh, then accumulated in a deeper loop: the set records, the accumulations do not"),
    drawn("adjoint: a component of a derived value overwritten without a record: no adjoint reads it (component-wise TBR)"),
    drawn("state: DATA or initialised local"),
    drawn("state: host-associated variable"),
    drawn("state: host-associated dummy"),
    drawn("state: module variable"),
    drawn("state: module variable of another module, through the host module's USE"),
    drawn("state: COMMON member"),
    drawn("state: EQUIVALENCE"),
    drawn("state: pointer"),
    drawn("state: target"),
    drawn("state: allocatable"),
    // Statements.
    drawn("statement: assignment"),
    drawn("statement: CALL"),
    drawn("statement: IF block"),
    drawn("statement: logical IF"),
    drawn("statement: WHERE"),
    drawn("statement: counted DO"),
    drawn("statement: counted DO marked binomial-ckp"),
    drawn("statement: DO WHILE"),
    drawn("statement: DO without control"),
    drawn("statement: SELECT CASE"),
    drawn("statement: GO TO"),
    drawn("statement: computed GO TO"),
    drawn("statement: arithmetic IF"),
    drawn("statement: loop closed by a backward GO TO, tested at its end, reversed as a structured loop"),
    drawn("statement: loop closed by a backward GO TO, tested at its head, reversed as a DO WHILE"),
    drawn("statement: EXIT"),
    drawn("statement: CYCLE"),
    drawn("statement: RETURN"),
    drawn("statement: RETURN in one of several IF branches, statements after the IF"),
    drawn("statement: STOP"),
    drawn("statement: IF whose condition references a function that reads globals"),
    drawn("statement: CALL of a subroutine whose adjoint is supplied"),
    drawn("statement: CALL of a subroutine whose IF on an integer argument touches every element or one"),
    drawn("statement: CALL of a subroutine declaring a COMMON block its caller does not declare"),
    drawn("statement: CONTINUE"),
    drawn("statement: READ"),
    drawn("statement: READ with END= or ERR="),
    drawn("statement: WRITE"),
    drawn("statement: CALL passing a procedure to a procedure argument"),
    drawn("statement: READ of an internal file the routine writes"),
    drawn("statement: subscript advanced as a counter (ix = ix + incx)"),
    drawn("statement: DO unrolled after a MOD clean-up loop"),
    drawn("statement: CALL of a generic name"),
    drawn("statement: CALL of a generic name going to its elemental specific, with an array"),
    drawn("expression: a defined operator, or an intrinsic one on a derived type"),
    drawn("statement: a defined assignment"),
    drawn("statement: recursive CALL on a part of an array (x(h + 1))"),
    drawn("expression: TRANSFER of a real value to its own type"),
    drawn("adjoint: array argument its callers save (its overwrites in deeper loops not recorded)"),
    drawn("adjoint: a module or COMMON variable a callee's adjoint reads, required of no statement after the call (its snapshot restores it)"),
    drawn("adjoint: an array a callee fills before reading it, left out of its calls' snapshots"),
    drawn("adjoint: writes that record nothing of the reads of final values in their loop (a triangular solve in place)"),
    drawn("adjoint: the one element a loop's iterations all name (its adjoint's sum may be held in registers)"),
    drawn("adjoint: an IF or SELECT CASE that records no arm (its arms give the reverse sweep nothing to do)"),
    drawn("adjoint: intermediates a loop's reversed iterations recompute instead of popping (paper 003 forward recomputation)"),
    drawn("adjoint: a call's snapshot of a few elements of an array its callee sees by host or use association (not the whole array)"),
    drawn("adjoint: an IF or SELECT CASE the forward sweep drops (records no arm, its arms dead)"),
    drawn("adjoint: an IF or SELECT CASE whose conditions the reverse sweep evaluates again (nothing they read changes once it starts)"),
    drawn("adjoint: a whole derived value saved on the tape as one record"),
    drawn("adjoint: an accumulation into a component whose terms read other components of its variable (the component's adjoint passed through)"),
    drawn("adjoint: a value the adjoints of consecutive statements share, computed once (its temporary holds it)"),
    drawn("adjoint: an assignment of an expression of its own target whose adjoint reads the target's adjoint in place (no copy, no reset)"),
    drawn("adjoint: a local Jacobian preaccumulated, its entries pushed (--preaccumulate=all: papers 002, 004)"),
    drawn("adjoint: a local Jacobian preaccumulated, recomputed in the reverse sweep from inputs nothing overwrites (--preaccumulate=all)"),
    drawn("adjoint: a local Jacobian preaccumulated where it records fewer values (--preaccumulate)"),
    drawn("state: variable of a sequence type"),
    drawn("statement: NAMELIST READ"),
    Entry {
        name: "statement: PRINT, OPEN, CLOSE and other I/O",
        excluded: Some("run as written, like WRITE, which stands for them: they touch files and the terminal, not values"),
    },
    drawn("statement: ALLOCATE"),
    drawn("statement: DEALLOCATE"),
    drawn("statement: pointer assignment"),
    drawn("statement: NULLIFY"),
    Entry {
        name: "statement: unsupported",
        excluded: Some("the front end rejects it with a diagnostic: no derivative is written"),
    },
];

/// The entry of a statement kind.
fn statement(kind: &StmtKind) -> &'static str {
    match kind {
        StmtKind::Assign { .. } => "statement: assignment",
        StmtKind::Call { .. } => "statement: CALL",
        StmtKind::If { one_line: true, .. } => "statement: logical IF",
        StmtKind::If { .. } => "statement: IF block",
        StmtKind::Where { .. } => "statement: WHERE",
        StmtKind::Do { control, .. } => match control {
            DoControl::Counted { .. } => "statement: counted DO",
            DoControl::While(_) => "statement: DO WHILE",
            DoControl::Forever => "statement: DO without control",
        },
        StmtKind::SelectCase { .. } => "statement: SELECT CASE",
        StmtKind::Goto { .. } => "statement: GO TO",
        StmtKind::ComputedGoto { .. } => "statement: computed GO TO",
        StmtKind::ArithmeticIf { .. } => "statement: arithmetic IF",
        StmtKind::Exit { .. } => "statement: EXIT",
        StmtKind::Cycle { .. } => "statement: CYCLE",
        StmtKind::Return => "statement: RETURN",
        StmtKind::Stop => "statement: STOP",
        StmtKind::Continue => "statement: CONTINUE",
        StmtKind::Io { namelist: true, .. } => "statement: NAMELIST READ",
        StmtKind::Io { kind, .. } => match kind {
            IoKind::Read => "statement: READ",
            IoKind::Write => "statement: WRITE",
            IoKind::Print | IoKind::Open | IoKind::Close | IoKind::Other => {
                "statement: PRINT, OPEN, CLOSE and other I/O"
            }
        },
        StmtKind::Allocate {
            deallocate: false, ..
        } => "statement: ALLOCATE",
        StmtKind::Allocate { .. } => "statement: DEALLOCATE",
        StmtKind::PointerAssign { .. } => "statement: pointer assignment",
        StmtKind::Nullify { .. } => "statement: NULLIFY",
        StmtKind::Unsupported { .. } => "statement: unsupported",
    }
}

/// The program-unit entries of `unit`.
fn unit_forms(program: &Program, unit: &Unit, out: &mut Vec<&'static str>) {
    let parent = unit.parent.map(|p| program.unit(p));
    let procedure = matches!(unit.kind, UnitKind::Subroutine | UnitKind::Function);
    match (unit.kind, parent.map(|p| (p.kind, p.parent.is_some()))) {
        (UnitKind::Program, _) => out.push("unit: main program"),
        (UnitKind::Subroutine, None) => out.push("unit: external subroutine"),
        (UnitKind::Function, None) => out.push("unit: external function"),
        (UnitKind::Subroutine, Some((UnitKind::Module, _))) => out.push("unit: module subroutine"),
        (UnitKind::Function, Some((UnitKind::Module, _))) => out.push("unit: module function"),
        (_, Some((UnitKind::Program, _))) => out.push("unit: internal procedure of a main program"),
        (_, Some((_, true))) => out.push("unit: internal procedure of a module procedure"),
        (_, Some((UnitKind::Subroutine, false))) => {
            out.push("unit: internal procedure of an external subroutine")
        }
        (_, Some((UnitKind::Function, false))) => {
            out.push("unit: internal procedure of an external function")
        }
        _ => {}
    }
    let internal = parent.is_some_and(|p| p.kind != UnitKind::Module);
    if internal && unit.kind == UnitKind::Function {
        out.push("unit: internal function");
    }
    if procedure && unit.recursive {
        out.push("unit: recursive procedure");
    }
    if procedure && unit.elemental {
        out.push("unit: elemental procedure");
    }
    if procedure && unit.pure {
        out.push("unit: pure procedure");
    }
    if !unit.stmt_functions.is_empty() {
        out.push("unit: statement function");
    }
}

/// The state entries of `unit`'s variables.
fn state(program: &Program, unit: &Unit, out: &mut Vec<&'static str>) {
    let procedure = matches!(unit.kind, UnitKind::Subroutine | UnitKind::Function);
    for sym in unit.symbols.iter() {
        match &sym.storage {
            Storage::Dummy(_) => out.push("state: dummy argument"),
            Storage::Result => out.push("state: function result"),
            Storage::Local if sym.attrs.parameter => {}
            Storage::Local if unit.kind == UnitKind::Module => out.push("state: module variable"),
            Storage::Local if procedure && sym.attrs.initialized => {
                out.push("state: DATA or initialised local")
            }
            Storage::Local if procedure && sym.attrs.save => out.push("state: SAVE'd local"),
            Storage::Local => out.push("state: local variable"),
            Storage::Common { .. } => out.push("state: COMMON member"),
            Storage::Imported {
                from,
                symbol,
                via: Association::Host,
            } => {
                let origin = program
                    .units
                    .get(*from)
                    .and_then(|u| u.symbols.get(*symbol));
                match origin.map(|o| &o.storage) {
                    Some(Storage::Dummy(_)) => out.push("state: host-associated dummy"),
                    Some(Storage::Local) if program.unit(*from).kind == UnitKind::Module => {
                        out.push("state: module variable")
                    }
                    Some(Storage::Local | Storage::Result) => {
                        out.push("state: host-associated variable")
                    }
                    _ => {}
                }
            }
            Storage::Imported {
                via: Association::Use,
                ..
            }
            | Storage::UnknownModule { .. } => out.push("state: module variable"),
            Storage::Procedure => {}
        }
        if let (Storage::Imported { from, .. }, Some(host)) = (&sym.storage, unit.parent) {
            let module = |u: dfort_ir::UnitId| {
                program
                    .units
                    .get(u)
                    .is_some_and(|u| u.kind == UnitKind::Module)
            };
            if *from != host && module(*from) && module(host) {
                out.push("state: module variable of another module, through the host module's USE");
            }
        }
        if sym.storage != Storage::Procedure {
            if sym.attrs.pointer {
                out.push("state: pointer");
            }
            if sym.attrs.target {
                out.push("state: target");
            }
            if sym.attrs.allocatable {
                out.push("state: allocatable");
            }
        }
    }
    if !unit.equivalences.is_empty() {
        out.push("state: EQUIVALENCE");
    }
}

/// The entries `program` holds, each once.
/// Whether a CALL of `unit` passes a procedure (as LAPACK's drivers pass
/// their selection functions).
fn passes_procedure(unit: &Unit) -> bool {
    unit.stmts.iter().any(|st| match &st.kind {
        StmtKind::Call { args, .. } => args.iter().any(|a| {
            matches!(&a.value.kind, dfort_ir::ExprKind::Var(v)
                if unit.symbol(*v).storage == Storage::Procedure)
        }),
        _ => false,
    })
}

/// Whether `unit` READs an internal file it also WRITEs.
fn reads_back(unit: &Unit) -> bool {
    let files = |want: IoKind| {
        unit.stmts.iter().filter_map(move |st| match &st.kind {
            StmtKind::Io {
                kind,
                unit: IoUnit::Internal(s),
                ..
            } if *kind == want => Some(*s),
            _ => None,
        })
    };
    files(IoKind::Read).any(|r| files(IoKind::Write).any(|w| w == r))
}

/// Whether `unit` advances an integer local `v = v + step` that it uses
/// as a subscript (the reference BLAS's `JX = JX + INCX`).
fn counts_subscripts(unit: &Unit) -> bool {
    let advanced = |st: &Stmt| match &st.kind {
        StmtKind::Assign { lhs, rhs } => match (&lhs.kind, &rhs.kind) {
            (
                ExprKind::Var(v),
                ExprKind::Binary {
                    op: BinaryOp::Add,
                    lhs: l,
                    ..
                },
            ) if matches!(l.kind, ExprKind::Var(w) if w == *v) => Some(*v),
            _ => None,
        },
        _ => None,
    };
    let subscripted = |v: SymbolId| {
        unit.stmts.iter().any(|st| {
            st.kind.exprs().iter().any(|e| {
                let mut found = false;
                e.walk(&mut |x| {
                    if let ExprKind::ArrayRef { subs, .. } = &x.kind {
                        found |= subs.iter().any(
                            |s| matches!(s, Subscript::Index(i) if matches!(i.kind, ExprKind::Var(w) if w == v)),
                        );
                    }
                });
                found
            })
        })
    };
    unit.stmts.iter().filter_map(advanced).any(subscripted)
}

/// Whether recursive `unit` calls itself passing an element of an array
/// (the second half of a vector: `call fz_q1(m - h, x(h + 1))`).
fn recurses_on_parts(unit: &Unit) -> bool {
    unit.recursive
        && unit.stmts.iter().any(|st| {
            matches!(&st.kind, StmtKind::Call { target: dfort_ir::CallTarget::Unit(c), args, .. }
                if *c == unit.id
                    && args.iter().any(|a| matches!(a.value.kind, ExprKind::ArrayRef { .. })))
        })
}

/// Whether `unit` calls a generic name of one of its interface blocks.
fn calls_generic(unit: &Unit) -> bool {
    unit.stmts.iter().any(|st| {
        matches!(&st.kind, StmtKind::Call { name, .. }
            if unit.interface_blocks.iter().any(|b| b.generic.as_ref() == Some(name)))
    })
}

/// Whether `unit` calls a generic name of one of its interface blocks
/// that goes to an elemental specific, with a whole array as an actual.
fn calls_generic_elementwise(program: &Program, unit: &Unit) -> bool {
    unit.stmts.iter().any(|st| {
        matches!(&st.kind, StmtKind::Call { name, target: dfort_ir::CallTarget::Unit(c), args }
            if unit.interface_blocks.iter().any(|b| b.generic.as_ref() == Some(name))
                && program.unit(*c).elemental
                && args.iter().any(|a| matches!(a.value.kind,
                    ExprKind::Var(s) if unit.symbol(s).rank() > 0)))
    })
}

/// Whether `unit` has a counted DO stepping by a constant `c` of at
/// least 2 and sets a local to `mod(_, c)` (an unrolled loop after its
/// clean-up loop).
/// Whether an IF of the unit's top level, with statements after it, has
/// a branch ending in RETURN and at least two that do not (the ELSE
/// counts, written or not).
fn flagged_return(unit: &Unit) -> bool {
    let ends_in_return = |b: &[dfort_ir::StmtId]| {
        b.last()
            .is_some_and(|s| matches!(unit.stmt(*s).kind, StmtKind::Return))
    };
    unit.body.iter().enumerate().any(|(k, id)| {
        let StmtKind::If {
            arms, else_body, ..
        } = &unit.stmt(*id).kind
        else {
            return false;
        };
        let mut branches: Vec<&[dfort_ir::StmtId]> =
            arms.iter().map(|a| a.body.as_slice()).collect();
        branches.push(else_body.as_deref().unwrap_or(&[]));
        let returning = branches.iter().filter(|b| ends_in_return(b)).count();
        k + 1 < unit.body.len() && returning > 0 && branches.len() - returning > 1
    })
}

/// The element an assignment sets, as text, and its right-hand side.
fn assigned_element<'u>(unit: &Unit, st: &'u Stmt) -> Option<(String, &'u dfort_ir::Expr)> {
    match &st.kind {
        StmtKind::Assign { lhs, rhs } if matches!(lhs.kind, ExprKind::ArrayRef { .. }) => {
            Some((dfort_ir::dump::expr(unit, lhs), rhs))
        }
        _ => None,
    }
}

/// Whether the unit, made structured by its preparation (`prepared`,
/// [`dfort_analysis::goto_loops`]), had a backward GO TO alone (a loop
/// tested at its head) and one in a logical IF (tested at its end).
fn structured_goto_loops(unit: &Unit, prepared: &Unit) -> (bool, bool) {
    if unit.cfg.structured || !prepared.cfg.structured {
        return (false, false);
    }
    let (mut head, mut end) = (false, false);
    for st in unit.stmts.iter() {
        let StmtKind::Goto { target } = st.kind else {
            continue;
        };
        let backward = unit
            .stmts
            .iter()
            .any(|s| s.label == Some(target) && s.id < st.id);
        if !backward {
            continue;
        }
        let guarded = unit.stmts.iter().any(|s| {
            matches!(&s.kind, StmtKind::If { arms, .. } if arms.iter().any(|a| a.body == [st.id]))
        });
        if guarded {
            end = true;
        } else {
            head = true;
        }
    }
    (head, end)
}

fn unrolls(unit: &Unit) -> bool {
    let steps: Vec<i64> = unit
        .stmts
        .iter()
        .filter_map(|st| match &st.kind {
            StmtKind::Do {
                control:
                    DoControl::Counted {
                        step: Some(step), ..
                    },
                ..
            } => match step.kind {
                ExprKind::Int(c) if c >= 2 => Some(c),
                _ => None,
            },
            _ => None,
        })
        .collect();
    unit.stmts.iter().any(|st| match &st.kind {
        StmtKind::Assign { rhs, .. } => matches!(&rhs.kind,
            ExprKind::Intrinsic { name, args } if name == "mod" && args.len() == 2
                && matches!(args[1].value.kind, ExprKind::Int(c) if steps.contains(&c))),
        _ => false,
    })
}

pub fn of(program: &Program) -> Vec<&'static str> {
    let mut out = Vec::new();
    for unit in program.units.iter() {
        unit_forms(program, unit, &mut out);
        state(program, unit, &mut out);
        for st in unit.stmts.iter() {
            let Stmt { kind, .. } = st;
            out.push(statement(kind));
        }
        if unit
            .stmts
            .iter()
            .any(|st| matches!(&st.kind, StmtKind::Io { branches, .. } if !branches.is_empty()))
        {
            out.push("statement: READ with END= or ERR=");
        }
        if passes_procedure(unit) {
            out.push("statement: CALL passing a procedure to a procedure argument");
        }
        if reads_back(unit) {
            out.push("statement: READ of an internal file the routine writes");
        }
        if flagged_return(unit) {
            out.push("statement: RETURN in one of several IF branches, statements after the IF");
        }
        if counts_subscripts(unit) {
            out.push("statement: subscript advanced as a counter (ix = ix + incx)");
        }
        if unrolls(unit) {
            out.push("statement: DO unrolled after a MOD clean-up loop");
        }
        if unit.symbols.iter().any(|s| {
            s.ty.base == dfort_ir::BaseType::Derived
                && program
                    .type_of(unit, &s.ty)
                    .is_some_and(|(_, def)| def.sequence)
        }) {
            out.push("state: variable of a sequence type");
        }
        if calls_generic(unit) {
            out.push("statement: CALL of a generic name");
        }
        if calls_generic_elementwise(program, unit) {
            out.push(
                "statement: CALL of a generic name going to its elemental specific, with an array",
            );
        }
        if unit.stmts.iter().any(|st| {
            st.kind.exprs().iter().any(|e| {
                let mut found = false;
                e.walk(&mut |x| {
                    found |= matches!(&x.kind, ExprKind::FunctionCall { name, target: dfort_ir::CallTarget::Unit(_), .. }
                        if dfort_ir::generic_operator(name).is_some())
                });
                found
            })
        }) {
            out.push("expression: a defined operator, or an intrinsic one on a derived type");
        }
        if unit.stmts.iter().any(|st| {
            matches!(&st.kind, StmtKind::Call { name, .. } if name == dfort_ir::ASSIGNMENT_GENERIC)
        }) {
            out.push("statement: a defined assignment");
        }
        if unit.stmts.iter().any(|st| {
            st.kind.exprs().iter().any(|e| {
                let mut found = false;
                e.walk(&mut |x| {
                    found |=
                        matches!(&x.kind, ExprKind::Intrinsic { name, .. } if name == "transfer")
                });
                found
            })
        }) {
            out.push("expression: TRANSFER of a real value to its own type");
        }
        if recurses_on_parts(unit) {
            out.push("statement: recursive CALL on a part of an array (x(h + 1))");
        }
        // The fuzzer's solver, whose adjoint the checker supplies.
        if unit.name == super::ast::SOLVER {
            out.push("statement: CALL of a subroutine whose adjoint is supplied");
        }
        if level_branch(unit)
            && program.units.iter().any(|u| {
                u.stmts.iter().any(|st| {
                    matches!(&st.kind, StmtKind::Call { target: dfort_ir::CallTarget::Unit(c), .. } if *c == unit.id)
                })
            })
        {
            out.push("statement: CALL of a subroutine whose IF on an integer argument touches every element or one");
        }
        if calls_hidden_common(program, unit) {
            out.push(
                "statement: CALL of a subroutine declaring a COMMON block its caller does not declare",
            );
        }
        if unit.directives.iter().any(|d| d.name == "binomial-ckp") {
            out.push("statement: counted DO marked binomial-ckp");
        }
        if unit
            .stmts
            .iter()
            .any(|st| condition_reads_globals(program, &st.kind))
        {
            out.push("statement: IF whose condition references a function that reads globals");
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The COMMON blocks `unit` declares.
fn common_blocks(unit: &Unit) -> Vec<&str> {
    unit.symbols
        .iter()
        .filter_map(|s| match &s.storage {
            Storage::Common { block, .. } => Some(block.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether `unit` calls a subroutine that declares a COMMON block `unit`
/// does not (its adjoint brings the block in to save it around the call).
fn calls_hidden_common(program: &Program, unit: &Unit) -> bool {
    let mine = common_blocks(unit);
    unit.stmts.iter().any(|st| match &st.kind {
        StmtKind::Call {
            target: dfort_ir::CallTarget::Unit(c),
            ..
        } => common_blocks(program.unit(*c))
            .iter()
            .any(|b| !mine.contains(b)),
        _ => false,
    })
}

/// Whether `unit` has an IF on one of its integer dummies being 0
/// (`if (kl == 0)`: every element, else element `kl`).
fn level_branch(unit: &Unit) -> bool {
    unit.stmts.iter().any(|st| {
        let StmtKind::If { arms, .. } = &st.kind else {
            return false;
        };
        arms.iter().any(|arm| match &arm.cond.kind {
            dfort_ir::ExprKind::Binary {
                op: dfort_ir::BinaryOp::Eq,
                lhs,
                rhs,
            } => {
                matches!(rhs.kind, dfort_ir::ExprKind::Int(0))
                    && matches!(lhs.kind, dfort_ir::ExprKind::Var(v)
                        if matches!(unit.symbol(v).storage, Storage::Dummy(_))
                            && unit.symbol(v).ty.base == dfort_ir::BaseType::Integer)
            }
            _ => false,
        })
    })
}

/// Whether `kind` is an IF one of whose conditions references a user
/// function that reaches a module variable or a COMMON member (run in
/// the forward sweep only: MITgcm's `IF (DIAGNOSTICS_IS_ON(…))`).
fn condition_reads_globals(program: &Program, kind: &StmtKind) -> bool {
    let StmtKind::If { arms, .. } = kind else {
        return false;
    };
    let mut found = false;
    for arm in arms {
        arm.cond.walk(&mut |e| {
            if let dfort_ir::ExprKind::FunctionCall {
                target: dfort_ir::CallTarget::Unit(f),
                ..
            } = &e.kind
            {
                let f = program.unit(*f);
                found |= f.symbols.iter().any(|s| match &s.storage {
                    Storage::Common { .. } => true,
                    Storage::Imported { from, .. } => program.unit(*from).kind == UnitKind::Module,
                    _ => false,
                });
            }
        });
    }
    found
}

/// The entries of a generated program's text, as dfort's front end reads
/// it.
pub fn of_text(text: &str) -> Vec<&'static str> {
    // The root `fz` with the roles its arguments' intents give (as the
    // editor analyses a procedure nobody calls).
    let config = dfort_ide::host::HostConfig {
        others: true,
        ..Default::default()
    };
    let mut host =
        dfort_ide::host::Host::from_sources(vec![("fz.f90".into(), text.to_string())], config);
    let snap = host.snapshot();
    let mut out = of(&snap.program);
    for u in snap.program.units.iter() {
        let Some(prepared) = snap.analysis().unit(u.id) else {
            continue;
        };
        let (at_head, at_end) = structured_goto_loops(u, prepared);
        if at_end {
            out.push("statement: loop closed by a backward GO TO, tested at its end, reversed as a structured loop");
        }
        if at_head {
            out.push("statement: loop closed by a backward GO TO, tested at its head, reversed as a DO WHILE");
        }
    }
    let (unread, shared) = saved_state(&snap.program, snap.analysis());
    if unread {
        out.push("state: changed SAVE'd local no derivative reads");
    }
    if shared {
        out.push("adjoint: SAVE'd state shared between the adjoint's routines (copies of the procedures changing it)");
    }
    if snap.program.units.iter().any(|u| {
        snap.analysis()
            .tbr_of(u.id)
            .is_some_and(|t| !t.left_to_callers.is_empty())
    }) {
        out.push("adjoint: array argument its callers save (its overwrites in deeper loops not recorded)");
    }
    if snap.program.units.iter().any(|u| {
        snap.analysis()
            .tbr_of(u.id)
            .is_some_and(|t| !t.snapshot_globals.is_empty())
    }) {
        out.push("adjoint: a module or COMMON variable a callee's adjoint reads, required of no statement after the call (its snapshot restores it)");
    }
    if snap.program.units.iter().any(|u| {
        let called = !snap.program.call_graph.calls_to[u.id].is_empty();
        called
            && snap
                .analysis()
                .decisions_of(u.id)
                .is_some_and(|d| !d.filled_first.is_empty())
    }) {
        out.push(
            "adjoint: an array a callee fills before reading it, left out of its calls' snapshots",
        );
    }
    // The analyses' statement ids name the unit as analysed (EXIT and
    // CYCLE structured), not the lowered one.
    if snap.program.units.iter().any(|u| {
        let Some(u) = snap.analysis().unit(u.id) else {
            return false;
        };
        snap.analysis().tbr_of(u.id).is_some_and(|t| {
            t.final_reads.iter().any(|p| {
                let recorded = t.records.iter().filter(|r| r.variable == p.var);
                recorded.filter(|r| p.inside.contains(&r.stmt)).count() < writes_in(u, p)
            })
        })
    }) {
        out.push("adjoint: writes that record nothing of the reads of final values in their loop (a triangular solve in place)");
    }
    if snap.program.units.iter().any(|u| {
        snap.analysis()
            .decisions_of(u.id)
            .is_some_and(|d| !d.accumulated.is_empty())
    }) {
        out.push("adjoint: the one element a loop's iterations all name (its adjoint's sum may be held in registers)");
    }
    if snap.program.units.iter().any(|u| {
        snap.analysis()
            .tbr_of(u.id)
            .is_some_and(|t| !t.recomputed.is_empty())
    }) {
        out.push("adjoint: intermediates a loop's reversed iterations recompute instead of popping (paper 003 forward recomputation)");
    }
    if snap.program.units.iter().any(|u| {
        let (Some(d), Some(a)) = (
            snap.analysis().decisions_of(u.id),
            snap.analysis().unit(u.id),
        ) else {
            return false;
        };
        d.checkpointed_calls(a).iter().any(|c| {
            c.checkpoint.saved().any(|s| {
                !s.whole && s.region.is_none() && !passed(&a.stmt(c.stmt).kind, s.variable)
            })
        })
    }) {
        out.push("adjoint: a call's snapshot of a few elements of an array its callee sees by host or use association (not the whole array)");
    }
    // The analyses' statement ids name the unit as analysed.
    let idle = |dropped: bool| {
        snap.program.units.iter().any(|u| {
            let (Some(d), Some(a)) = (
                snap.analysis().decisions_of(u.id),
                snap.analysis().unit(u.id),
            ) else {
                return false;
            };
            d.reversal.constructs.iter().any(|(id, r)| {
                matches!(r, dfort_analysis::reversal::Reversal::NothingToReverse)
                    && (!dropped
                        || (d.dead.contains(id)
                            && matches!(
                                a.stmt(*id).kind,
                                StmtKind::If { .. } | StmtKind::SelectCase { .. }
                            )))
            })
        })
    };
    if idle(false) {
        out.push("adjoint: an IF or SELECT CASE that records no arm (its arms give the reverse sweep nothing to do)");
    }
    if snap.program.units.iter().any(|u| {
        snap.analysis().decisions_of(u.id).is_some_and(|d| {
            d.reversal
                .constructs
                .values()
                .any(|r| matches!(r, dfort_analysis::reversal::Reversal::BranchRecomputed))
        })
    }) {
        out.push("adjoint: an IF or SELECT CASE whose conditions the reverse sweep evaluates again (nothing they read changes once it starts)");
    }
    if idle(true) {
        out.push(
            "adjoint: an IF or SELECT CASE the forward sweep drops (records no arm, its arms dead)",
        );
    }
    // A whole assignment of a derived variable whose old value TBR
    // records: the tape holds it as one record (its type has no pointer
    // component in the fuzzer's programs).
    if snap.program.units.iter().any(|u| {
        let (Some(t), Some(a)) = (snap.analysis().tbr_of(u.id), snap.analysis().unit(u.id)) else {
            return false;
        };
        t.records.iter().any(|r| {
            a.symbol(r.variable).ty.base == dfort_ir::BaseType::Derived
                && matches!(&a.stmt(r.stmt).kind, StmtKind::Assign { lhs, .. }
                    if matches!(lhs.kind, dfort_ir::ExprKind::Var(v) if v == r.variable))
        })
    }) {
        out.push("adjoint: a whole derived value saved on the tape as one record");
    }
    // An active accumulation into a component whose terms read other
    // components of the same variable: its adjoint passes the
    // component's adjoint through ([`dfort_ir::accumulation`]).
    if snap.program.units.iter().any(|u| {
        let (Some(act), Some(a)) = (
            snap.analysis().activity_of(u.id),
            snap.analysis().unit(u.id),
        ) else {
            return false;
        };
        a.stmts.iter().any(|st| {
            let StmtKind::Assign { lhs, rhs } = &st.kind else {
                return false;
            };
            let Some((t, _)) = dfort_ir::dp::target(lhs) else {
                return false;
            };
            let reads_own = |terms: Vec<(&dfort_ir::Expr, i8)>| {
                terms.iter().any(|(e, _)| dfort_ir::queries::mentions(e, t))
            };
            act.active_after(st.id, t)
                && dfort_ir::accumulation::terms(&snap.analysis().program, a, lhs, rhs)
                    .is_some_and(reads_own)
        })
    }) {
        out.push("adjoint: an accumulation into a component whose terms read other components of its variable (the component's adjoint passed through)");
    }
    // The generator's record of the adjoint of the root: a shared value
    // the reverse sweep did not compute again.
    let root = snap.program.units.iter().find(|u| u.name == "fz");
    let traces =
        root.and_then(|r| dfort_codegen::adjoint::adjoint_of(snap.analysis(), r.id, "").ok());
    let traced = |f: fn(&dfort_codegen::trace::RoutineTrace) -> bool| {
        traces.as_ref().is_some_and(|(_, ts)| ts.iter().any(f))
    };
    if traced(|t| t.values_held > 0) {
        out.push("adjoint: a value the adjoints of consecutive statements share, computed once (its temporary holds it)");
    }
    if traced(|t| t.read_in_place > 0) {
        out.push("adjoint: an assignment of an expression of its own target whose adjoint reads the target's adjoint in place (no copy, no reset)");
    }
    // An element set afresh (recorded), then accumulated in a deeper
    // loop without a record ([`dfort_analysis::final_reads`]).
    if snap.program.units.iter().any(|u| {
        let (Some(t), Some(a)) = (snap.analysis().tbr_of(u.id), snap.analysis().unit(u.id)) else {
            return false;
        };
        let recorded: std::collections::BTreeSet<dfort_ir::StmtId> =
            t.records.iter().map(|r| r.stmt).collect();
        let depth = dfort_ir::queries::loop_depths(a);
        a.stmts.iter().any(|w| {
            let Some((text, rhs)) = assigned_element(a, w) else {
                return false;
            };
            let mut accumulates = false;
            rhs.walk(&mut |x| {
                accumulates |= matches!(x.kind, ExprKind::ArrayRef { .. })
                    && dfort_ir::dump::expr(a, x) == text
            });
            accumulates
                && !recorded.contains(&w.id)
                && a.stmts.iter().any(|w0| {
                    recorded.contains(&w0.id)
                        && depth.get(&w0.id) < depth.get(&w.id)
                        && assigned_element(a, w0).is_some_and(|(t0, _)| t0 == text)
                })
        })
    }) {
        out.push("adjoint: an element set afresh, then accumulated in a deeper loop: the set records, the accumulations do not");
    }
    // A record TBR asked for that the component-wise refinement dropped
    // ([`dfort_analysis::component_reqs`]).
    if snap.program.units.iter().any(|u| {
        snap.analysis()
            .tbr_of(u.id)
            .is_some_and(|t| t.records_before_components.is_some())
    }) {
        out.push("adjoint: a component of a derived value overwritten without a record: no adjoint reads it (component-wise TBR)");
    }
    // Calls in counted loops run split, by whether their callee loops.
    let mut split_in_loops = [false; 3];
    for u in snap.program.units.iter() {
        let (Some(t), Some(u)) = (snap.analysis().tbr_of(u.id), snap.analysis().unit(u.id)) else {
            continue;
        };
        let depth = dfort_ir::queries::loop_depths(u);
        for id in t
            .split
            .iter()
            .filter(|id| depth.get(id).is_some_and(|d| *d > 0))
        {
            if let StmtKind::Call {
                target: dfort_ir::CallTarget::Unit(c),
                ..
            } = &u.stmt(*id).kind
            {
                let cu = snap.program.unit(*c);
                if !cu.recursive
                    && !snap
                        .program
                        .call_graph
                        .recursive
                        .get(*c)
                        .copied()
                        .unwrap_or(true)
                {
                    let loops = dfort_ir::queries::may_loop(cu);
                    // A callee recording in its deepest loops splits for
                    // its snapshot, not for an order less of records.
                    let deepest = snap.analysis().tbr_of(*c).is_some_and(|ct| {
                        let depth = dfort_ir::queries::loop_depths(cu);
                        let work = depth.values().copied().max().unwrap_or(0);
                        ct.records
                            .iter()
                            .any(|r| depth.get(&r.stmt).copied().unwrap_or(0) >= work)
                    });
                    split_in_loops[match (loops, deepest) {
                        (false, _) => 0,
                        (true, false) => 1,
                        (true, true) => 2,
                    }] = true;
                }
            }
        }
    }
    if split_in_loops[1] {
        out.push("adjoint: a call in a counted loop run in split mode (its callee records an order less than it computes)");
    }
    if split_in_loops[2] {
        out.push("adjoint: a call in a counted loop run in split mode, its callee recording elements of the arrays a snapshot would save");
    }
    if split_in_loops[0] {
        out.push("adjoint: a call in a counted loop to a callee without loops run in split mode (it records fewer values than a snapshot would save)");
    }
    // The adjoint that preaccumulates (the fuzzer's fourth adjoint): its
    // Jacobians pushed or recomputed, and whether the cost model would
    // choose preaccumulation anywhere.
    type Held = fn(&dfort_analysis::preaccumulation::LocalJacobian) -> bool;
    let modes: [(_, &[(&str, Held)]); 2] = [
        (
            dfort_analysis::preaccumulation::Preaccumulation::All,
            &[
                (
                    "adjoint: a local Jacobian preaccumulated, its entries pushed (--preaccumulate=all: papers 002, 004)",
                    |j| j.pushed().is_some(),
                ),
                (
                    "adjoint: a local Jacobian preaccumulated, recomputed in the reverse sweep from inputs nothing overwrites (--preaccumulate=all)",
                    |j| j.recomputed(),
                ),
            ],
        ),
        (
            dfort_analysis::preaccumulation::Preaccumulation::Cost,
            &[(
                "adjoint: a local Jacobian preaccumulated where it records fewer values (--preaccumulate)",
                |j| j.accumulation().is_some(),
            )],
        ),
    ];
    for (mode, held) in modes {
        let config = dfort_ide::host::HostConfig {
            others: true,
            preaccumulate: mode,
            ..Default::default()
        };
        let mut host =
            dfort_ide::host::Host::from_sources(vec![("fz.f90".into(), text.to_string())], config);
        let snap = host.snapshot();
        let jacobians: Vec<_> = snap
            .program
            .units
            .iter()
            .filter_map(|u| snap.analysis().tbr_of(u.id))
            .collect();
        for (entry, held) in held {
            if jacobians
                .iter()
                .flat_map(|t| t.jacobians.iter().flat_map(|b| &b.jacobians))
                .any(held)
            {
                out.push(entry);
            }
        }
    }
    // The generator's call that maps the independents ([`super::ast::Program::after`]).
    if snap.program.all_units().any(|u| u.name == "fzs_init") {
        out.push("roles: independents taken after a call of the root (--after)");
    }
    out.sort_unstable();
    out
}

/// How many assignments inside `p`'s loop write its array.
fn writes_in(unit: &Unit, p: &dfort_analysis::final_reads::Pair) -> usize {
    p.inside
        .iter()
        .filter(|s| {
            matches!(&unit.stmt(**s).kind, StmtKind::Assign { lhs, .. }
                if dfort_ir::dp::target(lhs).is_some_and(|(t, _)| t == p.var))
        })
        .count()
}

/// Whether a procedure changes a SAVE'd local whose values reach no
/// derivative of the root `fz` (it stays the procedure's own:
/// [`dfort_analysis::confined`]), and whether `fz`'s adjoint shares one
/// between its routines ([`dfort_analysis::saved_state`]).
fn saved_state(program: &Program, facts: &dfort_ide::analysis::Analysis) -> (bool, bool) {
    use dfort_analysis::dep::GlobalKey;
    let Some(fz) = program.all_units().find(|u| u.name == "fz") else {
        return (false, false);
    };
    let effects = facts.effects();
    let shared = facts
        .derivative_set(fz.id)
        .map(|set| set.saved_state.locals)
        .unwrap_or_default();
    let unread = program.units.iter().any(|u| {
        u.symbols.indices().any(|s| {
            dfort_ir::queries::saved_local(u, s)
                && effects[u.id].written_globals.contains(&GlobalKey::Shared {
                    unit: u.id,
                    symbol: s,
                })
                && !shared.contains(&(u.id, s))
        })
    });
    (unread, !shared.is_empty())
}

/// How many programs held each entry.
#[derive(Default)]
pub struct Tally(BTreeMap<&'static str, u64>);

impl Tally {
    pub fn add(&mut self, entries: &[&'static str]) {
        for e in entries {
            *self.0.entry(e).or_default() += 1;
        }
    }

    pub fn count(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// The entries not excluded that no program held.
    pub fn never_drawn(&self) -> Vec<&'static str> {
        ENTRIES
            .iter()
            .filter(|e| e.excluded.is_none() && self.count(e.name) == 0)
            .map(|e| e.name)
            .collect()
    }

    /// `coverage: <entry> <count>, …` over the entries not excluded, in
    /// the list's order, and the ones never drawn.
    pub fn line(&self) -> String {
        self.line_of(|e| self.count(e).to_string())
    }

    /// [`Tally::line`] with each count followed by `passed`'s: `entry
    /// drawn/passed`.
    pub fn line_with(&self, passed: &Tally) -> String {
        self.line_of(|e| format!("{}/{}", self.count(e), passed.count(e)))
    }

    fn line_of(&self, count: impl Fn(&str) -> String) -> String {
        let counts: Vec<String> = ENTRIES
            .iter()
            .filter(|e| e.excluded.is_none())
            .map(|e| format!("{} {}", e.name, count(e.name)))
            .collect();
        let never = self.never_drawn();
        let missing = match never.is_empty() {
            true => String::new(),
            false => format!("\nnever drawn: {}", never.join(", ")),
        };
        format!("coverage: {}{missing}", counts.join(", "))
    }
}

/// Whether statement `kind` passes a part of variable `v` to a procedure
/// (an actual of its CALL or of a function it references).
fn passed(kind: &StmtKind, v: SymbolId) -> bool {
    let mut args: Vec<&dfort_ir::Arg> = Vec::new();
    if let StmtKind::Call { args: a, .. } = kind {
        args.extend(a);
    }
    for e in kind.exprs() {
        e.walk(&mut |x| {
            if let ExprKind::FunctionCall { args: a, .. } = &x.kind {
                args.extend(a);
            }
        });
    }
    args.iter().any(|a| {
        let mut mentions = false;
        a.value.walk(&mut |x| {
            mentions |= matches!(x.kind, ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } if s == v)
        });
        mentions
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzzer-found (seed 20261208, case 3093): a CYCLE in the loop of a
    /// final value's reads. The analyses' statement ids name the unit as
    /// analysed (its EXIT and CYCLE structured: more statements than the
    /// lowered unit), and the classifier read them in the lowered one.
    #[test]
    fn the_classifier_reads_statement_ids_in_the_unit_as_analysed() {
        let text = include_str!("../../../../tests/fixtures/fuzz/seed20261208_case3093.f90");
        let got = of_text(text);
        assert!(got.contains(&"statement: CYCLE"), "{got:?}");
    }

    /// Every entry a classification can give is in the list, once.
    #[test]
    fn the_list_names_each_entry_once() {
        let mut names: Vec<&str> = ENTRIES.iter().map(|e| e.name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
        let text = "module m\n  real(8) :: g\ncontains\n  pure real(8) function f(v)\n    real(8), intent(in) :: v\n    f = v*v\n  end function\nend module\nsubroutine s(x)\n  use m\n  real(8), intent(inout) :: x\n  real(8), save :: t\n  t = f(x)\n  x = t + g\n  stop\nend subroutine\n";
        let got = of_text(text);
        for e in &got {
            assert!(names.contains(e), "{e} is not in the list");
        }
        for want in [
            "unit: module function",
            "unit: pure procedure",
            "unit: external subroutine",
            "state: SAVE'd local",
            "state: module variable",
            "statement: STOP",
        ] {
            assert!(got.contains(&want), "{want}: {got:?}");
        }
    }

    /// CI's fuzz run (`--cases 150 --seed 2026`) draws every entry that is
    /// not excluded: a construct the front end accepts cannot be
    /// differentiated without being fuzzed.
    #[test]
    fn ci_fuzz_run_draws_every_entry() {
        let mut tally = Tally::default();
        for case in 0..150 {
            let (p, _) = super::super::draw(2026, case, 0);
            tally.add(&of_text(&p.print()));
        }
        assert!(tally.never_drawn().is_empty(), "{}", tally.line());
    }
}
