//! The registry of diagnostic rules: every code dfort reports — front end
//! (parsing, lowering, linking), differentiability, address recovery and
//! the generators' refusals — declared once, with its severity, a one-line
//! summary and the documentation `dfort rules CODE` prints and
//! `docs/rules.md` is generated from.
//!
//! Contract: a diagnostic or a refusal names its rule by reference (a
//! `&'static Rule` of this module), never by a string, so no code can be
//! reported that is not registered here; every rule is in [`RULES`] (the
//! `rules!` declaration puts it there); codes are unique and kebab-case
//! (tested).

use crate::diagnostic::Severity;

/// One diagnostic rule.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// The stable kebab-case code users and tests match on.
    pub code: &'static str,
    /// The severity diagnostics of this rule have.
    pub severity: Severity,
    /// Which part of dfort reports it.
    pub group: Group,
    /// One line: what the diagnostic says.
    pub summary: &'static str,
    /// What it means, why dfort reports it and what the user can do
    /// (Markdown paragraphs).
    pub doc: &'static str,
    /// A small Fortran example that triggers it, if one helps.
    pub example: Option<&'static str>,
}

/// Which part of dfort reports a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// Parsing, lowering and linking: `dfort check`, every command that
    /// reads files, and the editor.
    FrontEnd,
    /// Differentiation checks on the analyses (activity, roots).
    Differentiability,
    /// Address and control values the adjoint cannot recover (paper 003).
    Address,
    /// What the tangent and adjoint generators refuse to differentiate.
    Generator,
}

impl Group {
    /// Every group, in the order of the documentation.
    pub const ALL: [Group; 4] = [
        Group::FrontEnd,
        Group::Differentiability,
        Group::Address,
        Group::Generator,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Group::FrontEnd => "Front end",
            Group::Differentiability => "Differentiability",
            Group::Address => "Address recovery",
            Group::Generator => "Generator refusals",
        }
    }

    /// Who reports the rules of this group.
    pub fn about(self) -> &'static str {
        match self {
            Group::FrontEnd => {
                "Reported while files are parsed, lowered and linked: by `dfort check`, by every \
                 command that reads Fortran files, and by the language server as you type. \
                 Errors stop `analyze`, `tangent` and `adjoint`."
            }
            Group::Differentiability => {
                "Reported on the analyses of the roots (activity, paper 000 §4) by the language \
                 server, on the code you edit; the problems of roots asked for by name also by \
                 the commands that take roots (`analyze`, `tangent`, `adjoint`)."
            }
            Group::Address => {
                "Information about the adjoint's address and control values (paper 003): what it \
                 must store because inversion cannot recover it. Reported by the language server."
            }
            Group::Generator => {
                "What `dfort tangent` and `dfort adjoint` (and the editor's Generate actions) \
                 refuse to differentiate, with the place: no code is written then, rather than \
                 code whose derivatives are wrong."
            }
        }
    }
}

/// The rule with this code.
pub fn rule(code: &str) -> Option<&'static Rule> {
    RULES.iter().copied().find(|r| r.code == code)
}

/// What is said of a call that receives the active values `names` (from
/// `Activity::active_actuals` of dfort's analyses) of a procedure with no derivative: without source
/// (`has_source` false), or with source but not differentiated. The rule
/// (`no-source`) is the editor's warning and the generators' refusal.
pub fn no_derivative_for_call(
    callee: &str,
    names: &[String],
    has_source: bool,
) -> (&'static Rule, String) {
    let values = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let plural = if names.len() > 1 { "s" } else { "" };
    let why = if has_source {
        "dfort finds no derivative for it"
    } else {
        "dfort has no source for it"
    };
    // A defined operator (`operator(.cross.)`) no specific was found for.
    let op = callee
        .strip_prefix("operator(")
        .and_then(|o| o.strip_suffix(')'));
    let message = match op {
        Some(op) if !has_source => format!(
            "the operator `{op}` receives the active value{plural} {values} but dfort finds no `interface operator({op})` with a specific these operands fit: the adjoint and tangent cannot be generated through it; give dfort the module that defines it"
        ),
        _ => format!(
            "`{callee}` receives the active value{plural} {values} but {why}: the adjoint and tangent cannot be generated through this call; give dfort its source"
        ),
    };
    (&NO_SOURCE, message)
}

/// Why the derivative routine of `callee` cannot be passed the
/// derivative of actual `primal` for its formal `formal` that has one
/// (`derivative-argument`): the generators' refusal and the analyses'.
pub enum DerivativeActual {
    /// An array for a scalar formal of an elemental procedure, without a
    /// derivative of its own.
    ElementalWithout,
    /// A variable reference without a derivative, for an array formal.
    ArrayWithout,
    /// An array expression, for an array formal.
    ArrayExpression,
}

/// The sentence of a [`DerivativeActual`] refusal.
pub fn derivative_actual(
    why: DerivativeActual,
    primal: &str,
    callee: &str,
    formal: &str,
) -> (&'static Rule, String) {
    let message = match why {
        DerivativeActual::ElementalWithout => format!(
            "`{primal}` is passed to the elemental `{callee}` for `{formal}`, which it differentiates: only an array variable with a derivative can be (not an array expression or an array without one)"
        ),
        DerivativeActual::ArrayWithout => format!(
            "`{primal}` has no derivative but `{callee}` differentiates its array argument `{formal}`"
        ),
        DerivativeActual::ArrayExpression => format!(
            "the array expression `{primal}` is passed to `{callee}`, which differentiates it; pass a variable"
        ),
    };
    (&DERIVATIVE_ARGUMENT, message)
}

/// Declares each rule as a `pub static` and lists them all in [`RULES`].
macro_rules! rules {
    ($($(#[$attr:meta])* $name:ident = $rule:expr;)*) => {
        $($(#[$attr])* pub static $name: Rule = $rule;)*
        /// Every rule, grouped, in the order of the documentation.
        pub static RULES: &[&Rule] = &[$(&$name),*];
    };
}

rules! {
    // ---------------------------------------------------------------- front end
    SYNTAX_ERROR = Rule {
        code: "syntax-error",
        severity: Severity::Error,
        group: Group::FrontEnd,
        summary: "the text does not parse as Fortran",
        doc: "The parser (tree-sitter-fortran) cannot read the statement: a token is missing \
              (`syntax error: missing ...`) or unexpected (`syntax error: unexpected ...`). \
              Each program unit is parsed on its own, so the error stays inside its unit; a \
              procedure that does not parse to its end keeps its header and declarations (see \
              `incomplete-unit`).\n\n\
              Fix the statement. In fixed form, check that it does not run past column 72 \
              (`fixed-line-length` says so on the same line) and that continuation lines have \
              a character in column 6.",
        example: Some("x = (a + b * 2.0\n"),
    };
    PREPROCESSOR_ERROR = Rule {
        code: "preprocessor-error",
        severity: Severity::Error,
        group: Group::FrontEnd,
        summary: "the C preprocessor cannot read a directive, or an `#error` is active",
        doc: "Files with the extensions `.F`, `.F90`, `.F95`, `.F03`, `.F08`, `.FOR`, `.fpp` \
              and `.FPP` (or every file, with `--cpp`) are run through dfort's own C \
              preprocessor before they are parsed, as gfortran does: `#include` files are \
              searched in the including file's directory, then in the `-I` directories in \
              order. This is reported when an included file is not found, a directive is \
              malformed (an `#if` without `#endif`, an expression that does not evaluate, a \
              macro called with the wrong number of arguments), or an `#error` directive is in \
              an active region. A problem in an included file is reported in that file.\n\n\
              Give the include directories and macros the build uses (`-I DIR`, `-D \
              NAME[=VALUE]` on the command line; `[preprocessor] include` and `define` in \
              `dfort.toml`; the editor settings), or fix the directive.",
        example: Some("#include \"missing_options.h\"\n      subroutine s\n      end\n"),
    };
    PREPROCESSOR_WARNING = Rule {
        code: "preprocessor-warning",
        severity: Severity::Warning,
        group: Group::FrontEnd,
        summary: "an active `#warning` directive",
        doc: "A `#warning` directive in a region the `#if` directives keep active: its \
              message, as the C preprocessor prints it; the file is read on.\n\n\
              Check that the macros given (`-D`, `dfort.toml`, the editor settings) are the \
              configuration the build uses, or remove the directive.",
        example: Some("#warning \"this configuration is not tested\"\n      subroutine s\n      end\n"),
    };
    UNCLOSED_CONSTRUCT = Rule {
        code: "unclosed-construct",
        severity: Severity::Error,
        group: Group::FrontEnd,
        summary: "an IF, DO, SELECT CASE or program unit is never closed",
        doc: "A construct lost its `end`: dfort points at the statement that opens it (the \
              `if ... then`, the `do`, the `subroutine`) rather than at the end of the file \
              where the parser noticed. A bare `END` meant for the unit that closes an inner \
              construct instead is reported on that construct.\n\n\
              Add the missing `end if`, `end do`, `end select` or `end subroutine`.",
        example: Some(
            "subroutine relax(n, u)\n  integer :: n, i\n  real(8) :: u(n)\n  do i = 2, n - 1\n    \
             u(i) = 0.5d0*(u(i-1) + u(i+1))\nend subroutine relax   ! the DO has no END DO\n",
        ),
    };
    UNSUPPORTED = Rule {
        code: "unsupported",
        severity: Severity::Error,
        group: Group::FrontEnd,
        summary: "a construct dfort does not support",
        doc: "The statement is valid Fortran that dfort does not model: ENTRY, alternate \
              returns, ASSIGN and assigned GO TO, BLOCK, ASSOCIATE, SELECT TYPE and SELECT \
              RANK, coarrays, submodules, some declarators and expressions, \
              integer literals out of range; a FORALL whose assignment reads elements of its \
              target other than the one it assigns, or whose mask reads what it assigns (run \
              as loops, it would read values it has already changed), or that holds other \
              than assignments; statements other than assignments in a WHERE; DO CONCURRENT \
              with a REDUCE locality. dfort reports it instead of ignoring it, because \
              analyses and derivatives that skipped a statement would be silently wrong.\n\n\
              Rewrite the construct with supported statements (copy the array a FORALL reads \
              into another one first, an ASSOCIATE name by the expression it stands for, \
              ...).",
        example: Some("forall (i = 2:n-1) b(i) = 0.5d0*(b(i-1) + b(i+1))\n"),
    };
    FIXED_LINE_LENGTH = Rule {
        code: "fixed-line-length",
        severity: Severity::Warning,
        group: Group::FrontEnd,
        summary: "text past the fixed-form column limit is ignored",
        doc: "In fixed form, compilers ignore everything after column 72 (older code used \
              columns 73-80 for sequence numbers), and so does dfort. When that text is not \
              blank it may be code that was meant to count: a statement cut there usually \
              gives a `syntax-error` on the same line, whose message then says the line was \
              cut.\n\n\
              If the text belongs to the statement, continue it on the next line, or use a \
              longer line length: `--fixed-line-length 132` (or `none`) on the command line, \
              the `fixedLineLength` setting in the editor (and the matching compiler flag, \
              e.g. gfortran's `-ffixed-line-length-132`).",
        example: None,
    };
    INCOMPLETE_UNIT = Rule {
        code: "incomplete-unit",
        severity: Severity::Warning,
        group: Group::FrontEnd,
        summary: "a procedure that does not parse to its end: its statements are left out",
        doc: "A syntax error (typically an `end if` deleted while typing) stopped the parser \
              inside a subroutine or function. dfort keeps its header and declarations, so \
              the rest of the program still resolves its name and arguments, but leaves its \
              statements out of the analyses until the error, reported beside this warning, \
              is fixed. Nothing is differentiated through it meanwhile.\n\n\
              Fix the syntax error; the warning goes away with it.",
        example: None,
    };
    DIRECTIVE_OUTSIDE_UNIT = Rule {
        code: "directive-outside-unit",
        severity: Severity::Warning,
        group: Group::FrontEnd,
        summary: "an `!$ad` directive outside any program unit is ignored",
        doc: "`!$ad independent(...)` and `!$ad dependent(...)` belong to the program unit \
              they are written in; one before the first unit or after the last has no unit to \
              belong to, and is ignored.\n\n\
              Move the directive inside the subroutine whose roles it gives (after its \
              declarations).",
        example: Some("!$ad independent(x)\nsubroutine f(x, y)\n  ...\n"),
    };
    IGNORED_DIRECTIVE = Rule {
        code: "ignored-directive",
        severity: Severity::Warning,
        group: Group::FrontEnd,
        summary: "an AD directive dfort does not act on",
        doc: "dfort reads `!$ad independent(...)` and `!$ad dependent(...)`, and OpenAD's \
              `c$openad INDEPENDENT(...)` / `DEPENDENT(...)` as the same roles. Tapenade's \
              `$AD` directives (`NOCHECKPOINT`, `II-LOOP`, `FP-LOOP`, \
              `CHECKPOINT-START`, `DO-NOT-DIFF`, ...) steer features dfort does not have; \
              each is reported with what dfort does instead, and the derivative is computed \
              as if it were not there (still correct). The same holds for OpenAD's other \
              directives and for unknown `!$ad` words (a typo in `independent`?). TAF's \
              `CADJ` and `!$TAF` lines are ignored without a diagnostic (hover one to see \
              why).\n\n\
              Nothing to do when the code is shared with that tool; otherwise remove the \
              directive or correct its spelling.",
        example: Some("subroutine f(x, y)\n  real(8) :: x, y\n!$AD NOCHECKPOINT\n  call g(x, y)\nend\n"),
    };
    DUPLICATE_LABEL = Rule {
        code: "duplicate-label",
        severity: Severity::Error,
        group: Group::FrontEnd,
        summary: "a statement label is defined twice in one unit",
        doc: "Statement labels must be unique within a program unit: with two statements \
              labelled alike, a GO TO or a DO ending on that label is ambiguous, and so \
              would be the control flow dfort reverses.\n\n\
              Renumber one of the labels (and the jumps that mean it).",
        example: Some("   20 continue\n      nclip = -nclip\n   20 continue\n"),
    };
    UNDEFINED_LABEL = Rule {
        code: "undefined-label",
        severity: Severity::Error,
        group: Group::FrontEnd,
        summary: "a jump or DO refers to a label the unit does not define",
        doc: "A GO TO, computed GO TO, arithmetic IF or labelled DO names a label that no \
              statement of the unit carries, so its control flow is unknown.\n\n\
              Add the label to the statement it is meant for, or correct the jump.",
        example: Some("      if (x .gt. 0.0) go to 30\n      x = -x\n   20 continue\n"),
    };
    UNKNOWN_MODULE = Rule {
        code: "unknown-module",
        severity: Severity::Warning,
        group: Group::FrontEnd,
        summary: "a USEd module is not among the files given to dfort",
        doc: "dfort resolves `use m` against the modules of the files it was given (the \
              command's files, or the editor's workspace). Names from a module it has not \
              seen are not checked, their types are unknown, and a derivative that needs one \
              of its variables is refused (`active-unknown-module-variable`).\n\n\
              Give dfort the file that defines the module (on the command line, or in the \
              workspace).",
        example: Some("use constants, only: dp   ! constants.f90 not given\n"),
    };
    ARGUMENT_COUNT = Rule {
        code: "argument-count",
        severity: Severity::Warning,
        group: Group::FrontEnd,
        summary: "a procedure is given more arguments than it takes",
        doc: "A CALL or function reference passes more actual arguments than the procedure \
              has dummies. The extra ones bind to nothing, so the analyses cannot follow \
              them.\n\n\
              Make the call match the procedure's argument list.",
        example: Some("subroutine s(a)\n  ...\ncall s(x, y)   ! s takes 1 argument\n"),
    };
    INTRINSIC_ARGUMENTS = Rule {
        code: "intrinsic-arguments",
        severity: Severity::Error,
        group: Group::FrontEnd,
        summary: "an intrinsic function is given fewer arguments than it needs",
        doc: "A reference to an intrinsic function lacks arguments it requires: `exp()` has \
              no argument, `max(x)` one where it compares two or more, `atan2(y)` one of \
              two. A compiler rejects it, and dfort has nothing to differentiate.\n\n\
              Give the intrinsic the arguments it needs (the compiler's manual lists them), \
              or call the procedure you meant if the name is a user function's.",
        example: Some("y = exp()\n"),
    };
    UNDECLARED = Rule {
        code: "undeclared",
        severity: Severity::Error,
        group: Group::FrontEnd,
        summary: "a name has no type: not declared and IMPLICIT NONE is in effect",
        doc: "Under IMPLICIT NONE every variable needs a declaration; this one has none, and \
              no host or use association gives it one. Its type (and whether it can carry a \
              derivative) is unknown.\n\n\
              Declare it, or give dfort the module it comes from.",
        example: Some("subroutine f(x)\n  implicit none\n  real(8) :: x\n  r = 2.0d0*x   ! r is not declared\n"),
    };
    // ------------------------------------------------------- differentiability
    NON_DIFFERENTIABLE = Rule {
        code: "non-differentiable",
        severity: Severity::Warning,
        group: Group::Differentiability,
        summary: "a non-differentiable intrinsic applied to an active value",
        doc: "`abs`, `max`, `min`, `sign`, `int`, `nint`, `aint`, `floor`, `ceiling`, `mod`, \
              `modulo` (and their specific names), `maxval`, `minval` and `norm2` have kinks \
              or jumps. Applied to a varied value in an assignment whose result is active, the \
              derivative dfort computes is that of the branch taken (`abs`, `max`, `min`, \
              `sign`; for `maxval`/`minval` the first extremal element, the one `maxloc`/`minloc` \
              returns; for `norm2` of a zero vector the subgradient 0), zero (`int` and friends, \
              so no gradient flows through them), or wrong where the function jumps (`mod`). \
              This is usually intended; the warning says where it matters. (A construct the \
              generators cannot differentiate at all is the refusal `not-differentiable`.)\n\n\
              If the kink is reached in practice, consider a smooth approximation (for \
              example `sqrt(x**2 + eps)` for `abs(x)`).",
        example: Some("y = max(x, 0.0d0)   ! x active: the derivative at x = 0 is a choice\n"),
    };
    CONVERGENCE_TEST = Rule {
        code: "convergence-test",
        severity: Severity::Warning,
        group: Group::Differentiability,
        summary: "a loop that computes active values is left on a test of a varied value",
        doc: "The loop stops when a value that depends on the independents passes a test \
              (`IF (err .LT. tol) EXIT`, `GO TO` out of the loop, a DO WHILE condition): \
              an iterative solver or a convergence loop. dfort differentiates the \
              iterations the run made, as for any loop. That is the exact derivative of \
              the code, but the derivative of an iteration converges more slowly than its \
              value: the gradient can differ from the converged solution's (and from \
              finite differences taken with a larger step) by far more than the solver's \
              tolerance. MITgcm's `CG2D` stopped at a relative residual of 1e-13 gives a \
              gradient 3e-3 away from that of the exact solve; at 1e-19 it agrees to 1e-4.\n\n\
              If the gradient must be that of the converged solution, tighten the \
              loop's tolerance (or raise its iteration count) for the adjoint run, or \
              write the solver's adjoint yourself and name it with `--supplied NAME=FILE` \
              (`[adjoint] supplied` in dfort.toml; the warning then goes): the adjoint of \
              solving A x = b is one more solve, b̄ += A⁻ᵀx̄. With `CG2D`'s adjoint supplied \
              that way, MITgcm's `hs94.1x64x5` gradient equals TAF's to 1e-13.",
        example: Some(
            "do it = 1, maxit\n  x = x - (x*x - a)/(2*x)   ! a independent\n  if (abs(x*x - a) < tol) exit\nend do\n",
        ),
    };
    CUT_BY_IO = Rule {
        code: "cut-by-io",
        severity: Severity::Warning,
        group: Group::Differentiability,
        summary: "a READ may read back an active value a WRITE wrote: its derivative is cut there",
        doc: "dfort treats what a READ reads as passive: its derivatives are those of a \
              program whose files are inputs. When the program writes a value that depends \
              on the independents to a file or an internal file and reads it back into a \
              variable a dependent depends on, the derivative through the file is lost: the \
              variable read gets derivative 0 there, and the gradient misses that path. The \
              warning is on the READ and names the WRITE. dfort pairs them by the file: the \
              same internal file (a dummy argument may be any), or the same unit number or \
              one known only at run time (which may be any), read and written in the same \
              form (formatted or unformatted). It does not follow which runs first, so a \
              READ of an input file whose unit is a variable is warned about too when the \
              program also writes active values in that form to a unit that is a variable.\n\n\
              Pass the value itself instead of going through the file (an assignment, an \
              argument), or, if the file really is an input of the computation, ignore the \
              warning.",
        example: Some("write(buf, '(es25.17)') 2.0d0*x   ! x independent\nread(buf, *) t                    ! t gets derivative 0\ny = t*t                           ! y dependent\n"),
    };
    NO_SOURCE = Rule {
        code: "no-source",
        severity: Severity::Warning,
        group: Group::Differentiability,
        summary: "an active value is passed to a procedure dfort has no source for",
        doc: "A call passes an active value (one that depends on an independent and that a \
              dependent depends on) to a procedure whose source dfort was not given, an \
              EXTERNAL or library routine, or one for which it finds no derivative. dfort \
              cannot differentiate through code it cannot read, so the tangent and adjoint \
              generators refuse such a call (with this same code), and the editor warns where \
              it is. An actual that is not active at the call (nothing after it depends on \
              what the procedure may write) is fine.\n\n\
              Give dfort the procedure's source (on the command line, or in the workspace).",
        example: Some(
            "external :: scale\ncall scale(2.0d0*x(1), u)   ! x independent\ny = y + u                   ! y dependent\n",
        ),
    };
    UNKNOWN_ROOT = Rule {
        code: "unknown-root",
        severity: Severity::Error,
        group: Group::Differentiability,
        summary: "a root names no subroutine or function",
        doc: "A root asked for by name (`--root`, a `[[root]]` of `dfort.toml`, the editor's \
              `roots` setting) matches no subroutine or function of the files dfort was given. \
              That root is skipped.\n\n\
              Check the spelling (names are case-insensitive) and that the file holding the \
              procedure is given.",
        example: None,
    };
    UNKNOWN_ROOT_VARIABLE = Rule {
        code: "unknown-root-variable",
        severity: Severity::Error,
        group: Group::Differentiability,
        summary: "a root's independent or dependent list names no real variable of it",
        doc: "The independents and dependents of a root must be real (or complex) variables \
              the procedure sees: its dummies, its locals, or COMMON and module variables. A \
              list naming anything else is a mistake, and the root is skipped rather than \
              differentiated with a different list.\n\n\
              Correct the list (or leave both lists empty to take the roles from the \
              `!$ad` directives, then from the dummies' intents).",
        example: None,
    };
    ROOT_AFTER = Rule {
        code: "root-after",
        severity: Severity::Error,
        group: Group::Differentiability,
        summary: "a root's `after` names no call it makes exactly once",
        doc: "A root may say that its independents take their values when one of its calls \
              returns (`--after NAME`, `after = \"NAME\"` in its `[[root]]` of `dfort.toml`): a \
              model whose initialisation call sets the state the gradient is wanted for, such \
              as MITgcm's `the_main_loop` after `initialise_varia`. The derivatives then start \
              there: the statements up to that call run as the original's, the adjoint does \
              not reverse them, and on exit the independents' adjoints hold the gradient with \
              respect to their values after the call.\n\n\
              The call must run exactly once: it is the program's only call to that \
              procedure, made by the root or by a unit reached from it through a chain of \
              calls each made once, every call of the chain a top-level statement (outside \
              loops and branches) of a unit without GO TO or other jumps dfort cannot structure (such a unit is reversed by basic blocks). A call made inside another call \
              needs the independents to be COMMON or module variables (the unit making it sees \
              them as the same globals), and only the adjoint takes it. Otherwise the root is \
              skipped: name another call, or restructure the chain.",
        example: None,
    };
    // -------------------------------------------------------- address recovery
    ADDRESS_STORED = Rule {
        code: "address-stored",
        severity: Severity::Note,
        group: Group::Address,
        summary: "an index the adjoint must store because inversion cannot recover it",
        doc: "The reverse sweep of a loop needs the integer indices its adjoint statements \
              read, in reverse order. dfort recovers them by inverting the assignments that \
              change them (`k = k + 1` gives `k = k - 1`) or by recomputing them; only where \
              neither works is an index stored on the tape (paper 003). This information says \
              which index is stored, and why: a non-invertible operation (integer division, \
              `max`, `min`, `mod`, an indirection, a call) at a line, or an assignment inside \
              a branch or a nested loop the loop's plan cannot follow. In a unit with jumps \
              the index is stored where it is overwritten.\n\n\
              Nothing is wrong: the adjoint is correct either way. If the tape's size \
              matters, an invertible update (for example `ii = ii - 1` instead of \
              `ii = ii/2`, where the algorithm allows) lets dfort recover the index instead.",
        example: Some("do while (ii > 1)\n  a(ii) = a(ii)*a(ii-1)\n  ii = ii/2   ! stored each iteration\nend do\n"),
    };
    // ------------------------------------------------------ generator refusals
    NOT_DIFFERENTIABLE = Rule {
        code: "not-differentiable",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "a statement or expression the generators do not differentiate yet",
        doc: "The tangent or adjoint generator has no rule for what it meets on an active \
              path: derived-type values it cannot assign whole, complex arrays assigned under \
              WHERE or from expressions of themselves (in reverse mode), I/O statements with \
              ERR=, END= or EOR= jumps that define a value their basic block's adjoint reads \
              (in reverse mode), a READ that defines an index of \
              an item whose derivative it resets, an intrinsic or function reference without a derivative rule for these \
              arguments, a statement dfort keeps as unsupported, DO loops without control or \
              jumps left in code it reverses as structured, ALLOCATE of an array the \
              caller sees outside the root, a variable EQUIVALENCEd with one of another type \
              or kind, values whose type the tape cannot save, an array-valued \
              function whose result bounds read values the caller changes, an elemental \
              function applied under a WHERE mask in the adjoint, a function whose \
              differentiated actual is an expression without a derivative to pass. The \
              message says \
              which, and where; refusals with a rule of their own (below) say more. Not to \
              be confused with the editor's warning `non-differentiable`, about kinks of \
              intrinsics that are differentiated.\n\n\
              Rewrite the construct in terms the generators handle, or keep it off the \
              active path (compute it from values that do not depend on the independents).",
        example: Some("read(11, *, end=20) t   ! t active, adjoint asked for\n"),
    };
    ROOT_NOT_SUBROUTINE = Rule {
        code: "root-not-subroutine",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "only a subroutine or a function can be the root of a derivative",
        doc: "The unit to differentiate (`--root`) is a main program, a module or a BLOCK \
              DATA. A function root gets derivatives in Tapenade's convention: \
              `f_b(args…, fb)` takes the result's adjoint last, and `f_d(args…, f, fd)` \
              returns the result and its tangent last.\n\n\
              Move the main program's computation into a subroutine and differentiate that.",
        example: Some(
            "program model\n  real(8) :: x\n  x = 2.0d0\n  x = x*x\nend program model\n",
        ),
    };
    INTERNAL_ROOT = Rule {
        code: "internal-root",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "an internal procedure cannot be a root",
        doc: "The root is a procedure CONTAINed in another procedure. Its derivative would \
              live inside the host's, which is only written when the host is differentiated.\n\n\
              Differentiate its host: the internal procedure's derivative is written with it.",
        example: None,
    };
    HOST_STATEMENT_FUNCTION = Rule {
        code: "host-statement-function",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "an internal procedure uses a statement function of its host",
        doc: "The derivatives inline statement functions only within the unit that defines \
              them; an internal procedure referring to its host's statement function would \
              see an unknown external function.\n\n\
              Define the statement function in the internal procedure too (or make it an \
              internal function).",
        example: None,
    };
    ACTIVE_DERIVED_TYPE = Rule {
        code: "active-derived-type",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "an active derived-type variable that gets no derivative",
        doc: "A derived type `t` whose values carry derivatives gets a derivative type \
              `t_d` (tangent) or `t_b` (adjoint) in the derivative module of the module \
              that defines `t`, holding its real and complex components (and its pointer \
              components, as pointers to derivatives). This rule reports what does not get \
              one yet: types with allocatable real components, types defined outside \
              modules or with `extends`, type parameters or type-bound procedures.\n\n\
              Pass allocatable components as separate arrays; move the type into a \
              module.",
        example: None,
    };
    ACTIVE_UNKNOWN_MODULE_VARIABLE = Rule {
        code: "active-unknown-module-variable",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "an active variable of a module dfort was not given",
        doc: "A routine uses a variable of a module whose source dfort does not have (see \
              `unknown-module`), and that variable is active. Its derivative would have to \
              be declared in the derivative module every routine shares, which dfort can \
              only write for modules it has read.\n\n\
              Give dfort the source file of the module (on the command line, or in the \
              workspace).",
        example: None,
    };
    SAVED_STATE = Rule {
        code: "saved-state",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "a SAVE'd local that a procedure changes carries a value from one call to the next, in a form the derivative cannot follow",
        doc: "A local variable with SAVE (or a DATA statement, or an initialiser, which imply \
              SAVE) keeps its value between calls. The analyses follow it as state shared \
              between the calls of its procedure: the editor and `dfort analyze` show it \
              active when a later call's result depends on an earlier call's arguments. The \
              adjoint shares such a variable between all its routines, in a module of its \
              own, and runs copies of the procedures that change it in place of the \
              originals (see the manual's differentiation page). It refuses, at the \
              declaration, a SAVE'd local it cannot declare in a module — one of an internal \
              procedure; an allocatable, pointer or target; one of a derived or character \
              type; one in an EQUIVALENCE or a NAMELIST group; one a DATA statement \
              initialises together with a variable that stays the procedure's own — and, at \
              the procedure, a procedure changing such state that it cannot copy (an internal \
              procedure, a procedure with internal procedures, an external procedure whose \
              calls need an explicit interface), and, at the loop, a loop checkpointed with \
              `binomial-ckp` inside which such state changes. The tangent keeps its own copy \
              of the variable in the procedure's tangent routine, and refuses a reference \
              that would run the original procedure instead (in a condition, a bound, an \
              actual argument).\n\n\
              Move the state to a module variable, or pass it as an argument.",
        example: Some(
            "subroutine outer(n, x, y)\n  integer, intent(in) :: n\n  real(8), intent(in) :: x(n)\n  real(8), intent(out) :: y(n)\n  integer :: i\n  do i = 1, n\n    y(i) = run(x(i), i == 1)\n  end do\ncontains\n  real(8) function run(v, reset)\n    real(8), intent(in) :: v\n    logical, intent(in) :: reset\n    real(8), save :: s = 0d0\n    if (reset) s = 0d0\n    s = s + v*v\n    run = s\n  end function run\nend subroutine outer\n",
        ),
    };
    FUNCTION_SIDE_EFFECT = Rule {
        code: "function-side-effect",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "a function that changes one of its real arguments, referenced where its side effects are not followed",
        doc: "A function referenced in the right-hand side of an assignment runs, for the \
              analyses and the derivatives, as a call before the assignment: what it changes \
              of its arguments and of globals is followed. Elsewhere — in an IF or WHILE \
              condition, a DO bound, an actual argument of a CALL, an I/O list, under a \
              WHERE mask — a reference to a function that changes a real argument is refused.\n\n\
              Assign the function's value to a variable first, and use the variable there.",
        example: Some(
            "real(8) function step(x)\n  real(8), intent(inout) :: x\n  x = 2.0d0*x   ! side effect\n  step = x\nend function step\n! ...\nif (step(t) > 1.0d0) y = t   ! refused: t = step(t) first\n",
        ),
    };
    POINTER_NOT_FOLLOWED = Rule {
        code: "pointer-not-followed",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "a pointer association the derivatives cannot follow",
        doc: "dfort reads a local pointer as its target where one pointer assignment reaches \
              its uses (`p(i)` with `p => a(2:n)` is `a(i+1)`); elsewhere it follows the \
              pointer: the pointer and the variables it may point to are one may-alias class \
              to the analyses, a derivative pointer follows every association (`pb => ab`), \
              and the adjoint saves each association it changes and restores it in the \
              reverse sweep. What it cannot follow is refused: a pointer its caller can see \
              (a pointer argument, a module, COMMON or SAVE pointer, a pointer component of \
              data the caller reaches) associated, nullified, allocated or deallocated in a \
              routine other than the root (the caller's forward sweep runs the original \
              routine, which would leave the derivative pointer behind); an association that \
              makes two module or COMMON variables name the same memory in a routine that \
              calls others (they would not know it); a pointer associated with a function's \
              result, and pointer function results.\n\n\
              Make the association in the root, or pass the data as arguments.",
        example: Some(
            "subroutine attach(n)   ! called by the root\n  use fields, only: view, eta\n  integer :: n\n  view => eta(2:n)   ! the caller sees `view`\nend subroutine attach\n",
        ),
    };
    GLOBAL_THROUGH_FUNCTION = Rule {
        code: "global-through-function",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "a function reaches a real global that the differentiated code changes, where that is not followed",
        doc: "A function referenced in the right-hand side of an assignment runs as a call for \
              the analyses, so the globals it reads and writes are followed. In an IF's \
              condition or a SELECT CASE selector, which carry no derivative and run in the \
              forward sweep only (the branch taken is pushed), it may read such globals but \
              not write them. Referenced elsewhere (a DO bound, a DO WHILE condition, a \
              CALL's actual argument, an I/O list, under a WHERE mask), a function that reads \
              or writes a real COMMON or module variable the root's code changes is \
              refused.\n\n\
              Assign the function's value to a variable first, and use the variable there.",
        example: None,
    };
    DERIVATIVE_ARGUMENT = Rule {
        code: "derivative-argument",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "the derivative of an actual argument cannot be passed to a call",
        doc: "A call to a differentiated procedure must pass, after each actual whose formal \
              has a derivative, that actual's derivative. It cannot when the optional \
              argument is absent, when the actual is an array without a derivative while the \
              callee differentiates its array argument, or when it is an array expression \
              (there is no variable to hold its derivative).\n\n\
              Pass the optional argument, or a variable (copy the array expression into a \
              local array first).",
        example: Some("call smooth(2.0d0*a, n)   ! smooth differentiates its array argument\n"),
    };
    BOUNDS_CHANGE_INSIDE = Rule {
        code: "bounds-change-inside",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "a counted DO loop whose body changes its bounds",
        doc: "The adjoint runs a counted DO loop backwards by replaying it from its bounds \
              (paper 001). When the body changes a variable of the bounds, the bounds after \
              the loop are not those it started with, and the replay would run the wrong \
              iterations.\n\n\
              Copy the bound into a variable the loop does not change, and loop to that.",
        example: Some("do i = 1, n\n  n = n - 1   ! nn = n before the loop, then do i = 1, nn\n  a(i) = a(i)*x\nend do\n"),
    };
    BINOMIAL_CHECKPOINT = Rule {
        code: "binomial-checkpoint",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "a loop marked for binomial checkpointing that dfort cannot checkpoint",
        doc: "`!$ad binomial-ckp(nsnap)` (or Tapenade's `$AD BINOMIAL-CKP steps nsnap first`) \
              on the line before a counted DO loop asks for its adjoint to be checkpointed \
              with Griewank's binomial (Revolve) schedule: the forward sweep runs the loop \
              without recording it, and the reverse sweep runs its steps again from at most \
              `nsnap` snapshots of the loop-carried state, recording one step at a time. The \
              tape then holds one step and the snapshots instead of every step.\n\n\
              The steps run again, so the loop must be one whose steps can be: a counted DO \
              (its number of steps known when it starts: not left by EXIT, its bounds not \
              changed inside), in a unit without GO TO, with no READ (records would be read \
              again), ALLOCATE, DEALLOCATE or pointer association in its body, no named DO \
              inside it, and snapshots that hold no allocatable, pointer, or global dfort \
              cannot bring into the unit (a COMMON block of unknown layout, a host's \
              variable). COMMON blocks and module variables the loop's calls change are \
              saved under names of the adjoint's own. Each refusal names the \
              statement and the reason; remove the directive to get the adjoint that records \
              every step.",
        example: Some("subroutine run(x, n)\n  real(8) :: x(10)\n  integer :: n, it\n!$ad binomial-ckp(5)\n  do it = 1, n\n    read (10, *) x(1)\n    x = x*x\n  end do\nend\n"),
    };
    INTERNAL_ERROR = Rule {
        code: "internal-error",
        severity: Severity::Error,
        group: Group::Generator,
        summary: "an inconsistency inside dfort",
        doc: "The generator found its own inputs inconsistent (a routine that was not \
              analysed, an address recovery plan with no way to recover a value). This is a \
              bug in dfort, not in your code: no derivative is written rather than a wrong \
              one.\n\n\
              Please report it with the smallest code that shows it.",
        example: None,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_kebab_case_and_documented() {
        let mut seen = HashSet::new();
        for r in RULES {
            assert!(seen.insert(r.code), "`{}` is registered twice", r.code);
            let kebab = !r.code.is_empty()
                && r.code
                    .split('-')
                    .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()));
            assert!(kebab, "`{}` is not kebab-case", r.code);
            let summary = r.summary.trim();
            assert!(
                !summary.is_empty() && !summary.contains('\n') && !summary.ends_with('.'),
                "`{}`: the summary must be one line without a final full stop",
                r.code
            );
            // A paragraph on what it means and one on what to do.
            let paragraphs: Vec<&str> = r.doc.split("\n\n").map(str::trim).collect();
            assert!(
                paragraphs.len() >= 2 && paragraphs.iter().all(|p| p.len() > 40),
                "`{}`: the documentation must say what it means and what to do",
                r.code
            );
            if let Some(e) = r.example {
                assert!(
                    e.ends_with('\n'),
                    "`{}`: the example must end a line",
                    r.code
                );
            }
        }
    }

    #[test]
    fn every_group_has_rules_in_one_block() {
        let groups: Vec<Group> = RULES.iter().map(|r| r.group).collect();
        let mut sorted = groups.clone();
        sorted.sort();
        assert_eq!(groups, sorted, "RULES must list the groups in order");
        for g in Group::ALL {
            assert!(groups.contains(&g), "{g:?} has no rule");
        }
    }

    #[test]
    fn rules_are_found_by_code() {
        assert_eq!(rule("no-source"), Some(&NO_SOURCE));
        assert_eq!(
            rule("syntax-error").map(|r| r.severity),
            Some(Severity::Error)
        );
        assert_eq!(rule("No-Source"), None);
        assert_eq!(rule("unregistered"), None);
    }
}
