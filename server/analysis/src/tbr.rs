//! TBR analysis (paper 000 §5): which overwritten values the forward sweep
//! of a joint-mode adjoint must record.
//!
//! Contract: per statement, `Req` is the set of variables whose current
//! value the statement's adjoint needs (the rules of §5.1: arguments of
//! nonlinear operations whose result is active, the other factor of an
//! active product, indices of active array references, the lhs indices of
//! an active assignment) and `Kill` what it overwrites completely. `InReq`
//! is propagated forward from the unit's entry with
//! `OutReq = (InReq ∖ Kill) ∪ Req` (Fig. 8, general equations, solved by
//! [`crate::engine`]); a statement that overwrites a variable in its
//! `InReq`, or one its own adjoint needs, records that variable. The
//! index of a counted DO loop is restored by the reversed loop (paper
//! 001), so the DO header kills it without recording it.
//! With `store_all` (`--no-tbr`), every overwrite of an active variable
//! is recorded instead, as ADIFOR and Odyssée did.

use crate::activity::Activity;
use crate::bitset::BitSet;
use crate::dp::{
    constant_element, disjoint_constant_elements, dp_of, index_vars, target, vars, writes,
};
use crate::engine::{solve, Direction};
use dfort_ir::cfg::NodeKind;
use dfort_ir::*;

/// Intrinsics whose local derivatives need no argument value.
const LINEAR_INTRINSICS: &[&str] = &[
    "real",
    "dble",
    "float",
    "sngl",
    "dfloat",
    "cmplx",
    "dcmplx",
    "conjg",
    "dconjg",
    "aimag",
    "dimag",
    "sum",
    "transpose",
    "reshape",
    "spread",
    "pack",
    "unpack",
    "cshift",
    "eoshift",
    "merge",
];
/// Intrinsics that multiply their two arguments.
const BILINEAR_INTRINSICS: &[&str] = &["dot_product", "matmul", "dprod"];

/// One value the forward sweep must record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub stmt: StmtId,
    pub variable: SymbolId,
}

#[derive(Clone, Debug, Default)]
pub struct Tbr {
    /// The variables each statement's adjoint needs, indexed by `StmtId`.
    pub req: Vec<BitSet>,
    /// Variables whose value is required just before each statement.
    pub in_req: Vec<BitSet>,
    /// Recorded overwrites, in statement order.
    pub records: Vec<Record>,
}

struct Rules<'a> {
    unit: &'a Unit,
    varied: &'a BitSet,
}

impl Rules<'_> {
    fn active(&self, e: &Expr) -> bool {
        dp_of(self.unit, e).intersects(self.varied)
    }
    fn vars(&self, e: &Expr, out: &mut BitSet) {
        vars(self.unit, e, out)
    }
    /// Req(e) of §5.1.
    fn req(&self, e: &Expr, out: &mut BitSet) {
        match &e.kind {
            ExprKind::ArrayRef { .. } | ExprKind::Component { .. } if self.active(e) => {
                index_vars(self.unit, e, out);
            }
            ExprKind::Unary { operand, .. } => self.req(operand, out),
            ExprKind::Binary { op, lhs, rhs } => match op {
                BinaryOp::Add | BinaryOp::Sub => {
                    self.req(lhs, out);
                    self.req(rhs, out);
                }
                BinaryOp::Mul => {
                    if self.active(lhs) {
                        self.vars(rhs, out);
                        self.req(lhs, out);
                    }
                    if self.active(rhs) {
                        self.vars(lhs, out);
                        self.req(rhs, out);
                    }
                }
                BinaryOp::Div | BinaryOp::Pow => {
                    // d(a/b)/da = 1/b; d(a/b)/db = -a/b²; a**b needs both.
                    if self.active(lhs) {
                        self.vars(rhs, out);
                        if *op == BinaryOp::Pow {
                            self.vars(lhs, out);
                        }
                        self.req(lhs, out);
                    }
                    if self.active(rhs) {
                        self.vars(lhs, out);
                        self.vars(rhs, out);
                        self.req(rhs, out);
                    }
                }
                _ => {}
            },
            ExprKind::Intrinsic { name, args } => {
                if !self.active(e) {
                    return;
                }
                if LINEAR_INTRINSICS.contains(&name.as_str()) {
                    for a in args {
                        self.req(&a.value, out);
                    }
                } else if BILINEAR_INTRINSICS.contains(&name.as_str()) && args.len() == 2 {
                    let (a, b) = (&args[0].value, &args[1].value);
                    if self.active(a) {
                        self.vars(b, out);
                        self.req(a, out);
                    }
                    if self.active(b) {
                        self.vars(a, out);
                        self.req(b, out);
                    }
                } else {
                    // Nonlinear (sin, exp, ...) or piecewise (abs, max,
                    // sign, ...): the arguments' values are needed.
                    for a in args {
                        self.vars(&a.value, out);
                        self.req(&a.value, out);
                    }
                }
            }
            ExprKind::FunctionCall { args, .. } | ExprKind::Apply { args, .. }
                if self.active(e) =>
            {
                for a in args {
                    self.vars(&a.value, out);
                }
            }
            ExprKind::Complex(a, b) => {
                self.req(a, out);
                self.req(b, out);
            }
            ExprKind::ArrayCtor(items) => {
                for i in items {
                    self.req(i, out);
                }
            }
            _ => {}
        }
    }
}

/// Req and Kill of one statement, and the variables its own adjoint needs
/// from the right-hand side (recorded when the statement overwrites them).
fn req_kill(program: &Program, unit: &Unit, act: &Activity, st: &Stmt) -> (BitSet, BitSet, BitSet) {
    let n = unit.symbols.len();
    let mut req = BitSet::new(n);
    let mut kill = BitSet::new(n);
    let mut own = BitSet::new(n);
    let i = st.id.0 as usize;
    match &st.kind {
        StmtKind::Assign { lhs, rhs } => {
            if let Some((t, whole)) = target(lhs) {
                if whole {
                    kill.insert(t.0 as usize);
                }
                if act.active_after(st.id, t) {
                    let rules = Rules {
                        unit,
                        varied: &act.varied_before[i],
                    };
                    rules.req(rhs, &mut own);
                    req.union_with(&own);
                    index_vars(unit, lhs, &mut req);
                    req.subtract(&kill);
                    // `y(3) = y(1)*y(2)`: the elements read are not the one
                    // written, so the statement's own adjoint needs no
                    // recording of y (constant indices, paper 000 §3's
                    // cheap refinement of the whole-array rule).
                    if let Some(elem) = constant_element(unit, lhs) {
                        if disjoint_constant_elements(unit, rhs, t, &elem) {
                            own.remove(t.0 as usize);
                        }
                    }
                }
            }
        }
        StmtKind::Call { args, .. } => {
            // Without the callee's summary: an active call needs the values
            // of all its actuals.
            let written = writes(program, unit, st);
            if written.iter().any(|(s, _)| act.active_after(st.id, *s)) {
                for a in args {
                    vars(unit, &a.value, &mut own);
                }
                req.union_with(&own);
            }
        }
        StmtKind::Io {
            kind: IoKind::Read, ..
        } => {
            for (s, whole) in writes(program, unit, st) {
                if whole {
                    kill.insert(s.0 as usize);
                }
            }
        }
        _ => {}
    }
    (req, kill, own)
}

/// Runs TBR on one unit, given its activity.
pub fn analyze(program: &Program, unit: &Unit, act: &Activity, store_all: bool) -> Tbr {
    let n = unit.stmts.len();
    let cfg = &unit.cfg;
    let summaries: Vec<(BitSet, BitSet, BitSet)> = unit
        .stmts
        .iter()
        .map(|st| req_kill(program, unit, act, st))
        .collect();
    let loop_kill = |node: &dfort_ir::cfg::Node| -> Option<usize> {
        let id = *node.stmts.first()?;
        match &unit.stmt(id).kind {
            StmtKind::Do {
                control: DoControl::Counted { var, .. },
                ..
            } => Some(var.0 as usize),
            _ => None,
        }
    };
    let sol = solve(
        cfg,
        Direction::Forward,
        &BitSet::default(),
        |node, input| {
            let nd = cfg.node(node);
            let mut s = input.clone();
            match nd.kind {
                NodeKind::BasicBlock => {
                    for id in &nd.stmts {
                        let (req, kill, _) = &summaries[id.0 as usize];
                        s.subtract(kill);
                        s.union_with(req);
                    }
                }
                NodeKind::Loop => {
                    if let Some(v) = loop_kill(nd) {
                        s.remove(v);
                    }
                }
                _ => {}
            }
            s
        },
    );
    let mut tbr = Tbr {
        req: summaries.iter().map(|(r, _, _)| r.clone()).collect(),
        in_req: vec![BitSet::default(); n],
        records: Vec::new(),
    };
    for (i, node) in cfg.nodes.iter().enumerate() {
        if node.kind != NodeKind::BasicBlock {
            continue;
        }
        let mut s = sol.before[i].clone();
        for id in &node.stmts {
            let st = unit.stmt(*id);
            tbr.in_req[id.0 as usize] = s.clone();
            let (req, kill, own) = &summaries[id.0 as usize];
            for (v, _) in writes(program, unit, st) {
                let vi = v.0 as usize;
                let needed = if store_all {
                    act.varied_before[id.0 as usize].contains(vi) || act.active_after(*id, v)
                } else {
                    s.contains(vi) || own.contains(vi)
                };
                if needed {
                    tbr.records.push(Record {
                        stmt: *id,
                        variable: v,
                    });
                }
            }
            s.subtract(kill);
            s.union_with(req);
        }
    }
    tbr.records.sort_by_key(|r| (r.stmt, r.variable));
    tbr.records.dedup();
    tbr
}
