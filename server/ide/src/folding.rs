//! Folding ranges of a document: program units, constructs (DO, IF and
//! each of its arms, SELECT and each CASE, WHERE, FORALL, ASSOCIATE,
//! BLOCK, CRITICAL), derived-type definitions, interface blocks, the part
//! of a unit after CONTAINS, blocks of comment lines, runs of USE
//! statements and the arms of `#if` regions.
//!
//! Contract: reads the document text only (no parse, no analysis), so it
//! answers on half-typed code and never waits on the workspace. Fixed form
//! is first made free form line for line ([`dfort_syntax::fixed_form`]),
//! so lines are the document's. A fold spans `start..=end` (0-based lines)
//! and leaves a construct's closing line visible; at most one fold starts
//! on a line (the longest). Unmatched openers and closers of half-typed
//! code are dropped, never guessed; `#if` arms are read as alternatives
//! (each arm starts from the constructs open at the `#if`; the first arm's
//! state continues after `#endif`).

use dfort_syntax::fixed_form::normalize_fixed;
use dfort_syntax::source_form::SourceForm;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldKind {
    /// A unit, construct or construct arm.
    Code,
    /// Consecutive comment lines.
    Comment,
    /// Consecutive USE statements.
    Imports,
    /// An arm of `#if` / `#elif` / `#else`.
    Preprocessor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    pub start_line: u32,
    pub end_line: u32,
    pub kind: FoldKind,
}

/// What a statement opens, separates or closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Construct {
    Unit,
    Type,
    Interface,
    Do,
    If,
    Select,
    Where,
    Forall,
    Associate,
    Block,
    Critical,
    Enum,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Open(Construct),
    /// A labelled DO, ended by the statement with that label.
    OpenDo(u32),
    /// ELSE, CASE, …: a new arm of the innermost such construct.
    Arm(Construct),
    /// CONTAINS: the rest of the innermost unit or type.
    Contains,
    /// `end` alone closes the innermost unit.
    Close(Construct),
    Use,
    Other,
}

#[derive(Clone, Debug)]
struct Open {
    what: Construct,
    label: Option<u32>,
    start: u32,
    arm: u32,
}

#[derive(Clone, Debug)]
struct Conditional {
    arm: u32,
    at_if: Vec<Open>,
    first_arm: Option<Vec<Open>>,
}

/// The folds of `text`, sorted by start line.
pub fn folding_ranges(text: &str, form: &SourceForm) -> Vec<Fold> {
    let blanks_matter = matches!(form, SourceForm::Free);
    let free;
    let text = match form {
        SourceForm::Fixed(o) => {
            free = normalize_fixed(text, o.line_length).text;
            free.as_str()
        }
        SourceForm::Free => text,
    };
    let mut folds = Folds::default();
    let mut stack: Vec<Open> = Vec::new();
    let mut conditionals: Vec<Conditional> = Vec::new();
    let mut comments: Option<(u32, u32)> = None;
    let mut uses: Option<(u32, u32)> = None;
    let mut statement = String::new();
    let mut statement_line = 0u32;
    let mut continued = false;
    for (n, raw) in text.lines().enumerate() {
        let n = n as u32;
        let line = raw.trim_start();
        if line.starts_with('#') && !continued {
            comments = folds.end_run(comments, FoldKind::Comment);
            preprocessor(line, n, &mut stack, &mut conditionals, &mut folds);
            continue;
        }
        if line.starts_with('!') {
            comments = Some(comments.map_or((n, n), |(s, _)| (s, n)));
            continue;
        }
        comments = folds.end_run(comments, FoldKind::Comment);
        if line.is_empty() {
            continue;
        }
        let (code, goes_on) = code_of(line);
        if !continued {
            statement.clear();
            statement_line = n;
        }
        statement.push_str(code.strip_prefix('&').unwrap_or(code));
        statement.push(' ');
        continued = goes_on;
        if continued {
            continue;
        }
        for part in split_statements(&statement) {
            let (label, body) = label_of(part);
            let role = role_of(body, blanks_matter);
            if role == Role::Use {
                uses = Some(uses.map_or((statement_line, n), |(s, _)| (s, n)));
            } else if !body.trim().is_empty() {
                uses = folds.end_run(uses, FoldKind::Imports);
            }
            apply(role, statement_line, &mut stack, &mut folds);
            if let Some(l) = label {
                while let Some(top) =
                    stack.pop_if(|top| top.what == Construct::Do && top.label == Some(l))
                {
                    folds.add(top.arm, statement_line, FoldKind::Code);
                }
            }
        }
    }
    folds.end_run(comments, FoldKind::Comment);
    folds.end_run(uses, FoldKind::Imports);
    folds.into_sorted()
}

/// A statement's effect on the stack of open constructs; `line` is the
/// line the statement starts on.
fn apply(role: Role, line: u32, stack: &mut Vec<Open>, folds: &mut Folds) {
    match role {
        Role::Open(what) => stack.push(Open {
            what,
            label: None,
            start: line,
            arm: line,
        }),
        Role::OpenDo(label) => stack.push(Open {
            what: Construct::Do,
            label: Some(label),
            start: line,
            arm: line,
        }),
        Role::Arm(what) => {
            let Some(i) = stack.iter().rposition(|o| o.what == what) else {
                return;
            };
            stack.truncate(i + 1);
            folds.add(stack[i].arm, line, FoldKind::Code);
            stack[i].arm = line;
        }
        Role::Contains => {
            let holder = |o: &Open| matches!(o.what, Construct::Unit | Construct::Type);
            if let Some(i) = stack.iter().rposition(holder) {
                stack.truncate(i + 1);
                stack[i].arm = line;
            }
        }
        Role::Close(what) => {
            let Some(i) = stack.iter().rposition(|o| o.what == what) else {
                return;
            };
            let top = stack.swap_remove(i);
            stack.truncate(i);
            if matches!(top.what, Construct::Unit | Construct::Type) {
                folds.add(top.start, line, FoldKind::Code);
            }
            folds.add(top.arm, line, FoldKind::Code);
        }
        Role::Use | Role::Other => {}
    }
}

fn preprocessor(
    line: &str,
    n: u32,
    stack: &mut Vec<Open>,
    conditionals: &mut Vec<Conditional>,
    folds: &mut Folds,
) {
    let directive: String = line[1..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    match directive.as_str() {
        "if" | "ifdef" | "ifndef" => conditionals.push(Conditional {
            arm: n,
            at_if: stack.clone(),
            first_arm: None,
        }),
        "elif" | "else" => {
            if let Some(c) = conditionals.last_mut() {
                folds.add(c.arm, n, FoldKind::Preprocessor);
                c.arm = n;
                if c.first_arm.is_none() {
                    c.first_arm = Some(stack.clone());
                }
                *stack = c.at_if.clone();
            }
        }
        "endif" => {
            if let Some(c) = conditionals.pop() {
                folds.add(c.arm, n, FoldKind::Preprocessor);
                if let Some(first) = c.first_arm {
                    *stack = first;
                }
            }
        }
        _ => {}
    }
}

/// The code of a free-form line without its trailing comment, and whether
/// it is continued (ends with `&`).
fn code_of(line: &str) -> (&str, bool) {
    let mut quote = None;
    let mut end = line.len();
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '!') => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let code = line[..end].trim_end();
    match code.strip_suffix('&') {
        Some(c) => (c, true),
        None => (code, false),
    }
}

/// A joined statement line split at `;` outside quotes.
fn split_statements(s: &str) -> impl Iterator<Item = &str> {
    let mut parts = Vec::new();
    let mut quote = None;
    let mut from = 0;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, ';') => {
                parts.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[from..]);
    parts.into_iter()
}

/// A statement's label and the rest.
fn label_of(s: &str) -> (Option<u32>, &str) {
    let t = s.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 5 {
        return (None, t);
    }
    let rest = &t[digits..];
    if !rest.starts_with([' ', '\t']) {
        return (None, t);
    }
    (t[..digits].parse().ok(), rest)
}

/// Lower case, blanks removed outside quotes (free form's `end do` and
/// `enddo`, `else if` and `elseif` are then one word), and a leading
/// construct name (`outer:`) removed.
fn squeeze(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut quote = None;
    for c in s.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                out.push(c);
            }
            (Some(q), _) if c == q => {
                quote = None;
                out.push(c);
            }
            (Some(_), _) => out.push(c),
            (None, c) if c.is_whitespace() => {}
            (None, c) => out.push(c.to_ascii_lowercase()),
        }
    }
    let name = out
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || *c == '_')
        .last()
        .map(|(i, c)| i + c.len_utf8());
    if let Some(n) = name {
        let rest = &out[n..];
        if rest.starts_with(':') && !rest.starts_with("::") {
            return rest[1..].to_string();
        }
    }
    out
}

/// Whether `s` has `=` outside parentheses and quotes (an assignment, a
/// DO control, …) — never in the statements that open or close units.
fn has_top_level_equals(s: &str) -> bool {
    let mut depth = 0i32;
    let mut quote = None;
    for &c in s.as_bytes() {
        match (quote, c) {
            (None, b'\'' | b'"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'(') => depth += 1,
            (None, b')') => depth -= 1,
            (None, b'=') if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// The text after the parenthesised group that `s` starts with, or `None`
/// when `s` does not start with `(` or the group is not closed.
fn after_parens(s: &str) -> Option<&str> {
    if !s.starts_with('(') {
        return None;
    }
    let mut depth = 0i32;
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[i + 1..]);
                }
            }
            _ => {}
        }
    }
    None
}

fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `s` is empty or a name (what may follow END DO, END SUBROUTINE, …) or a
/// generic spec (END INTERFACE OPERATOR(+)).
fn ends_well(s: &str) -> bool {
    s.is_empty()
        || is_name(s)
        || ["operator(", "assignment(", "read(", "write("]
            .iter()
            .any(|g| s.starts_with(g))
}

const ENDS: &[(&str, Construct)] = &[
    ("program", Construct::Unit),
    ("submodule", Construct::Unit),
    ("module", Construct::Unit),
    ("subroutine", Construct::Unit),
    ("function", Construct::Unit),
    ("blockdata", Construct::Unit),
    ("block", Construct::Block),
    ("type", Construct::Type),
    ("interface", Construct::Interface),
    ("do", Construct::Do),
    ("if", Construct::If),
    ("select", Construct::Select),
    ("where", Construct::Where),
    ("forall", Construct::Forall),
    ("associate", Construct::Associate),
    ("critical", Construct::Critical),
    ("enum", Construct::Enum),
];

/// What `statement` does to the constructs; `blanks_matter` in free form,
/// where `real functional(3)` declares an array.
fn role_of(statement: &str, blanks_matter: bool) -> Role {
    let s = squeeze(statement);
    if s.is_empty() {
        return Role::Other;
    }
    if let Some(rest) = s.strip_prefix("end") {
        if rest.is_empty() {
            return Role::Close(Construct::Unit);
        }
        for (kw, what) in ENDS {
            if let Some(r) = rest.strip_prefix(kw) {
                if ends_well(r) {
                    return Role::Close(*what);
                }
            }
        }
        // END FILE, END= …: not a closer.
    }
    if let Some(r) = s.strip_prefix("if") {
        return match after_parens(r) {
            Some("then") => Role::Open(Construct::If),
            _ => Role::Other,
        };
    }
    if let Some(r) = s.strip_prefix("elseif") {
        if after_parens(r).is_some_and(|t| t.starts_with("then")) {
            return Role::Arm(Construct::If);
        }
    }
    if let Some(r) = s.strip_prefix("elsewhere") {
        if r.is_empty() || is_name(r) || after_parens(r).is_some_and(|t| t.is_empty() || is_name(t))
        {
            return Role::Arm(Construct::Where);
        }
    }
    if let Some(r) = s.strip_prefix("else") {
        if r.is_empty() || is_name(r) {
            return Role::Arm(Construct::If);
        }
    }
    if has_top_level_equals(&s) {
        return do_statement(&s);
    }
    for kw in ["selectcase(", "selecttype(", "selectrank("] {
        if s.starts_with(kw) {
            return Role::Open(Construct::Select);
        }
    }
    for kw in [
        "case(",
        "casedefault",
        "typeis(",
        "classis(",
        "classdefault",
        "rank(",
        "rankdefault",
    ] {
        if s.starts_with(kw) {
            return Role::Arm(Construct::Select);
        }
    }
    if s == "contains" {
        return Role::Contains;
    }
    for (kw, what) in [("where", Construct::Where), ("forall", Construct::Forall)] {
        if let Some(r) = s.strip_prefix(kw) {
            if after_parens(r) == Some("") {
                return Role::Open(what);
            }
        }
    }
    if s.starts_with("associate(") {
        return Role::Open(Construct::Associate);
    }
    if s == "block" {
        return Role::Open(Construct::Block);
    }
    if s == "critical" || s.starts_with("critical(") {
        return Role::Open(Construct::Critical);
    }
    if s.starts_with("enum,") {
        return Role::Open(Construct::Enum);
    }
    if s == "do" || s.starts_with("dowhile(") || s.starts_with("doconcurrent(") {
        return Role::Open(Construct::Do);
    }
    if let Some(r) = s.strip_prefix("do") {
        // `do 10 while (…)`, `do 10, while (…)`
        let digits = r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            let rest = r[digits..].trim_start_matches(',');
            if rest.starts_with("while(") {
                if let Ok(l) = r[..digits].parse() {
                    return Role::OpenDo(l);
                }
            }
        }
    }
    let interface = s.strip_prefix("abstract").unwrap_or(&s);
    if let Some(r) = interface.strip_prefix("interface") {
        if ends_well(r) {
            return Role::Open(Construct::Interface);
        }
    }
    if let Some(r) = s.strip_prefix("type") {
        let is_definition =
            r.starts_with(',') || r.starts_with("::") || (is_name(r) && !r.starts_with("is("));
        if is_definition {
            return Role::Open(Construct::Type);
        }
    }
    if s.starts_with("use")
        && s[3..].starts_with(|c: char| c == ',' || c == ':' || c.is_ascii_alphabetic())
    {
        return Role::Use;
    }
    if unit_statement(&s) && (!blanks_matter || has_unit_word(statement)) {
        return Role::Open(Construct::Unit);
    }
    Role::Other
}

/// A statement with `=` at the top level opens a loop only as a DO with
/// a control (`do i = 1, n`, `do 10 i = 1, n`, `do 10, i = 1, n`).
fn do_statement(s: &str) -> Role {
    let Some(r) = s.strip_prefix("do") else {
        return Role::Other;
    };
    let digits = r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let label = r[..digits].parse().ok();
    let rest = r[digits..].trim_start_matches(',');
    let Some(eq) = rest.find('=') else {
        return Role::Other;
    };
    if !is_name(&rest[..eq]) || !has_top_level_comma(&rest[eq + 1..]) {
        return Role::Other;
    }
    match label {
        Some(l) => Role::OpenDo(l),
        None => Role::Open(Construct::Do),
    }
}

fn has_top_level_comma(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// PROGRAM, MODULE, SUBMODULE, BLOCK DATA, and SUBROUTINE or FUNCTION
/// statements with their prefixes (`recursive`, `pure`, a type: `real(8)
/// function f(x)`).
fn unit_statement(s: &str) -> bool {
    if let Some(r) = s.strip_prefix("program") {
        return r.is_empty() || is_name(r);
    }
    if s.starts_with("submodule(") || s.starts_with("blockdata") {
        return true;
    }
    if let Some(r) = s.strip_prefix("module") {
        if !r.starts_with("procedure") && is_name(r) && !has_keyword_unit(r) {
            return true;
        }
    }
    let mut r = s;
    loop {
        let before = r;
        for p in [
            "recursive",
            "non_recursive",
            "pure",
            "impure",
            "elemental",
            "module",
        ] {
            if let Some(t) = r.strip_prefix(p) {
                if has_keyword_unit(t) {
                    r = t;
                }
            }
        }
        r = type_prefix(r);
        if r == before {
            break;
        }
    }
    if let Some(t) = r.strip_prefix("subroutine") {
        let name_end = t
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len());
        let rest = &t[name_end..];
        return is_name(&t[..name_end]) && (rest.is_empty() || rest.starts_with('('));
    }
    if let Some(t) = r.strip_prefix("function") {
        let name_end = t
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len());
        return is_name(&t[..name_end]) && t[name_end..].starts_with('(');
    }
    false
}

/// Whether the statement, blanks kept, has the word that makes it a unit's.
fn has_unit_word(statement: &str) -> bool {
    statement
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| {
            [
                "function",
                "subroutine",
                "program",
                "module",
                "submodule",
                "block",
                "blockdata",
            ]
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k))
        })
}

/// Whether `s` still leads to SUBROUTINE or FUNCTION (after more prefixes).
fn has_keyword_unit(s: &str) -> bool {
    s.contains("subroutine") || s.contains("function")
}

/// `s` without a leading type specification (`real`, `real(8)`,
/// `real*8`, `double precision`, `type(t)`, …) when a FUNCTION follows.
fn type_prefix(s: &str) -> &str {
    for t in [
        "integer",
        "real",
        "doubleprecision",
        "doublecomplex",
        "complex",
        "logical",
        "character",
        "type",
        "class",
    ] {
        if let Some(mut r) = s.strip_prefix(t) {
            if let Some(a) = after_parens(r) {
                r = a;
            } else if let Some(star) = r.strip_prefix('*') {
                r = after_parens(star)
                    .unwrap_or_else(|| star.trim_start_matches(|c: char| c.is_ascii_digit()));
            }
            if has_keyword_unit(r) {
                return r;
            }
        }
    }
    s
}

#[derive(Default)]
struct Folds {
    by_start: BTreeMap<u32, Fold>,
}

impl Folds {
    /// A fold from `start` to the line before `closing` (kept visible).
    fn add(&mut self, start: u32, closing: u32, kind: FoldKind) {
        if closing == 0 || closing - 1 <= start {
            return;
        }
        self.insert(Fold {
            start_line: start,
            end_line: closing - 1,
            kind,
        });
    }

    fn insert(&mut self, f: Fold) {
        match self.by_start.get(&f.start_line) {
            Some(old) if old.end_line >= f.end_line => {}
            _ => {
                self.by_start.insert(f.start_line, f);
            }
        }
    }

    /// Ends a run of comment lines or USE statements: a fold when it spans
    /// two lines or more.
    fn end_run(&mut self, run: Option<(u32, u32)>, kind: FoldKind) -> Option<(u32, u32)> {
        if let Some((s, e)) = run {
            if e > s {
                self.insert(Fold {
                    start_line: s,
                    end_line: e,
                    kind,
                });
            }
        }
        None
    }

    fn into_sorted(self) -> Vec<Fold> {
        self.by_start.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dfort_syntax::FixedOptions;

    /// The folds of `src` as `(start, end, kind)` with 1-based lines, as a
    /// reader counts them in the fixture.
    fn folds(src: &str, form: SourceForm) -> Vec<(u32, u32, FoldKind)> {
        folding_ranges(src, &form)
            .into_iter()
            .map(|f| (f.start_line + 1, f.end_line + 1, f.kind))
            .collect()
    }

    use FoldKind::{Code, Comment, Imports, Preprocessor};

    #[test]
    fn free_form_units_constructs_arms_comments_and_uses() {
        let src = "\
! a module
! of two routines
module m
  use a
  use b, only: c
  implicit none
  type :: point
    real :: x, y
  end type point
contains
  real(8) function f(x)
    real(8) :: x
    if (x > 0) then
      f = x
    else if (x < -1) then
      f = -x
    else
      f = 0
    end if
  end function f
  subroutine s(a, n)
    integer :: n, i
    real :: a(n)
    outer: do i = 1, n
      select case (i)
      case (1)
        a(i) = 0
      case default
        a(i) = 1
      end select
    enddo outer
    if (n > 0) a(1) = 2
    where (a > 0)
      a = 1
    elsewhere
      a = 0
    end where
  end subroutine
end module m
";
        assert_eq!(
            folds(src, SourceForm::Free),
            [
                (1, 2, Comment),
                (3, 38, Code),
                (4, 5, Imports),
                (7, 8, Code),
                (10, 38, Code),
                (11, 19, Code),
                (13, 14, Code),
                (15, 16, Code),
                (17, 18, Code),
                (21, 37, Code),
                (24, 30, Code),
                (26, 27, Code),
                (28, 29, Code),
                (33, 34, Code),
                (35, 36, Code),
            ]
        );
    }

    #[test]
    fn fixed_form_labelled_loops_glued_keywords_and_comment_lines() {
        let src = "\
C     Bratu, fixed form
C     two comment lines
      SUBROUTINE BRATU(N, X, F)
      INTEGER N, I, J
      REAL*8 X(N), F(N)
      DO 20 J = 1, N
        DO 20 I = 1, N
          F(I) = X(I) +
     &           X(J)
   20 CONTINUE
      DO10I=1,N
         IF (X(I) .GT. 0) THEN
            X(I) = 0
         ENDIF
   10 CONTINUE
      END
      DOUBLE PRECISION FUNCTION G(X)
      DOUBLE PRECISION X
      G = X
      END
";
        assert_eq!(
            folds(src, SourceForm::Fixed(FixedOptions::default())),
            [
                (1, 2, Comment),
                (3, 15, Code),
                (6, 9, Code),
                (7, 9, Code),
                (11, 14, Code),
                (12, 13, Code),
                (17, 19, Code),
            ]
        );
    }

    #[test]
    fn preprocessor_arms_are_alternatives() {
        // (A string continued with `\\` loses the next line's indentation:
        // the fixture starts with a comment line.)
        let src = "\
C     one loop, two headers
      subroutine s(x)
      real x
#ifdef ALLOW_A
      do i = 1, 3
#else
      do i = 1, 4
#endif
        x = x + 1
      end do
      end
";
        assert_eq!(
            folds(src, SourceForm::Fixed(FixedOptions::default())),
            [
                (2, 10, Code),
                (4, 5, Preprocessor),
                (5, 9, Code),
                (6, 7, Preprocessor)
            ]
        );
    }

    #[test]
    fn half_typed_code_and_look_alikes_give_no_false_folds() {
        let src = "\
subroutine s(n)
  real functional(3)
  integer :: enddo_count, endx
  endx = 1
  enddo_count = 2
  if (n > 0) then
    do i = 1, n
      x = 1
  end if
  end file 10
  do
";
        // The unclosed DO inside the IF is dropped; the trailing DO and
        // the routine are never closed.
        assert_eq!(folds(src, SourceForm::Free), [(6, 8, Code)]);
        assert!(folds("", SourceForm::Free).is_empty());
        assert!(folds("end\nend do\n#endif\n#else\n", SourceForm::Free).is_empty());
    }
}
