//! Adjoint (reverse-mode) code, joint mode: `r_b` runs a forward sweep
//! (the original statements, minus those adjoint liveness proves useless,
//! plus the pushes TBR asks for and the control-flow records of paper
//! 001) and then the reverse sweep (adjoint statements in reverse order).
//!
//! Contract (Tapenade's convention): every formal with a derivative is
//! followed by its adjoint `xb`; on entry the dependents' adjoints hold ȳ
//! and the independents' what to accumulate into; on exit the
//! independents' adjoints hold x̄ + Jᵀȳ and pure outputs' adjoints are 0.
//! The generator obeys the analyses' decisions
//! ([`dfort_analysis::decisions`]): what each statement pushes, which
//! assignments the forward sweep drops, how each construct is reversed,
//! how each address value is recovered; it re-decides none of them.
//!
//! Control-flow reversal (paper 001, decided by
//! [`dfort_analysis::reversal`]): in structured units (Algorithm 5)
//! counted DO loops are replayed from their bounds (the index is pushed
//! around the loop only when a statement before it needs its value; a
//! loop whose body changes a bound is refused), counted WHILE loops get
//! their trip count from their bound, other DO WHILE loops push their trip
//! count, a DO left by EXIT — which [`dfort_analysis::structure`] turned
//! into a DO WHILE on a flag inside an always-taken IF — pushes its trip
//! count while the IF records nothing, and IF and SELECT CASE push the arm
//! taken; a counted DO marked `binomial-ckp` runs unrecorded in the
//! forward sweep and is reversed from snapshots ([`binomial`]). Units
//! whose jumps the structuring cannot remove (GO TO, computed
//! GO TO, arithmetic IF, or an EXIT, CYCLE or early RETURN) push the id of
//! each basic block whose adjoint does work as it is left, after the
//! integers its adjoint reads, and the reverse sweep pops ids until the
//! entry marker. Loops with a recovery plan (paper 003) recover their
//! address values by inversion and recomputation instead of storing
//! them.
//!
//! Calls (checkpointing, Tapenade's default in joint mode): the forward
//! sweep runs the original callee after pushing a snapshot of what the
//! callee's adjoint reads (and of what it overwrites that the caller's
//! adjoint needs) among the values anything may change later; the reverse
//! sweep pops the snapshot and calls the callee's adjoint `c_b`, which
//! re-runs the callee's forward sweep and then its reverse sweep. The
//! callee's TBR, analysed with its calling contexts (paper 000 §5.2),
//! records and restores the real values the caller needs; the caller
//! records the integers and logicals the callee overwrites.
//! A CALL TBR runs in split mode ([`dfort_analysis::split`]) calls the
//! callee's forward routine `c_fwd` (its forward sweep, computing all the
//! original does, then its scalar locals pushed) in the forward sweep and
//! its reverse routine `c_rev` (the locals popped, then its reverse
//! sweep) in the reverse sweep, with no snapshot; both are written from
//! the same statements as `c_b` ([`routine`]). A function
//! `f` referenced in an active expression is hoisted into a temporary
//! ([`crate::hoist`]) and differentiated as `f_b(args, argsb…, fb)`. Array
//! assignments are reversed element-wise through an array temporary;
//! `sum`, `dot_product`, `matmul` and `transpose` have reverse rules.
//!
//! STOP stays in the forward sweep (a run that stops has no reverse
//! sweep) and output statements are left out. What this version cannot
//! reverse is refused with its location, and no code is produced:
//! complex variables, derived-type components, READ, active references
//! to unknown functions (and array-valued ones whose result's bounds
//! cannot be computed at the reference), DO loops without control that
//! the structuring could not turn into DO WHILE loops, ALLOCATE inside
//! loops or in units with jumps, values the tape cannot hold; and before
//! anything is written (the facts' [`dfort_analysis::refusals`]), variables of modules dfort
//! was not given, globals reached through function references, functions
//! that change their arguments, active derived types.
//!
//! Layout (private modules): `inputs` gathers what the analyses decided
//! for each routine (read-only while the routine is written), `emitter`
//! holds what writing it accumulates; `dispatch` sends each statement to
//! the assignment adjoints (`assign`), the control-flow reversal
//! (`control`, with planned loops in `planned`), call sites (`call_site`)
//! or ALLOCATE (`allocate`); `tape` says what can be pushed, `sweep`
//! writes the reverse sweep and `routine` the whole routine, its
//! specification part through [`crate::declare`].

mod allocate;
mod assign;
mod association;
mod binomial;
mod call_site;
mod control;
mod dispatch;
mod emitter;
mod held_values;
mod inputs;
mod io;
mod planned;
mod preaccumulate;
mod reset_folds;
mod routine;
mod state;
mod sweep;

use crate::trace::RoutineTrace;
use crate::Refusal;
use dfort_analysis::facts::ProgramFacts;
use dfort_analysis::refusals::Derivative;
use dfort_ir::UnitId;

/// The stack runtime the adjoints use (`dfort_stack.f90`).
pub const RUNTIME: &str = include_str!("../../runtime/dfort_stack.f90");

pub use dfort_analysis::decisions::Recording;

/// The adjoint of `root`, a root of `facts`, from what the analyses
/// decided there (the recording mode is the facts'), with what each
/// adjoint routine's code does. The generator reads those decisions; it
/// runs no analysis of its own.
pub fn adjoint_of(
    facts: &ProgramFacts,
    root: UnitId,
    header: &str,
) -> Result<(String, Vec<RoutineTrace>), Vec<Refusal>> {
    adjoint_located(facts, root, header, &crate::origin::nowhere)
}

/// [`adjoint_of`], each statement's reverse block headed by a comment
/// naming the statement, as `origin` renders its place
/// ([`crate::origin`]).
pub fn adjoint_located(
    facts: &ProgramFacts,
    root: UnitId,
    header: &str,
    origin: crate::origin::Origin,
) -> Result<(String, Vec<RoutineTrace>), Vec<Refusal>> {
    inputs::gather(facts, root, origin, |g| {
        let mut refusals = facts.refusals(root, Derivative::Adjoint);
        let decided = refusals.len();
        refusals.extend(g.diff.root_clash(g.program, "_b"));
        let mut routines = Vec::new();
        let mut traces = Vec::new();
        let mut header = header.to_string();
        for inputs in g.routines {
            // A supplied adjoint: the header says how it is called.
            let inputs = match inputs {
                Ok(inputs) if facts.is_supplied(inputs.id) => {
                    if !header.is_empty() && !header.ends_with('\n') {
                        header.push('\n');
                    }
                    header.push_str(&routine::supplied(&inputs));
                    continue;
                }
                inputs => inputs,
            };
            match inputs.and_then(|inputs| routine::routine(&inputs)) {
                Ok((r, t)) => {
                    routines.extend(r);
                    traces.push(t);
                }
                Err(e) => crate::add_found(&mut refusals, decided, e),
            }
        }
        routines.extend(crate::tangent::internal_copies(
            g.program,
            g.diff,
            &mut refusals,
        ));
        routines.extend(crate::tangent::adjoint_copies(
            g.program,
            g.diff,
            &mut refusals,
        ));
        if !refusals.is_empty() {
            return Err(refusals);
        }
        let mut decls = g.diff.module_declarations(g.program, 'b');
        // Saving derived-type values: the runtime's generics extended in
        // the derivative modules of the modules that define the types;
        // and the shapes of allocatable module variables' adjoints.
        crate::fortran::add_module_procedures(
            g.program,
            &mut decls,
            &mut routines,
            crate::derived::tape_procedures(g.program, g.diff)
                .into_iter()
                .chain(crate::derived::pointer_tape_procedures(
                    g.program, g.diff, "_b",
                ))
                .chain(
                    g.diff
                        .shape_procedures(g.program, 'b')
                        .into_iter()
                        .map(|(m, t)| (m, (Vec::new(), t))),
                ),
        );
        // The shared SAVE'd state first: every routine may use it.
        let text = crate::fortran::assemble(&header, &routines, &decls, "_b");
        let comments = text
            .lines()
            .take_while(|l| l.starts_with('!'))
            .map(|l| l.len() + 1)
            .sum::<usize>();
        let (head, rest) = text.split_at(comments.min(text.len()));
        Ok((
            format!("{head}{}{rest}", state::modules(g.program, g.diff)),
            traces,
        ))
    })?
}
