//! The IR every later stage reads: program units with symbol tables,
//! statements (an arena per unit, nested blocks by id), expressions that
//! tell array references, intrinsic calls and user function calls apart, a
//! CFG per unit ([`crate::cfg`]) and a call graph ([`crate::callgraph`]).
//! Every node keeps the range of the original source it came from.

use crate::cfg::Cfg;

use dfort_syntax::TextRange;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnitId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymbolId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StmtId(pub u32);
crate::impl_idx!(FileId, UnitId, SymbolId, StmtId);

/// A range of a file's original text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub range: TextRange,
}

impl Span {
    /// Whether `other` lies wholly inside this span (same file).
    pub fn holds(&self, other: Span) -> bool {
        self.file == other.file && self.range.covers(other.range)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitKind {
    Program,
    Subroutine,
    Function,
    Module,
    BlockData,
}

impl UnitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UnitKind::Program => "program",
            UnitKind::Subroutine => "subroutine",
            UnitKind::Function => "function",
            UnitKind::Module => "module",
            UnitKind::BlockData => "block data",
        }
    }
}

/// A program unit: main program, external or module or internal
/// subroutine/function, module, block data.
#[derive(Clone, Debug)]
pub struct Unit {
    pub id: UnitId,
    /// Lower case.
    pub name: String,
    pub kind: UnitKind,
    pub span: Span,
    pub name_span: Span,
    /// The host: the module of a module procedure, the procedure of an
    /// internal procedure.
    pub parent: Option<UnitId>,
    pub children: Vec<UnitId>,
    pub recursive: bool,
    /// Declared ELEMENTAL (applied element by element to arrays).
    pub elemental: bool,
    /// A PURE procedure (ELEMENTAL ones are pure too, but only PURE sets
    /// this).
    pub pure: bool,
    /// Dummy arguments in order (`*` alternate returns are rejected).
    pub args: Vec<SymbolId>,
    /// The result variable of a function.
    pub result: Option<SymbolId>,
    /// Shared between copies of the unit: linking rewrites few.
    pub symbols: crate::shared_vec::SharedVec<SymbolId, Symbol>,
    pub implicit: ImplicitRules,
    pub uses: Vec<UseDecl>,
    pub commons: Vec<CommonBlock>,
    pub equivalences: Vec<Vec<SymbolId>>,
    /// The members of each EQUIVALENCE set as written (`a(1)`), in the
    /// order of `equivalences`: derivatives declare the same sets.
    pub equivalence_text: Vec<Vec<String>>,
    /// May-alias classes (two or more variables that a pointer may make
    /// name the same memory), which the analyses treat as one variable:
    /// empty after lowering, filled when the analyses prepare the unit
    /// (`dfort_analysis::aliases`).
    pub aliases: Vec<Vec<SymbolId>>,
    pub stmt_functions: Vec<StmtFunction>,
    /// Statement arena; `body` and nested blocks refer to it by id.
    pub stmts: crate::shared_vec::SharedVec<StmtId, Stmt>,
    pub body: Vec<StmtId>,
    /// Shared between copies of the unit (linking changes it rarely).
    pub cfg: std::sync::Arc<Cfg>,
    pub directives: Vec<Directive>,
    /// The unit's interface blocks, for derivatives to declare the same
    /// explicit interfaces.
    pub interface_blocks: Vec<InterfaceBlock>,
    /// Derived-type definitions, in order.
    pub types: Vec<crate::types::TypeDef>,
    /// The unit's FORMAT statements: label and text (one line, without the
    /// label), for derivatives that keep the I/O statements using them.
    pub formats: Vec<(u32, String)>,
    /// The unit's DATA statements, each as one line: derivatives declare
    /// the variables they initialise and keep them.
    pub data: Vec<String>,
    /// The unit's NAMELIST groups: name (lower case) and members. A READ
    /// of a group defines its members, a WRITE reads them.
    pub namelists: Vec<Namelist>,
    /// The names (lower case) of the unit's ENTRY points: the analyses do
    /// not follow them, the derivatives refuse calls to them.
    pub entries: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Namelist {
    pub name: String,
    pub members: Vec<SymbolId>,
}

impl Unit {
    pub fn symbol(&self, id: SymbolId) -> &Symbol {
        &self.symbols[id]
    }
    /// The subscripts of `array(subs)` that select its element or
    /// section: all of them but the substring range a character array's
    /// element may carry after them (`names(i)(1:n)` is held as
    /// `names(i, 1:n)`).
    pub fn element_subs<'s>(&self, array: SymbolId, subs: &'s [Subscript]) -> &'s [Subscript] {
        &subs[..subs.len().min(self.symbol(array).rank().max(1))]
    }
    pub fn stmt(&self, id: StmtId) -> &Stmt {
        &self.stmts[id]
    }
    pub fn lookup(&self, name: &str) -> Option<SymbolId> {
        self.symbols.position(|s| s.name == name)
    }
    pub fn is_procedure(&self) -> bool {
        matches!(self.kind, UnitKind::Subroutine | UnitKind::Function)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BaseType {
    Integer,
    Real,
    Complex,
    Logical,
    Character,
    /// `type(name)` / `class(name)`; the name is in [`Type::derived`].
    Derived,
    /// Not typed (a procedure name, or an error already reported).
    None,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Type {
    pub base: BaseType,
    /// Kind in bytes when known (`real(8)`, `real*8`, `double precision`,
    /// `real(dp)` with `dp` a named constant).
    pub kind: Option<u32>,
    /// The kind selector as written, when it was not a literal.
    pub kind_text: Option<String>,
    /// Character length as written (`*10`, `len=*`).
    pub len: Option<String>,
    /// Derived type name, lower case.
    pub derived: Option<String>,
}

impl Type {
    pub fn new(base: BaseType, kind: Option<u32>) -> Type {
        Type {
            base,
            kind,
            kind_text: None,
            len: None,
            derived: None,
        }
    }
    pub fn none() -> Type {
        Type::new(BaseType::None, None)
    }
    pub fn is_real_or_complex(&self) -> bool {
        matches!(self.base, BaseType::Real | BaseType::Complex)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    In,
    Out,
    InOut,
}

impl Intent {
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::In => "in",
            Intent::Out => "out",
            Intent::InOut => "inout",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimKind {
    /// `a(n)`, `a(0:n)`
    Explicit,
    /// `a(:)`, `a(0:)`
    AssumedShape,
    /// `a(*)`, `a(n, *)` (last dimension)
    AssumedSize,
    /// `allocatable`/`pointer` `a(:)`
    Deferred,
}

#[derive(Clone, Debug)]
pub struct Dim {
    pub kind: DimKind,
    pub lower: Option<Box<Expr>>,
    pub upper: Option<Box<Expr>>,
}

/// Where a variable lives; analyses treat COMMON and module variables as
/// globals that flow through calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    /// The n-th dummy argument (0-based).
    Dummy(u32),
    Local,
    /// The result variable of a function.
    Result,
    /// Member `index` of COMMON block `block` (blank common: empty name).
    Common {
        block: String,
        index: u32,
    },
    /// Declared in another unit and visible here by host or use association.
    Imported {
        from: UnitId,
        symbol: SymbolId,
        via: Association,
    },
    /// Declared in a module this unit uses that dfort was not given.
    UnknownModule {
        module: String,
    },
    /// A procedure name (external, intrinsic, statement function, dummy
    /// procedure) rather than a variable.
    Procedure,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Association {
    Host,
    Use,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typing {
    Declared,
    /// Typed by the implicit rules (first letter).
    Implicit,
    /// Type comes from where it is imported from.
    Imported,
    /// No type could be given (reported).
    Unknown,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attrs {
    pub parameter: bool,
    pub save: bool,
    pub external: bool,
    pub intrinsic: bool,
    pub allocatable: bool,
    pub pointer: bool,
    pub target: bool,
    pub optional: bool,
    /// Initialised by a DATA statement or an initialiser (implies SAVE).
    pub initialized: bool,
}

#[derive(Clone, Debug)]
pub struct Symbol {
    /// Lower case.
    pub name: String,
    pub ty: Type,
    pub typing: Typing,
    pub dims: Vec<Dim>,
    pub intent: Option<Intent>,
    pub attrs: Attrs,
    /// PARAMETER value or initialiser.
    pub init: Option<Expr>,
    pub storage: Storage,
    /// Where it is declared (first declaration), or first used when it is
    /// not declared.
    pub span: Span,
    pub declared: bool,
}

impl Symbol {
    /// A scalar local variable without attributes.
    pub fn local(name: String, ty: Type, typing: Typing, declared: bool, span: Span) -> Symbol {
        Symbol {
            name,
            ty,
            typing,
            dims: Vec::new(),
            intent: None,
            attrs: Attrs::default(),
            init: None,
            storage: Storage::Local,
            span,
            declared,
        }
    }
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
    pub fn is_global(&self) -> bool {
        matches!(
            self.storage,
            Storage::Common { .. } | Storage::Imported { .. } | Storage::UnknownModule { .. }
        )
    }
}

/// Implicit typing rules: `None` after `implicit none`. The letters'
/// types are shared between units (and with the IR's copies) until a
/// unit's IMPLICIT statement changes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImplicitRules {
    pub none: bool,
    pub letters: std::sync::Arc<Vec<Option<Type>>>,
}

impl Default for ImplicitRules {
    /// Fortran's default: I–N integer, others real.
    fn default() -> Self {
        static DEFAULT: std::sync::OnceLock<std::sync::Arc<Vec<Option<Type>>>> =
            std::sync::OnceLock::new();
        let letters = DEFAULT.get_or_init(|| {
            std::sync::Arc::new(
                (b'a'..=b'z')
                    .map(|c| {
                        if (b'i'..=b'n').contains(&c) {
                            Some(Type::new(BaseType::Integer, Some(4)))
                        } else {
                            Some(Type::new(BaseType::Real, Some(4)))
                        }
                    })
                    .collect(),
            )
        });
        ImplicitRules {
            none: false,
            letters: letters.clone(),
        }
    }
}

impl ImplicitRules {
    pub fn type_of(&self, name: &str) -> Option<Type> {
        let c = name.bytes().next()?.to_ascii_lowercase();
        if !c.is_ascii_lowercase() {
            return None;
        }
        self.letters.get((c - b'a') as usize).cloned().flatten()
    }
}

#[derive(Clone, Debug)]
pub struct UseDecl {
    /// Lower case module name.
    pub module: String,
    /// `only:` list as (local, remote) names; `None` = everything.
    pub only: Option<Vec<(String, String)>>,
    /// Renames outside an only list: (local, remote).
    pub renames: Vec<(String, String)>,
    pub span: Span,
    /// Resolved module unit, when dfort was given its source.
    pub target: Option<UnitId>,
}

#[derive(Clone, Debug)]
pub struct CommonBlock {
    /// Lower case; empty for blank COMMON.
    pub name: String,
    pub members: Vec<SymbolId>,
    pub span: Span,
}

/// `f(x, y) = expr` in the specification part.
#[derive(Clone, Debug)]
pub struct StmtFunction {
    pub name: SymbolId,
    pub params: Vec<String>,
    pub body: Expr,
    pub span: Span,
    /// When `f` is not declared in the unit, the same line may assign an
    /// element of an array `f` visible by host or use association, which
    /// only linking can tell: the left-hand side lowered as a reference
    /// (and the line's label), for [`crate::link`] to turn the definition
    /// into the unit's first assignment when `f` is such an array.
    pub as_assignment: Option<(Expr, Option<u32>)>,
}

/// An `interface … end interface` block of a specification part.
#[derive(Clone, Debug, Default)]
pub struct InterfaceBlock {
    /// Its text as parsed (fixed form already normalised to free form).
    pub text: String,
    /// The procedures it declares (lower case).
    pub names: Vec<String>,
    /// A generic interface's name (`interface scale`), lower case.
    pub generic: Option<String>,
    /// A generic interface's specific procedures: its `module procedure`
    /// names and its interface bodies' (lower case).
    pub specifics: Vec<String>,
}

/// A `!$ad ...` directive comment inside a unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    /// e.g. `independent`, `dependent`.
    pub name: String,
    /// Lower-case arguments inside the parentheses.
    pub args: Vec<String>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    pub id: StmtId,
    pub label: Option<u32>,
    pub span: Span,
    pub kind: StmtKind,
}

#[derive(Clone, Debug)]
pub struct Arg {
    /// Keyword (`x=...`), lower case.
    pub keyword: Option<String>,
    pub value: Expr,
}

#[derive(Clone, Debug)]
pub struct IfArm {
    pub cond: Expr,
    pub body: Vec<StmtId>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum DoControl {
    Counted {
        var: SymbolId,
        start: Box<Expr>,
        end: Box<Expr>,
        step: Option<Box<Expr>>,
    },
    While(Box<Expr>),
    /// `do` with no control (left by `exit`).
    Forever,
}

#[derive(Clone, Debug)]
pub enum CaseValue {
    Value(Expr),
    /// `lo:hi`, either side optional.
    Range(Option<Expr>, Option<Expr>),
}

#[derive(Clone, Debug)]
pub struct Case {
    /// Empty for `case default`.
    pub values: Vec<CaseValue>,
    pub default: bool,
    pub body: Vec<StmtId>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    Read,
    Write,
    Print,
    Open,
    Close,
    Other,
}

/// Where a READ or WRITE transfers its data: what a READ may read back of
/// what a WRITE wrote is decided from these ([`IoUnit::may_be_same_external`]
/// for external files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoUnit {
    /// `*`, no unit (PRINT, `READ fmt, …`), or a statement that transfers
    /// no data (OPEN, CLOSE, …): the terminal.
    Default,
    /// An internal file: the character variable (or array) it is.
    Internal(SymbolId),
    /// An external unit whose number is a literal or a named constant.
    Number(i64),
    /// An external unit whose number is computed when the statement runs.
    Computed,
}

impl IoUnit {
    /// Whether two units of external files may be the same one: equal
    /// numbers, or a number known only at run time. Internal files and the
    /// terminal are never external units.
    pub fn may_be_same_external(self, other: IoUnit) -> bool {
        match (self, other) {
            (IoUnit::Number(a), IoUnit::Number(b)) => a == b,
            (IoUnit::Number(_) | IoUnit::Computed, IoUnit::Number(_) | IoUnit::Computed) => true,
            _ => false,
        }
    }
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    /// `lhs = rhs`: lhs is a `Var`, `ArrayRef` (element or section; a whole
    /// array is a `Var` of an array symbol) or `Component`.
    Assign {
        lhs: Expr,
        rhs: Expr,
    },
    Call {
        name: String,
        target: CallTarget,
        args: Vec<Arg>,
    },
    /// `if/else if/else` (and a one-line logical IF: one arm, `one_line`).
    If {
        arms: Vec<IfArm>,
        else_body: Option<Vec<StmtId>>,
        one_line: bool,
    },
    /// `where (mask) … elsewhere (mask) … elsewhere … end where`, and the
    /// one-line WHERE statement (one arm, `one_line`): each arm's mask
    /// selects, among the elements no earlier arm took, those its body
    /// assigns. Bodies hold assignments and nested WHEREs only; every
    /// assignment in them is a masked, partial write (the analyses'
    /// prepared program writes a whole-array target as the section `y(:)`).
    Where {
        arms: Vec<IfArm>,
        else_body: Option<Vec<StmtId>>,
        one_line: bool,
    },
    Do {
        /// Construct name (`outer: do`).
        name: Option<String>,
        control: DoControl,
        body: Vec<StmtId>,
        /// Label of a `do 10 ...` loop's terminal statement.
        end_label: Option<u32>,
    },
    SelectCase {
        selector: Expr,
        cases: Vec<Case>,
    },
    Goto {
        target: u32,
    },
    ComputedGoto {
        targets: Vec<u32>,
        index: Expr,
    },
    ArithmeticIf {
        expr: Expr,
        negative: u32,
        zero: u32,
        positive: u32,
    },
    Exit {
        construct: Option<String>,
    },
    Cycle {
        construct: Option<String>,
    },
    Return,
    Stop,
    Continue,
    /// READ/WRITE/PRINT/OPEN/CLOSE/...: `reads` are the expressions it
    /// evaluates (output items, the unit, the format and the specifiers'
    /// values), `writes` the variables it defines (READ items, an internal
    /// file written to, IOSTAT=, IOMSG=, SIZE= and INQUIRE's results).
    Io {
        kind: IoKind,
        /// The file it reads or writes ([`IoUnit::Default`] for statements
        /// other than READ and WRITE).
        unit: IoUnit,
        /// Whether it transfers formatted records (it has a format, `*`
        /// or a NAMELIST group): a file connected for one form cannot be
        /// read or written in the other.
        formatted: bool,
        reads: Vec<Expr>,
        writes: Vec<Expr>,
        /// The statement as one free-form line, without its label or
        /// comments: the derivatives run it as written.
        text: String,
        /// The labels its ERR=, END= and EOR= specifiers jump to.
        branches: Vec<u32>,
        /// A READ of a NAMELIST group: a member the record does not name
        /// keeps its value, so every member is in `reads` as well as in
        /// `writes`; the derivatives reset a member's derivative as for
        /// any READ, and the refusals refuse a member whose derivative
        /// that would lose.
        namelist: bool,
    },
    Allocate {
        objects: Vec<Expr>,
        deallocate: bool,
    },
    /// `pointer => target`: the pointer (a variable or component)
    /// becomes an alias of the target (a variable, element or section).
    /// `=> null()` is a [`StmtKind::Nullify`].
    PointerAssign {
        pointer: Expr,
        target: Expr,
    },
    /// `nullify(p, q)` and `p => null()`: the pointers point nowhere.
    Nullify {
        objects: Vec<Expr>,
    },
    /// Something dfort does not support (a diagnostic names it).
    Unsupported {
        construct: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallTarget {
    /// A unit dfort has the source of.
    Unit(UnitId),
    /// A statement function of the calling unit (index in `stmt_functions`).
    StatementFunction(u32),
    /// A procedure with no source (library, or a dummy procedure).
    External,
    /// Not resolved yet (before linking).
    Unresolved,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
}

impl UnaryOp {
    pub fn as_str(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Plus => "+",
            UnaryOp::Not => ".not.",
        }
    }
}

/// The generic name under which an operator's specifics are declared
/// (`interface operator(.dot.)`, `interface operator(+)`): the
/// operator in lower case, `.eq.` … `.ge.` spelled `==` … `>=`.
pub fn operator_generic(op: &str) -> String {
    let op = op.trim().to_ascii_lowercase();
    let op = match op.as_str() {
        ".eq." => "==",
        ".ne." => "/=",
        ".lt." => "<",
        ".le." => "<=",
        ".gt." => ">",
        ".ge." => ">=",
        other => other,
    };
    format!("operator({op})")
}

/// The operator of a generic name made by [`operator_generic`].
pub fn generic_operator(name: &str) -> Option<&str> {
    name.strip_prefix("operator(")?.strip_suffix(')')
}

/// The generic name of defined assignment (`interface assignment(=)`),
/// which a CALL statement of the IR names when it stands for `a = b`.
pub const ASSIGNMENT_GENERIC: &str = "assignment(=)";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Concat,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Eqv,
    Neqv,
}

impl BinaryOp {
    pub fn as_str(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Pow => "**",
            BinaryOp::Concat => "//",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "/=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => ".and.",
            BinaryOp::Or => ".or.",
            BinaryOp::Eqv => ".eqv.",
            BinaryOp::Neqv => ".neqv.",
        }
    }
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
    pub fn is_logical(self) -> bool {
        matches!(
            self,
            BinaryOp::And | BinaryOp::Or | BinaryOp::Eqv | BinaryOp::Neqv
        )
    }
}

#[derive(Clone, Debug)]
pub enum Subscript {
    Index(Expr),
    /// `lo:hi:stride`, each optional.
    Range {
        lo: Option<Box<Expr>>,
        hi: Option<Box<Expr>>,
        stride: Option<Box<Expr>>,
    },
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Int(i64),
    /// The value, and the kind in bytes implied by the literal (`1d0` → 8,
    /// `1.0_8` → 8, `1.0` → 4).
    Real {
        value: f64,
        text: String,
        kind: u32,
    },
    Logical(bool),
    Str(String),
    Complex(Box<Expr>, Box<Expr>),
    Var(SymbolId),
    /// An array element or section: `a(i, 1:n)`.
    ArrayRef {
        array: SymbolId,
        subs: Vec<Subscript>,
    },
    Intrinsic {
        name: String,
        args: Vec<Arg>,
    },
    /// A user, external or statement function.
    FunctionCall {
        name: String,
        target: CallTarget,
        args: Vec<Arg>,
    },
    /// `name(args)` before linking decides whether it is an array or a
    /// function (arrays from modules are only known then).
    Apply {
        name: String,
        args: Vec<Arg>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    ArrayCtor(Vec<Expr>),
    /// `(items, var = start, end[, step])` in an array constructor (its
    /// variable is a fresh `dfort_<name>_`: it has the scope of the implied
    /// DO) or in an I/O list (the variable itself). `bounds`: start, end
    /// and the step if written.
    ImpliedDo {
        items: Vec<Expr>,
        var: SymbolId,
        bounds: Vec<Expr>,
    },
    /// `base%name` or `base%name(subs)`.
    Component {
        base: Box<Expr>,
        name: String,
        subs: Vec<Subscript>,
    },
    /// `lo:hi:stride` as an actual argument or in an array constructor.
    Range {
        lo: Option<Box<Expr>>,
        hi: Option<Box<Expr>>,
        stride: Option<Box<Expr>>,
    },
    /// Not understood (a diagnostic was given).
    Error,
}

impl Expr {
    /// The data reference without the bounds an ALLOCATE gives it: `p(n)`
    /// → `p`, `c%v(n)` → `c%v`.
    pub fn without_bounds(&self) -> Expr {
        match &self.kind {
            ExprKind::ArrayRef { array, .. } => Expr {
                kind: ExprKind::Var(*array),
                span: self.span,
            },
            ExprKind::Component { base, name, .. } => Expr {
                kind: ExprKind::Component {
                    base: base.clone(),
                    name: name.clone(),
                    subs: Vec::new(),
                },
                span: self.span,
            },
            _ => self.clone(),
        }
    }

    /// The direct sub-expressions, in [`Expr::walk`]'s order.
    pub fn children(&self) -> Vec<&Expr> {
        let mut out: Vec<&Expr> = Vec::new();
        match &self.kind {
            ExprKind::Complex(a, b) => out.extend([&**a, &**b]),
            ExprKind::ArrayRef { subs, .. } => out.extend(subscript_exprs(subs)),
            ExprKind::Intrinsic { args, .. }
            | ExprKind::FunctionCall { args, .. }
            | ExprKind::Apply { args, .. } => out.extend(args.iter().map(|a| &a.value)),
            ExprKind::Unary { operand, .. } => out.push(operand),
            ExprKind::Binary { lhs, rhs, .. } => out.extend([&**lhs, &**rhs]),
            ExprKind::ArrayCtor(items) => out.extend(items.iter()),
            ExprKind::ImpliedDo { items, bounds, .. } => out.extend(items.iter().chain(bounds)),
            ExprKind::Component { base, subs, .. } => {
                out.push(base);
                out.extend(subscript_exprs(subs));
            }
            ExprKind::Range { lo, hi, stride } => {
                out.extend([lo, hi, stride].into_iter().flatten().map(|b| &**b))
            }
            _ => {}
        }
        out
    }

    /// Calls `f` on this expression and every sub-expression, pre-order.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Complex(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::ArrayRef { subs, .. } => walk_subs(subs, f),
            ExprKind::Intrinsic { args, .. }
            | ExprKind::FunctionCall { args, .. }
            | ExprKind::Apply { args, .. } => {
                for a in args {
                    a.value.walk(f);
                }
            }
            ExprKind::Unary { operand, .. } => operand.walk(f),
            ExprKind::Binary { lhs, rhs, .. } => {
                lhs.walk(f);
                rhs.walk(f);
            }
            ExprKind::ArrayCtor(items) => {
                for e in items {
                    e.walk(f);
                }
            }
            ExprKind::ImpliedDo { items, bounds, .. } => {
                for e in items.iter().chain(bounds) {
                    e.walk(f);
                }
            }
            ExprKind::Component { base, subs, .. } => {
                base.walk(f);
                walk_subs(subs, f);
            }
            ExprKind::Range { lo, hi, stride } => {
                for e in [lo, hi, stride].into_iter().flatten() {
                    e.walk(f);
                }
            }
            _ => {}
        }
    }

    /// Mutable pre-order walk.
    pub fn walk_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        f(self);
        for c in self.children_mut() {
            c.walk_mut(f);
        }
    }

    /// Like [`Expr::walk_mut`], but each expression after its
    /// subexpressions (which `f` may already have rewritten).
    pub fn walk_post_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        for c in self.children_mut() {
            c.walk_post_mut(f);
        }
        f(self);
    }

    /// The direct subexpressions, mutable.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        fn subs_mut<'a>(subs: &'a mut [Subscript], out: &mut Vec<&'a mut Expr>) {
            for s in subs {
                match s {
                    Subscript::Index(e) => out.push(e),
                    Subscript::Range { lo, hi, stride } => {
                        out.extend([lo, hi, stride].into_iter().flatten().map(|b| &mut **b))
                    }
                }
            }
        }
        let mut out: Vec<&mut Expr> = Vec::new();
        match &mut self.kind {
            ExprKind::Complex(a, b) => out.extend([&mut **a, &mut **b]),
            ExprKind::ArrayRef { subs, .. } => subs_mut(subs, &mut out),
            ExprKind::Intrinsic { args, .. }
            | ExprKind::FunctionCall { args, .. }
            | ExprKind::Apply { args, .. } => out.extend(args.iter_mut().map(|a| &mut a.value)),
            ExprKind::Unary { operand, .. } => out.push(operand),
            ExprKind::Binary { lhs, rhs, .. } => out.extend([&mut **lhs, &mut **rhs]),
            ExprKind::ArrayCtor(items) => out.extend(items.iter_mut()),
            ExprKind::ImpliedDo { items, bounds, .. } => {
                out.extend(items.iter_mut().chain(bounds.iter_mut()))
            }
            ExprKind::Component { base, subs, .. } => {
                out.push(base);
                subs_mut(subs, &mut out);
            }
            ExprKind::Range { lo, hi, stride } => {
                out.extend([lo, hi, stride].into_iter().flatten().map(|b| &mut **b))
            }
            _ => {}
        }
        out
    }
}

/// The expressions of subscripts (indices, and range bounds and strides).
pub fn subscript_exprs(subs: &[Subscript]) -> impl Iterator<Item = &Expr> {
    subs.iter().flat_map(|s| match s {
        Subscript::Index(e) => vec![e],
        Subscript::Range { lo, hi, stride } => [lo, hi, stride]
            .into_iter()
            .flatten()
            .map(|b| &**b)
            .collect(),
    })
}

fn walk_subs<'a>(subs: &'a [Subscript], f: &mut impl FnMut(&'a Expr)) {
    for s in subs {
        match s {
            Subscript::Index(e) => e.walk(f),
            Subscript::Range { lo, hi, stride } => {
                for e in [lo, hi, stride].into_iter().flatten() {
                    e.walk(f);
                }
            }
        }
    }
}

/// The expressions a statement holds directly (not those of nested
/// statements), in source order: one body for the shared and the mutable
/// accessor (`$iter` is `iter`/`iter_mut`, `$opt` is `as_ref`/`as_mut`).
macro_rules! direct_exprs {
    ($kind:expr, $iter:ident, $opt:ident $(, $m:tt)?) => {
        match $kind {
            StmtKind::Assign { lhs, rhs } => vec![lhs, rhs],
            StmtKind::Call { args, .. } => args.$iter().map(|a| &$($m)? a.value).collect(),
            StmtKind::If { arms, .. } | StmtKind::Where { arms, .. } => {
                arms.$iter().map(|a| &$($m)? a.cond).collect()
            }
            StmtKind::Do { control, .. } => match control {
                DoControl::Counted {
                    start, end, step, ..
                } => {
                    let mut v = vec![&$($m)? **start, &$($m)? **end];
                    v.extend(step.$opt().map(|b| &$($m)? **b));
                    v
                }
                DoControl::While(c) => vec![&$($m)? **c],
                DoControl::Forever => vec![],
            },
            StmtKind::SelectCase { selector, cases } => {
                let mut v = vec![selector];
                for c in cases {
                    for val in &$($m)? c.values {
                        match val {
                            CaseValue::Value(e) => v.push(e),
                            CaseValue::Range(a, b) => {
                                v.extend(a.$opt());
                                v.extend(b.$opt());
                            }
                        }
                    }
                }
                v
            }
            StmtKind::ComputedGoto { index, .. } => vec![index],
            StmtKind::ArithmeticIf { expr, .. } => vec![expr],
            StmtKind::Io { reads, writes, .. } => reads.$iter().chain(writes.$iter()).collect(),
            StmtKind::Allocate { objects, .. } | StmtKind::Nullify { objects } => {
                objects.$iter().collect()
            }
            StmtKind::PointerAssign { pointer, target } => vec![pointer, target],
            _ => vec![],
        }
    };
}

impl StmtKind {
    /// Whether the statement transfers control elsewhere than to the next
    /// statement (GO TO, computed GO TO, arithmetic IF, EXIT, CYCLE,
    /// RETURN).
    pub fn is_jump(&self) -> bool {
        matches!(
            self,
            StmtKind::Goto { .. }
                | StmtKind::ComputedGoto { .. }
                | StmtKind::ArithmeticIf { .. }
                | StmtKind::Exit { .. }
                | StmtKind::Cycle { .. }
                | StmtKind::Return
        )
    }

    /// The expressions a statement holds directly (not those of nested
    /// statements), in source order.
    pub fn exprs(&self) -> Vec<&Expr> {
        direct_exprs!(self, iter, as_ref)
    }

    /// Mutable twin of [`StmtKind::exprs`].
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        direct_exprs!(self, iter_mut, as_mut, mut)
    }

    /// The statement lists nested directly in a construct: IF arms and
    /// ELSE, a DO body, SELECT CASE cases; none for simple statements.
    pub fn blocks(&self) -> Vec<&[StmtId]> {
        match self {
            StmtKind::If {
                arms, else_body, ..
            }
            | StmtKind::Where {
                arms, else_body, ..
            } => arms
                .iter()
                .map(|a| a.body.as_slice())
                .chain(else_body.as_deref())
                .collect(),
            StmtKind::Do { body, .. } => vec![body.as_slice()],
            StmtKind::SelectCase { cases, .. } => cases.iter().map(|c| c.body.as_slice()).collect(),
            _ => Vec::new(),
        }
    }
}

/// A program's units by id, in chunks that copies of the table share:
/// cloning a program (every relink and analysis does) copies one pointer
/// per 64 units, not one `Arc` per unit.
pub type Units = crate::chunk_vec::ChunkVec<UnitId, std::sync::Arc<Unit>>;

/// The lowered program: all units of all files, the call graph, and the
/// diagnostics of lowering and linking (syntax diagnostics stay with the
/// parsed files).
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub units: Units,
    /// Its modules and external procedures by name (shared by a relink,
    /// which keeps every unit's name, kind and nesting).
    pub names: std::sync::Arc<crate::link::NameIndex>,
    /// Shared: a program whose units are rewritten in place (the
    /// analyses' prepared program) keeps its call graph.
    pub call_graph: std::sync::Arc<crate::callgraph::CallGraph>,
}

/// Whether unit `id` is in `old` and `new` as the same `Arc`: a relink
/// kept it as it was, so what was found in it before still holds.
pub fn same_unit(old: &Units, new: &Units, id: UnitId) -> bool {
    old.get(id).is_some_and(|a| same_unit_as(new, id, a))
}

/// Whether unit `id` of `units` is `unit` itself (the same `Arc`).
pub fn same_unit_as(units: &Units, id: UnitId, unit: &std::sync::Arc<Unit>) -> bool {
    units
        .get(id)
        .is_some_and(|u| std::sync::Arc::ptr_eq(u, unit))
}

impl Program {
    pub fn unit(&self, id: UnitId) -> &Unit {
        &self.units[id]
    }
    /// Every unit, in id order.
    pub fn all_units(&self) -> impl Iterator<Item = &Unit> + '_ {
        self.units.iter().map(|u| &**u)
    }
    /// Units with this (lower-case) name.
    pub fn units_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Unit> + 'a {
        self.all_units().filter(move |u| u.name == name)
    }
}

#[cfg(test)]
mod layout {
    use super::*;

    /// A workspace holds every statement and expression of its code: the
    /// million-line figure of `bench-lsp` was measured with these sizes
    /// (large, rare parts of a statement or a subscript are boxed).
    #[test]
    fn statements_and_subscripts_stay_small() {
        use std::mem::size_of;
        assert!(
            size_of::<Stmt>() <= 192,
            "Stmt: {} bytes",
            size_of::<Stmt>()
        );
        assert!(size_of::<Expr>() <= 80, "Expr: {} bytes", size_of::<Expr>());
        assert!(
            size_of::<Subscript>() <= size_of::<Expr>(),
            "Subscript: {} bytes",
            size_of::<Subscript>()
        );
    }
}
