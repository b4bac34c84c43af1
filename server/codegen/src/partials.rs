//! Local partial derivatives of operators and scalar intrinsics: for an
//! expression `φ(a, b, …)`, the list of its children with `∂φ/∂child`
//! written in Fortran over the children's values. The tangent combines
//! them as `Σ ∂φ/∂cᵢ · ċᵢ`, the adjoint as `c̄ᵢ += ∂φ/∂cᵢ · φ̄`. The
//! intrinsics' partial derivatives are those of the intrinsic table
//! ([`dfort_ir::intrinsics`]), filled in with the arguments.

use dfort_ir::dump::expr as print;
use dfort_ir::intrinsics::Rule;
use dfort_ir::*;

fn p(s: String) -> String {
    format!("({s})")
}

/// `x` printed as an operand: parenthesised unless a primary.
fn operand(unit: &Unit, x: &Expr) -> String {
    crate::precedence::operand(&print(unit, x))
}

/// A partial derivative of the intrinsic table with the arguments put
/// for `{0}`, `{1}`, …: printed as they are where the placeholder is a
/// whole argument of a call (`exp({0})`), as operands elsewhere
/// (`{0}**2`, parenthesised unless primary).
fn fill(template: &str, values: &[String]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let Ok(k) = rest[open + 1..close].parse::<usize>() else {
            out.push_str(&rest[..=open]);
            rest = &rest[open + 1..];
            continue;
        };
        let before = rest[..open].trim_end();
        let after = rest[close + 1..].trim_start();
        let whole_argument = (before.ends_with('(') || before.ends_with(','))
            && (after.starts_with(')') || after.starts_with(','));
        out.push_str(&rest[..open]);
        match values.get(k) {
            Some(v) if whole_argument => out.push_str(v),
            Some(v) => out.push_str(&crate::precedence::operand(v)),
            None => out.push_str(&rest[open..=close]),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// `None` when there is no rule (the caller refuses the expression).
pub fn partials<'e>(unit: &Unit, e: &'e Expr) -> Option<Vec<(&'e Expr, String)>> {
    let v = |x: &Expr| operand(unit, x);
    Some(match &e.kind {
        ExprKind::Unary { op, operand } => match op {
            UnaryOp::Neg => vec![(&**operand, "-1.0d0".into())],
            UnaryOp::Plus => vec![(&**operand, "1.0d0".into())],
            UnaryOp::Not => vec![],
        },
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (v(lhs), v(rhs));
            match op {
                BinaryOp::Add => vec![(&**lhs, "1.0d0".into()), (&**rhs, "1.0d0".into())],
                BinaryOp::Sub => vec![(&**lhs, "1.0d0".into()), (&**rhs, "-1.0d0".into())],
                BinaryOp::Mul => vec![(&**lhs, b), (&**rhs, a)],
                // ∂(a/b)/∂b = -a/b², computed as -(a/b)/b: b² overflows
                // where a/b does not (seed 1140, case 759).
                BinaryOp::Div => vec![
                    (&**lhs, format!("1.0d0 / {b}")),
                    (&**rhs, format!("-({a} / {b} / {b})")),
                ],
                BinaryOp::Pow => match rhs.kind {
                    // An integer constant exponent: k a^(k-1), folded.
                    ExprKind::Int(k) => {
                        let d = match k {
                            0 => "0.0d0".to_string(),
                            1 => "1.0d0".to_string(),
                            2 => format!("2 * {a}"),
                            3.. => format!("{k} * {a}**{}", k - 1),
                            _ => format!("{k} * {a}**{}", p((k - 1).to_string())),
                        };
                        vec![(&**lhs, d)]
                    }
                    _ => vec![
                        (&**lhs, format!("{b} * {a}**({b} - 1)")),
                        (&**rhs, format!("{a}**{b} * log({a})")),
                    ],
                },
                _ => vec![],
            }
        }
        ExprKind::Intrinsic { name, args } => {
            let vals: Vec<String> = args.iter().map(|x| print(unit, &x.value)).collect();
            match dfort_ir::intrinsics::lookup(name)?.rule {
                Rule::Extremum { max } if args.len() >= 2 => {
                    // The first argument that reaches the extremum gets it.
                    let (before, after) = if max { (">", ">=") } else { ("<", "<=") };
                    args.iter()
                        .enumerate()
                        .map(|(i, x)| {
                            let conds: Vec<String> = vals
                                .iter()
                                .enumerate()
                                .filter(|(j, _)| *j != i)
                                .map(|(j, o)| {
                                    let cmp = if j < i { before } else { after };
                                    let operand = crate::precedence::operand;
                                    format!("{} {cmp} {}", operand(&vals[i]), operand(o))
                                })
                                .collect();
                            (
                                &x.value,
                                format!("merge(1.0d0, 0.0d0, {})", conds.join(" .and. ")),
                            )
                        })
                        .collect()
                }
                rule => rule
                    .partials(args.len())?
                    .iter()
                    .zip(args)
                    .filter(|(d, _)| !d.is_empty())
                    .map(|(d, x)| (&x.value, fill(d, &vals)))
                    .collect(),
            }
        }
        _ => return None,
    })
}

/// The denominator of the derivative of `norm2(x)` (`x` printed,
/// parenthesised; `dim`: empty or `, dim=k`): `norm2(x)`, or 1 where it
/// is 0 — there `x` (or its line along `k`) is 0, so the derivative's
/// numerator is 0 and the derivative is the subgradient 0. One kind for
/// both values of `merge`, element by element along a dimension.
pub fn norm2_nonzero(x: &str, dim: &str) -> String {
    let n = format!("norm2({x}{dim})");
    format!("merge({n}, {n} + 1, {n} > 0)")
}

/// The dimension of `norm2(x, dim)` (`dim` positional or by keyword),
/// `None` for other argument lists.
pub fn norm2_dim(args: &[Arg]) -> Option<&Expr> {
    match args {
        [x, d]
            if x.keyword.as_deref().is_none_or(|k| k == "x")
                && d.keyword.as_deref().is_none_or(|k| k == "dim") =>
        {
            Some(&d.value)
        }
        _ => None,
    }
}

/// For `product(x)` of a whole rank-1 array variable `x`: the
/// derivative with respect to element `j` (the index variable's name),
/// the product of the other elements — `product(x(:j - 1)) *
/// product(x(j + 1:))`, which divides by nothing (zeros are fine) — and
/// `j`'s range, `lbound(x, 1), ubound(x, 1)`. `None` for other
/// arguments (refused).
pub fn product_of_others(
    program: &Program,
    unit: &Unit,
    x: &[Arg],
    j: &str,
) -> Option<(String, String)> {
    let r = dfort_ir::intrinsics::reduction(program, unit, "product", x)?;
    let n = &unit.symbol(r.array).name;
    Some((
        format!("product({n}(:{j} - 1)) * product({n}({j} + 1:))"),
        format!("lbound({n}, 1), ubound({n}, 1)"),
    ))
}

/// What `maxval(x[, dim][, mask])` / `minval` of a whole array variable
/// `x` selects: its derivative is the selected elements' (the first at
/// ties, a subgradient).
pub enum Selection {
    /// One element of a rank-1 `x` (under a mask: `some` is `any(mask)`,
    /// false when no element is selected and the derivative is 0).
    Element { at: String, some: Option<String> },
    /// One element per column (`dim=1`) or row (`dim=2`) of a rank-2 `x`:
    /// the subscripts `subs` of the one selected in line `dfort_j`, which
    /// runs over `range`; `lower` is its first value.
    Along {
        subs: String,
        range: String,
        lower: String,
    },
    /// One element per line along dimension `dim` of a rank-2 `x`, under
    /// a mask: `chosen` is the logical matrix true at each line's selected
    /// element (none in a line the mask leaves empty).
    Masked { chosen: String, dim: i64 },
}

/// The selection of `name` (`maxval`, `minval`) with arguments `args`;
/// `None` for other forms (refused): an expression, a section, `dim=`
/// on other than a rank-2 array.
pub fn selection(program: &Program, unit: &Unit, name: &str, args: &[Arg]) -> Option<Selection> {
    let loc = match name {
        "maxval" => "maxloc",
        "minval" => "minloc",
        _ => return None,
    };
    let r = dfort_ir::intrinsics::reduction(program, unit, name, args)?;
    let n = unit.symbol(r.array).name.as_str();
    let (dim, mask) = (r.dim, r.mask);
    match (r.rank, dim, mask) {
        (1, None | Some(1), None) => Some(Selection::Element {
            at: format!("{loc}({n}, 1) + lbound({n}, 1) - 1"),
            some: None,
        }),
        (1, None | Some(1), Some(m)) => {
            let m = print(unit, m);
            Some(Selection::Element {
                at: format!("max({loc}({n}, 1, mask={m}), 1) + lbound({n}, 1) - 1"),
                some: Some(format!("any({m})")),
            })
        }
        (2, Some(1), None) => Some(Selection::Along {
            subs: format!("{loc}({n}(:, dfort_j), 1) + lbound({n}, 1) - 1, dfort_j"),
            range: format!("lbound({n}, 2), ubound({n}, 2)"),
            lower: format!("lbound({n}, 2)"),
        }),
        (2, Some(2), None) => Some(Selection::Along {
            subs: format!("dfort_j, {loc}({n}(dfort_j, :), 1) + lbound({n}, 2) - 1"),
            range: format!("lbound({n}, 1), ubound({n}, 1)"),
            lower: format!("lbound({n}, 1)"),
        }),
        // Each line's position (from 1; 0 in an empty line) spread along
        // the line, against the positions.
        (2, Some(k @ (1 | 2)), Some(m)) => {
            let m = print(unit, m);
            let other = 3 - k;
            Some(Selection::Masked {
                chosen: format!(
                    "spread({loc}({n}, dim={k}, mask={m}), {k}, size({n}, {k})) == spread([(dfort_j, dfort_j = 1, size({n}, {k}))], {other}, size({n}, {other}))"
                ),
                dim: k,
            })
        }
        _ => None,
    }
}

pub use dfort_ir::intrinsics::reduction_refusal as whole_rank1_only;

pub(crate) use dfort_ir::hoist::USER_FUNCTION_IN_WHERE;

pub(crate) use dfort_ir::queries::rank_of;
