//! The specification part of a derivative routine, written by one piece of
//! code for the tangent `s_d`, the adjoint `s_b` and the copies of
//! internal procedures: the routine header, the USE lines, `implicit
//! none`, the declarations of the primal variables each followed by its
//! derivative's, the COMMON blocks of derivatives, the original's
//! interface blocks — and alongside it the routine's explicit interface
//! (the header, USE and IMPLICIT lines and the declarations an interface
//! body needs).
//!
//! Contract: [`derivative_unit`] gives the unit a routine is written from
//! (function references hoisted, [`crate::hoist`]) and its derivative
//! names; [`open`] writes the specification part up to the generator's
//! own temporaries; the generator declares those, calls
//! [`Opened::end_specification`], writes its executable part into
//! [`Opened::w`] and [`Opened::finish`]es the routine. Everything that
//! differs between the modes — the suffix, which arguments a function
//! result gives, the intents, the adjoint's runtime module — is
//! [`Flavour`]'s; the derivative names and the generator's extra USE lines
//! are arguments.

use crate::fortran::{declaration, declaration_order, Routine, Writer};
use crate::hoist::{hoist, HoistMap};
use crate::names::DiffSet;
use dfort_ir::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Which routine is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// The tangent `s_d`: every formal followed by its tangent `xd`; a
    /// function's result becomes an `intent(out)` argument, followed by
    /// its tangent.
    Tangent,
    /// The adjoint `s_b`: every formal followed by its adjoint `xb`; a
    /// function's result gives its adjoint only. The forward sweep may
    /// skip what the original writes, so no dummy is left undefined on
    /// entry (`intent(out)` becomes `intent(inout)`), and adjoints of
    /// dummies are read and updated whatever the primal's intent.
    Adjoint,
    /// A copy of an internal procedure under its own name, without
    /// derivatives, for its host's derivative (a function stays a
    /// function). It writes its COMMON blocks as the tangent does
    /// (derivative blocks `/c_d/`, which nothing in it reads).
    Copy,
    /// A copy of a procedure for the adjoint, under the name
    /// [`crate::names::DiffSet::copies`] gives it: the adjoint runs it in
    /// place of the original, whose SAVE'd state it cannot see
    /// ([`dfort_analysis::saved_state`]); its derivative modules are the
    /// adjoint's.
    AdjointCopy,
}

impl Flavour {
    /// Whether the routine is a copy of the original, without derivatives.
    pub fn is_copy(self) -> bool {
        matches!(self, Flavour::Copy | Flavour::AdjointCopy)
    }

    /// The suffix of the routine's name.
    pub fn routine_suffix(self) -> &'static str {
        match self {
            Flavour::Tangent => "_d",
            Flavour::Adjoint => "_b",
            Flavour::Copy | Flavour::AdjointCopy => "",
        }
    }

    /// The suffix of derivative modules and COMMON blocks.
    fn derivative_suffix(self) -> &'static str {
        match self {
            Flavour::Adjoint | Flavour::AdjointCopy => "_b",
            Flavour::Tangent | Flavour::Copy => "_d",
        }
    }

    /// The intents of a variable and of its derivative.
    fn intents(self, sym: &Symbol) -> (Option<Intent>, Option<Intent>) {
        match self {
            Flavour::Tangent if sym.storage == Storage::Result => {
                (Some(Intent::Out), Some(Intent::Out))
            }
            Flavour::Tangent | Flavour::Copy | Flavour::AdjointCopy => (sym.intent, sym.intent),
            // The result's adjoint is an argument the routine reads and
            // resets.
            Flavour::Adjoint if sym.storage == Storage::Result => (None, Some(Intent::InOut)),
            Flavour::Adjoint => {
                let primal = match sym.intent {
                    Some(Intent::Out) => Some(Intent::InOut),
                    i => i,
                };
                (primal, sym.intent.map(|_| Intent::InOut))
            }
        }
    }
}

/// The unit a derivative routine of `orig` is written from, with its
/// function references hoisted ([`crate::hoist`]; only in assignments to
/// a variable with a derivative), the hoisting, and the derivative names
/// (suffix `'d'` or `'b'`) of its symbols — hoisted temporaries of
/// functions whose result has a derivative included. `None`: a copy,
/// without derivatives or hoisting.
pub fn derivative_unit(
    program: &Program,
    diff: &DiffSet,
    orig: &Unit,
    suffix: Option<char>,
) -> (Unit, HoistMap, HashMap<SymbolId, String>) {
    let mut names = match suffix {
        Some(c) => diff.names(program, orig, c),
        None => HashMap::new(),
    };
    // Assignments whose target has a derivative, and those referencing a
    // function that writes something else with one (its derivative
    // routine must run); in the adjoint, also those referencing a
    // function that changes an argument or a global at all (what it
    // overwrites that the reverse sweep reads is saved around it, as
    // around a CALL: [`dfort_analysis::references`]). The adjoint's
    // copies of procedures that change shared SAVE'd state run in place
    // of the originals.
    let renamed;
    let orig = if diff.copies.is_empty() {
        orig
    } else {
        renamed = calling_copies(program, &diff.copies, orig.clone());
        &renamed
    };
    let (unit, hoisted) = hoist(program, orig, |st| {
        dfort_ir::hoist::runs_references(
            st,
            |t| names.contains_key(&t),
            |c| {
                suffix.is_some()
                    && (diff.writes_derivatives(c)
                        || (suffix == Some('b') && diff.changes_state(c)))
            },
        )
    });
    let unit = explicit_component_sections(program, unit);
    if let Some(c) = suffix {
        for h in hoisted.values().flatten() {
            let cu = program.unit(h.callee);
            if cu
                .result
                .is_some_and(|r| diff.with_d[h.callee].contains_id(r))
            {
                names.insert(h.temp, format!("{}{c}", unit.symbol(h.temp).name));
            }
        }
    }
    (unit, hoisted, names)
}

/// `unit` calling the copies `copies` names (by unit) in place of the
/// originals: its CALL statements and function references, and the
/// procedure names it declares.
fn calling_copies(program: &Program, copies: &HashMap<UnitId, String>, mut unit: Unit) -> Unit {
    let copy_of = |target: &CallTarget| match target {
        CallTarget::Unit(c) => copies.get(c),
        _ => None,
    };
    let mut renamed: HashMap<String, String> = HashMap::new();
    for st in unit.stmts.iter_mut() {
        if let StmtKind::Call { name, target, .. } = &mut st.kind {
            if let Some(n) = copy_of(target) {
                renamed.insert(name.clone(), n.clone());
                *name = n.clone();
            }
        }
        for e in st.kind.exprs_mut() {
            e.walk_mut(&mut |x| {
                if let ExprKind::FunctionCall { name, target, .. } = &mut x.kind {
                    if let Some(n) = copy_of(target) {
                        renamed.insert(name.clone(), n.clone());
                        *name = n.clone();
                    }
                }
            });
        }
    }
    // Procedures passed as actuals by name.
    for (&c, n) in copies {
        renamed
            .entry(program.unit(c).name.clone())
            .or_insert(n.clone());
    }
    for sym in unit.symbols.iter_mut() {
        if sym.storage == Storage::Procedure {
            if let Some(n) = renamed.get(&sym.name) {
                sym.name = n.clone();
            }
        }
    }
    unit
}

/// `unit` with each whole array component referenced in an expression
/// written as the full section it is (`v%h` → `v%h(:)`), so that the
/// generators see its rank as they see a variable's; not where a whole
/// component is named rather than its values read (pointer statements,
/// ALLOCATE, the arguments of inquiry intrinsics and whole actual
/// arguments, which may be bound to pointer dummies).
fn explicit_component_sections(program: &Program, mut unit: Unit) -> Unit {
    let full = || Subscript::Range {
        lo: None,
        hi: None,
        stride: None,
    };
    let rank_of = |unit: &Unit, e: &Expr| match &e.kind {
        ExprKind::Component { subs, .. } if subs.is_empty() => program
            .component_def(unit, e)
            .filter(|c| c.rank > 0)
            .map(|c| c.rank),
        _ => None,
    };
    fn rewrite(
        e: &mut Expr,
        rank_of: &dyn Fn(&Expr) -> Option<usize>,
        full: &dyn Fn() -> Subscript,
    ) {
        match &mut e.kind {
            ExprKind::Intrinsic { name, .. }
                if matches!(
                    name.as_str(),
                    "size" | "shape" | "lbound" | "ubound" | "allocated" | "associated" | "present"
                ) =>
            {
                return;
            }
            ExprKind::FunctionCall { args, .. } => {
                for a in args {
                    if !matches!(a.value.kind, ExprKind::Component { .. }) {
                        rewrite(&mut a.value, rank_of, full);
                    }
                }
                return;
            }
            _ => {}
        }
        if let Some(r) = rank_of(e) {
            if let ExprKind::Component { subs, .. } = &mut e.kind {
                *subs = (0..r).map(|_| full()).collect();
            }
        }
        let mut children: Vec<&mut Expr> = Vec::new();
        match &mut e.kind {
            ExprKind::Component { base, subs, .. } => {
                children.push(base);
                for sub in subs {
                    if let Subscript::Index(i) = sub {
                        children.push(i);
                    }
                }
            }
            ExprKind::Unary { operand, .. } => children.push(operand),
            ExprKind::Binary { lhs, rhs, .. } => {
                children.push(lhs);
                children.push(rhs);
            }
            ExprKind::Intrinsic { args, .. } => {
                children.extend(args.iter_mut().map(|a| &mut a.value))
            }
            ExprKind::ArrayCtor(items) => children.extend(items.iter_mut()),
            ExprKind::Complex(a, b) => {
                children.push(a);
                children.push(b);
            }
            _ => {}
        }
        for c in children {
            rewrite(c, rank_of, full);
        }
    }
    let snapshot = unit.clone();
    let rank = |e: &Expr| rank_of(&snapshot, e);
    for st in unit.stmts.iter_mut() {
        match &mut st.kind {
            StmtKind::PointerAssign { .. }
            | StmtKind::Nullify { .. }
            | StmtKind::Allocate { .. } => {}
            StmtKind::Call { args, .. } => {
                for a in args {
                    if !matches!(a.value.kind, ExprKind::Component { .. }) {
                        rewrite(&mut a.value, &rank, &full);
                    }
                }
            }
            kind => {
                for e in kind.exprs_mut() {
                    rewrite(e, &rank, &full);
                }
            }
        }
    }
    unit
}

/// What the specification part of one derivative routine is made of.
pub struct Declared<'a> {
    pub program: &'a Program,
    /// The unit as written (hoisted temporaries appended, [`derivative_unit`]).
    pub unit: &'a Unit,
    /// The unit as the analyses saw it.
    pub orig: &'a Unit,
    pub hoisted: &'a HoistMap,
    /// The derivative name of each symbol that has one.
    pub names: &'a HashMap<SymbolId, String>,
    /// COMMON members (block, position) with a derivative.
    pub commons: &'a BTreeSet<(String, u32)>,
    /// The original module of a module procedure (its derivative lives in
    /// `<m><suffix>`).
    pub module: Option<&'a String>,
    /// The original modules whose derivative modules the routine uses.
    pub used_modules: &'a BTreeSet<String>,
    /// USE lines of the generator's own, after those of the derivative
    /// modules (the adjoint's module variables brought in under new
    /// names).
    pub extra_uses: &'a [String],
    /// The routine's name ([`crate::names::DiffSet::routine_name`]).
    pub name: &'a str,
    /// The SAVE'd locals the adjoint shares between its routines
    /// ([`crate::names::DiffSet::shares`]): declared in their own module,
    /// not here.
    pub shared: &'a BTreeSet<(UnitId, SymbolId)>,
}

/// A derivative routine whose specification part is written up to the
/// generator's own temporaries.
pub struct Opened {
    /// The routine's text so far, indented for the body.
    pub w: Writer,
    unit: UnitId,
    host: Option<UnitId>,
    module: Option<String>,
    /// The routine's interface body, kept when callers need it.
    interface: Option<String>,
    end: String,
    spec_end: usize,
    /// The original's FORMAT statements, written before the end.
    formats: Vec<(u32, String)>,
    /// The modules whose derivative modules define its derivative types
    /// or hold the derivatives of the module variables it uses: the
    /// derivative file puts those modules first.
    derivative_modules: Vec<String>,
    /// The names (lower case) of its variables and their derivatives
    /// that its internal procedures name by host association: the
    /// declarations of the others its text never names go
    /// ([`crate::tidy`]).
    host_named: Vec<String>,
    /// Its dummy arguments' names ([`crate::tidy::unread_dummies`]).
    dummies: Vec<String>,
    /// Its dummy procedures' names ([`crate::tidy::uncalled_procedures`]).
    procedures: Vec<String>,
}

/// The header, USE lines, `implicit none`, declarations, COMMON blocks and
/// interface blocks of `d`'s `flavour` routine (see the module's contract).
pub fn open(d: &Declared, flavour: Flavour) -> Opened {
    let (program, unit, orig) = (d.program, d.unit, d.orig);
    let suffix = flavour.derivative_suffix();
    let mut spec = Spec::default();
    let (header, end) = header(program, unit, d.names, d.name, flavour);
    spec.both(&header);
    spec.indent();
    if flavour == Flavour::Adjoint {
        spec.both("use dfort_stack");
    }
    for m in d.used_modules {
        spec.both(&format!("use {m}{suffix}"));
    }
    // Modules defining the derivative types of derived variables.
    let mut derivative_modules: Vec<String> = crate::derived::modules_of(
        program,
        unit,
        d.names,
        d.module,
        flavour == Flavour::Adjoint,
    )
    .into_iter()
    .filter(|m| !d.used_modules.contains(m))
    .collect();
    for m in &derivative_modules {
        spec.both(&format!("use {m}{suffix}"));
    }
    let inside = crate::calls::enclosing_module(program, orig);
    for (m, l) in module_var_uses(program, unit, d.names, inside.as_ref().or(d.module), suffix) {
        spec.both(&l);
        if !derivative_modules.contains(&m) {
            derivative_modules.push(m);
        }
    }
    for l in d.extra_uses {
        spec.both(l);
    }
    for u in uses(unit) {
        spec.both(&u);
    }
    spec.both("implicit none");
    spec.declarations(program, unit, orig, d, suffix, |sym| flavour.intents(sym));
    for l in undeclared_functions(program, unit, d.hoisted) {
        spec.w.line(&l);
    }
    spec.commons(unit, d.names, d.commons, suffix);
    for l in equivalences(orig, d.names) {
        spec.w.line(&l);
    }
    for data in &orig.data {
        spec.w.line(data);
    }
    for l in &orig.namelists {
        let members: Vec<&str> = l
            .members
            .iter()
            .map(|&m| orig.symbol(m).name.as_str())
            .collect();
        spec.w
            .line(&format!("namelist /{}/ {}", l.name, members.join(", ")));
    }
    for l in io_statement_functions(orig) {
        spec.w.line(&l);
    }
    spec.interface_blocks(orig);
    let interface = spec.interface(&end);
    let explicit = !flavour.is_copy() && needs_explicit_interface(orig);
    Opened {
        w: spec.w,
        unit: orig.id,
        host: crate::calls::host_procedure(program, orig),
        module: d.module.cloned(),
        interface: explicit.then_some(interface),
        end,
        spec_end: 0,
        formats: orig.formats.clone(),
        derivative_modules,
        host_named: host_named(program, orig, d.names),
        dummies: data_dummies(unit, d.names, flavour),
        procedures: procedure_dummies(unit)
            .into_iter()
            .map(str::to_string)
            .collect(),
    }
}

impl Opened {
    /// Marks the end of the specification part: the interface blocks of
    /// the routines this one calls go there ([`crate::fortran::assemble`]).
    pub fn end_specification(&mut self) {
        self.spec_end = self.w.len();
    }

    /// Closes the routine; `uses` are the original modules whose
    /// derivative modules it uses, `calls` the units whose derivative
    /// routines it calls.
    pub fn finish(mut self, mut uses: BTreeSet<String>, calls: BTreeSet<UnitId>) -> Routine {
        uses.extend(self.derivative_modules.iter().cloned());
        for (label, text) in &self.formats {
            self.w.line(&format!("{label} {text}"));
        }
        self.w.dedent();
        self.w.line(&self.end);
        let text = self.w.finish();
        let spec_end = self.spec_end.min(text.len());
        let text = format!(
            "{}{}",
            &text[..spec_end],
            crate::tidy::unused_labels(&text[spec_end..])
        );
        let (text, spec_end) =
            crate::tidy::unused_declarations(&text, spec_end, Some(&self.host_named));
        let (text, spec_end) = crate::tidy::unread_dummies(&text, spec_end, &self.dummies);
        let (text, spec_end) = crate::tidy::uncalled_procedures(&text, spec_end, &self.procedures);
        let text = crate::tidy::first_allocations(&text, spec_end);
        let text = crate::conversions::written_out(&text, spec_end);
        Routine {
            unit: self.unit,
            host: self.host,
            module: self.module,
            uses,
            text,
            spec_end,
            interface: self.interface,
            calls,
        }
    }
}

/// The declarations and definitions of the unit's statement functions
/// when an I/O statement references one: the derivatives run I/O
/// statements as written, while they inline statement functions
/// everywhere else.
fn io_statement_functions(unit: &Unit) -> Vec<String> {
    // The analyses inline the references in the statements' expressions,
    // not in their text: look for the names there.
    let texts: Vec<String> = unit
        .stmts
        .iter()
        .filter_map(|st| match &st.kind {
            StmtKind::Io { text, .. } => Some(text.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    let used = unit.stmt_functions.iter().any(|f| {
        let name = &unit.symbol(f.name).name;
        texts.iter().any(|t| {
            t.match_indices(name.as_str()).any(|(i, _)| {
                let before = t[..i].chars().next_back();
                let after = t[i + name.len()..].trim_start().chars().next();
                !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') && after == Some('(')
            })
        })
    });
    if !used {
        return Vec::new();
    }
    let mut decls = Vec::new();
    let mut defs = Vec::new();
    for f in &unit.stmt_functions {
        let mut sym = unit.symbol(f.name).clone();
        sym.storage = Storage::Local;
        sym.attrs = Attrs::default();
        sym.intent = None;
        sym.init = None;
        decls.extend(crate::fortran::declaration(unit, &sym, &sym.name, false));
        defs.push(format!(
            "{}({}) = {}",
            sym.name,
            f.params.join(", "),
            dfort_ir::dump::expr(unit, &f.body)
        ));
    }
    decls.extend(defs);
    decls
}

/// The routine's first line and its `end` line.
pub(crate) fn header(
    program: &Program,
    unit: &Unit,
    names: &HashMap<SymbolId, String>,
    name: &str,
    flavour: Flavour,
) -> (String, String) {
    let args = dummy_names(unit, names, flavour);
    // An elemental function's derivatives are elemental too, impure for
    // the tape (each element's adjoint pops what it pushed).
    let recursive = match (crate::calls::is_recursive(program, unit), unit.elemental) {
        (_, true) if flavour.is_copy() => "elemental ",
        (_, true) => "impure elemental ",
        (true, false) => "recursive ",
        (false, false) => "",
    };
    let args = args.join(", ");
    match (flavour, unit.kind, unit.result) {
        (Flavour::Copy | Flavour::AdjointCopy, UnitKind::Function, Some(r)) => {
            let rname = &unit.symbol(r).name;
            let result = if *rname == unit.name && name == unit.name {
                String::new()
            } else {
                format!(" result({rname})")
            };
            (
                format!("{recursive}function {name}({args}){result}"),
                format!("end function {name}"),
            )
        }
        _ => (
            format!("{recursive}subroutine {name}({args})"),
            format!("end subroutine {name}"),
        ),
    }
}

/// The names of `orig` its internal procedures may name by host
/// association — every name they import, and the derivatives (`names`)
/// of `orig`'s variables among them — in lower case.
fn host_named(program: &Program, orig: &Unit, names: &HashMap<SymbolId, String>) -> Vec<String> {
    let mut out = Vec::new();
    for &c in &orig.children {
        for s in program.unit(c).symbols.iter() {
            if let Some((host, s)) = dfort_ir::queries::host_var(program, s) {
                if host == orig.id {
                    out.extend(names.get(&s).map(|d| d.to_ascii_lowercase()));
                }
            }
            if matches!(s.storage, Storage::Imported { .. }) {
                out.push(s.name.to_ascii_lowercase());
            }
        }
    }
    out
}

/// The names of `unit`'s dummy procedures.
fn procedure_dummies(unit: &Unit) -> Vec<&str> {
    unit.args
        .iter()
        .map(|&a| unit.symbol(a))
        .filter(|s| s.storage == Storage::Procedure || s.attrs.external)
        .map(|s| s.name.as_str())
        .collect()
}

/// [`dummy_names`] but dummy procedures.
fn data_dummies(unit: &Unit, names: &HashMap<SymbolId, String>, flavour: Flavour) -> Vec<String> {
    let procedures = procedure_dummies(unit);
    let mut out = dummy_names(unit, names, flavour);
    out.retain(|n| !procedures.contains(&n.as_str()));
    out
}

/// The dummy arguments of `unit`'s `flavour` routine, in order: each of
/// the original's followed by its derivative when it has one (`names`),
/// then a function's result and its derivative (tangent) or the result's
/// adjoint (adjoint).
fn dummy_names(unit: &Unit, names: &HashMap<SymbolId, String>, flavour: Flavour) -> Vec<String> {
    let mut args = Vec::new();
    for a in &unit.args {
        args.push(unit.symbol(*a).name.clone());
        if let Some(d) = names.get(a) {
            args.push(d.clone());
        }
    }
    match (flavour, unit.result) {
        (Flavour::Tangent, Some(r)) => {
            args.push(unit.symbol(r).name.clone());
            if let Some(d) = names.get(&r) {
                args.push(d.clone());
            }
        }
        (Flavour::Adjoint, Some(r)) => {
            if let Some(b) = names.get(&r) {
                args.push(b.clone());
            }
        }
        _ => {}
    }
    args
}

/// `use m, only: a, b => c` lines of a unit.
pub(crate) fn uses(unit: &Unit) -> Vec<String> {
    unit.uses
        .iter()
        .map(|u| {
            let mut s = format!("use {}", u.module);
            if let Some(only) = &u.only {
                let items: Vec<String> = only
                    .iter()
                    .map(|(l, r)| {
                        if l == r {
                            l.clone()
                        } else {
                            format!("{l} => {r}")
                        }
                    })
                    .collect();
                s.push_str(&format!(", only: {}", items.join(", ")));
            } else {
                for (l, r) in &u.renames {
                    s.push_str(&format!(", {l} => {r}"));
                }
            }
            s
        })
        .collect()
}

/// Whether a procedure symbol names a module procedure (reached by use or
/// host association, so it must not be redeclared `external`).
fn is_module_procedure(program: &Program, sym: &Symbol) -> bool {
    // A procedure the unit declares EXTERNAL is not one, whatever module
    // has a procedure of its name (LA_XISNAN's DISNAN beside the external
    // DISNAN that DLANGE declares).
    sym.storage == Storage::Procedure
        && !sym.attrs.external
        && program.units_named(&sym.name).any(|u| {
            u.parent
                .is_some_and(|p| program.unit(p).kind == UnitKind::Module)
        })
}

/// The lines of the unit's COMMON blocks, and for each block with a
/// member that has a derivative, the block of derivatives
/// `/<name><suffix>/` (members without one get a placeholder of the same
/// type, so that the layout is the same in every routine).
fn common_blocks(
    unit: &Unit,
    names: &HashMap<SymbolId, String>,
    with_d: &BTreeSet<(String, u32)>,
    suffix: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for c in &unit.commons {
        let members: Vec<&str> = c
            .members
            .iter()
            .map(|m| unit.symbol(*m).name.as_str())
            .collect();
        out.push(format!("common /{}/ {}", c.name, members.join(", ")));
        if !(0..c.members.len()).any(|i| with_d.contains(&(c.name.clone(), i as u32))) {
            continue;
        }
        let mut dnames = Vec::new();
        for m in &c.members {
            match names.get(m) {
                Some(d) => dnames.push(d.clone()),
                None => {
                    let sym = unit.symbol(*m);
                    let pad = format!("dfort_pad_{}", sym.name);
                    if let Some(d) = declaration(unit, sym, &pad, false) {
                        out.push(d);
                    }
                    dnames.push(pad);
                }
            }
        }
        let block = if c.name.is_empty() {
            "dfort_blank".to_string()
        } else {
            c.name.clone()
        };
        out.push(format!("common /{block}{suffix}/ {}", dnames.join(", ")));
    }
    out
}

/// Whether any statement of the unit references function `name`.
fn references_function(unit: &Unit, name: &str) -> bool {
    unit.stmts.iter().any(|st| {
        st.kind.exprs().iter().any(|e| {
            let mut found = false;
            e.walk(&mut |x| {
                if let ExprKind::FunctionCall { name: n, .. } = &x.kind {
                    found |= n == name;
                }
            });
            found
        })
    })
}

/// Whether a CALL or function reference of the unit passes procedure
/// `name` as an actual argument (an EXTERNAL procedure given to a
/// procedure argument, as LAPACK's drivers take their selection functions).
fn passes_procedure(unit: &Unit, name: &str) -> bool {
    let is_it = |e: &Expr| matches!(&e.kind, ExprKind::Var(v) if unit.symbol(*v).name == name);
    unit.stmts.iter().any(|st| {
        if let StmtKind::Call { args, .. } = &st.kind {
            if args.iter().any(|a| is_it(&a.value)) {
                return true;
            }
        }
        st.kind.exprs().iter().any(|e| {
            let mut found = false;
            e.walk(&mut |x| {
                if let ExprKind::FunctionCall { args, .. } = &x.kind {
                    found |= args.iter().any(|a| is_it(&a.value));
                }
            });
            found
        })
    })
}

/// Declarations of the hoisted functions the unit names without declaring
/// them (implicitly typed externals, not those of its interface blocks),
/// since derivatives use `implicit none`.
fn undeclared_functions(program: &Program, unit: &Unit, hoisted: &HoistMap) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut ids: Vec<&StmtId> = hoisted.keys().collect();
    ids.sort();
    for h in ids.into_iter().flat_map(|id| &hoisted[id]) {
        let callee = program.unit(h.callee);
        let declared = unit
            .lookup(&h.name)
            .is_some_and(|s| unit.symbol(s).ty.base != BaseType::None);
        // Module and internal procedures have explicit interfaces, and
        // so do the specifics of an operator.
        let contained = callee.parent.is_some() || generic_operator(&h.name).is_some();
        let line = format!(
            "{}, external :: {}",
            crate::calls::result_type(callee),
            h.name
        );
        let in_interface = unit
            .interface_blocks
            .iter()
            .any(|b| b.names.contains(&h.name));
        if !declared && !contained && !in_interface && !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// `use <m><suffix>, only: …` for the derivatives of the module variables
/// a routine uses (not needed inside `<m><suffix>` itself), with `m`.
fn module_var_uses(
    program: &Program,
    unit: &Unit,
    names: &HashMap<SymbolId, String>,
    own: Option<&String>,
    suffix: &str,
) -> Vec<(String, String)> {
    let mut per: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (s, d) in names {
        if let Some((m, _)) = crate::names::module_var(program, unit.symbol(*s)) {
            let mname = &program.unit(m).name;
            if Some(mname) != own {
                per.entry(mname.clone()).or_default().push(d.clone());
            }
        }
    }
    per.into_iter()
        .map(|(m, mut names)| {
            names.sort();
            names.dedup();
            let line = format!("use {m}{suffix}, only: {}", names.join(", "));
            (m, line)
        })
        .collect()
}

/// Whether a procedure must have an explicit interface where it is
/// called (Fortran 2008, 12.4.2.2): a dummy that is assumed-shape,
/// optional, allocatable, a pointer or a target, or an array-valued,
/// allocatable or pointer result, or an ELEMENTAL procedure (whose
/// derivative routines are elemental subroutines).
fn needs_explicit_interface(unit: &Unit) -> bool {
    if unit.elemental {
        return true;
    }
    let special = |s: &Symbol| {
        s.dims.iter().any(|d| d.kind == DimKind::AssumedShape)
            || s.attrs.optional
            || s.attrs.allocatable
            || s.attrs.pointer
            || s.attrs.target
    };
    unit.args.iter().any(|a| special(unit.symbol(*a)))
        || unit.result.is_some_and(|r| {
            let s = unit.symbol(r);
            s.rank() > 0 || s.attrs.allocatable || s.attrs.pointer
        })
}

/// The specification part being written, and alongside it the routine's
/// interface body.
#[derive(Default)]
struct Spec {
    w: Writer,
    iface: Writer,
}

impl Spec {
    /// A line of both the routine and its interface.
    fn both(&mut self, text: &str) {
        self.w.line(text);
        self.iface.line(text);
    }

    fn indent(&mut self) {
        self.w.indent();
        self.iface.indent();
    }

    /// Declares `unit`'s symbols in [`declaration_order`], each followed
    /// by its derivative (`names`): variables from modules and hosts are
    /// not redeclared (their derivatives are, unless they live in a
    /// derivative module), procedures only when `orig` references them as
    /// functions outside an interface block and they are not module
    /// procedures. `intents(sym)` gives the intents of the variable and of
    /// its derivative. The interface gets the declarations of dummies,
    /// the result, COMMON members and named constants.
    fn declarations(
        &mut self,
        program: &Program,
        unit: &Unit,
        orig: &Unit,
        d: &Declared,
        suffix: &str,
        intents: impl Fn(&Symbol) -> (Option<Intent>, Option<Intent>),
    ) {
        let names = d.names;
        let in_interface = |name: &str| {
            orig.interface_blocks
                .iter()
                .any(|b| b.names.iter().any(|n| n == name))
        };
        for s in declaration_order(unit) {
            let sym = unit.symbol(s);
            if d.shared.contains(&(orig.id, s)) {
                continue;
            }
            let imported = matches!(
                sym.storage,
                Storage::Imported { .. } | Storage::UnknownModule { .. }
            );
            // A procedure the adjoint runs a copy of has the copy's name
            // here ([`calling_copies`]); the original's is what `orig`
            // references and its interface block declares.
            let original = orig.symbols.get(s).map_or(sym, |o| o);
            let copy = original.name != sym.name;
            if sym.storage == Storage::Procedure
                && (!(references_function(orig, &original.name)
                    || passes_procedure(orig, &original.name))
                    || is_module_procedure(program, original)
                    || (in_interface(&original.name) && !copy))
            {
                continue;
            }
            let (primal, derivative) = intents(sym);
            let interface_needs = matches!(
                sym.storage,
                Storage::Dummy(_) | Storage::Common { .. } | Storage::Result
            ) || sym.attrs.parameter;
            if !imported {
                let mut p = sym.clone();
                p.intent = primal;
                if let Some(d) = declaration(unit, &p, &sym.name, true) {
                    self.w.line(&d);
                    if interface_needs {
                        self.iface.line(&d);
                    }
                }
            }
            // A module variable's derivative is declared in its derivative
            // module.
            let in_module = matches!(sym.storage, Storage::Imported { .. });
            if let (Some(dn), false) = (names.get(&s), in_module) {
                let mut d = sym.clone();
                d.intent = derivative;
                d.ty = crate::derived::derivative_type(program, unit, &sym.ty, suffix);
                // A derivative starts at zero, not at the primal's value;
                // a saved local's is saved too, and starts at zero once.
                let saved = sym.storage == Storage::Local
                    && (sym.attrs.initialized || sym.attrs.save)
                    && sym.ty.is_real_or_complex();
                d.init = saved.then(|| Expr {
                    kind: ExprKind::Real {
                        value: 0.0,
                        text: "0.0d0".into(),
                        kind: 8,
                    },
                    span: sym.span,
                });
                d.attrs.initialized = saved;
                if let Some(text) = declaration(unit, &d, dn, true) {
                    self.w.line(&text);
                    if interface_needs {
                        self.iface.line(&text);
                    }
                }
            }
        }
    }

    /// The COMMON blocks ([`common_blocks`]), in both.
    fn commons(
        &mut self,
        unit: &Unit,
        names: &HashMap<SymbolId, String>,
        with_d: &BTreeSet<(String, u32)>,
        suffix: &str,
    ) {
        for l in common_blocks(unit, names, with_d, suffix) {
            self.both(&l);
        }
    }

    /// The interface blocks of the original unit, copied (the block's
    /// text starts at `interface`; the other lines lose the indentation
    /// of its `end interface`).
    fn interface_blocks(&mut self, orig: &Unit) {
        for b in &orig.interface_blocks {
            let base = b
                .text
                .lines()
                .last()
                .map_or(0, |l| l.len() - l.trim_start_matches(' ').len());
            for (i, l) in b.text.lines().enumerate() {
                let spaces = l.len() - l.trim_start_matches(' ').len();
                let l = if i == 0 { l } else { &l[spaces.min(base)..] };
                self.w.line(l.trim_end());
            }
        }
    }

    /// The routine's interface body, closed by `end`.
    fn interface(&mut self, end: &str) -> String {
        let mut iface = std::mem::take(&mut self.iface);
        iface.dedent();
        iface.line(end);
        iface.finish()
    }
}

/// The unit's EQUIVALENCE statements, and for each set whose members have
/// derivatives the same set of their derivatives (`equivalence (ab(1),
/// bb(1))`: the derivatives share memory as the values do).
fn equivalences(orig: &Unit, names: &HashMap<SymbolId, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (set, texts) in orig.equivalences.iter().zip(&orig.equivalence_text) {
        out.push(format!("equivalence ({})", texts.join(", ")));
        let renamed: Option<Vec<String>> = set
            .iter()
            .zip(texts)
            .map(|(s, t)| {
                let d = names.get(s)?;
                let name = &orig.symbol(*s).name;
                Some(format!("{d}{}", t.get(name.len()..).unwrap_or("")))
            })
            .collect();
        if let Some(r) = renamed {
            out.push(format!("equivalence ({})", r.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(src: &str) -> Program {
        let mut parser = dfort_syntax::FortranParser::new();
        let parsed = parser.parse("t.f90".into(), src.into(), dfort_syntax::SourceForm::Free);
        let lowered = dfort_ir::lower::lower_file(&parsed, FileId(0));
        dfort_ir::link::link(vec![lowered]).0
    }

    fn named<'p>(p: &'p Program, name: &str) -> &'p Unit {
        p.units.iter().find(|u| u.name == name).expect("unit")
    }

    /// `f`'s routine of `flavour`, with derivatives for `x` and the result.
    fn written(p: &Program, flavour: Flavour) -> Routine {
        let f = named(p, "f");
        let names: HashMap<SymbolId, String> = match flavour {
            Flavour::Copy => HashMap::new(),
            _ => {
                let c = if flavour == Flavour::Tangent {
                    'd'
                } else {
                    'b'
                };
                ["x", "y"]
                    .iter()
                    .map(|n| (f.lookup(n).expect("symbol"), format!("{n}{c}")))
                    .collect()
            }
        };
        let mut r = open(
            &Declared {
                program: p,
                unit: f,
                orig: f,
                hoisted: &HashMap::new(),
                names: &names,
                commons: &BTreeSet::new(),
                module: None,
                used_modules: &BTreeSet::new(),
                extra_uses: &[],
                name: &format!("{}{}", f.name, flavour.routine_suffix()),
                shared: &BTreeSet::new(),
            },
            flavour,
        );
        r.w.line("integer :: dfort_temp");
        r.end_specification();
        r.w.line("dfort_temp = 1");
        r.w.line("y = x");
        r.finish(BTreeSet::new(), BTreeSet::new())
    }

    const FUNCTION: &str = "function f(x, n) result(y)\n  integer, intent(in) :: n\n  real(8), intent(in) :: x(:)\n  real(8) :: y\n  y = sum(x) * n\nend function f\n";

    #[test]
    fn the_flavours_differ_in_header_intents_and_runtime_only() {
        let p = program(FUNCTION);
        let tangent = written(&p, Flavour::Tangent).text;
        assert!(
            tangent.starts_with("subroutine f_d(x, xd, n, y, yd)\n"),
            "{tangent}"
        );
        assert!(
            tangent.contains("real(8), intent(in) :: xd(:)"),
            "{tangent}"
        );
        assert!(tangent.contains("real(8), intent(out) :: y\n"), "{tangent}");
        assert!(
            tangent.contains("real(8), intent(out) :: yd\n"),
            "{tangent}"
        );
        assert!(tangent.ends_with("end subroutine f_d\n"), "{tangent}");
        assert!(!tangent.contains("dfort_stack"), "{tangent}");

        let adjoint = written(&p, Flavour::Adjoint).text;
        assert!(
            adjoint.starts_with("subroutine f_b(x, xb, n, yb)\n  use dfort_stack\n"),
            "{adjoint}"
        );
        assert!(
            adjoint.contains("real(8), intent(inout) :: xb(:)"),
            "{adjoint}"
        );
        assert!(adjoint.ends_with("end subroutine f_b\n"), "{adjoint}");

        let copy = written(&p, Flavour::Copy).text;
        assert!(copy.starts_with("function f(x, n) result(y)\n"), "{copy}");
        assert!(!copy.contains("xd") && !copy.contains("xb"), "{copy}");
        assert!(copy.ends_with("end function f\n"), "{copy}");

        // The same primal declarations in the same order everywhere, the
        // specification part ending before the body.
        for text in [&tangent, &adjoint, &copy] {
            let n = text
                .find("integer(4), intent(in) :: n")
                .expect("n declared");
            let x = text
                .find("real(8), intent(in) :: x(:)")
                .expect("x declared");
            assert!(n < x, "{text}");
            assert!(
                text.find("implicit none").expect("implicit none") < n,
                "{text}"
            );
        }
    }

    #[test]
    fn an_explicit_interface_is_kept_for_derivatives_not_for_copies() {
        let p = program(FUNCTION);
        let tangent = written(&p, Flavour::Tangent);
        let iface = tangent.interface.expect("assumed shape needs an interface");
        assert!(
            iface.starts_with("subroutine f_d(x, xd, n, y, yd)\n"),
            "{iface}"
        );
        assert!(iface.contains("real(8), intent(in) :: xd(:)"), "{iface}");
        assert!(iface.ends_with("end subroutine f_d\n"), "{iface}");
        assert!(!iface.contains("dfort_temp"), "{iface}");
        // The interface blocks of callees go after the generator's
        // temporaries, before the body.
        let spec = &tangent.text[..tangent.spec_end];
        assert!(spec.ends_with("integer :: dfort_temp\n"), "{spec}");
        assert!(written(&p, Flavour::Adjoint).interface.is_some());
        assert!(written(&p, Flavour::Copy).interface.is_none());
    }

    #[test]
    fn hoisted_function_results_get_derivative_names_of_the_mode() {
        let p = program(
            "subroutine r(a, b)\n  real(8), intent(in) :: a\n  real(8), intent(out) :: b\n  b = 2 * g(a)\nend subroutine r\n\
             function g(t)\n  real(8), intent(in) :: t\n  real(8) :: g\n  g = t * t\nend function g\n",
        );
        let r = named(&p, "r");
        let request = dfort_analysis::facts::Request {
            roots: vec![dfort_analysis::roots::RootSpec {
                name: "r".into(),
                independent: vec!["a".into()],
                dependent: vec!["b".into()],
                after: None,
            }],
            others: false,
            recording: Default::default(),
            preaccumulate: Default::default(),
            supplied: Vec::new(),
        };
        let facts = dfort_analysis::facts::analyse(&p, &request, None);
        let diff = DiffSet::of_root(&facts, r.id).expect("a root");
        let (unit, hoisted, names) = derivative_unit(&p, &diff, r, Some('b'));
        let temps: Vec<SymbolId> = hoisted.values().flatten().map(|h| h.temp).collect();
        assert_eq!(temps.len(), 1, "{hoisted:?}");
        let temp = &unit.symbol(temps[0]).name;
        assert_eq!(names.get(&temps[0]), Some(&format!("{temp}b")));
        assert_eq!(
            names.get(&r.lookup("a").expect("a")),
            Some(&"ab".to_string())
        );
        // A copy has neither derivatives nor hoisted references.
        let (copy, hoisted, names) = derivative_unit(&p, &diff, r, None);
        assert!(hoisted.is_empty() && names.is_empty());
        assert_eq!(copy.symbols.len(), r.symbols.len());
    }
}
