//! Terms: how a recovered value is computed from other values, and their
//! Fortran text (paper 003 §3: the right-hand side an inversion or a
//! forward recomputation evaluates).
//!
//! Contract: a [`Term`] is an expression over *versions* (indices the
//! caller gives meaning to: the versions of a loop's plan, or version 0
//! for the variable an undo restores) and fixed subexpressions.
//! [`Term::render`] prints it as Fortran source with the fewest
//! parentheses Fortran's precedence needs; the adjoint generator emits
//! that text and the editor shows it. No sentences here: those are the
//! ide crate's renderer's.

use dfort_ir::bitset::BitSet;
use dfort_ir::dp::vars;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

/// An expression over versions: how a recovered value is computed.
#[derive(Clone, Debug)]
pub enum Term {
    Version(usize),
    /// A subexpression with no handled variable (constants, loop
    /// invariants, the loop's own index).
    Fixed(Expr),
    Unary(UnaryOp, Box<Term>),
    Binary(BinaryOp, Box<Term>, Box<Term>),
    Intrinsic(String, Vec<Term>),
    Element(SymbolId, Vec<Term>),
}

impl Term {
    /// Source text, with `name` printing each version.
    pub fn render(&self, unit: &Unit, name: &dyn Fn(usize) -> String) -> String {
        match self {
            Term::Version(v) => name(*v),
            Term::Fixed(e) => print(unit, e),
            Term::Unary(op, a) => {
                let s = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Plus => "+",
                    UnaryOp::Not => ".not. ",
                };
                format!("{s}{}", a.operand(unit, name, 3, false))
            }
            Term::Binary(op, a, b) => {
                let p = precedence(*op);
                format!(
                    "{} {} {}",
                    a.operand(unit, name, p, false),
                    op.as_str(),
                    b.operand(unit, name, p, true)
                )
            }
            Term::Intrinsic(f, args) => {
                let a: Vec<String> = args.iter().map(|t| t.render(unit, name)).collect();
                format!("{f}({})", a.join(", "))
            }
            Term::Element(s, args) => {
                let a: Vec<String> = args.iter().map(|t| t.render(unit, name)).collect();
                format!("{}({})", unit.symbol(*s).name, a.join(", "))
            }
        }
    }

    /// An operand of an operator of precedence `outer`, parenthesised
    /// when it binds less tightly (or equally, on the right of `-` and
    /// `/`).
    fn operand(
        &self,
        unit: &Unit,
        name: &dyn Fn(usize) -> String,
        outer: u8,
        right: bool,
    ) -> String {
        let s = self.render(unit, name);
        let inner = match self {
            Term::Binary(op, ..) => precedence(*op),
            Term::Unary(..) => 1,
            Term::Fixed(e) => match &e.kind {
                ExprKind::Binary { op, .. } => precedence(*op),
                ExprKind::Unary { .. } => 1,
                _ => 9,
            },
            _ => 9,
        };
        if inner < outer || (right && inner == outer && outer < 3) {
            format!("({s})")
        } else {
            s
        }
    }

    /// Calls `f` on this term and every sub-term, pre-order.
    fn each<'a>(&'a self, f: &mut impl FnMut(&'a Term)) {
        f(self);
        match self {
            Term::Version(_) | Term::Fixed(_) => {}
            Term::Unary(_, a) => a.each(f),
            Term::Binary(_, a, b) => {
                a.each(f);
                b.each(f);
            }
            Term::Intrinsic(_, args) | Term::Element(_, args) => {
                for a in args {
                    a.each(f);
                }
            }
        }
    }

    /// The versions the term reads.
    pub fn versions(&self, out: &mut Vec<usize>) {
        self.each(&mut |t| {
            if let Term::Version(v) = t {
                out.push(*v);
            }
        });
    }

    /// The variables of the `Fixed` parts (loop invariants the reverse
    /// sweep reads).
    pub(super) fn fixed_vars(&self, unit: &Unit, out: &mut BitSet) {
        self.each(&mut |t| {
            if let Term::Fixed(e) = t {
                vars(unit, e, out);
            }
        });
    }
}

/// Fortran binding strength of a binary operator (higher binds tighter).
fn precedence(op: BinaryOp) -> u8 {
    match op {
        BinaryOp::Add | BinaryOp::Sub => 1,
        BinaryOp::Mul | BinaryOp::Div => 2,
        BinaryOp::Pow => 3,
        _ => 0,
    }
}
