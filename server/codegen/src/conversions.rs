//! Narrowing conversions written out. In a derivative of single- or
//! mixed-precision code an assignment's value can be wider than its
//! variable: the partials' constants (`1.0d0`, `merge(1.0d0, -1.0d0, …)`)
//! and the adjoint's temporaries (`dfort_tb`) are double precision. The
//! assignment converts the value to the variable's kind, and
//! `gfortran -Wall` warns that it may change it (-Wconversion). Each such
//! assignment gets that conversion written out — `v = real(e, kind(v))`,
//! `v = cmplx(e, kind=kind(v))` for a complex `v` — which is how the
//! standard defines intrinsic assignment to a real or complex variable
//! (Fortran 2018, 10.2.1.3, Table 10.8): nothing computes differently.
//!
//! What is narrow or wide is read from the routine's own declarations
//! (the generator writes resolved kinds as literals: `real(4)`,
//! `real(8)`); a name it does not declare (host or module variable, a
//! kind it could not resolve) is neither, and its assignments stay as
//! written.

use std::collections::HashMap;

/// The kind class of a real or complex declaration's type part.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Width {
    /// Single precision (`real`, `real(4)`, `complex*8`, …).
    Narrow { complex: bool },
    /// Double precision or wider (`real(8)`, `double precision`, …).
    Wide,
}

/// `text` with the conversions of its statements after `spec_end` (the
/// end of the specification part) written out where an assignment's
/// variable is narrow and its value is wide.
pub fn written_out(text: &str, spec_end: usize) -> String {
    let spec_end = spec_end.min(text.len());
    let (spec, code) = text.split_at(spec_end);
    let widths = declared_widths(spec);
    if !widths.values().any(|w| matches!(w, Width::Narrow { .. })) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 256);
    out.push_str(spec);
    let lines: Vec<&str> = code.split_inclusive('\n').collect();
    let mut k = 0;
    while k < lines.len() {
        // One statement: a line and its continuations.
        let mut end = k;
        while end + 1 < lines.len()
            && !crate::fortran::is_comment_line(lines[end])
            && lines[end].trim_end().ends_with('&')
        {
            end += 1;
        }
        let first = lines[k];
        let joined = if crate::fortran::is_comment_line(first) {
            None
        } else {
            Some(
                lines[k..=end]
                    .iter()
                    .enumerate()
                    .map(|(j, l)| {
                        let l = l.trim();
                        let l = l.strip_suffix('&').unwrap_or(l).trim_end();
                        if j > 0 {
                            l.strip_prefix('&').unwrap_or(l).trim_start()
                        } else {
                            l
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        };
        match joined.and_then(|s| converted(&s, &widths)) {
            Some(statement) => {
                let pad = first.len() - first.trim_start().len();
                let mut w = crate::fortran::Writer::default();
                for _ in 0..pad / 2 {
                    w.indent();
                }
                w.line(&statement);
                out.push_str(&w.finish());
            }
            None => lines[k..=end].iter().for_each(|l| out.push_str(l)),
        }
        k = end + 1;
    }
    out
}

/// The widths of the real and complex variables the specification part
/// declares (lower-case names).
fn declared_widths(spec: &str) -> HashMap<String, Width> {
    let mut widths = HashMap::new();
    for line in spec.lines() {
        let Some((ty, names)) = crate::tidy::declared(line) else {
            continue;
        };
        let Some(width) = width(&ty.to_ascii_lowercase()) else {
            continue;
        };
        for n in names {
            let name = n.split(['(', '=']).next().unwrap_or(n).trim();
            widths.insert(name.to_ascii_lowercase(), width);
        }
    }
    widths
}

/// The width a declaration's type part (lower case) gives, when it
/// declares a real or complex of a literal or default kind.
fn width(ty: &str) -> Option<Width> {
    let head = ty.split(',').next().unwrap_or(ty).replace(' ', "");
    if head == "doubleprecision" || head == "doublecomplex" {
        return Some(Width::Wide);
    }
    let (complex, rest) = if let Some(r) = head.strip_prefix("real") {
        (false, r)
    } else if let Some(r) = head.strip_prefix("complex") {
        (true, r)
    } else {
        return None;
    };
    let bytes: u32 = if rest.is_empty() {
        return Some(Width::Narrow { complex });
    } else if let Some(star) = rest.strip_prefix('*') {
        // `complex*16` is two reals of kind 8.
        let n: u32 = star.parse().ok()?;
        if complex {
            n / 2
        } else {
            n
        }
    } else {
        let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
        inner.strip_prefix("kind=").unwrap_or(inner).parse().ok()?
    };
    Some(if bytes >= 8 {
        Width::Wide
    } else {
        Width::Narrow { complex }
    })
}

/// The statement `s` (one line, continuations joined) with its
/// assignment's conversion written out, when it assigns a wide value to
/// a narrow variable; `None` otherwise.
fn converted(s: &str, widths: &HashMap<String, Width>) -> Option<String> {
    // A label, then a logical IF's condition.
    let mut at = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    at += s[at..].len() - s[at..].trim_start().len();
    let lower = s.to_ascii_lowercase();
    if lower[at..].starts_with("if") && lower[at + 2..].trim_start().starts_with('(') {
        let open = at + lower[at..].find('(')?;
        at = crate::fortran::matching_paren(&lower, open)? + 1;
        at += s[at..].len() - s[at..].trim_start().len();
    }
    let eq = at + assignment_sign(&lower[at..])?;
    let lhs = s[at..eq].trim();
    let name = lhs.split('(').next().unwrap_or(lhs).trim();
    let designator = !name.is_empty()
        && name.chars().all(crate::fortran::is_name_char)
        && (name.len() == lhs.len() || lhs.ends_with(')'));
    let complex = match widths.get(&name.to_ascii_lowercase()) {
        Some(Width::Narrow { complex }) if designator => *complex,
        _ => return None,
    };
    let rhs = s[eq + 1..].trim();
    if !wide(
        &crate::tidy::without_literals(&rhs.to_ascii_lowercase()),
        widths,
    ) {
        return None;
    }
    let value = if complex {
        format!("cmplx({rhs}, kind=kind({name}))")
    } else {
        format!("real({rhs}, kind({name}))")
    };
    Some(format!("{} = {value}", s[..eq].trim_end()))
}

/// Where a statement's assignment `=` stands (outside parentheses and
/// character constants, not part of `==`, `=>`, `<=`, `>=`, `/=`).
fn assignment_sign(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    for (i, c) in crate::fortran::outside_literals(s) {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '=' if depth == 0 => {
                let before = i.checked_sub(1).map(|j| b[j]);
                let after = b.get(i + 1).copied();
                let compound = matches!(before, Some(b'=' | b'<' | b'>' | b'/'))
                    || matches!(after, Some(b'=' | b'>'));
                return (!compound).then_some(i);
            }
            _ => {}
        }
    }
    None
}

/// The double-precision specific intrinsics of FORTRAN 77 (their results
/// are wide whatever their arguments).
const DOUBLE_SPECIFICS: [&str; 16] = [
    "dble", "dcmplx", "dfloat", "dsqrt", "dexp", "dlog", "dlog10", "dsin", "dcos", "dtan", "dabs",
    "datan", "datan2", "dsign", "dmax1", "dmin1",
];

/// Whether an expression (lower case, without character constants) has
/// a wide value: it names a wide variable or a double-precision specific
/// intrinsic, or it is not a constant and has a double-precision literal
/// (`2.0d0`, `1.5_8`) or a kind-8 conversion (`real(z, 8)`). A constant
/// converts without a warning.
fn wide(e: &str, widths: &HashMap<String, Width>) -> bool {
    let mut names = Vec::new();
    let mut wide_literal = false;
    let b = e.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        let after_name = i > 0 && crate::fortran::is_name_char(b[i - 1] as char);
        if c.is_ascii_alphabetic() && !after_name && !(i > 0 && b[i - 1] == b'.') {
            let end = e[i..]
                .find(|c: char| !crate::fortran::is_name_char(c))
                .map_or(e.len(), |j| i + j);
            let component = e[..i].trim_end().ends_with('%');
            if !component {
                names.push(&e[i..end]);
            }
            i = end;
        } else if (c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
            && !after_name
        {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                j += 1;
            }
            let exponent_d = b.get(j) == Some(&b'd')
                && (b.get(j + 1).is_some_and(u8::is_ascii_digit)
                    || (matches!(b.get(j + 1), Some(b'+' | b'-'))
                        && b.get(j + 2).is_some_and(u8::is_ascii_digit)));
            let suffix_8 = e[j..].starts_with("_8") || e[j..].starts_with("_16");
            wide_literal |= exponent_d || suffix_8;
            while j < b.len() && crate::fortran::is_name_char(b[j] as char) {
                j += 1;
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    let compact: String = e.chars().filter(|c| !c.is_whitespace()).collect();
    let kind_8 = [",8)", "kind=8)", ",16)", "kind=16)"]
        .iter()
        .any(|k| compact.contains(k));
    names
        .iter()
        .any(|n| widths.get(*n) == Some(&Width::Wide) || DOUBLE_SPECIFICS.contains(n))
        || (!names.is_empty() && (wide_literal || kind_8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routine(spec: &str, code: &str) -> (String, usize) {
        let text = format!("subroutine f_b(x, xb)\n{spec}{code}end subroutine\n");
        let end = "subroutine f_b(x, xb)\n".len() + spec.len();
        (text, end)
    }

    #[test]
    fn widths_of_declarations() {
        assert_eq!(width("real"), Some(Width::Narrow { complex: false }));
        assert_eq!(
            width("real(4), intent(in)"),
            Some(Width::Narrow { complex: false })
        );
        assert_eq!(
            width("real(kind=4)"),
            Some(Width::Narrow { complex: false })
        );
        assert_eq!(width("real*4"), Some(Width::Narrow { complex: false }));
        assert_eq!(width("complex*8"), Some(Width::Narrow { complex: true }));
        assert_eq!(width("complex"), Some(Width::Narrow { complex: true }));
        assert_eq!(width("real(8)"), Some(Width::Wide));
        assert_eq!(width("real*8"), Some(Width::Wide));
        assert_eq!(width("complex*16"), Some(Width::Wide));
        assert_eq!(width("double precision, dimension(3)"), Some(Width::Wide));
        assert_eq!(width("real(wp)"), None);
        assert_eq!(width("integer"), None);
    }

    #[test]
    fn a_wide_value_assigned_to_a_narrow_variable_is_converted_explicitly() {
        let spec = "  real(4) :: x, s\n  real(4) :: xb(3)\n  complex(4) :: z\n  real(8) :: dfort_tb\n  real(wp) :: h\n";
        let code = "  xb(1) = xb(1) + dfort_tb * x\n  s = s + 2.0d0 * x\n  s = 0.0d0\n  s = 2.0 * x\n  if (x > 0) xb(2) = merge(1.0d0, -1.0d0, x >= 0) * s\n  z = z + dfort_tb\n  h = h + dfort_tb\n  ! s = dfort_tb\n  s = s + dble(x)\n  s = x /= 0\n";
        let (text, end) = routine(spec, code);
        let out = written_out(&text, end);
        let expected = "  xb(1) = real(xb(1) + dfort_tb * x, kind(xb))\n  s = real(s + 2.0d0 * x, kind(s))\n  s = 0.0d0\n  s = 2.0 * x\n  if (x > 0) xb(2) = real(merge(1.0d0, -1.0d0, x >= 0) * s, kind(xb))\n  z = cmplx(z + dfort_tb, kind=kind(z))\n  h = h + dfort_tb\n  ! s = dfort_tb\n  s = real(s + dble(x), kind(s))\n  s = x /= 0\n";
        assert_eq!(out, routine(spec, expected).0);
    }

    #[test]
    fn a_continued_statement_is_joined_and_written_again() {
        let spec = "  real :: s\n  real(8) :: dfort_tb\n";
        let code = "  s = s + dfort_tb * &\n      & 3\n";
        let (text, end) = routine(spec, code);
        let out = written_out(&text, end);
        assert!(
            out.contains("  s = real(s + dfort_tb * 3, kind(s))\n"),
            "{out}"
        );
    }

    #[test]
    fn double_precision_routines_are_unchanged() {
        let spec = "  real(8) :: s\n  real(8) :: dfort_tb\n";
        let code = "  s = s + dfort_tb * 2.0d0\n";
        let (text, end) = routine(spec, code);
        assert_eq!(written_out(&text, end), text);
    }
}
