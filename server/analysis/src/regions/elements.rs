//! The elements of a global array (a host procedure's variable that its
//! internal procedures see, a module array) that one call touches, when
//! they are a few elements named by subscripts fixed for the call: an
//! internal procedure `smooth_pair(j, …)` that reads `w(j)` and `w(j+1)`
//! and writes `w(j+1)` of its host's `w(n)` touches `w(i)` and `w(i+1)`
//! at `call smooth_pair(i, …)`. The call's checkpoint (paper 000 §5,
//! [`crate::checkpoint`]) saves those elements instead of the whole
//! array, which [`super::of_global`] cannot bound when the array's bounds
//! are not constants (issue 44: a snapshot of the whole host array in a
//! loop made the adjoint 100 times slower than the original).
//!
//! Contract: [`touched_elements`] answers only when every reference of
//! the callee to the array is an element in an assignment at the top of
//! its body, before any other statement than an assignment or CONTINUE
//! (so each is evaluated at every call, and stays inside the array in a
//! conforming program), in a statement without `.and.`, `.or.`, `merge`
//! or a function reference (which may leave it unevaluated); when each
//! subscript is integer arithmetic (`+ - * /`, `max`, `min`, `mod`,
//! `abs`) of literals, named constants, integer scalar formals the
//! callee does not write (replaced by their actuals) and integer scalar
//! globals it does not write that the caller also sees; and when no
//! procedure the callee references reaches the array. The elements are
//! in the caller's terms, at most [`MAX_ELEMENTS`] of them, without
//! repeated texts. Anything else: `None`, and the caller saves the array
//! as before. Analysis only: no I/O, no panics on user input.

use crate::dep::{global_key, GlobalKey};
use crate::effects::ProgramEffects;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

/// More elements than this: the region or the whole array is saved.
pub const MAX_ELEMENTS: usize = 8;

/// The elements of the caller's array `s` (the global `key`, the callee's
/// symbol `theirs`) that the call of `c` with actuals `order` (in formal
/// order) touches, as element references of `caller`; see the contract.
pub fn touched_elements(
    program: &Program,
    effects: &ProgramEffects,
    caller: &Unit,
    (c, order): (UnitId, &[Option<&Arg>]),
    (s, key, theirs): (SymbolId, &GlobalKey, SymbolId),
) -> Option<Vec<Expr>> {
    let cu = program.unit(c);
    let fx = effects.get(c)?;
    let rank = caller.symbol(s).rank();
    if rank == 0 || rank != cu.symbol(theirs).rank() || caller.symbol(s).attrs.pointer {
        return None;
    }
    // No procedure the callee references reaches the array.
    for st in cu.stmts.iter() {
        for t in dfort_ir::queries::called_units(&st.kind) {
            let reaches = effects
                .get(t)
                .is_none_or(|e| e.read_globals.contains(key) || e.written_globals.contains(key));
            if reaches {
                return None;
            }
        }
    }
    // The top-level assignments before any other statement.
    let mut prefix = Vec::new();
    for &id in &cu.body {
        match &cu.stmt(id).kind {
            StmtKind::Assign { .. } => prefix.push(id),
            StmtKind::Continue => {}
            _ => break,
        }
    }
    let translate = Translate {
        program,
        caller,
        callee: cu,
        order,
        fx,
    };
    let mut out: Vec<Expr> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    for st in cu.stmts.iter() {
        let mut refs: Vec<&Expr> = Vec::new();
        let mut whole = false;
        for e in st.kind.exprs() {
            e.walk(&mut |x| match &x.kind {
                ExprKind::ArrayRef { array, .. } if *array == theirs => refs.push(x),
                ExprKind::Var(v) if *v == theirs => whole = true,
                _ => {}
            });
        }
        if refs.is_empty() && !whole {
            continue;
        }
        if whole || !prefix.contains(&st.id) || may_skip(st) {
            return None;
        }
        for r in refs {
            let ExprKind::ArrayRef { subs, .. } = &r.kind else {
                return None;
            };
            let mut mine = Vec::with_capacity(subs.len());
            for sub in subs {
                let Subscript::Index(e) = sub else {
                    return None;
                };
                mine.push(Subscript::Index(translate.expr(e, 0)?));
            }
            let element = Expr {
                kind: ExprKind::ArrayRef {
                    array: s,
                    subs: mine,
                },
                span: caller.symbol(s).span,
            };
            let text = print(caller, &element);
            if !texts.contains(&text) {
                texts.push(text);
                out.push(element);
            }
        }
        if out.len() > MAX_ELEMENTS {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Whether an assignment's expressions may leave a reference unevaluated
/// (`.and.`, `.or.`, `merge`, `present`) or hand it to a procedure.
fn may_skip(st: &Stmt) -> bool {
    let mut skip = false;
    for e in st.kind.exprs() {
        e.walk(&mut |x| match &x.kind {
            ExprKind::Binary {
                op: BinaryOp::And | BinaryOp::Or,
                ..
            } => skip = true,
            ExprKind::Intrinsic { name, .. } if matches!(name.as_str(), "merge" | "present") => {
                skip = true
            }
            ExprKind::FunctionCall { .. } | ExprKind::Apply { .. } => skip = true,
            _ => {}
        });
    }
    skip
}

/// A callee's subscript in the caller's terms at one call.
struct Translate<'a> {
    program: &'a Program,
    caller: &'a Unit,
    callee: &'a Unit,
    order: &'a [Option<&'a Arg>],
    fx: &'a crate::effects::Effects,
}

impl Translate<'_> {
    fn expr(&self, e: &Expr, depth: u32) -> Option<Expr> {
        if depth > 16 {
            return None;
        }
        let kind = match &e.kind {
            ExprKind::Int(v) => ExprKind::Int(*v),
            ExprKind::Var(v) => return self.var(*v, e),
            ExprKind::Unary {
                op: op @ (UnaryOp::Neg | UnaryOp::Plus),
                operand,
            } => ExprKind::Unary {
                op: *op,
                operand: Box::new(self.expr(operand, depth + 1)?),
            },
            ExprKind::Binary {
                op: op @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div),
                lhs,
                rhs,
            } => ExprKind::Binary {
                op: *op,
                lhs: Box::new(self.expr(lhs, depth + 1)?),
                rhs: Box::new(self.expr(rhs, depth + 1)?),
            },
            ExprKind::Intrinsic { name, args }
                if matches!(name.as_str(), "max" | "min" | "mod" | "abs")
                    && args.iter().all(|a| a.keyword.is_none()) =>
            {
                let args = args
                    .iter()
                    .map(|a| {
                        Some(Arg {
                            value: self.expr(&a.value, depth + 1)?,
                            ..a.clone()
                        })
                    })
                    .collect::<Option<Vec<_>>>()?;
                ExprKind::Intrinsic {
                    name: name.clone(),
                    args,
                }
            }
            _ => return None,
        };
        Some(Expr { kind, span: e.span })
    }

    /// A variable of the callee's subscript: a named constant's value, an
    /// unwritten integer scalar formal's actual, or the caller's symbol
    /// for an unwritten integer scalar global.
    fn var(&self, v: SymbolId, at: &Expr) -> Option<Expr> {
        let sym = self.callee.symbol(v);
        if sym.ty.base != BaseType::Integer || sym.rank() > 0 {
            return None;
        }
        if sym.attrs.parameter {
            let value = dfort_ir::dp::constant_int(self.callee, at, 0)?;
            return Some(Expr {
                kind: ExprKind::Int(value),
                span: at.span,
            });
        }
        if let Some(k) = self.callee.args.iter().position(|&f| f == v) {
            if self.fx.written_formals.contains(&(k as u32)) {
                return None;
            }
            let actual = (*self.order.get(k)?)?;
            // The actual must be a value of the caller's: no section, no
            // array.
            if matches!(actual.value.kind, ExprKind::Range { .. }) {
                return None;
            }
            return Some(actual.value.clone());
        }
        let key = global_key(self.program, self.callee, v)?;
        if self.fx.written_globals.contains(&key) {
            return None;
        }
        let mine = self
            .caller
            .symbols
            .indices()
            .find(|&s| global_key(self.program, self.caller, s).as_ref() == Some(&key))?;
        Some(Expr {
            kind: ExprKind::Var(mine),
            span: at.span,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{program, request};

    /// The texts of what the forward sweep of `f` saves around its calls
    /// (records and snapshots), call by call.
    fn saved(src: &str) -> Vec<Vec<String>> {
        let p = program(src);
        let facts = crate::facts::analyse(&p, &request("f", &["x"], &["y"]), None);
        let u = p.units.iter().find(|u| u.name == "f").unwrap();
        let d = facts.decisions_of(u.id).unwrap();
        d.calls
            .values()
            .map(|cp| {
                let mut texts: Vec<String> = cp.saved().map(|s| s.text(u)).collect();
                texts.sort();
                texts
            })
            .collect()
    }

    fn host(body: &str, internal: &str) -> String {
        format!(
            "subroutine f(n, x, y)\n  integer, intent(in) :: n\n  real(8), intent(in) :: x(n)\n  real(8), intent(out) :: y(n)\n  real(8) :: w(n)\n  integer :: i\n  w = x\n{body}  y = w\ncontains\n{internal}end subroutine\n"
        )
    }

    const LOOP: &str = "  do i = 1, n - 1\n    call s(i)\n  end do\n";

    #[test]
    fn a_call_saves_the_elements_its_straight_line_body_names() {
        let src = host(
            LOOP,
            "  subroutine s(j)\n    integer, intent(in) :: j\n    w(j + 1) = w(j) * w(j + 1)\n  end subroutine\n",
        );
        assert_eq!(saved(&src), vec![vec!["w(i + 1)", "w(i)"]]);
    }

    #[test]
    fn a_reference_under_an_if_saves_the_whole_array() {
        let src = host(
            LOOP,
            "  subroutine s(j)\n    integer, intent(in) :: j\n    if (j > 1) then\n      w(j) = w(j) * w(j - 1)\n    end if\n  end subroutine\n",
        );
        assert_eq!(saved(&src), vec![vec!["w"]]);
    }

    #[test]
    fn a_subscript_the_callee_changes_saves_the_whole_array() {
        let src = host(
            "  do i = 1, n - 1\n    call s(i, i + 1)\n  end do\n",
            "  subroutine s(j, k)\n    integer, intent(in) :: j\n    integer :: k\n    w(k) = w(j) * w(k)\n    k = j\n  end subroutine\n",
        );
        assert!(
            saved(&src).iter().all(|c| c.contains(&"w".to_string())),
            "{:?}",
            saved(&src)
        );
    }

    #[test]
    fn a_callee_passing_the_array_on_saves_the_whole_array() {
        let src = host(
            LOOP,
            "  subroutine s(j)\n    integer, intent(in) :: j\n    w(j) = w(j) * w(j + 1)\n    call t(j)\n  end subroutine\n  subroutine t(j)\n    integer, intent(in) :: j\n    w(j + 1) = 2.0d0 * w(j + 1)\n  end subroutine\n",
        );
        assert_eq!(saved(&src), vec![vec!["w"]]);
    }
}
