//! Value numbering of one statement's derivative: a real(8)
//! subexpression of the primal right-hand side that the derivative's
//! lines name twice or more is computed once, into a temporary
//! `dfort_v<k>`, before them — as a person writes `temp = x / (1 + p*x)`
//! and uses `temp` in each partial.
//!
//! Contract: `lines` are plain assignments `target = value`, run in
//! order, that write only derivative variables and generator
//! temporaries, so that no primal value changes between them; otherwise
//! nothing is shared. The candidates are printed subexpressions of the
//! primal statement ([`candidates`]: scalar, of type real(8) for certain).
//! An occurrence is replaced only where it is a whole operand: a
//! parenthesised group `( … )` (its parentheses go with it), a whole
//! argument of a call, or, for a candidate that is a call itself,
//! wherever a name may start. The temporary holds exactly what the
//! occurrence evaluated to, so values and rounding are unchanged. A value
//! is shared only when that makes the code shorter.

use crate::fortran::is_name_char;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

/// What a scalar numeric expression certainly is: integer or real, and
/// its kind in bytes (`None`: a default real, 4 or 8 by compiler flag).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Numeric {
    Integer,
    Real(Option<u32>),
}

fn symbol_numeric(unit: &Unit, s: SymbolId) -> Option<Numeric> {
    let ty = &unit.symbols.get(s)?.ty;
    match ty.base {
        BaseType::Integer => Some(Numeric::Integer),
        BaseType::Real if ty.kind.is_some() || ty.kind_text.is_none() => {
            Some(Numeric::Real(ty.kind))
        }
        _ => None,
    }
}

/// The type of `e` when it is a scalar integer or real expression built
/// from references, literals, arithmetic and the elemental intrinsics
/// that keep their argument's type; `None` when not certain.
fn numeric(unit: &Unit, e: &Expr) -> Option<Numeric> {
    const KEEPING: &[&str] = &[
        "exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "tanh",
    ];
    match &e.kind {
        ExprKind::Int(_) => Some(Numeric::Integer),
        ExprKind::Real { kind, .. } => Some(Numeric::Real(Some(*kind))),
        ExprKind::Var(s) if unit.symbols.get(*s)?.rank() == 0 => symbol_numeric(unit, *s),
        ExprKind::ArrayRef { array, subs }
            if subs.iter().all(|s| matches!(s, Subscript::Index(_))) =>
        {
            symbol_numeric(unit, *array)
        }
        ExprKind::Unary {
            op: UnaryOp::Neg | UnaryOp::Plus,
            operand,
        } => numeric(unit, operand),
        ExprKind::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Pow,
            lhs,
            rhs,
        } => {
            let (a, b) = (numeric(unit, lhs)?, numeric(unit, rhs)?);
            Some(match (a, b) {
                (Numeric::Integer, Numeric::Integer) => Numeric::Integer,
                (Numeric::Real(k), Numeric::Integer) | (Numeric::Integer, Numeric::Real(k)) => {
                    Numeric::Real(k)
                }
                // A default real with a real(8) is real(8) (the default is
                // 4 or 8); with anything else it is not known.
                (Numeric::Real(Some(8)), Numeric::Real(k))
                | (Numeric::Real(k), Numeric::Real(Some(8)))
                    if k.is_none_or(|k| k <= 8) =>
                {
                    Numeric::Real(Some(8))
                }
                (Numeric::Real(Some(x)), Numeric::Real(Some(y))) => Numeric::Real(Some(x.max(y))),
                _ => return None,
            })
        }
        ExprKind::Intrinsic { name, args }
            if args.len() == 1
                && args[0].keyword.is_none()
                && KEEPING.contains(&name.to_ascii_lowercase().as_str()) =>
        {
            match numeric(unit, &args[0].value)? {
                Numeric::Real(k) => Some(Numeric::Real(k)),
                Numeric::Integer => None,
            }
        }
        _ => None,
    }
}

/// The printed operations and intrinsic calls of `rhs` that are certainly
/// scalar real(8) values, each once, longest first.
pub fn candidates(unit: &Unit, rhs: &Expr) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    rhs.walk(&mut |x| {
        let operation = matches!(x.kind, ExprKind::Binary { .. } | ExprKind::Intrinsic { .. });
        if operation && numeric(unit, x) == Some(Numeric::Real(Some(8))) {
            let text = print(unit, x);
            if !out.contains(&text) {
                out.push(text);
            }
        }
    });
    out.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    out
}

/// `line` split as `target = value`, when it is a plain assignment (no
/// blank outside parentheses in the target: not `where (…) x = …`).
fn assignment(line: &str) -> Option<(&str, &str)> {
    let at = line.find(" = ")?;
    let target = &line[..at];
    let mut depth = 0i32;
    for c in target.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ' ' if depth == 0 => return None,
            _ => {}
        }
    }
    target
        .starts_with(|c: char| c.is_ascii_alphabetic())
        .then_some((target, &line[at + 3..]))
}

/// The name a target assigns (`xb(i)` → `xb`).
fn base_name(target: &str) -> &str {
    let end = target
        .find(|c: char| !is_name_char(c))
        .unwrap_or(target.len());
    &target[..end]
}

/// Whether `text` names `name` as a whole word.
fn names(text: &str, name: &str) -> bool {
    let mut from = 0;
    while let Some(i) = text[from..].find(name).map(|i| i + from) {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        if !before.is_some_and(|c| is_name_char(c) || c == '%') && !after.is_some_and(is_name_char)
        {
            return true;
        }
        from = i + name.len();
    }
    false
}

/// The occurrences of `cand` in `value` that are whole operands, as
/// byte ranges to replace (a group's parentheses included).
fn occurrences(value: &str, cand: &str, call: bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = value[from..].find(cand).map(|i| i + from) {
        let end = i + cand.len();
        let before = value[..i].trim_end();
        let after = value[end..].trim_start();
        let opened = before.ends_with('(') || before.ends_with(',');
        let closed = after.starts_with(')') || after.starts_with(',');
        let prev = before.chars().next_back();
        let whole = value[..i].is_empty() && after.is_empty();
        if before.ends_with('(')
            && after.starts_with(')')
            && !before[..before.len() - 1]
                .trim_end()
                .chars()
                .next_back()
                .is_some_and(|c| is_name_char(c) || c == ')')
            && value[..i].len() == before.len()
            && value[end..].len() == after.len()
        {
            // A parenthesised group: `(cand)` becomes the temporary.
            out.push((i - 1, end + 1));
        } else if whole
            || (opened && closed)
            || (call && !prev.is_some_and(|c| is_name_char(c) || c == '%' || c == '.'))
        {
            out.push((i, end));
        }
        from = end;
    }
    out
}

/// The derivative `lines` of the assignment whose right-hand side is
/// `rhs`, with the values of `rhs` they name twice computed once into
/// `dfort_v1`, `dfort_v2`, …; and how many of those it used.
pub fn shared_in(unit: &Unit, rhs: &Expr, lines: Vec<String>) -> (Vec<String>, usize) {
    share(lines, &candidates(unit, rhs), |k| format!("dfort_v{k}"))
}

/// Shares the candidates that `lines` name twice or more: returns the
/// lines with each shared value computed first into the temporary
/// `temp(k)` names (k from 1), and how many temporaries it used.
pub fn share(
    lines: Vec<String>,
    candidates: &[String],
    temp: impl Fn(usize) -> String,
) -> (Vec<String>, usize) {
    let split: Option<Vec<(&str, &str)>> = lines.iter().map(|l| assignment(l)).collect();
    let Some(split) = split else {
        return (lines, 0);
    };
    let assigned: Vec<&str> = split.iter().map(|(t, _)| base_name(t)).collect();
    let mut values: Vec<(String, String)> = split
        .iter()
        .map(|(t, v)| (t.to_string(), v.to_string()))
        .collect();
    // Definitions of the temporaries, in the order they were chosen
    // (longest value first).
    let mut defs: Vec<(String, String)> = Vec::new();
    for cand in candidates {
        if assigned.iter().any(|a| names(cand, a)) {
            continue;
        }
        let call = matches!(
            crate::precedence::form(cand),
            crate::precedence::Form::Primary
        );
        // What the occurrences weigh (characters without blanks, as
        // `cargo xtask code-size` counts), and how many there are.
        let nonblank = |t: &str| t.chars().filter(|c| !c.is_whitespace()).count();
        let (mut count, mut weight) = (0, 0);
        for (_, v) in values.iter().chain(defs.iter()) {
            for (a, b) in occurrences(v, cand, call) {
                count += 1;
                weight += nonblank(&v[a..b]);
            }
        }
        // Shared only where the code gets shorter: the definition and the
        // temporary's name in each place weigh less than the occurrences.
        let name_len = temp(defs.len() + 1).len();
        if count < 2 || weight <= name_len * (count + 1) + 1 + nonblank(cand) {
            continue;
        }
        // A placeholder until the definitions' order is known.
        let name = format!("\u{1}{}\u{1}", defs.len());
        for (_, v) in values.iter_mut().chain(defs.iter_mut()) {
            for (a, b) in occurrences(v, cand, call).into_iter().rev() {
                v.replace_range(a..b, &name);
            }
        }
        defs.push((name, cand.clone()));
    }
    // The shortest value is defined first (the longer ones may name it),
    // and the temporaries are numbered in the order they are defined.
    let used = defs.len();
    let named = |text: &str| {
        let mut text = text.to_string();
        for k in 0..used {
            text = text.replace(&format!("\u{1}{k}\u{1}"), &temp(used - k));
        }
        text
    };
    let out = defs
        .into_iter()
        .rev()
        .chain(values)
        .map(|(t, v)| format!("{} = {}", named(&t), named(&v)))
        .collect();
    (out, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str], cands: &[&str]) -> Vec<String> {
        let cands: Vec<String> = cands.iter().map(|s| s.to_string()).collect();
        share(lines.iter().map(|s| s.to_string()).collect(), &cands, |k| {
            format!("t{k}")
        })
        .0
    }

    #[test]
    fn a_value_named_twice_is_computed_once() {
        let out = run(
            &[
                "pb = pb + fb * exp(x / (1.0 + p * x)) / 12.0",
                "tb1 = fb * q * exp(x / (1.0 + p * x))",
                "xb = xb + tb1 / (1.0 + p * x)",
                "tb2 = -tb1 * (x / (1.0 + p * x) / (1.0 + p * x))",
            ],
            &["exp(x / (1.0 + p * x))", "x / (1.0 + p * x)", "1.0 + p * x"],
        );
        assert_eq!(
            out,
            [
                "t1 = 1.0 + p * x",
                "t2 = exp(x / t1)",
                "pb = pb + fb * t2 / 12.0",
                "tb1 = fb * q * t2",
                "xb = xb + tb1 / t1",
                "tb2 = -tb1 * (x / t1 / t1)",
            ]
        );
    }

    #[test]
    fn only_whole_operands_are_replaced() {
        // `alpha + beta` in `c * alpha + beta` is not an operand; in
        // `f(alpha + beta)` and `(alpha + beta)` it is.
        let out = run(
            &[
                "yb = c * alpha + beta",
                "zb = f(alpha + beta) * (alpha + beta)",
            ],
            &["alpha + beta"],
        );
        assert_eq!(
            out,
            [
                "t1 = alpha + beta",
                "yb = c * alpha + beta",
                "zb = f(t1) * t1"
            ]
        );
        // A group that is a call's argument list keeps its parentheses.
        let out = run(
            &["yb = g(alpha + beta)", "zb = h(alpha + beta)"],
            &["alpha + beta"],
        );
        assert_eq!(out, ["t1 = alpha + beta", "yb = g(t1)", "zb = h(t1)"]);
    }

    #[test]
    fn nothing_is_shared_across_a_line_that_is_not_a_plain_assignment() {
        let lines = [
            "where (m) xb = xb + (alpha + beta)",
            "yb = yb + (alpha + beta)",
        ];
        assert_eq!(run(&lines, &["alpha + beta"]), lines);
        // Nor a value that names what the lines assign.
        let lines = ["tb = xb * (alpha + tb)", "yb = yb + (alpha + tb)"];
        assert_eq!(run(&lines, &["alpha + tb"]), lines);
    }

    #[test]
    fn a_value_too_short_to_gain_from_sharing_is_left_in_place() {
        let lines = ["xb = xb + (a + b)", "yb = yb + (a + b)"];
        assert_eq!(run(&lines, &["a + b"]), lines);
    }

    #[test]
    fn a_call_is_replaced_where_a_name_may_start() {
        let out = run(
            &[
                "xb = xb + fb * sin(alpha)",
                "yb = yb - sin(alpha)**2",
                "zb = asin(alpha)",
            ],
            &["sin(alpha)"],
        );
        assert_eq!(
            out,
            [
                "t1 = sin(alpha)",
                "xb = xb + fb * t1",
                "yb = yb - t1**2",
                "zb = asin(alpha)"
            ]
        );
    }
}
