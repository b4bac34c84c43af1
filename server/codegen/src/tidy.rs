//! What a routine's text keeps of what nothing in it refers to
//! (gfortran -Wall would say it is unused):
//!
//! - the generator's own declarations: a temporary or counter
//!   (`dfort_tb`, `dfort_branch`, `dfort_k1`, …) nothing in the routine
//!   names is not declared;
//! - the original's variables the derivative routine never names (a
//!   local whose only statements the forward sweep dropped), when the
//!   routine holds every use there can be — it has no internal
//!   procedure, which could name a host's variable. Only plain type
//!   declarations are touched (no PARAMETER, INTENT, EXTERNAL,
//!   initialiser): a name that occurs nowhere else in the routine's code
//!   has no type to lose. Comments (the origin heading each block, which
//!   quotes the primal statement) are not uses;
//! - statement labels no jump, DO, I/O specifier or format reference
//!   names (a DO's terminal `1 continue` once the loop ends with END DO);
//!   a `continue` left without its label goes. A reference this misses
//!   makes the routine fail to compile, never compute something else.

/// `text` without the unused declarations in its first `spec_end` bytes
/// (the specification part) — the generator's own, and with `originals`
/// the original's variables too — and where that part now ends.
pub fn unused_declarations(text: &str, spec_end: usize, originals: bool) -> (String, usize) {
    let spec_end = spec_end.min(text.len());
    let (spec, rest) = text.split_at(spec_end);
    let code: String = text
        .split_inclusive('\n')
        .filter(|l| !crate::fortran::is_comment_line(l))
        .collect();
    let mut out = String::with_capacity(text.len());
    for line in spec.split_inclusive('\n') {
        match declared(line) {
            Some((ty, names)) => {
                let droppable =
                    |n: &str| base_name(n).starts_with("dfort_") || (originals && plain_type(ty));
                let used: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|n| !droppable(n) || named_elsewhere(&code, line, base_name(n)))
                    .collect();
                if used.len() == names.len() {
                    out.push_str(line);
                } else if !used.is_empty() {
                    let indent = &line[..line.len() - line.trim_start().len()];
                    out.push_str(&format!("{indent}{ty} :: {}\n", used.join(", ")));
                }
            }
            None => out.push_str(line),
        }
    }
    let end = out.len();
    out.push_str(rest);
    (out, end)
}

/// A declaration `type :: a, b(:)` without initialisers: its type and
/// entities.
fn declared(line: &str) -> Option<(&str, Vec<&str>)> {
    let (ty, names) = line.trim().split_once(" :: ")?;
    if ty.contains("parameter") || names.contains('=') {
        return None;
    }
    let mut entities = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in names.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                entities.push(names[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    entities.push(names[start..].trim());
    Some((ty, entities))
}

/// Whether a declaration's type part declares variables and nothing
/// else: a type, then only attributes a variable nothing names can lose.
fn plain_type(ty: &str) -> bool {
    let ty = ty.to_ascii_lowercase();
    let typed = [
        "integer",
        "real",
        "double precision",
        "complex",
        "double complex",
        "logical",
        "character",
        "type(",
    ]
    .iter()
    .any(|t| ty.starts_with(t));
    let attributes = ty.split(',').skip(1).map(str::trim);
    let plain = [
        "dimension",
        "allocatable",
        "pointer",
        "target",
        "save",
        "contiguous",
    ];
    typed
        && attributes
            .clone()
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

fn base_name(entity: &str) -> &str {
    entity.split('(').next().unwrap_or(entity).trim()
}

/// Whether `name` occurs as a whole word in `text` outside `line` (a
/// line of `text`).
fn named_elsewhere(text: &str, line: &str, name: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let own = text.find(line).map(|i| i..i + line.len());
    let found = crate::fortran::whole_name_at(&lower, name)
        .any(|i| own.as_ref().is_none_or(|r| !r.contains(&i)));
    found
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
fn without_literals(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => {}
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '!' => break,
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unused_generator_declarations_go_and_the_rest_stay() {
        let text = "subroutine f_b(x)\n  real(8) :: x\n  real(8) :: y\n  integer :: dfort_branch\n  integer :: dfort_k1, dfort_count1\n  real(8) :: dfort_tb\n  real(8) :: dfort_tb1\n  x = dfort_tb1 + 0 * dfort_k1\nend subroutine\n";
        let spec_end = text.find("  x = ").unwrap();
        let (out, end) = unused_declarations(text, spec_end, false);
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
        let (out, end) = unused_declarations(text, spec_end, true);
        assert_eq!(
            out,
            "subroutine f_b(x, xb, k)\n  real(8) :: x\n  real(8) :: xb\n  integer, intent(in) :: k\n  real(8) :: z(k)\n  integer, parameter :: m = 2\n  real(8) :: t = 1.0d0\n  ! f.f90:3: y = x * p%a\n  xb = xb + 2.0d0 * x * z(1)\nend subroutine\n"
        );
        assert!(out[end..].starts_with("  ! f.f90"));
        // A routine with internal procedures keeps them all.
        let (kept, _) = unused_declarations(text, spec_end, false);
        assert_eq!(kept, text);
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
        let (out, _) = unused_declarations(text, text.find("  dfort_tb1").unwrap(), false);
        assert_eq!(out, "  dfort_tb1 = 1\n");
    }
}
