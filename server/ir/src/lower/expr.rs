//! Lowering of expressions. A `name(args)` is an array reference when the
//! unit declares `name` as an array, a statement-function call when it
//! defines one, an intrinsic when `name` is an intrinsic the unit does not
//! redeclare; otherwise it stays `Apply` until linking looks at modules,
//! hosts and the other units.

use super::{children, field, named_children, UnitLowerer};
use crate::intrinsics::is_intrinsic_function;
use crate::ir::*;
use dfort_syntax::flat::FNode;
use dfort_syntax::rules::UNSUPPORTED;

impl<'f, 'a> UnitLowerer<'f, 'a> {
    pub(crate) fn expr(&mut self, n: FNode<'a>) -> Expr {
        let span = self.span(n);
        let kind = self.expr_kind(n, span);
        Expr { kind, span }
    }

    fn boxed(&mut self, n: Option<FNode<'a>>, span: Span) -> Box<Expr> {
        Box::new(match n {
            Some(n) => self.expr(n),
            None => Expr {
                kind: ExprKind::Error,
                span,
            },
        })
    }

    /// A defined unary operator applied to `arg`. It binds tightest of
    /// all operators, but the grammar gives it unary minus's precedence
    /// and reads `.neg. a * b` as `.neg. (a * b)`: applied to the
    /// leftmost operand of an unparenthesized product or power instead.
    fn defined_unary(&mut self, op: &str, arg: Option<FNode<'a>>, span: Span) -> ExprKind {
        if let Some(a) = arg.filter(|a| a.kind() == "math_expression") {
            let op_text = field(a, "operator")
                .map(|o| self.text(o).to_ascii_lowercase())
                .unwrap_or_default();
            if let Some(bop) = binary_op(&op_text) {
                let left = field(a, "left");
                let left_span = left.map_or(span, |l| self.span(l));
                let lhs = Box::new(Expr {
                    kind: self.defined_unary(op, left, left_span),
                    span: left_span,
                });
                let rhs = self.boxed(field(a, "right"), span);
                return ExprKind::Binary { op: bop, lhs, rhs };
            }
        }
        let operand = self.boxed(arg, span);
        defined_operator(op, vec![*operand])
    }

    fn expr_kind(&mut self, n: FNode<'a>, span: Span) -> ExprKind {
        match n.kind() {
            "identifier" => {
                let name = self.lname(n);
                ExprKind::Var(self.symbol(&name, span))
            }
            "number_literal" => self.number(n),
            "string_literal" => {
                let t = self.text(n).trim();
                let inner = if t.len() >= 2 { &t[1..t.len() - 1] } else { "" };
                ExprKind::Str(inner.to_string())
            }
            "boolean_literal" => {
                ExprKind::Logical(self.text(n).to_ascii_lowercase().contains("true"))
            }
            "complex_literal" => {
                let kids = named_children(n);
                let re = self.boxed(kids.first().copied(), span);
                let im = self.boxed(kids.get(1).copied(), span);
                ExprKind::Complex(re, im)
            }
            "parenthesized_expression" => {
                match named_children(n)
                    .into_iter()
                    .find(|c| c.kind() != "comment")
                {
                    Some(inner) => self.expr(inner).kind,
                    None => ExprKind::Error,
                }
            }
            "math_expression"
            | "relational_expression"
            | "concatenation_expression"
            | "logical_expression" => {
                let op_text = field(n, "operator")
                    .map(|o| self.text(o).to_ascii_lowercase())
                    .unwrap_or_default();
                let left = field(n, "left");
                let right = field(n, "right").or_else(|| field(n, "argument"));
                if left.is_none() && op_text == ".not." {
                    let operand = self.boxed(right, span);
                    return ExprKind::Unary {
                        op: UnaryOp::Not,
                        operand,
                    };
                }
                let lhs = self.boxed(left, span);
                let rhs = self.boxed(right, span);
                match binary_op(&op_text) {
                    Some(op) => ExprKind::Binary { op, lhs, rhs },
                    // A defined operator (`a .dot. b`): a reference to
                    // the generic `operator(.dot.)`, whose specific
                    // linking chooses by the operands.
                    None => defined_operator(&op_text, vec![*lhs, *rhs]),
                }
            }
            "unary_expression" => {
                let op_text = field(n, "operator")
                    .map(|o| self.text(o).to_ascii_lowercase())
                    .unwrap_or_default();
                let op = match op_text.as_str() {
                    "-" => UnaryOp::Neg,
                    "+" => UnaryOp::Plus,
                    ".not." => UnaryOp::Not,
                    _ => return self.defined_unary(&op_text, field(n, "argument"), span),
                };
                let operand = self.boxed(field(n, "argument"), span);
                ExprKind::Unary { op, operand }
            }
            "call_expression" => self.call_expression(n, span),
            "array_literal" => {
                self.ctor_depth += 1;
                let items = named_children(n)
                    .into_iter()
                    .filter(|c| !matches!(c.kind(), "intrinsic_type" | "derived_type" | "comment"))
                    .map(|c| self.expr(c))
                    .collect();
                self.ctor_depth -= 1;
                ExprKind::ArrayCtor(items)
            }
            "implied_do_loop_expression" => self.implied_do(n),
            "derived_type_member_expression" => {
                let kids = named_children(n);
                let base = self.boxed(kids.first().copied(), span);
                let name = kids
                    .iter()
                    .find(|k| k.kind() == "type_member")
                    .map(|k| self.lname(*k))
                    .unwrap_or_default();
                ExprKind::Component {
                    base,
                    name,
                    subs: Vec::new(),
                }
            }
            "extent_specifier" => self.range_expr(n, span),
            "null_literal" => ExprKind::Intrinsic {
                name: "null".into(),
                args: Vec::new(),
            },
            "keyword_argument" => {
                // Only valid inside argument lists; lowered by `args`.
                match field(n, "value") {
                    Some(v) => self.expr(v).kind,
                    None => ExprKind::Error,
                }
            }
            "ERROR" => ExprKind::Error,
            other => {
                if !n.is_missing() {
                    self.fx.report(
                        &UNSUPPORTED,
                        span,
                        format!(
                            "dfort does not support the expression `{}` ({})",
                            self.text(n).trim(),
                            other.replace('_', " ")
                        ),
                    );
                }
                ExprKind::Error
            }
        }
    }

    fn range_expr(&mut self, n: FNode<'a>, _span: Span) -> ExprKind {
        let mut parts: [Option<Box<Expr>>; 3] = [None, None, None];
        let mut slot = 0;
        for c in children(n) {
            if !c.is_named() {
                if self.text(c) == ":" {
                    slot += 1;
                }
                continue;
            }
            if c.kind() == "comment" || slot > 2 {
                continue;
            }
            let e = self.expr(c);
            parts[slot] = Some(Box::new(e));
        }
        let [lo, hi, stride] = parts;
        ExprKind::Range { lo, hi, stride }
    }

    fn number(&mut self, n: FNode<'a>) -> ExprKind {
        let full = super::token_text(self.text(n));
        // A kind suffix: 1.0_8, 1.0_dp, 2_8.
        let (digits, suffix) = match full.find('_') {
            Some(p) => (&full[..p], Some(&full[p + 1..])),
            None => (full.as_str(), None),
        };
        let suffix_kind = suffix.and_then(|s| {
            s.parse::<u32>().ok().or_else(|| {
                self.names
                    .get(s)
                    .and_then(|id| {
                        let sym = &self.unit.symbols[*id];
                        sym.init.as_ref().and_then(|e| self.const_int(e))
                    })
                    .map(|v| v as u32)
                    .or_else(|| super::decl::well_known_kind(s))
            })
        });
        let is_real = digits.contains(['.', 'e', 'd', 'q']);
        if !is_real {
            return match digits.parse::<i64>() {
                Ok(v) => ExprKind::Int(v),
                Err(_) => {
                    let sp = self.span(n);
                    self.fx.report(
                        &UNSUPPORTED,
                        sp,
                        format!("integer literal `{full}` is out of range"),
                    );
                    ExprKind::Error
                }
            };
        }
        let kind = suffix_kind.unwrap_or(if digits.contains('d') {
            8
        } else if digits.contains('q') {
            16
        } else {
            4
        });
        let value = digits
            .replace(['d', 'q'], "e")
            .parse::<f64>()
            .unwrap_or(f64::NAN);
        ExprKind::Real {
            value,
            text: full.clone(),
            kind,
        }
    }

    pub(crate) fn args(&mut self, list: Option<FNode<'a>>) -> Vec<Arg> {
        let Some(list) = list else { return Vec::new() };
        let items = named_children(list);
        // Exactly as many as written (a growing vector would keep room
        // for four, as long as the unit lives).
        let mut out = Vec::with_capacity(items.iter().filter(|c| c.kind() != "comment").count());
        for c in items {
            match c.kind() {
                "comment" => {}
                "keyword_argument" => {
                    let keyword = field(c, "name").map(|k| self.lname(k));
                    let value = match field(c, "value") {
                        Some(v) => self.expr(v),
                        None => Expr {
                            kind: ExprKind::Error,
                            span: self.span(c),
                        },
                    };
                    out.push(Arg { keyword, value });
                }
                _ => {
                    let value = self.expr(c);
                    out.push(Arg {
                        keyword: None,
                        value,
                    });
                }
            }
        }
        out
    }

    /// Whether `array(subs)(args)` is a substring of an element: a
    /// character array indexed in every dimension, then one range.
    fn is_substring_of_element(&self, array: SymbolId, subs: &[Subscript], args: &[Arg]) -> bool {
        let sym = self.unit.symbol(array);
        sym.ty.base == BaseType::Character
            && sym.rank() > 0
            && subs.len() == sym.rank()
            && subs.iter().all(|s| matches!(s, Subscript::Index(_)))
            && matches!(args, [Arg { keyword: None, value }]
                if matches!(value.kind, ExprKind::Range { stride: None, .. }))
    }

    fn call_expression(&mut self, n: FNode<'a>, span: Span) -> ExprKind {
        let kids = named_children(n);
        let Some(callee) = kids.first().copied() else {
            return ExprKind::Error;
        };
        let list = kids.iter().copied().find(|k| k.kind() == "argument_list");
        if callee.kind() != "identifier" {
            // `p%a(i)`: a component with subscripts.
            let base = self.expr(callee);
            let args = self.args(list);
            return match base.kind {
                ExprKind::Component { base, name, subs } if subs.is_empty() => {
                    ExprKind::Component {
                        base,
                        name,
                        subs: args.into_iter().map(|a| subscript(a.value)).collect(),
                    }
                }
                // `names(i)(1:n)`: a substring of a character array's
                // element, held as one more subscript after the element's
                // (see `Unit::element_subs`).
                ExprKind::ArrayRef { array, mut subs }
                    if self.is_substring_of_element(array, &subs, &args) =>
                {
                    let range = args.into_iter().next().map(|a| subscript(a.value));
                    subs.extend(range);
                    ExprKind::ArrayRef { array, subs }
                }
                _ => {
                    self.fx.report(
                        &UNSUPPORTED,
                        span,
                        format!(
                            "dfort does not support the reference `{}`",
                            self.text(n).trim()
                        ),
                    );
                    ExprKind::Error
                }
            };
        }
        let name = self.lname(callee);
        let args = self.args(list);
        if let Some(&id) = self.names.get(&name) {
            let sym = &self.unit.symbols[id];
            if let Some(i) = self.unit.stmt_functions.iter().position(|sf| sf.name == id) {
                return ExprKind::FunctionCall {
                    name,
                    target: CallTarget::StatementFunction(i as u32),
                    args,
                };
            }
            if !sym.dims.is_empty()
                || (sym.ty.base == BaseType::Character
                    && sym.storage != Storage::Procedure
                    && sym.storage != Storage::Result)
            {
                let subs = args.into_iter().map(|a| subscript(a.value)).collect();
                return ExprKind::ArrayRef { array: id, subs };
            }
            if sym.attrs.intrinsic {
                return ExprKind::Intrinsic { name, args };
            }
            if sym.storage == Storage::Procedure || sym.attrs.external {
                return ExprKind::FunctionCall {
                    name,
                    target: CallTarget::Unresolved,
                    args,
                };
            }
        } else if is_intrinsic_function(&name) {
            return ExprKind::Intrinsic { name, args };
        }
        ExprKind::Apply { name, args }
    }
}

pub(crate) fn subscript(e: Expr) -> Subscript {
    match e.kind {
        ExprKind::Range { lo, hi, stride } => Subscript::Range { lo, hi, stride },
        _ => Subscript::Index(e),
    }
}

/// A reference to a defined operator with its operands.
fn defined_operator(op: &str, operands: Vec<Expr>) -> ExprKind {
    ExprKind::FunctionCall {
        name: operator_generic(op),
        target: CallTarget::Unresolved,
        args: operands
            .into_iter()
            .map(|value| Arg {
                keyword: None,
                value,
            })
            .collect(),
    }
}

fn binary_op(t: &str) -> Option<BinaryOp> {
    Some(match t {
        "+" => BinaryOp::Add,
        "-" => BinaryOp::Sub,
        "*" => BinaryOp::Mul,
        "/" => BinaryOp::Div,
        "**" => BinaryOp::Pow,
        "//" => BinaryOp::Concat,
        "==" | ".eq." => BinaryOp::Eq,
        "/=" | ".ne." => BinaryOp::Ne,
        "<" | ".lt." => BinaryOp::Lt,
        "<=" | ".le." => BinaryOp::Le,
        ">" | ".gt." => BinaryOp::Gt,
        ">=" | ".ge." => BinaryOp::Ge,
        ".and." => BinaryOp::And,
        ".or." => BinaryOp::Or,
        ".eqv." => BinaryOp::Eqv,
        ".neqv." => BinaryOp::Neqv,
        _ => return None,
    })
}
