//! Shrinking a failing program: greedy one-step simplifications — drop a
//! procedure, a statement, keep one branch or the body of a loop, replace
//! an expression by one of its operands or a constant — each kept when
//! the program still fails the same way. Candidates that break the
//! program (gfortran rejects it, an index leaves its bounds) are simply
//! not kept: the checker tells. The calls of the sequence-association
//! callees (`fz_q…`, [`super::gen`]) are the exception: an element
//! read or written past its actual, or written through one formal and
//! read through another, is invalid where no check tells; so those
//! callees, the arguments of their calls and the bounds of the loops
//! over `sj` around the calls are left as they are (they are valid by
//! construction), though the calls may go.

use super::ast::*;

/// The `k`-th one-step simplification of `p`, or `None` past the last.
/// Coarse steps (whole procedures, whole statements) come first.
pub fn candidate(p: &Program, k: usize) -> Option<Program> {
    let mut counter = k;
    let mut q = p.clone();
    if drop_procedure(&mut q, &mut counter) {
        return Some(q);
    }
    let mut q = p.clone();
    let mut done = false;
    q.each_proc_mut(&mut |proc| {
        if !done && !frozen(&proc.name) {
            done = statements(&mut proc.body, &mut counter);
        }
    });
    if done {
        return Some(q);
    }
    let mut q = p.clone();
    q.each_proc_mut(&mut |proc| {
        if !done && !frozen(&proc.name) {
            done = expressions(&mut proc.body, &mut counter);
        }
    });
    done.then_some(q)
}

/// Drops a module, external or internal procedure nothing else names.
fn drop_procedure(p: &mut Program, counter: &mut usize) -> bool {
    let mut names: Vec<String> = Vec::new();
    if let Some(m) = &p.module {
        names.extend(m.procs.iter().map(|q| q.name.clone()));
    }
    names.extend(p.externals.iter().map(|q| q.name.clone()));
    names.extend(p.root.internal.iter().map(|q| q.name.clone()));
    for name in names {
        let mut q = p.clone();
        if let Some(m) = &mut q.module {
            m.procs.retain(|x| x.name != name);
        }
        q.externals.retain(|x| x.name != name);
        q.root.internal.retain(|x| x.name != name);
        // Its `external` declarations go too.
        q.each_proc_mut(&mut |x| {
            for s in &mut x.spec {
                if let Some(list) = s.strip_prefix("real(8), external :: ") {
                    let kept: Vec<&str> = list
                        .split(',')
                        .map(str::trim)
                        .filter(|f| *f != name)
                        .collect();
                    *s = if kept.is_empty() {
                        String::new()
                    } else {
                        format!("real(8), external :: {}", kept.join(", "))
                    };
                }
            }
            x.spec.retain(|s| !s.is_empty());
        });
        let named = q
            .print()
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == name);
        if named {
            continue;
        }
        if *counter > 0 {
            *counter -= 1;
            continue;
        }
        *p = q;
        return true;
    }
    false
}

/// Statement-level steps in `body` and the blocks nested in it.
fn statements(body: &mut Vec<Stmt>, counter: &mut usize) -> bool {
    for i in 0..body.len() {
        // Remove the statement.
        if *counter == 0 {
            body.remove(i);
            return true;
        }
        *counter -= 1;
        // Replace a compound statement by one of its blocks.
        let blocks: Vec<Vec<Stmt>> = body[i].blocks().into_iter().cloned().collect();
        for b in blocks {
            if *counter == 0 {
                let mut replacement = Vec::new();
                if let Stmt::Do { var, lo, .. } = &body[i] {
                    replacement.push(Stmt::Assign(Expr::var(var.clone()), lo.clone()));
                }
                replacement.extend(b);
                body.splice(i..=i, replacement);
                return true;
            }
            *counter -= 1;
        }
        if let Stmt::IfOne(_, inner) = &body[i] {
            if *counter == 0 {
                let s = (**inner).clone();
                body[i] = s;
                return true;
            }
            *counter -= 1;
        }
        for b in body[i].blocks_mut() {
            if statements(b, counter) {
                return true;
            }
        }
    }
    false
}

/// Whether `name` is a sequence-association callee, whose body and
/// actuals the shrinker leaves alone.
fn frozen(name: &str) -> bool {
    name.starts_with("fz_q")
}

/// Expression-level steps in the statements of `body`.
fn expressions(body: &mut [Stmt], counter: &mut usize) -> bool {
    for s in body.iter_mut() {
        let fixed = match s {
            Stmt::Call(name, _) => frozen(name),
            Stmt::Do { var, .. } => var == "sj",
            _ => false,
        };
        if fixed {
            for b in s.blocks_mut() {
                if expressions(b, counter) {
                    return true;
                }
            }
            continue;
        }
        // An assignment's target stays a reference: only its subscripts
        // may be simplified.
        if let Stmt::Assign(lhs, _) = s {
            for c in lhs.children_mut() {
                if expression_in(c, counter, true) {
                    return true;
                }
            }
        }
        let exprs = match s {
            Stmt::Assign(_, rhs) => vec![rhs],
            _ => s.exprs_mut(),
        };
        for e in exprs {
            if expression(e, counter) {
                return true;
            }
        }
        for b in s.blocks_mut() {
            if expressions(b, counter) {
                return true;
            }
        }
    }
    false
}

/// Replaces `e` (or an expression inside it) by one of its operands or by
/// a constant (`1` in subscripts, where a real would not do).
fn expression(e: &mut Expr, counter: &mut usize) -> bool {
    expression_in(e, counter, false)
}

fn expression_in(e: &mut Expr, counter: &mut usize, subscript: bool) -> bool {
    if !matches!(e, Expr::Lit(_)) {
        let mut options: Vec<Expr> = e.children().into_iter().cloned().collect();
        if !subscript {
            options.push(Expr::lit("0.5d0"));
        }
        options.push(Expr::lit("1"));
        for o in options {
            if *counter == 0 {
                *e = o;
                return true;
            }
            *counter -= 1;
        }
    }
    if matches!(e, Expr::Call(f, _) if frozen(f)) {
        return false;
    }
    let inner = subscript || matches!(e, Expr::Index(..));
    for c in e.children_mut() {
        if expression_in(c, counter, inner) {
            return true;
        }
    }
    false
}

/// Greedy shrinking: applies the first candidate `still_fails` accepts,
/// then starts over, until no candidate is accepted or `budget` checks
/// are spent. Returns the smallest failing program and the checks made.
pub fn shrink(
    p: &Program,
    budget: usize,
    mut still_fails: impl FnMut(&Program) -> bool,
) -> (Program, usize) {
    let mut best = p.clone();
    let mut checks = 0;
    let mut k = 0;
    // Passes over the candidates until one keeps none.
    let mut progress = false;
    while checks < budget {
        let Some(c) = candidate(&best, k) else {
            if !progress {
                break;
            }
            progress = false;
            k = 0;
            continue;
        };
        if c == best {
            k += 1;
            continue;
        }
        checks += 1;
        if still_fails(&c) {
            best = c;
            progress = true;
            // The same position now holds the next statement: keep k.
        } else {
            k += 1;
        }
    }
    (best, checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(body: Vec<Stmt>) -> Program {
        Program {
            module: None,
            externals: vec![],
            root: Proc {
                kind: ProcKind::Subroutine,
                recursive: false,
                elemental: false,
                pure: false,
                name: "fz".into(),
                args: vec!["x".into()],
                uses: vec![],
                decls: vec![Decl::real("x", vec![]).with_intent("inout")],
                spec: vec![],
                body,
                internal: vec![],
            },
            ints: vec![],
            independents: vec!["x".into()],
            dependents: vec!["x".into()],
            macros: false,
            after: None,
            supplied: false,
        }
    }

    #[test]
    fn shrinking_keeps_only_what_the_failure_needs() {
        // "Fails" while some statement multiplies x by itself.
        let square = Stmt::Assign(
            Expr::var("x"),
            Expr::bin("*", Expr::var("x"), Expr::var("x")),
        );
        let noise = |c: &str| {
            Stmt::Assign(
                Expr::var("x"),
                Expr::bin("+", Expr::var("x"), Expr::call("sin", vec![Expr::lit(c)])),
            )
        };
        let p = program(vec![
            noise("1.0d0"),
            Stmt::If(
                vec![(
                    Expr::bin(">", Expr::var("x"), Expr::lit("0.0d0")),
                    vec![noise("2.0d0"), square.clone(), noise("3.0d0")],
                )],
                None,
            ),
            noise("4.0d0"),
        ]);
        let fails = |q: &Program| q.print().contains("(x * x)");
        let (small, checks) = shrink(&p, 500, fails);
        assert_eq!(small.root.body, vec![square]);
        assert!(checks > 0);
    }
}
