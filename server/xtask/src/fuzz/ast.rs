//! The fuzzer's programs: a small Fortran syntax tree that the generator
//! builds, the shrinker simplifies and the printer writes as free-form
//! source. It holds only what the generator emits; names and constants
//! are kept as text.

use dfort_codegen::fortran::Writer;
use std::fmt::Write as _;

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal as written (`0.5d0`, `3`, `.true.`).
    Lit(String),
    Var(String),
    /// `a(i, j)`, `a(1:n, 2)`.
    Index(String, Vec<Sub>),
    Neg(Box<Expr>),
    /// `a op b` with op one of `+ - * / **`, comparisons, `.and.`, `.or.`.
    Bin(&'static str, Box<Expr>, Box<Expr>),
    /// An intrinsic or user function reference.
    Call(String, Vec<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Sub {
    At(Expr),
    Range(Option<Expr>, Option<Expr>, Option<Expr>),
}

impl Expr {
    pub fn lit(s: impl Into<String>) -> Expr {
        Expr::Lit(s.into())
    }
    pub fn var(s: impl Into<String>) -> Expr {
        Expr::Var(s.into())
    }
    pub fn int(v: i64) -> Expr {
        if v < 0 {
            Expr::Neg(Box::new(Expr::Lit((-v).to_string())))
        } else {
            Expr::Lit(v.to_string())
        }
    }
    pub fn bin(op: &'static str, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }
    pub fn call(f: impl Into<String>, args: Vec<Expr>) -> Expr {
        Expr::Call(f.into(), args)
    }
    pub fn at(a: impl Into<String>, idx: Vec<Expr>) -> Expr {
        Expr::Index(a.into(), idx.into_iter().map(Sub::At).collect())
    }

    /// The direct subexpressions, in order.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Lit(_) | Expr::Var(_) => Vec::new(),
            Expr::Index(_, subs) => subs
                .iter()
                .flat_map(|s| match s {
                    Sub::At(e) => vec![e],
                    Sub::Range(a, b, c) => [a, b, c].into_iter().flatten().collect(),
                })
                .collect(),
            Expr::Neg(a) => vec![a],
            Expr::Bin(_, a, b) => vec![a, b],
            Expr::Call(_, args) => args.iter().collect(),
        }
    }

    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Expr::Lit(_) | Expr::Var(_) => Vec::new(),
            Expr::Index(_, subs) => subs
                .iter_mut()
                .flat_map(|s| match s {
                    Sub::At(e) => vec![e],
                    Sub::Range(a, b, c) => [a, b, c].into_iter().flatten().collect(),
                })
                .collect(),
            Expr::Neg(a) => vec![&mut **a],
            Expr::Bin(_, a, b) => vec![&mut **a, &mut **b],
            Expr::Call(_, args) => args.iter_mut().collect(),
        }
    }

    /// Whether the expression names `name` (a variable, array or function).
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            Expr::Var(v) if v == name => true,
            Expr::Index(a, _) | Expr::Call(a, _) if a == name => true,
            _ => self.children().iter().any(|c| c.mentions(name)),
        }
    }

    pub fn print(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn write(&self, out: &mut String) {
        match self {
            Expr::Lit(t) | Expr::Var(t) => out.push_str(t),
            Expr::Index(a, subs) => {
                out.push_str(a);
                out.push('(');
                for (i, s) in subs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    match s {
                        Sub::At(e) => e.write(out),
                        Sub::Range(lo, hi, st) => {
                            if let Some(e) = lo {
                                e.write(out);
                            }
                            out.push(':');
                            if let Some(e) = hi {
                                e.write(out);
                            }
                            if let Some(e) = st {
                                out.push(':');
                                e.write(out);
                            }
                        }
                    }
                }
                out.push(')');
            }
            Expr::Neg(a) => {
                out.push_str("(-");
                a.write(out);
                out.push(')');
            }
            Expr::Bin(op, a, b) => {
                out.push('(');
                a.write(out);
                let _ = write!(out, " {op} ");
                b.write(out);
                out.push(')');
            }
            Expr::Call(f, args) => {
                out.push_str(f);
                out.push('(');
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    a.write(out);
                }
                out.push(')');
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Assign(Expr, Expr),
    /// IF / ELSE IF arms and an optional ELSE.
    If(Vec<(Expr, Vec<Stmt>)>, Option<Vec<Stmt>>),
    /// A one-line logical IF.
    IfOne(Expr, Box<Stmt>),
    Do {
        name: Option<String>,
        var: String,
        lo: Expr,
        hi: Expr,
        step: Option<Expr>,
        body: Vec<Stmt>,
    },
    While {
        name: Option<String>,
        cond: Expr,
        body: Vec<Stmt>,
        /// Written as a DO without control that leaves by EXIT at its top
        /// (`do` / `if (.not. (cond)) exit`), the same loop.
        exit_form: bool,
    },
    /// SELECT CASE: each case's values as written (`2:3`), and DEFAULT.
    Select {
        sel: Expr,
        cases: Vec<(String, Vec<Stmt>)>,
        default: Option<Vec<Stmt>>,
    },
    Call(String, Vec<Expr>),
    Exit(Option<String>),
    Cycle(Option<String>),
    Goto(u32),
    /// `return` (an early return from a procedure).
    Return,
    /// `stop` (an argument check that ends the run; the fuzzer's
    /// conditions never hold, so the run goes on and has a derivative).
    Stop,
    /// `go to (l1, l2, …) e`
    ComputedGoto(Vec<u32>, Expr),
    /// `if (e) lneg, lzero, lpos`
    ArithmeticIf(Expr, [u32; 3]),
    /// `<label> continue`: a jump target.
    Label(u32),
    /// `where (m1) … elsewhere (m2) … elsewhere … end where`; written as
    /// a one-line WHERE statement when `one_line` and it has one arm of
    /// one assignment.
    Where {
        arms: Vec<(Expr, Vec<Stmt>)>,
        els: Option<Vec<Stmt>>,
        one_line: bool,
    },
    /// `do concurrent (i = 1:hi[, mask])` or `forall (i = 1:hi[, mask])`
    /// (a construct) around `body`.
    Concurrent {
        forall: bool,
        index: String,
        hi: Expr,
        mask: Option<Expr>,
        body: Vec<Stmt>,
    },
    /// `read(fz_data, *) items`: passive values from an internal file
    /// (the character variable [`IO_DATA`]) overwrite the items.
    Read(Vec<Expr>),
    /// `read(fz_data, *, end=l, err=l) items` (or from the blank internal
    /// file [`IO_NONE`], `empty`, which ends at once): a READ that may jump
    /// to label `l`, where the generator defines the items again.
    ReadJump {
        items: Vec<Expr>,
        empty: bool,
        target: u32,
    },
    /// `write(fz_text, '(es24.16)') e`: a value written to an internal
    /// file ([`IO_TEXT`]), and with a target `t`, read back at once by
    /// `read(fz_text, *) t` (dfort treats what a READ reads as passive:
    /// where `t` is active it warns `cut-by-io`).
    WriteText(Expr, Option<Expr>),
    /// A READ of NAMELIST group `fz_nml<id>` (real scalars `group`) from
    /// the internal file [`IO_NML`], after a record that names only `set`
    /// (name, value): the members it leaves out keep their values. As
    /// `read(fz_nml_text, nml=g)` or, `keyword` false, `read(fz_nml_text,
    /// g)`.
    ReadNml {
        id: u32,
        group: Vec<String>,
        set: Vec<(String, String)>,
        keyword: bool,
    },
    /// `!$ad binomial-ckp(n)`: the DO loop that follows is checkpointed
    /// with a binomial schedule of `n` snapshots (issue 40).
    Ckp(u32),
    /// A statement dfort may refuse, as written, which the generator
    /// adds to learn what is refused.
    Raw(Vec<String>),
}

/// The internal file READs take their values from, and its declaration.
pub const IO_DATA: &str = "fz_data";
/// A blank internal file, whose READs end at once.
pub const IO_NONE: &str = "fz_none";
/// The internal file of WRITEs.
pub const IO_TEXT: &str = "fz_text";
/// The internal file of NAMELIST READs.
pub const IO_NML: &str = "fz_nml_text";

/// Every NAMELIST READ of `body` (nested statements too), in order.
fn namelist_reads(body: &[Stmt], out: &mut Vec<(u32, Vec<String>)>) {
    for s in body {
        match s {
            Stmt::ReadNml { id, group, .. } => out.push((*id, group.clone())),
            Stmt::IfOne(_, inner) => namelist_reads(std::slice::from_ref(inner), out),
            _ => {}
        }
        for b in s.blocks() {
            namelist_reads(b, out);
        }
    }
}

/// The NAMELIST statements of the groups `body` reads.
pub fn namelist_statements(body: &[Stmt]) -> Vec<String> {
    let mut groups = Vec::new();
    namelist_reads(body, &mut groups);
    groups
        .into_iter()
        .map(|(id, members)| format!("namelist /fz_nml{id}/ {}", members.join(", ")))
        .collect()
}

/// The declarations of the internal files a procedure's I/O statements
/// use.
pub fn io_declarations(body: &[Stmt]) -> Vec<Decl> {
    fn find(body: &[Stmt], read: &mut bool, write: &mut bool, none: &mut bool) {
        for s in body {
            match s {
                Stmt::Read(_) | Stmt::ReadJump { empty: false, .. } => *read = true,
                Stmt::ReadJump { empty: true, .. } => *none = true,
                Stmt::WriteText(..) => *write = true,
                Stmt::IfOne(_, inner) => find(std::slice::from_ref(inner), read, write, none),
                _ => {}
            }
            for b in s.blocks() {
                find(b, read, write, none);
            }
        }
    }
    let (mut read, mut write, mut none) = (false, false, false);
    find(body, &mut read, &mut write, &mut none);
    let mut out = Vec::new();
    let mut nml = Vec::new();
    namelist_reads(body, &mut nml);
    if !nml.is_empty() {
        out.push(Decl {
            ty: "character(len=200)",
            ..Decl::real(IO_NML, Vec::new())
        });
    }
    if read {
        out.push(Decl {
            ty: "character(len=64)",
            init: Some("'0.75 -1.5 2.25 0.5 1.25 -0.375 1.75 0.625 -0.25 1.5'".into()),
            ..Decl::real(IO_DATA, Vec::new())
        });
    }
    if write {
        out.push(Decl {
            ty: "character(len=32)",
            ..Decl::real(IO_TEXT, Vec::new())
        });
    }
    if none {
        out.push(Decl {
            ty: "character(len=8)",
            init: Some("' '".into()),
            ..Decl::real(IO_NONE, Vec::new())
        });
    }
    out
}

impl Stmt {
    /// The statement lists nested directly in this statement.
    pub fn blocks(&self) -> Vec<&Vec<Stmt>> {
        match self {
            Stmt::If(arms, els) | Stmt::Where { arms, els, .. } => {
                arms.iter().map(|(_, b)| b).chain(els.iter()).collect()
            }
            Stmt::Do { body, .. } | Stmt::While { body, .. } | Stmt::Concurrent { body, .. } => {
                vec![body]
            }
            Stmt::Select { cases, default, .. } => {
                cases.iter().map(|(_, b)| b).chain(default.iter()).collect()
            }
            _ => Vec::new(),
        }
    }

    pub fn blocks_mut(&mut self) -> Vec<&mut Vec<Stmt>> {
        match self {
            Stmt::If(arms, els) | Stmt::Where { arms, els, .. } => arms
                .iter_mut()
                .map(|(_, b)| b)
                .chain(els.iter_mut())
                .collect(),
            Stmt::Do { body, .. } | Stmt::While { body, .. } | Stmt::Concurrent { body, .. } => {
                vec![body]
            }
            Stmt::Select { cases, default, .. } => cases
                .iter_mut()
                .map(|(_, b)| b)
                .chain(default.iter_mut())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The expressions of this statement (not of nested statements).
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Stmt::Assign(l, r) => vec![l, r],
            Stmt::If(arms, _) | Stmt::Where { arms, .. } => {
                arms.iter_mut().map(|(c, _)| c).collect()
            }
            Stmt::IfOne(c, s) => {
                let mut v = vec![c];
                v.extend(s.exprs_mut());
                v
            }
            Stmt::Do { lo, hi, step, .. } => {
                let mut v = vec![lo, hi];
                v.extend(step.as_mut());
                v
            }
            Stmt::While { cond, .. } => vec![cond],
            Stmt::Concurrent { hi, mask, .. } => std::iter::once(hi).chain(mask.as_mut()).collect(),
            Stmt::Select { sel, .. } => vec![sel],
            Stmt::Call(_, args) => args.iter_mut().collect(),
            // READ items stay variables.
            Stmt::ComputedGoto(_, e) | Stmt::ArithmeticIf(e, _) | Stmt::WriteText(e, _) => vec![e],
            _ => Vec::new(),
        }
    }

    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Stmt::Assign(l, r) => vec![l, r],
            Stmt::If(arms, _) | Stmt::Where { arms, .. } => arms.iter().map(|(c, _)| c).collect(),
            Stmt::IfOne(c, s) => {
                let mut v = vec![c];
                v.extend(s.exprs());
                v
            }
            Stmt::Do { lo, hi, step, .. } => {
                let mut v = vec![lo, hi];
                v.extend(step.as_ref());
                v
            }
            Stmt::While { cond, .. } => vec![cond],
            Stmt::Concurrent { hi, mask, .. } => std::iter::once(hi).chain(mask.as_ref()).collect(),
            Stmt::Select { sel, .. } => vec![sel],
            Stmt::Call(_, args) | Stmt::Read(args) | Stmt::ReadJump { items: args, .. } => {
                args.iter().collect()
            }
            Stmt::ComputedGoto(_, e) | Stmt::ArithmeticIf(e, _) => vec![e],
            Stmt::WriteText(e, back) => std::iter::once(e).chain(back.as_ref()).collect(),
            _ => Vec::new(),
        }
    }

    /// Whether this statement or one nested in it names `name`.
    pub fn mentions(&self, name: &str) -> bool {
        if let Stmt::Call(f, _) = self {
            if f == name {
                return true;
            }
        }
        if let Stmt::Raw(lines) = self {
            return lines.iter().any(|l| l.contains(name));
        }
        self.exprs().iter().any(|e| e.mentions(name))
            || self
                .blocks()
                .iter()
                .any(|b| b.iter().any(|s| s.mentions(name)))
    }
}

/// A declaration line: `real(8), intent(in) :: x(n)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    /// `real(8)` or `integer`.
    pub ty: &'static str,
    pub name: String,
    /// Extents as written (`n`, `3`).
    pub dims: Vec<String>,
    pub intent: Option<&'static str>,
    /// Extra attributes (`parameter`), and an initial value.
    pub attrs: Vec<&'static str>,
    pub init: Option<String>,
}

impl Decl {
    pub fn real(name: impl Into<String>, dims: Vec<String>) -> Decl {
        Decl {
            ty: "real(8)",
            name: name.into(),
            dims,
            intent: None,
            attrs: Vec::new(),
            init: None,
        }
    }
    pub fn int(name: impl Into<String>) -> Decl {
        Decl {
            ty: "integer",
            ..Decl::real(name, Vec::new())
        }
    }
    pub fn with_intent(mut self, intent: &'static str) -> Decl {
        self.intent = Some(intent);
        self
    }

    fn print(&self) -> String {
        let mut parts = vec![self.ty.to_string()];
        parts.extend(self.attrs.iter().map(|a| a.to_string()));
        if let Some(i) = self.intent {
            parts.push(format!("intent({i})"));
        }
        let dims = if self.dims.is_empty() {
            String::new()
        } else {
            format!("({})", self.dims.join(", "))
        };
        let init = self
            .init
            .as_ref()
            .map(|v| format!(" = {v}"))
            .unwrap_or_default();
        format!("{} :: {}{dims}{init}", parts.join(", "), self.name)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ProcKind {
    Subroutine,
    /// A `real(8)` function whose result variable is `<name>_r`.
    Function,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Proc {
    pub kind: ProcKind,
    pub recursive: bool,
    /// An ELEMENTAL function (of scalars, applied to arrays).
    pub elemental: bool,
    /// A PURE procedure (no side effects; it calls only pure ones).
    pub pure: bool,
    pub name: String,
    pub args: Vec<String>,
    pub uses: Vec<String>,
    pub decls: Vec<Decl>,
    /// Specification lines after the declarations (COMMON, statement
    /// functions, interface blocks), as written.
    pub spec: Vec<String>,
    pub body: Vec<Stmt>,
    /// Internal procedures (after CONTAINS).
    pub internal: Vec<Proc>,
}

impl Proc {
    /// A procedure that is neither recursive, elemental nor pure, uses
    /// no module and has no specification lines or internal procedures
    /// (set those with struct update syntax).
    pub fn plain(
        kind: ProcKind,
        name: String,
        args: Vec<String>,
        decls: Vec<Decl>,
        body: Vec<Stmt>,
    ) -> Proc {
        Proc {
            kind,
            recursive: false,
            elemental: false,
            pure: false,
            name,
            args,
            uses: Vec::new(),
            decls,
            spec: Vec::new(),
            body,
            internal: Vec::new(),
        }
    }

    pub fn result(&self) -> String {
        format!("{}_r", self.name)
    }

    fn print(&self, w: &mut Printer) {
        let prefix = match (self.recursive, self.elemental, self.pure) {
            (_, true, _) => "elemental ",
            (true, false, _) => "recursive ",
            (false, false, true) => "pure ",
            (false, false, false) => "",
        };
        let head = match self.kind {
            ProcKind::Subroutine => {
                format!("{prefix}subroutine {}({})", self.name, self.args.join(", "))
            }
            ProcKind::Function => format!(
                "{prefix}function {}({}) result({})",
                self.name,
                self.args.join(", "),
                self.result()
            ),
        };
        w.line(&head);
        w.indent();
        for u in &self.uses {
            w.line(&format!("use {u}"));
        }
        w.line("implicit none");
        // An array-valued result is among the declarations.
        let result_declared = self.decls.iter().any(|d| d.name == self.result());
        if self.kind == ProcKind::Function && !result_declared {
            w.line(&format!("real(8) :: {}", self.result()));
        }
        for d in &self.decls {
            w.line(&d.print());
        }
        for s in &self.spec {
            w.line(s);
        }
        for l in namelist_statements(&self.body) {
            w.line(&l);
        }
        for s in &self.body {
            w.stmt(s);
        }
        w.dedent();
        if !self.internal.is_empty() {
            w.line("contains");
            w.indent();
            for p in &self.internal {
                p.print(w);
            }
            w.dedent();
        }
        let end = match self.kind {
            ProcKind::Subroutine => "end subroutine",
            ProcKind::Function => "end function",
        };
        w.line(&format!("{end} {}", self.name));
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub name: String,
    /// Derived-type definitions, as lines.
    pub types: Vec<String>,
    pub decls: Vec<Decl>,
    pub procs: Vec<Proc>,
    /// Its variables are declared in a module of their own, `<name>_v`,
    /// which this one USEs with `only:` (when it defines no types, whose
    /// operators are its procedures): the procedures reach the variables
    /// through their host's USE, the root and the externals through two
    /// USEs.
    pub vars_apart: bool,
}

/// A generated test case: the source and how to drive its root.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub module: Option<Module>,
    /// External procedures, before the root.
    pub externals: Vec<Proc>,
    pub root: Proc,
    /// The root's integer arguments and their values.
    pub ints: Vec<(String, i64)>,
    pub independents: Vec<String>,
    pub dependents: Vec<String>,
    /// dfort reads the program through the C preprocessor
    /// ([`Program::print_for_dfort`]); gfortran compiles [`Program::print`].
    pub macros: bool,
    /// The root's independents take their values after its first
    /// statement, a call of this internal subroutine, which maps each as
    /// `x = AFTER_SCALE*x + 0.25` (`dfort … --after`).
    pub after: Option<String>,
    /// The program calls [`SOLVER`], whose adjoint the user supplies
    /// (`dfort.toml`'s `[adjoint] supplied`; the checker writes it).
    pub supplied: bool,
}

/// The fuzzer's iterative solver, whose adjoint is supplied.
pub const SOLVER: &str = "fz_solve";

/// What the subroutine of [`Program::after`] multiplies the independents
/// by: the differences on entry are this times the derivatives after it.
pub const AFTER_SCALE: f64 = 0.5;
pub const AFTER_SCALE_LITERAL: &str = "0.5d0";

impl Program {
    /// The text dfort differentiates. With `macros`: a `.F90` text whose
    /// real declarations spell their type with a macro and whose root
    /// holds a region an `#ifdef` leaves out; through the C preprocessor
    /// it is [`Program::print`]'s program.
    pub fn print_for_dfort(&self) -> String {
        let text = self.print();
        if !self.macros {
            return text;
        }
        let mut out = String::from("#define FZ_RK real(8)\n");
        let mut skipped = false;
        for line in text.lines() {
            let body = line.trim_start();
            let indent = &line[..line.len() - body.len()];
            match body.strip_prefix("real(8)") {
                Some(rest) if rest.starts_with([',', ' ']) => {
                    out.push_str(&format!("{indent}FZ_RK{rest}\n"));
                }
                _ => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            if !skipped && body == "implicit none" && line.starts_with("  implicit") {
                out.push_str("#ifdef FZ_NEVER_DEFINED\n  this line is not Fortran (\n#endif\n");
                skipped = true;
            }
        }
        out
    }

    pub fn print(&self) -> String {
        let mut w = Printer::default();
        if let Some(m) = &self.module {
            let apart = m.vars_apart && !m.decls.is_empty() && m.types.is_empty();
            let declarations = |w: &mut Printer| {
                w.line("implicit none");
                for t in &m.types {
                    w.line(t);
                }
                for d in &m.decls {
                    w.line(&d.print());
                }
            };
            // (Apart, there are no types.)
            if apart {
                w.line(&format!("module {}_v", m.name));
                w.indent();
                declarations(&mut w);
                w.dedent();
                w.line(&format!("end module {}_v", m.name));
                w.blank();
            }
            w.line(&format!("module {}", m.name));
            w.indent();
            match apart {
                true => {
                    let names: Vec<&str> = m.decls.iter().map(|d| d.name.as_str()).collect();
                    w.line(&format!("use {}_v, only: {}", m.name, names.join(", ")));
                    w.line("implicit none");
                }
                false => declarations(&mut w),
            }
            w.dedent();
            if !m.procs.is_empty() {
                w.line("contains");
                w.indent();
                for p in &m.procs {
                    p.print(&mut w);
                }
                w.dedent();
            }
            w.line(&format!("end module {}", m.name));
            w.blank();
        }
        for p in &self.externals {
            p.print(&mut w);
            w.blank();
        }
        self.root.print(&mut w);
        w.w.finish()
    }

    /// Calls `f` on every procedure, module and internal ones included
    /// (an internal procedure after its host).
    pub fn each_proc_mut(&mut self, f: &mut impl FnMut(&mut Proc)) {
        fn visit(p: &mut Proc, f: &mut impl FnMut(&mut Proc)) {
            f(p);
            for q in &mut p.internal {
                visit(q, f);
            }
        }
        if let Some(m) = &mut self.module {
            for p in &mut m.procs {
                visit(p, f);
            }
        }
        for p in &mut self.externals {
            visit(p, f);
        }
        visit(&mut self.root, f);
    }
}

/// Free-form lines, continued with `&` past the line length
/// ([`dfort_codegen::fortran::Writer`]).
#[derive(Default)]
struct Printer {
    w: Writer,
}

impl Printer {
    fn line(&mut self, text: &str) {
        self.w.line(text);
    }
    fn indent(&mut self) {
        self.w.indent();
    }
    fn dedent(&mut self) {
        self.w.dedent();
    }
    fn blank(&mut self) {
        self.w.blank();
    }
    fn block(&mut self, body: &[Stmt]) {
        self.indent();
        for s in body {
            self.stmt(s);
        }
        self.dedent();
    }
    /// A statement as one line (simple statements only).
    /// `s` on one line (its continuations joined): the line that holds
    /// it is split where it is long, once.
    fn simple(s: &Stmt) -> String {
        let mut p = Printer::default();
        p.stmt(s);
        p.w.finish()
            .lines()
            .map(|l| {
                let l = l.trim();
                let l = l.strip_prefix("& ").unwrap_or(l);
                l.strip_suffix(" &").unwrap_or(l)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Assign(l, r) => self.line(&format!("{} = {}", l.print(), r.print())),
            Stmt::If(arms, els) => {
                for (i, (c, body)) in arms.iter().enumerate() {
                    let kw = if i == 0 { "if" } else { "else if" };
                    self.line(&format!("{kw} ({}) then", c.print()));
                    self.block(body);
                }
                if let Some(b) = els {
                    self.line("else");
                    self.block(b);
                }
                self.line("end if");
            }
            Stmt::IfOne(c, s) => {
                self.line(&format!("if ({}) {}", c.print(), Printer::simple(s)));
            }
            Stmt::Concurrent {
                forall,
                index,
                hi,
                mask,
                body,
            } => {
                // tree-sitter-fortran 0.6.0 does not parse a FORALL mask
                // that starts with a parenthesis: the comparison is
                // written bare.
                let m = match mask {
                    Some(Expr::Bin(op, a, b)) => format!(", {} {op} {}", a.print(), b.print()),
                    Some(m) => format!(", {}", m.print()),
                    None => String::new(),
                };
                let head = format!("({index} = 1:{}{m})", hi.print());
                if *forall {
                    self.line(&format!("forall {head}"));
                    self.block(body);
                    self.line("end forall");
                } else {
                    self.line(&format!("do concurrent {head}"));
                    self.block(body);
                    self.line("end do");
                }
            }
            Stmt::Where {
                arms,
                els,
                one_line,
            } => {
                if let ([(c, body)], None, true) = (arms.as_slice(), els, *one_line) {
                    if let [one @ Stmt::Assign(..)] = body.as_slice() {
                        let line = format!("where ({}) {}", c.print(), Printer::simple(one));
                        self.line(&line);
                        return;
                    }
                }
                for (i, (c, body)) in arms.iter().enumerate() {
                    let kw = if i == 0 { "where" } else { "elsewhere" };
                    self.line(&format!("{kw} ({})", c.print()));
                    self.block(body);
                }
                if let Some(b) = els {
                    self.line("elsewhere");
                    self.block(b);
                }
                self.line("end where");
            }
            Stmt::Do {
                name,
                var,
                lo,
                hi,
                step,
                body,
            } => {
                let n = name.as_ref().map(|n| format!("{n}: ")).unwrap_or_default();
                let st = step
                    .as_ref()
                    .map(|s| format!(", {}", s.print()))
                    .unwrap_or_default();
                self.line(&format!("{n}do {var} = {}, {}{st}", lo.print(), hi.print()));
                self.block(body);
                let tail = name.as_ref().map(|n| format!(" {n}")).unwrap_or_default();
                self.line(&format!("end do{tail}"));
            }
            Stmt::While {
                name,
                cond,
                body,
                exit_form,
            } => {
                let n = name.as_ref().map(|n| format!("{n}: ")).unwrap_or_default();
                if *exit_form {
                    self.line(&format!("{n}do"));
                    let exit = name.as_ref().map(|n| format!(" {n}")).unwrap_or_default();
                    self.line(&format!("  if (.not. ({})) exit{exit}", cond.print()));
                } else {
                    self.line(&format!("{n}do while ({})", cond.print()));
                }
                self.block(body);
                let tail = name.as_ref().map(|n| format!(" {n}")).unwrap_or_default();
                self.line(&format!("end do{tail}"));
            }
            Stmt::Select {
                sel,
                cases,
                default,
            } => {
                self.line(&format!("select case ({})", sel.print()));
                for (v, body) in cases {
                    self.line(&format!("case ({v})"));
                    self.block(body);
                }
                if let Some(b) = default {
                    self.line("case default");
                    self.block(b);
                }
                self.line("end select");
            }
            Stmt::Call(f, args) => {
                let a: Vec<String> = args.iter().map(Expr::print).collect();
                self.line(&format!("call {f}({})", a.join(", ")));
            }
            Stmt::Exit(n) => self.line(&format!(
                "exit{}",
                n.as_ref().map(|n| format!(" {n}")).unwrap_or_default()
            )),
            Stmt::Cycle(n) => self.line(&format!(
                "cycle{}",
                n.as_ref().map(|n| format!(" {n}")).unwrap_or_default()
            )),
            Stmt::Goto(l) => self.line(&format!("go to {l}")),
            Stmt::Return => self.line("return"),
            Stmt::Stop => self.line("stop"),
            Stmt::ComputedGoto(ls, e) => {
                let ls: Vec<String> = ls.iter().map(u32::to_string).collect();
                self.line(&format!("go to ({}) {}", ls.join(", "), e.print()));
            }
            Stmt::ArithmeticIf(e, [a, b, c]) => {
                self.line(&format!("if ({}) {a}, {b}, {c}", e.print()))
            }
            Stmt::Label(l) => self.line(&format!("{l} continue")),
            Stmt::Read(items) => {
                let a: Vec<String> = items.iter().map(Expr::print).collect();
                self.line(&format!("read({IO_DATA}, *) {}", a.join(", ")));
            }
            Stmt::ReadJump {
                items,
                empty,
                target,
            } => {
                let a: Vec<String> = items.iter().map(Expr::print).collect();
                let file = if *empty { IO_NONE } else { IO_DATA };
                self.line(&format!(
                    "read({file}, *, end={target}, err={target}) {}",
                    a.join(", ")
                ));
            }
            Stmt::WriteText(e, back) => {
                self.line(&format!("write({IO_TEXT}, '(es24.16)') {}", e.print()));
                if let Some(t) = back {
                    self.line(&format!("read({IO_TEXT}, *) {}", t.print()));
                }
            }
            Stmt::ReadNml {
                id, set, keyword, ..
            } => {
                let values: Vec<String> = set.iter().map(|(n, v)| format!("{n}={v}")).collect();
                self.line(&format!("{IO_NML} = '&fz_nml{id} {} /'", values.join(", ")));
                let nml = if *keyword { "nml=" } else { "" };
                self.line(&format!("read({IO_NML}, {nml}fz_nml{id})"));
            }
            Stmt::Ckp(n) => self.line(&format!("!$ad binomial-ckp({n})")),
            Stmt::Raw(lines) => {
                for l in lines {
                    self.line(l);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_print_as_free_form_fortran() {
        let root = Proc {
            kind: ProcKind::Subroutine,
            recursive: false,
            elemental: false,
            pure: false,
            name: "fz".into(),
            args: vec!["n".into(), "x".into()],
            uses: vec![],
            decls: vec![
                Decl::int("n").with_intent("in"),
                Decl::real("x", vec!["n".into()]).with_intent("inout"),
                Decl::int("i"),
            ],
            spec: vec![],
            body: vec![
                Stmt::Do {
                    name: None,
                    var: "i".into(),
                    lo: Expr::var("n"),
                    hi: Expr::int(1),
                    step: Some(Expr::int(-1)),
                    body: vec![Stmt::Assign(
                        Expr::at("x", vec![Expr::var("i")]),
                        Expr::bin(
                            "*",
                            Expr::at("x", vec![Expr::var("i")]),
                            Expr::call("sin", vec![Expr::lit("0.5d0")]),
                        ),
                    )],
                },
                Stmt::Label(10),
            ],
            internal: vec![],
        };
        let p = Program {
            module: None,
            externals: vec![],
            root,
            ints: vec![("n".into(), 3)],
            independents: vec!["x".into()],
            dependents: vec!["x".into()],
            macros: false,
            after: None,
            supplied: false,
        };
        let text = p.print();
        assert!(text.contains("  do i = n, 1, (-1)\n    x(i) = (x(i) * sin(0.5d0))\n  end do\n"));
        assert!(text.contains("  10 continue\n"));
        assert!(
            text.starts_with("subroutine fz(n, x)\n  implicit none\n  integer, intent(in) :: n\n")
        );
        assert_eq!(p.print_for_dfort(), text, "no macros: the same text");
        // Through dfort's C preprocessor, the macro version is the program.
        let p = Program { macros: true, ..p };
        let cpp = p.print_for_dfort();
        assert!(cpp.contains("  FZ_RK, intent(inout) :: x(n)\n"), "{cpp}");
        assert!(cpp.contains("#ifdef FZ_NEVER_DEFINED\n"), "{cpp}");
        let out = dfort_syntax::cpp::preprocess(
            std::path::Path::new("prog.F90"),
            &cpp,
            &Default::default(),
            &|_| None,
        );
        assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
        let code = |t: &str| -> Vec<String> {
            t.lines()
                .map(|l| l.trim_end().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        };
        assert_eq!(code(&out.text), code(&text));
    }
}
