//! What a routine's text keeps of what nothing in it refers to
//! (gfortran -Wall would say it is unused):
//!
//! - the generator's own declarations: a temporary or counter
//!   (`dfort_tb`, `dfort_branch`, `dfort_k1`, …) nothing in the routine
//!   names is not declared;
//! - the original's variables the derivative routine never names (a
//!   local whose only statements the forward sweep dropped), but those
//!   its internal procedures name by host association (and their
//!   derivatives), which are not in its text. Only plain type
//!   declarations are touched (no PARAMETER, INTENT, EXTERNAL,
//!   initialiser): a name that occurs nowhere else in the routine's code
//!   has no type to lose. Comments (the origin heading each block, which
//!   quotes the primal statement) are not uses;
//! - statement labels no jump, DO, I/O specifier or format reference
//!   names (a DO's terminal `1 continue` once the loop ends with END DO);
//!   a `continue` left without its label goes. A reference this misses
//!   makes the routine fail to compile, never compute something else.

use crate::fortran::outside_literals;

/// `text` without the unused declarations in its first `spec_end` bytes
/// (the specification part) — the generator's own, and with `originals`
/// the original's variables too, but those it lists (lower case: what
/// internal procedures name) — and where that part now ends.
pub fn unused_declarations(
    text: &str,
    spec_end: usize,
    originals: Option<&[String]>,
) -> (String, usize) {
    let spec_end = spec_end.min(text.len());
    let (spec, rest) = text.split_at(spec_end);
    let code = Uses::of(text);
    let droppable = |ty: &str, n: &str| {
        n.starts_with("dfort_")
            || originals.is_some_and(|kept| plain_type(ty) && !kept.contains(&n.to_string()))
    };
    // The declared variables nothing uses that may go (lower case)…
    let mut unused: Vec<String> = spec
        .lines()
        .filter_map(declared)
        .flat_map(|(ty, names)| {
            names
                .into_iter()
                .map(move |n| (ty, base_name(n).to_ascii_lowercase()))
        })
        .filter(|(ty, n)| droppable(ty, n) && !code.names(n))
        .map(|(_, n)| n)
        .collect();
    // … but those a DATA statement initialises beside a variable that
    // stays; a DATA statement that initialises only variables that go,
    // goes with them.
    let data: Vec<Vec<String>> = text.lines().filter_map(data_objects).collect();
    for objects in &data {
        if !objects.iter().all(|o| unused.contains(o)) {
            unused.retain(|u| !objects.contains(u));
        }
    }
    let initialises_only_unused = |line: &str| {
        data_objects(line).is_some_and(|o| !o.is_empty() && o.iter().all(|n| unused.contains(n)))
    };
    let mut out = String::with_capacity(text.len());
    for line in spec.split_inclusive('\n') {
        if initialises_only_unused(line) {
            continue;
        }
        match declared(line) {
            Some((ty, names)) => {
                let used: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|n| !unused.contains(&base_name(n).to_ascii_lowercase()))
                    .collect();
                if used.len() == names.len() {
                    out.push_str(line);
                } else if !used.is_empty() {
                    let indent = &line[..line.len() - line.trim_start().len()];
                    out.push_str(&format!("{indent}{ty} :: {}\n", used.join(", ")));
                }
            }
            None => match (originals, used_only(line)) {
                (Some(kept), Some((head, items))) => {
                    let used: Vec<&str> = items
                        .iter()
                        .copied()
                        .filter(|item| {
                            let local = item.split("=>").next().unwrap_or(item).trim();
                            let lower = local.to_ascii_lowercase();
                            !local.chars().all(crate::fortran::is_name_char)
                                || kept.contains(&lower)
                                || code.names(&lower)
                        })
                        .collect();
                    if used.len() == items.len() {
                        out.push_str(line);
                    } else if !used.is_empty() {
                        out.push_str(&format!("{head}, only: {}\n", used.join(", ")));
                    }
                }
                _ => out.push_str(line),
            },
        }
    }
    let end = out.len();
    for line in rest.split_inclusive('\n') {
        if !initialises_only_unused(line) {
            out.push_str(line);
        }
    }
    (out, end)
}

/// The variables a DATA statement initialises (lower case), when each of
/// its objects is a whole variable (`data ih /4hglue, 2hd /, n /3/`);
/// `None` for any other statement, or a DATA statement with an element,
/// a substring or an implied DO among its objects.
fn data_objects(line: &str) -> Option<Vec<String>> {
    let lower = line.trim().to_ascii_lowercase();
    let mut rest = lower.strip_prefix("data")?;
    if !rest.starts_with(' ') {
        return None;
    }
    let mut objects = Vec::new();
    loop {
        rest = rest.trim_start().trim_start_matches(',').trim_start();
        if rest.is_empty() {
            return Some(objects);
        }
        let (names, values) = rest.split_once('/')?;
        for n in names.split(',').map(str::trim) {
            let plain = n.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && n.chars().all(crate::fortran::is_name_char);
            if !plain {
                return None;
            }
            objects.push(n.to_string());
        }
        // The values end at the next `/` outside character constants.
        let (close, _) = outside_literals(values).find(|&(_, c)| c == '/')?;
        rest = &values[close + 1..];
    }
}

/// A USE statement with an ONLY list on one line, `use m, only: a, b =>
/// c`: what precedes `, only:` (indented) and the list's items.
fn used_only(line: &str) -> Option<(&str, Vec<&str>)> {
    let body = line.trim_end();
    if !body.trim_start().to_ascii_lowercase().starts_with("use ") || body.ends_with('&') {
        return None;
    }
    let at = body.to_ascii_lowercase().find(", only:")?;
    let items = body[at + ", only:".len()..]
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect();
    Some((&body[..at], items))
}

/// A declaration `type :: a, b(:), n = 0` of variables (not of named
/// constants): its type and entities.
pub(crate) fn declared(line: &str) -> Option<(&str, Vec<&str>)> {
    let (ty, names) = line.trim().split_once(" :: ")?;
    if ty.to_ascii_lowercase().contains("parameter") {
        return None;
    }
    let entities = crate::fortran::top_level_items(names);
    Some((ty, entities))
}

/// Whether a declaration's type part declares variables and nothing
/// else: a type, then only attributes a variable nothing names can lose.
fn plain_type(ty: &str) -> bool {
    let ty = ty.to_ascii_lowercase();
    let typed = type_inquiry(&ty).is_some();
    let items = crate::fortran::top_level_items(&ty);
    let plain = [
        "dimension",
        "allocatable",
        "pointer",
        "target",
        "save",
        "contiguous",
    ];
    typed
        && items
            .iter()
            .skip(1)
            .all(|a| plain.iter().any(|p| a.starts_with(p)))
}

/// `text` with an `allocate` of size zero at the start of its executable
/// part (`spec_end`) for each allocatable temporary of the generator
/// that its code assigns without ever allocating it. Assigned to while
/// unallocated, such an array is allocated by the assignment (valid
/// Fortran), but `gfortran -Wall` then warns that the bounds of its
/// descriptor are used uninitialized; allocated first, the assignment
/// gives it the value's shape all the same.
pub fn first_allocations(text: &str, spec_end: usize) -> String {
    let spec_end = spec_end.min(text.len());
    let (spec, code) = text.split_at(spec_end);
    let mut zero_sized = Vec::new();
    for line in spec.lines() {
        let Some((ty, names)) = declared(line) else {
            continue;
        };
        if !ty.contains("allocatable") {
            continue;
        }
        for entity in names {
            let name = base_name(entity);
            let Some(shape) = entity.strip_prefix(name).map(str::trim) else {
                continue;
            };
            let rank = shape.matches(':').count();
            let allocated = crate::fortran::code_names(code, &format!("allocate({name}"));
            if name.starts_with("dfort_")
                && rank > 0
                && !allocated
                && crate::fortran::code_names(code, name)
            {
                zero_sized.push(format!("{name}({})", vec!["0"; rank].join(", ")));
            }
        }
    }
    if zero_sized.is_empty() {
        return text.to_string();
    }
    let indent = &code[..code.len() - code.trim_start_matches(' ').len()];
    let mut out = String::with_capacity(text.len() + 64);
    out.push_str(spec);
    for group in zero_sized.chunks(4) {
        out.push_str(&format!("{indent}allocate({})\n", group.join(", ")));
    }
    out.push_str(code);
    out
}

/// `text` with one named constant after the declarations of the routine's
/// dummy arguments (`dummies`) that nothing in it reads — a primal output
/// whose value the adjoint does not compute, an input's derivative the
/// tangent never sets — so that `gfortran -Wall` does not warn that they
/// are unused: `integer, parameter :: dfort_unread(2) = [kind(f),
/// storage_size(p)]` (inquiries on the declarations alone; nothing runs).
/// The calling convention keeps every dummy. A dummy whose type has no
/// such inquiry (a procedure, a polymorphic value) is left as it is.
/// Returns the text and where its specification part (`spec_end`) now
/// ends.
pub fn unread_dummies(text: &str, spec_end: usize, dummies: &[String]) -> (String, usize) {
    let spec_end = spec_end.min(text.len());
    let spec = SpecLines::of(&text[..spec_end]);
    let code = Uses::of(&text[spec.body_start()..]);
    let mut inquiries = Vec::new();
    // The constant goes after the last declaration of a dummy.
    let mut after = 0;
    let mut indent = "";
    for name in dummies {
        let Some((ty, end, declared_indent)) = spec.declaring(name).next() else {
            continue;
        };
        if end > after {
            after = end;
            indent = declared_indent;
        }
        // A dummy procedure is not among `dummies`: it has no kind.
        if code.names(&name.to_ascii_lowercase()) {
            continue;
        }
        let Some(inquiry) = type_inquiry(&ty.to_ascii_lowercase()) else {
            continue;
        };
        inquiries.push(format!("{inquiry}({name})"));
    }
    if inquiries.is_empty() {
        return (text.to_string(), spec_end);
    }
    let mut w = crate::fortran::Writer::default();
    for _ in 0..indent.len() / 2 {
        w.indent();
    }
    w.line("! Arguments this routine does not read, named for gfortran -Wall:");
    w.line(&format!(
        "integer, parameter :: dfort_unread({}) = [{}]",
        inquiries.len(),
        inquiries.join(", ")
    ));
    let added = w.finish();
    let out = format!("{}{}{}", &text[..after], added, &text[after..]);
    (out, spec_end + added.len())
}

/// `text` with a procedure pointer associated with each dummy procedure
/// (`procedures`) its executable part never names — a routine of a split
/// adjoint's reverse sweep keeps every argument of the calling
/// convention but has no call to make — so that `gfortran -Wall` does not
/// warn that it is unused: `procedure(logical(4)), pointer ::
/// dfort_unread_p` after the last declaration of one, and `dfort_unread_p
/// => p` first in the executable part (a procedure has no inquiry a
/// constant could name). The pointer's interface is the procedure's
/// type, or its PROCEDURE statement's interface; a function whose
/// result's length is assumed (`character(len=*)`) is left as it is.
/// Returns the text and where its specification part now ends.
pub fn uncalled_procedures(text: &str, spec_end: usize, procedures: &[String]) -> (String, usize) {
    let spec_end = spec_end.min(text.len());
    let spec = SpecLines::of(&text[..spec_end]);
    let code = Uses::of(&text[spec_end..]);
    let mut after = 0;
    let mut indent = "";
    let mut pointers = Vec::new();
    for name in procedures {
        let lower = name.to_ascii_lowercase();
        if code.names(&lower) {
            continue;
        }
        let mut interface = None;
        let mut typed = None;
        let (mut declared_by, mut declared_indent) = (0, "");
        for (ty, end, ind) in spec.declaring(name) {
            let ty = ty.trim().to_ascii_lowercase();
            if ty.starts_with("procedure(") {
                let open = "procedure".len();
                interface = crate::fortran::matching_paren(&ty, open)
                    .map(|close| ty[open + 1..close].trim().to_string());
            } else if type_inquiry(&ty).is_some() {
                typed = Some(type_spec(&ty).to_string());
            }
            if end > declared_by {
                declared_by = end;
                declared_indent = ind;
            }
        }
        let interface = interface.or(typed).unwrap_or_default();
        if declared_by == 0 || interface.contains('*') || interface.contains(':') {
            continue;
        }
        if declared_by > after {
            after = declared_by;
            indent = declared_indent;
        }
        pointers.push((interface, lower));
    }
    if pointers.is_empty() || after == 0 {
        return (text.to_string(), spec_end);
    }
    let mut declarations = crate::fortran::Writer::default();
    let mut statements = crate::fortran::Writer::default();
    for _ in 0..indent.len() / 2 {
        declarations.indent();
        statements.indent();
    }
    declarations.line("! Dummy procedures this routine does not call, named for gfortran -Wall:");
    for (interface, name) in &pointers {
        declarations.line(&format!(
            "procedure({interface}), pointer :: dfort_unread_{name}"
        ));
        statements.line(&format!("dfort_unread_{name} => {name}"));
    }
    let (declarations, statements) = (declarations.finish(), statements.finish());
    let out = format!(
        "{}{}{}{}{}",
        &text[..after],
        declarations,
        &text[after..spec_end],
        statements,
        &text[spec_end..]
    );
    (out, spec_end + declarations.len())
}

/// A routine's specification part as lines, each with the offset it
/// starts at; `body` is the first line after the header (which may be
/// continued).
struct SpecLines<'a> {
    lines: Vec<(usize, &'a str)>,
    body: usize,
    len: usize,
}

impl<'a> SpecLines<'a> {
    fn of(spec: &'a str) -> Self {
        let mut lines = Vec::new();
        let mut at = 0;
        for l in spec.split_inclusive('\n') {
            lines.push((at, l));
            at += l.len();
        }
        let body = lines
            .iter()
            .position(|(_, l)| !l.trim_end().ends_with('&'))
            .map_or(lines.len(), |k| k + 1);
        SpecLines {
            lines,
            body,
            len: spec.len(),
        }
    }

    /// Where the lines after the header start.
    fn body_start(&self) -> usize {
        self.lines.get(self.body).map_or(self.len, |(at, _)| *at)
    }

    /// The declarations of `name` after the header, in order: each one's
    /// type part, where its last continuation line ends, and its indent.
    fn declaring<'s>(
        &'s self,
        name: &'s str,
    ) -> impl Iterator<Item = (&'a str, usize, &'a str)> + 's {
        let lines = &self.lines;
        lines
            .iter()
            .enumerate()
            .skip(self.body)
            .filter_map(move |(k, (_, l))| {
                let (ty, names) = declared(l)?;
                if !names
                    .iter()
                    .any(|n| base_name(n).eq_ignore_ascii_case(name))
                {
                    return None;
                }
                let last = lines[k..]
                    .iter()
                    .position(|(_, l)| !l.trim_end().ends_with('&'))
                    .map_or(lines.len() - 1, |j| k + j);
                let end = lines[last].0 + lines[last].1.len();
                Some((ty, end, &l[..l.len() - l.trim_start().len()]))
            })
    }
}

/// The type of a declaration's type part (lower case): `logical(4)` of
/// `logical(4), external`.
fn type_spec(ty: &str) -> &str {
    crate::fortran::top_level_items(ty)[0]
}

/// The name an entity declares: `x` of `x(n)`, `n = 0` or `p => null()`.
fn base_name(entity: &str) -> &str {
    entity.split(['(', '=']).next().unwrap_or(entity).trim()
}

/// The inquiry that names a variable of a declaration's type part
/// (lower case) in a constant expression — `kind` for an intrinsic type,
/// `storage_size` for a derived one — or `None` when the part does not
/// start with a type (EXTERNAL, PROCEDURE, CLASS, DIMENSION, …).
fn type_inquiry(ty: &str) -> Option<&'static str> {
    const INTRINSIC: [&str; 6] = [
        "integer",
        "real",
        "double ",
        "complex",
        "logical",
        "character",
    ];
    if ty.starts_with("type(") {
        Some("storage_size")
    } else if INTRINSIC.iter().any(|t| ty.starts_with(t)) {
        Some("kind")
    } else {
        None
    }
}

/// A routine's code as searched for the uses of a name: lower case,
/// without comments and character constants, each type declaration
/// reduced to its type part and its entities' bounds, kinds and
/// initialisers, each USE … ONLY to its module — the names a statement
/// declares or imports are not uses of them.
struct Uses(Vec<String>);

impl Uses {
    fn of(text: &str) -> Self {
        let lines = text
            .split_inclusive('\n')
            .filter(|l| !crate::fortran::is_comment_line(l))
            .map(|l| match (declared(l), used_only(l)) {
                // What a DATA statement initialises is not a use of it.
                _ if data_objects(l).is_some() => String::new(),
                (Some((ty, names)), _) if type_inquiry(&ty.to_ascii_lowercase()).is_some() => {
                    let mut s = ty.to_string();
                    for n in names {
                        s.push(' ');
                        s.push_str(&n[base_name(n).len()..]);
                    }
                    s
                }
                (_, Some((head, _))) => head.to_string(),
                _ => l.to_string(),
            })
            .map(|l| without_literals(&l.to_ascii_lowercase()))
            .collect();
        Uses(lines)
    }

    /// Whether `name` (lower case) occurs as a whole word, but as a
    /// component (`p%h` does not use `h`).
    fn names(&self, name: &str) -> bool {
        self.0.iter().any(|l| {
            crate::fortran::whole_name_at(l, name).any(|i| !l[..i].trim_end().ends_with('%'))
        })
    }
}

/// `text` (a routine's statements) without the labels nothing
/// references, and without the `continue` lines left bare.
pub fn unused_labels(text: &str) -> String {
    let referenced = label_references(text);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_start();
        let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let rest = &body[digits..];
        let labelled = digits > 0 && digits <= 5 && rest.starts_with(' ');
        let label = body[..digits].parse::<u32>().ok();
        match (labelled, label) {
            (true, Some(l)) if !referenced.contains(&l) => {
                let stmt = rest.trim_start();
                if stmt.trim_end() == "continue" {
                    continue;
                }
                let indent = &line[..line.len() - body.len()];
                out.push_str(indent);
                out.push_str(stmt);
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// The labels `text` references: after GO TO (and in a computed GO
/// TO's list), an arithmetic IF's three, a DO's terminal, `err=`,
/// `end=`, `eor=`, `fmt=`, the format of READ, WRITE and PRINT, ASSIGN,
/// and alternate returns (`*10`).
fn label_references(text: &str) -> std::collections::BTreeSet<u32> {
    let mut out = std::collections::BTreeSet::new();
    for raw in text.lines() {
        // A comment (a block's origin quoting a GO TO) references nothing.
        if crate::fortran::is_comment_line(raw) {
            continue;
        }
        let line = without_literals(&raw.to_ascii_lowercase());
        // The statement, after its own label.
        let stmt = line
            .trim_start()
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim();
        let ints = |s: &str| -> Vec<u32> {
            s.split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect()
        };
        let after_keyword = |kw: &str| -> Vec<(usize, &str)> {
            stmt.match_indices(kw)
                .filter(|(i, _)| {
                    !stmt[..*i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                })
                .map(|(i, _)| (i, stmt[i + kw.len()..].trim_start()))
                .collect()
        };
        for kw in ["go to", "goto"] {
            for (_, rest) in after_keyword(kw) {
                let list = match rest.strip_prefix('(') {
                    Some(r) => r.split(')').next().unwrap_or(""),
                    None => rest
                        .split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap_or(""),
                };
                out.extend(ints(list));
            }
        }
        for kw in ["err", "end", "eor", "fmt"] {
            for (_, rest) in after_keyword(kw) {
                if let Some(r) = rest.strip_prefix('=') {
                    let r = r.trim_start();
                    let n: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
                    out.extend(n.parse::<u32>().ok());
                }
            }
        }
        // `do 10 i = …`, `do 10, i = …`.
        if let Some(rest) = strip_word(stmt, "do") {
            let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            out.extend(n.parse::<u32>().ok());
        }
        if let Some(rest) = strip_word(stmt, "assign") {
            let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            out.extend(n.parse::<u32>().ok());
        }
        // `print 100, x`, `read 100, x`.
        for kw in ["print", "read"] {
            if let Some(rest) = strip_word(stmt, kw) {
                let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                out.extend(n.parse::<u32>().ok());
            }
        }
        // `read (u, 100)`, `write (u, 100)`: the second item.
        for kw in ["read", "write"] {
            if let Some(rest) = strip_word(stmt, kw).and_then(|r| r.strip_prefix('(')) {
                if let Some(second) = rest.split(')').next().and_then(|a| a.split(',').nth(1)) {
                    out.extend(second.trim().parse::<u32>().ok());
                }
            }
        }
        // Arithmetic IF: `if (e) 10, 20, 30`.
        if let Some(rest) = strip_word(stmt, "if").and_then(|r| r.strip_prefix('(')) {
            let mut depth = 1;
            let close = rest.char_indices().find(|&(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            });
            if let Some((i, _)) = close {
                let tail = rest[i + 1..].trim();
                if !tail.is_empty()
                    && tail
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == ',' || c == ' ')
                {
                    out.extend(ints(tail));
                }
            }
        }
        // Alternate returns: `call s(x, *10)`.
        for (i, _) in stmt.match_indices('*') {
            let before = stmt[..i].trim_end();
            if before.ends_with('(') || before.ends_with(',') {
                let n: String = stmt[i + 1..]
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                out.extend(n.parse::<u32>().ok());
            }
        }
    }
    out
}

/// `s` after the keyword `kw` at its start (as a whole word).
fn strip_word<'a>(s: &'a str, kw: &str) -> Option<&'a str> {
    let rest = s.strip_prefix(kw)?;
    match rest.chars().next() {
        Some(c) if c.is_ascii_alphanumeric() || c == '_' => None,
        _ => Some(rest.trim_start()),
    }
}

/// `line` with its character literals emptied and its comment dropped.
pub(crate) fn without_literals(line: &str) -> String {
    // A `!` outside a constant starts the comment (one inside a constant
    // is not yielded).
    outside_literals(line)
        .map(|(_, c)| c)
        .take_while(|&c| c != '!')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unused_generator_declarations_go_and_the_rest_stay() {
        let text = "subroutine f_b(x)\n  real(8) :: x\n  real(8) :: y\n  integer :: dfort_branch\n  integer :: dfort_k1, dfort_count1\n  real(8) :: dfort_tb\n  real(8) :: dfort_tb1\n  x = dfort_tb1 + 0 * dfort_k1\nend subroutine\n";
        let spec_end = text.find("  x = ").unwrap();
        let (out, end) = unused_declarations(text, spec_end, None);
        assert_eq!(
            out,
            "subroutine f_b(x)\n  real(8) :: x\n  real(8) :: y\n  integer :: dfort_k1\n  real(8) :: dfort_tb1\n  x = dfort_tb1 + 0 * dfort_k1\nend subroutine\n"
        );
        assert!(out[end..].starts_with("  x = "));
    }

    #[test]
    fn unused_variables_of_the_original_go_where_the_routine_holds_every_use() {
        let text = "subroutine f_b(x, xb, k)\n  real(8) :: x\n  real(8) :: xb\n  integer, intent(in) :: k\n  real(8) :: y, z(k)\n  real(8), dimension(3), save :: w\n  integer, parameter :: m = 2\n  real(8) :: t = 1.0d0\n  type(pt) :: p\n  ! f.f90:3: y = x * p%a\n  xb = xb + 2.0d0 * x * z(1)\nend subroutine\n";
        let spec_end = text.find("  ! f.f90").unwrap();
        let (out, end) = unused_declarations(text, spec_end, Some(&[]));
        assert_eq!(
            out,
            "subroutine f_b(x, xb, k)\n  real(8) :: x\n  real(8) :: xb\n  integer, intent(in) :: k\n  real(8) :: z(k)\n  integer, parameter :: m = 2\n  ! f.f90:3: y = x * p%a\n  xb = xb + 2.0d0 * x * z(1)\nend subroutine\n"
        );
        assert!(out[end..].starts_with("  ! f.f90"));
        // A routine with internal procedures keeps them all.
        let (kept, _) = unused_declarations(text, spec_end, None);
        assert_eq!(kept, text);
    }

    #[test]
    fn a_component_or_a_character_constant_of_the_same_name_is_not_a_use() {
        let text = "subroutine f_b(q, qb)\n  type(pt) :: q\n  type(pt) :: qb\n  real(8) :: a, s\n  character(len=8) :: c\n  c = 's'\n  qb%a = qb%a + q%a\nend subroutine\n";
        let spec_end = text.find("  c = ").unwrap();
        let (out, _) = unused_declarations(text, spec_end, Some(&[]));
        assert_eq!(
            out,
            "subroutine f_b(q, qb)\n  type(pt) :: q\n  type(pt) :: qb\n  character(len=8) :: c\n  c = 's'\n  qb%a = qb%a + q%a\nend subroutine\n"
        );
    }

    #[test]
    fn a_data_statement_goes_with_the_variables_it_initialises() {
        let text = "subroutine f_b(x, xb)\n  real(8) :: x\n  real(8) :: xb\n  integer(4) :: ih(2)\n  integer(4) :: n, m(2)\n  DATA IH /4HGLUE, 2HD /\n  data n /3/, m /1, 2/\n  xb = xb + n * x\nend subroutine\n";
        let spec_end = text.find("  xb = ").unwrap();
        let (out, _) = unused_declarations(text, spec_end, Some(&[]));
        // ih goes with its DATA; n is used, so its DATA (which also sets
        // m) stays, and m with it.
        assert_eq!(
            out,
            "subroutine f_b(x, xb)\n  real(8) :: x\n  real(8) :: xb\n  integer(4) :: n, m(2)\n  data n /3/, m /1, 2/\n  xb = xb + n * x\nend subroutine\n"
        );
        assert_eq!(
            data_objects("  data a, b /1, 2/, c /'x/y'/"),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(data_objects("  data a(1) /1/"), None);
        assert_eq!(data_objects("  data = 3"), None);
    }

    #[test]
    fn temporaries_assigned_unallocated_are_allocated_first() {
        let text = "subroutine f_b(n, yb, tb)\n  real(8), allocatable :: dfort_ta1(:), dfort_ta2(:, :)\n  logical, allocatable :: dfort_w1(:)\n  real(8), allocatable :: dfort_te1(:)\n  real(8), allocatable :: dfort_tc(:)\n  real(8), allocatable :: keep(:)\n  ! dfort_tc = 1\n  dfort_ta1 = yb\n  where (dfort_w1) tb = 0\n  allocate(dfort_te1, mold=tb)\n  keep = dfort_ta2(1, :)\nend subroutine\n";
        let spec_end = text.find("  ! dfort_tc").unwrap();
        let out = first_allocations(text, spec_end);
        assert_eq!(
            &out[spec_end..],
            "  allocate(dfort_ta1(0), dfort_ta2(0, 0), dfort_w1(0))\n  ! dfort_tc = 1\n  dfort_ta1 = yb\n  where (dfort_w1) tb = 0\n  allocate(dfort_te1, mold=tb)\n  keep = dfort_ta2(1, :)\nend subroutine\n"
        );
        assert_eq!(&out[..spec_end], &text[..spec_end]);
        // Nothing to allocate: the text as it was.
        let plain = "subroutine g(x)\n  real(8) :: x\n  x = 1\nend subroutine\n";
        assert_eq!(
            first_allocations(plain, plain.find("  x = 1").unwrap()),
            plain
        );
    }

    #[test]
    fn labels_nothing_references_go() {
        let text = "  do i = 1, n\n    1 continue\n  end do\n  10 x = 1\n  go to (20, 30) k\n  20 y = 2\n  30 continue\n  if (x - 1) 40, 50, 60\n  40 continue\n  50 continue\n  60 continue\n  70 continue\n  write (6, 100) x\n  100 format (f8.3)\n  read (5, *, end=80) y\n  80 continue\n  do 90 j = 1, 2\n  90 continue\n  call s(x, *95)\n  95 z = 0 ! go to 96\n  96 continue\n  print '(a)', 'go to 97'\n  97 continue\n";
        let out = unused_labels(text);
        assert_eq!(
            out,
            "  do i = 1, n\n  end do\n  x = 1\n  go to (20, 30) k\n  20 y = 2\n  30 continue\n  if (x - 1) 40, 50, 60\n  40 continue\n  50 continue\n  60 continue\n  write (6, 100) x\n  100 format (f8.3)\n  read (5, *, end=80) y\n  80 continue\n  do 90 j = 1, 2\n  90 continue\n  call s(x, *95)\n  95 z = 0 ! go to 96\n  print '(a)', 'go to 97'\n"
        );
    }

    #[test]
    fn a_name_inside_a_longer_one_is_not_a_use() {
        let text = "  real(8) :: dfort_tb\n  dfort_tb1 = 1\n";
        let (out, _) = unused_declarations(text, text.find("  dfort_tb1").unwrap(), None);
        assert_eq!(out, "  dfort_tb1 = 1\n");
    }

    #[test]
    fn names_internal_procedures_use_stay_and_unused_use_only_items_go() {
        let text = "subroutine f_b(x, xb)\n  use m, only: a, b => c, operator(+), d\n  use s, only: t\n  real(8) :: x\n  real(8) :: xb\n  real(8) :: h, g\n  xb = xb + a * x\nend subroutine\n";
        let spec_end = text.find("  xb = xb").unwrap();
        let kept = ["g".to_string(), "d".to_string()];
        let (out, _) = unused_declarations(text, spec_end, Some(&kept));
        assert_eq!(
            out,
            "subroutine f_b(x, xb)\n  use m, only: a, operator(+), d\n  real(8) :: x\n  real(8) :: xb\n  real(8) :: g\n  xb = xb + a * x\nend subroutine\n"
        );
    }

    #[test]
    fn dummies_nothing_reads_are_named_in_one_constant() {
        // p, a dummy procedure, is not among the data dummies.
        let dummies: Vec<String> = ["f", "fb", "h", "v", "s", "w"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let text = "subroutine f_b(f, fb, h, v, p, s, w)\n  real(8) :: f(*)\n  real(8) :: fb(*)\n  real(8) :: h\n  type(pt) :: v\n  real(8) :: p\n  external :: p\n  logical :: s\n  real(8) :: w\n  integer :: k\n  ! f.f90:2: h = f(1)\n  fb(1) = w%h + len('s')\nend subroutine\n";
        let spec_end = text.find("  ! f.f90").unwrap();
        let (out, end) = unread_dummies(text, spec_end, &dummies);
        // Read: fb (a use), w (w%h); unread: f, h (only a component and a
        // comment name it), v, s (only a string does).
        assert_eq!(
            out,
            "subroutine f_b(f, fb, h, v, p, s, w)\n  real(8) :: f(*)\n  real(8) :: fb(*)\n  real(8) :: h\n  type(pt) :: v\n  real(8) :: p\n  external :: p\n  logical :: s\n  real(8) :: w\n  ! Arguments this routine does not read, named for gfortran -Wall:\n  integer, parameter :: dfort_unread(4) = [kind(f), kind(h), storage_size(v), kind(s)]\n  integer :: k\n  ! f.f90:2: h = f(1)\n  fb(1) = w%h + len('s')\nend subroutine\n"
        );
        assert!(out[end..].starts_with("  ! f.f90"));
        // Every dummy read: the text unchanged.
        let read = "subroutine g_b(f)\n  real(8) :: f\n  f = 0\nend subroutine\n";
        let spec_end = read.find("  f = 0").unwrap();
        assert_eq!(unread_dummies(read, spec_end, &["f".to_string()]).0, read);
    }

    #[test]
    fn dummy_procedures_nothing_calls_are_associated_with_a_pointer() {
        let procedures: Vec<String> = ["f", "g", "h", "c", "k"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // f, g and h are not called; c is; k's result has an assumed length.
        let text = "subroutine r_rev(f, g, h, c, k, x)\n  logical(4), external :: f\n  external :: g\n  procedure(iface) :: h\n  real(8), external :: c\n  character(len=*), external :: k\n  real(8) :: x\n  ! r.f:3: x = c(x) ! f(x)\n  x = c(x)\nend subroutine\n";
        let spec_end = text.find("  ! r.f:3").unwrap();
        let (out, end) = uncalled_procedures(text, spec_end, &procedures);
        assert_eq!(
            out,
            "subroutine r_rev(f, g, h, c, k, x)\n  logical(4), external :: f\n  external :: g\n  procedure(iface) :: h\n  ! Dummy procedures this routine does not call, named for gfortran -Wall:\n  procedure(logical(4)), pointer :: dfort_unread_f\n  procedure(), pointer :: dfort_unread_g\n  procedure(iface), pointer :: dfort_unread_h\n  real(8), external :: c\n  character(len=*), external :: k\n  real(8) :: x\n  dfort_unread_f => f\n  dfort_unread_g => g\n  dfort_unread_h => h\n  ! r.f:3: x = c(x) ! f(x)\n  x = c(x)\nend subroutine\n"
        );
        assert!(out[end..].starts_with("  dfort_unread_f => f\n"));
        // Every one called: the text unchanged.
        let called = "subroutine s(f)\n  external :: f\n  call f()\nend subroutine\n";
        let spec_end = called.find("  call").unwrap();
        assert_eq!(
            uncalled_procedures(called, spec_end, &["f".to_string()]).0,
            called
        );
    }
}
