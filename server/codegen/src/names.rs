//! Which procedures get a derivative routine and which of their variables
//! get a derivative, for one root, as the analysis decides it
//! ([`dfort_analysis::derivatives`]: activity closed over call sites,
//! module and host variables and COMMON blocks), with the derivative
//! names the generators give those variables.
//!
//! Contract: deterministic; the root is first in `units`, the rest in
//! program order; a unit is in `units` when it has variables with a
//! derivative or calls one that is.

use dfort_analysis::interproc::ProgramActivity;
use dfort_ir::bitset::BitSet;
use dfort_ir::intrinsics::is_intrinsic_function;
use dfort_ir::*;
use std::collections::{BTreeSet, HashMap, HashSet};

pub struct DiffSet<'a> {
    pub root: UnitId,
    /// Units that get a derivative routine: the root first.
    pub units: Vec<UnitId>,
    /// Per unit (indexed by `UnitId`): the symbols with a derivative.
    pub with_d: dfort_ir::chunk_vec::ChunkVec<UnitId, BitSet>,
    /// COMMON members (block, position) with a derivative.
    pub commons: BTreeSet<(String, u32)>,
    /// Module variables (module, symbol) with a derivative: it is declared
    /// once, in the derivative module `<m>_b` / `<m>_d`, and every routine
    /// shares it.
    pub module_vars: BTreeSet<(UnitId, SymbolId)>,
    /// The activity the set follows (the analyses' facts).
    pub activity: &'a ProgramActivity,
    /// Units of the set that write an argument or a global with a
    /// derivative (a function reference to one must run its derivative
    /// routine even where its result has no derivative).
    pub writers: Vec<UnitId>,
    /// Per unit: whether it may change one of its arguments or a global
    /// (the adjoint hoists a function reference to one and saves around
    /// it what it overwrites that the reverse sweep reads).
    pub changes_state: IdVec<UnitId, bool>,
    /// Per unit: whether it may read a global (a reference to one in an
    /// active expression must run its derivative routine, hoisted, for
    /// the global's derivative to be followed).
    pub reads_globals: IdVec<UnitId, bool>,
    /// For the adjoint ([`DiffSet::for_adjoint`]): the SAVE'd state it
    /// shares between its routines and the procedures it runs copies of
    /// ([`dfort_analysis::saved_state`]); empty for the tangent, whose
    /// routines keep their own copies.
    pub state: dfort_analysis::saved_state::AdjointState,
    /// For the adjoint: the name of the copy each procedure of
    /// `state.copied` runs as (`<p>_p`).
    pub copies: HashMap<UnitId, String>,
    /// The names of the variables of the set's units, also with a
    /// derivative's suffix `b` or `d`, and of the program's procedures
    /// (but a derivative written before): no derivative routine may take
    /// one ([`DiffSet::routine_name`]).
    taken: HashSet<String>,
}

impl<'a> DiffSet<'a> {
    /// The set of `root`, a root of `facts`, with the roles the analyses
    /// took for it.
    pub fn of_root(
        facts: &'a dfort_analysis::facts::ProgramFacts,
        root: UnitId,
    ) -> Result<DiffSet<'a>, Vec<crate::Refusal>> {
        DiffSet::of_set(facts, root, false)
    }

    fn of_set(
        facts: &'a dfort_analysis::facts::ProgramFacts,
        root: UnitId,
        adjoint: bool,
    ) -> Result<DiffSet<'a>, Vec<crate::Refusal>> {
        let program = &facts.program;
        let Some(set) = facts.derivative_set(root) else {
            let unit = program.unit(root);
            return Err(vec![crate::Refusal::new(
                unit.name_span,
                (
                    &dfort_syntax::rules::INTERNAL_ERROR,
                    format!("`{}` is not a root of this analysis", unit.name),
                ),
            )]);
        };
        let mut taken = HashSet::new();
        for &u in &set.units {
            for sym in program.unit(u).symbols.iter() {
                taken.insert(format!("{}b", sym.name));
                taken.insert(format!("{}d", sym.name));
                taken.insert(sym.name.clone());
            }
        }
        // The other procedures too (MITgcm ships hand-written `exch1_rl_b`
        // for Tapenade), except those of a file that defines the root's own
        // derivative routine: a derivative written before, in the
        // workspace, which the new one replaces rather than links with.
        let root_name = &program.unit(root).name;
        let previous: HashSet<dfort_ir::FileId> = program
            .units
            .iter()
            .filter(|u| u.is_procedure())
            .filter(|u| {
                ["_b", "_d"]
                    .iter()
                    .any(|sfx| u.name == format!("{root_name}{sfx}"))
            })
            .map(|u| u.span.file)
            .collect();
        for u in program.units.iter() {
            if u.is_procedure() && !previous.contains(&u.span.file) {
                taken.insert(u.name.clone());
            }
        }
        Ok(DiffSet {
            root,
            taken,
            units: set.units,
            with_d: set.with_d,
            commons: set.commons,
            module_vars: set.module_vars,
            activity: &facts.activity,
            writers: set.writers,
            changes_state: set.changes_state,
            reads_globals: set.reads_globals,
            state: if adjoint {
                set.saved_state
            } else {
                Default::default()
            },
            copies: HashMap::new(),
        })
    }

    /// The set of `root` for its adjoint: with the SAVE'd state the
    /// adjoint shares and the names of the copies it runs.
    pub fn of_root_for_adjoint(
        facts: &'a dfort_analysis::facts::ProgramFacts,
        root: UnitId,
    ) -> Result<DiffSet<'a>, Vec<crate::Refusal>> {
        let program = &facts.program;
        let mut diff = DiffSet::of_set(facts, root, true)?;
        for &c in &diff.state.copied {
            let name = diff.routine_name(program, c, "_p");
            diff.taken.insert(name.clone());
            diff.copies.insert(c, name);
        }
        Ok(diff)
    }

    /// Whether `s` of `u` is SAVE'd state the adjoint shares: it is
    /// declared in [`DiffSet::state_module`] of `u`, not in `u`'s routines.
    pub fn shares(&self, u: UnitId, s: SymbolId) -> bool {
        self.state.locals.contains(&(u, s))
    }

    /// The module holding the shared SAVE'd state of procedure `u`.
    pub fn state_module(program: &Program, u: UnitId) -> String {
        format!("dfort_save_{}", program.unit(u).name)
    }

    /// The USE line bringing `u`'s shared SAVE'd state into its own
    /// routines (and their adjoints, `names`), if it has any.
    pub fn state_use(
        &self,
        program: &Program,
        u: UnitId,
        names: &HashMap<SymbolId, String>,
    ) -> Option<String> {
        let unit = program.unit(u);
        let mut items = Vec::new();
        for &(o, s) in &self.state.locals {
            if o == u {
                items.push(unit.symbol(s).name.clone());
                items.extend(names.get(&s).cloned());
            }
        }
        (!items.is_empty()).then(|| {
            format!(
                "use {}, only: {}",
                DiffSet::state_module(program, u),
                items.join(", ")
            )
        })
    }

    /// The modules (original names) whose derivative modules hold copies
    /// of module procedures that `unit` calls, other than its own.
    pub fn copy_modules(&self, program: &Program, unit: &Unit) -> BTreeSet<String> {
        let own = crate::calls::enclosing_module(program, unit);
        program
            .call_graph
            .sites
            .iter()
            .filter(|s| s.caller == unit.id)
            .filter_map(|s| match s.callee {
                dfort_ir::callgraph::Callee::Unit(c) if self.copies.contains_key(&c) => {
                    crate::calls::host_module(program, program.unit(c))
                }
                _ => None,
            })
            .filter(|m| Some(m) != own.as_ref())
            .collect()
    }

    /// The name of `c`'s derivative routine with `suffix` (`_b`, `_d`,
    /// `_fwd`, `_rev`): `<c><suffix>`, with `0`s appended while a variable
    /// of the set's units (or a variable's derivative) or another procedure
    /// has that name (MITgcm's CG2D has an argument `cg2d_b`; its
    /// `exch_tap_b.F` defines `exch1_rl_b`). The root's is never renamed:
    /// [`DiffSet::root_clash`].
    pub fn routine_name(&self, program: &Program, c: UnitId, suffix: &str) -> String {
        let mut name = format!("{}{suffix}", program.unit(c).name);
        if suffix.is_empty() || c == self.root {
            return name;
        }
        while self.taken.contains(&name) {
            name.push('0');
        }
        name
    }

    /// The refusal of a root whose derivative routine's name, which
    /// callers rely on, is a variable's name in the set.
    pub fn root_clash(&self, program: &Program, suffix: &str) -> Option<crate::Refusal> {
        let unit = program.unit(self.root);
        let name = format!("{}{suffix}", unit.name);
        self.taken.contains(&name).then(|| {
            crate::Refusal::new(
                unit.name_span,
                (
                    &dfort_syntax::rules::NOT_DIFFERENTIABLE,
                    format!(
                        "the derivative routine of `{}` is named `{name}`, which is also the name of a variable of the code it reaches (or of that variable's derivative) or of another procedure: rename it",
                        unit.name
                    ),
                ),
            )
        })
    }

    pub fn contains(&self, u: UnitId) -> bool {
        self.units.contains(&u)
    }

    /// Derivative names `x<suffix>` of a unit's symbols (renamed on a
    /// clash with the unit's names or an intrinsic function's, which the
    /// unit may reference: `mo`'s tangent is not `mod`); a module variable's is the name its
    /// derivative module declares.
    pub fn names(&self, program: &Program, unit: &Unit, suffix: char) -> HashMap<SymbolId, String> {
        let mut taken: Vec<String> = unit.symbols.iter().map(|s| s.name.clone()).collect();
        let mut out = HashMap::new();
        for s in self.with_d[unit.id].ids() {
            let sym = unit.symbol(s);
            let host = host_var(program, sym)
                .and_then(|(h, hs)| self.names(program, program.unit(h), suffix).remove(&hs));
            let name = match (module_var(program, sym), host) {
                (Some((m, ms)), _) => module_var_name(program.unit(m), ms, suffix),
                (None, Some(hn)) => hn,
                (None, None) => {
                    let mut name = format!("{}{suffix}", unit.symbol(s).name);
                    while taken.contains(&name) || is_intrinsic_function(&name) {
                        name.push('0');
                    }
                    name
                }
            };
            taken.push(name.clone());
            out.insert(s, name);
        }
        out
    }
}

pub use dfort_ir::queries::{host_var, module_var};

/// The name of a module variable's derivative in the derivative module
/// (`x<suffix>`, renamed on a clash with the module's names or an
/// intrinsic function's).
pub fn module_var_name(module: &Unit, s: SymbolId, suffix: char) -> String {
    let mut name = format!("{}{suffix}", module.symbol(s).name);
    while module.symbols.iter().any(|x| x.name == name) || is_intrinsic_function(&name) {
        name.push('0');
    }
    name
}

impl DiffSet<'_> {
    /// The derivative types ([`crate::derived`]) and the declarations of
    /// the module variables' derivatives, per module name.
    pub fn module_declarations(
        &self,
        program: &Program,
        suffix: char,
    ) -> std::collections::BTreeMap<String, Vec<String>> {
        let type_suffix = format!("_{suffix}");
        let mut out = crate::derived::definitions(program, self, &type_suffix);
        for &(m, s) in &self.module_vars {
            let mu = program.unit(m);
            let mut sym = mu.symbol(s).clone();
            let (allocatable, pointer, target) =
                (sym.attrs.allocatable, sym.attrs.pointer, sym.attrs.target);
            sym.attrs = Attrs {
                allocatable,
                pointer,
                target,
                ..Attrs::default()
            };
            sym.intent = None;
            sym.ty = crate::derived::derivative_type(program, mu, &sym.ty, &type_suffix);
            let name = module_var_name(mu, s, suffix);
            if let Some(mut d) = crate::fortran::declaration(mu, &sym, &name, false) {
                // Module variables start undefined: derivatives start at 0
                // (those of derived type by their type's default).
                if pointer {
                    d.push_str(" => null()");
                } else if sym.ty.is_real_or_complex() && !allocatable {
                    d.push_str(" = 0.0d0");
                }
                out.entry(mu.name.clone()).or_default().push(d);
            }
        }
        out
    }
}

impl DiffSet<'_> {
    /// Whether procedure `c` gets a derivative routine and writes an
    /// argument or a global with a derivative ([`DiffSet::writers`]).
    pub fn writes_derivatives(&self, c: UnitId) -> bool {
        self.writers.contains(&c)
    }

    /// Whether unit `c` may change one of its arguments or a global.
    pub fn changes_state(&self, c: UnitId) -> bool {
        self.changes_state.get(c).copied().unwrap_or(true)
    }

    /// Whether unit `c` may read a global.
    pub fn reads_globals(&self, c: UnitId) -> bool {
        self.reads_globals.get(c).copied().unwrap_or(true)
    }

    /// The allocatable and pointer module variables with a derivative,
    /// per module name (module, symbol).
    fn module_allocatables(&self, program: &Program) -> Vec<(UnitId, SymbolId)> {
        self.module_vars
            .iter()
            .copied()
            .filter(|&(m, s)| {
                let a = &program.unit(m).symbol(s).attrs;
                a.allocatable || a.pointer
            })
            .collect()
    }

    /// The modules whose allocatable or pointer variables have
    /// derivatives: the root's derivative calls their `dfort_shape_<m>`
    /// on entry.
    pub fn shaped_modules(&self, program: &Program) -> Vec<String> {
        let mut out: Vec<String> = self
            .module_allocatables(program)
            .into_iter()
            .map(|(m, _)| program.unit(m).name.clone())
            .collect();
        out.dedup();
        out
    }

    /// Per module with allocatable or pointer variables that have
    /// derivatives, the subroutine `dfort_shape_<m>` of its derivative
    /// module: each such derivative is given its variable's shape and
    /// bounds (and zeroed) when the variable is allocated (associated) and
    /// the derivative is not, or (allocatables) has another shape — the
    /// variables are allocated before the root runs. A pointer to a
    /// derived type with pointer components cannot be mirrored so: the
    /// root stops with a message when one is associated before it runs.
    pub fn shape_procedures(&self, program: &Program, suffix: char) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for m in self.shaped_modules(program) {
            let mut text = format!("  subroutine dfort_shape_{m}()\n");
            for (mu, s) in self.module_allocatables(program) {
                let unit = program.unit(mu);
                if unit.name != m {
                    continue;
                }
                let sym = unit.symbol(s);
                let x = &sym.name;
                let d = module_var_name(unit, s, suffix);
                if sym.attrs.pointer {
                    text.push_str(&pointer_shadow(program, unit, sym, &d, suffix));
                    continue;
                }
                text.push_str(&format!(
                    "    if (allocated({x})) then\n      if (allocated({d})) then\n        if (any(shape({d}) /= shape({x}))) deallocate({d})\n      end if\n      if (.not. allocated({d})) then\n        allocate({d}, mold={x})\n        {d} = 0.0d0\n      end if\n    end if\n"
                ));
            }
            text.push_str(&format!("  end subroutine dfort_shape_{m}\n"));
            out.push((m, text));
        }
        out
    }
}

/// The lines of `dfort_shape_<m>` for the module pointer `sym` and its
/// derivative `d` (see [`DiffSet::shape_procedures`]).
fn pointer_shadow(program: &Program, unit: &Unit, sym: &Symbol, d: &str, suffix: char) -> String {
    let x = &sym.name;
    let zero = crate::derived::zero_of(program, unit, &sym.ty, &format!("_{suffix}"));
    if sym.ty.base != BaseType::Derived {
        return format!(
            "    if (associated({x}) .and. .not. associated({d})) then\n      allocate({d}, mold={x})\n      {d} = {zero}\n    end if\n"
        );
    }
    if crate::derived::type_has_pointer_components(program, unit, &sym.ty) {
        return format!(
            "    if (associated({x}) .and. .not. associated({d})) error stop 'dfort: the pointer {x} was associated before the root ran; its derivative structure cannot be rebuilt'\n"
        );
    }
    format!(
        "    if (associated({x}) .and. .not. associated({d})) then\n      allocate({d})\n      {d} = {zero}\n    end if\n"
    )
}
