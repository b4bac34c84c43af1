//! The front end on the fixtures: every transcribed paper example and every
//! construct fixture lowers without error, and the IR says what the source
//! says (kinds, implicit typing, COMMON, use association, labelled DO
//! nesting, statement functions, directives, CFG structure, call graph).

use crate::support::*;
use dfort_ir::callgraph::{Actual, Callee};
use dfort_ir::cfg::NodeKind;
use dfort_ir::*;

/// Files that need a companion to resolve (loaded together).
const PAIRS: &[(&str, &str)] = &[("free/multi_use.f90", "free/multi_mod.f90")];
/// Fixtures that are meant to give diagnostics (tested in diagnostics.rs).
const EXPECTED_TO_FAIL: &[&str] = &["papers/bratu_73col.f"];

#[test]
fn every_paper_and_construct_fixture_lowers_without_diagnostics() {
    let mut count = 0;
    let mut units = 0;
    for dir in ["papers", "free", "fixed"] {
        for path in fortran_files(&fixtures().join(dir)) {
            let rel = format!("{dir}/{}", path.file_name().unwrap().to_string_lossy());
            if EXPECTED_TO_FAIL.contains(&rel.as_str()) {
                continue;
            }
            let mut paths = vec![path.clone()];
            if let Some((_, other)) = PAIRS.iter().find(|(a, _)| *a == rel) {
                paths.push(fixtures().join(other));
            }
            let ws = load(&paths);
            assert!(
                ws.diagnostics().is_empty(),
                "{rel} gave diagnostics:\n{}",
                ws.render_diagnostics()
            );
            let mine: Vec<_> = ws.units_of(&path).collect();
            assert!(!mine.is_empty(), "{rel}: no program unit");
            units += mine.len();
            count += 1;
        }
    }
    assert!(count >= 60, "only {count} fixtures");
    println!("{count} fixtures, {units} units lowered without diagnostics");
}

#[test]
fn bratu_in_fixed_form_with_continuation_lines() {
    let ws = fixture("papers/p000_bratu.f");
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    let u = &ws.program.units[UnitId(0)];
    assert_eq!(u.kind, UnitKind::Subroutine);
    let args: Vec<&str> = u.args.iter().map(|a| u.symbol(*a).name.as_str()).collect();
    assert_eq!(args.len(), 5);
    let x = symbol(u, "x");
    assert_eq!(
        (x.ty.base, x.ty.kind, x.rank()),
        (BaseType::Real, Some(8), 1)
    );
    assert!(matches!(x.storage, Storage::Dummy(_)));
    // The statement continued with `*` in column 6 is one assignment whose
    // right-hand side holds the part from the continuation line.
    let continued = u
        .stmts
        .iter()
        .filter(|s| matches!(s.kind, StmtKind::Assign { .. }))
        .filter(|s| ws.source(s.span).contains('\n'))
        .count();
    assert!(continued >= 1, "no assignment spans a continuation line");
    // One counted DO loop over i.
    let loops = u
        .stmts
        .iter()
        .filter(|s| {
            matches!(
                s.kind,
                StmtKind::Do {
                    control: DoControl::Counted { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(loops, 1);
    assert!(u.cfg.structured);
}

#[test]
fn directives_are_attached_to_their_unit() {
    let ws = fixture("papers/p000_bratu_ad.f");
    let u = unit(&ws, "bratuad");
    let d: Vec<(String, Vec<String>)> = u
        .directives
        .iter()
        .map(|d| (d.name.clone(), d.args.clone()))
        .collect();
    assert_eq!(
        d,
        vec![
            (
                "independent".to_string(),
                vec!["x".to_string(), "prm".to_string()]
            ),
            ("dependent".to_string(), vec!["f".to_string()]),
        ]
    );
}

#[test]
fn kinds_from_every_spelling() {
    let ws = fixture("free/multi_mod.f90");
    let m = unit(&ws, "shapes_mod");
    assert_eq!(m.kind, UnitKind::Module);
    assert_eq!(
        symbol(m, "pi").ty.kind,
        Some(8),
        "real(rk) with rk = kind(1.0d0)"
    );
    let ws = fixture("free/common_equiv.f90");
    // IMPLICIT DOUBLE PRECISION (A-H,O-Z): h.. is real(8), i..n integer.
    for u in &ws.program.units {
        for s in &u.symbols {
            if s.typing == Typing::Implicit {
                let c = s.name.as_bytes()[0];
                let expect = if (b'i'..=b'n').contains(&c) {
                    (BaseType::Integer, Some(4))
                } else {
                    (BaseType::Real, Some(8))
                };
                assert_eq!((s.ty.base, s.ty.kind), expect, "{} in {}", s.name, u.name);
            }
        }
    }
    let wavg = unit(&ws, "wavg");
    let work = symbol(wavg, "work");
    assert_eq!(
        (work.ty.base, work.ty.kind, work.rank()),
        (BaseType::Real, Some(8), 1),
        "real*8"
    );
    assert!(wavg
        .symbols
        .iter()
        .any(|s| matches!(s.storage, Storage::Common { .. })));
}

#[test]
fn default_implicit_typing_in_fortran_77() {
    let ws = fixture("fixed/upwind_f77.f");
    let mut implicit = 0;
    for u in &ws.program.units {
        for s in u.symbols.iter().filter(|s| s.typing == Typing::Implicit) {
            let c = s.name.as_bytes()[0];
            let base = if (b'i'..=b'n').contains(&c) {
                BaseType::Integer
            } else {
                BaseType::Real
            };
            assert_eq!(s.ty.base, base, "{}", s.name);
            implicit += 1;
        }
    }
    assert!(implicit > 0, "upwind_f77.f should rely on implicit typing");
}

/// Issue 41: `PROCEDURE(iface) :: f` (current LAPACK's procedure
/// arguments) declares `f` a procedure with the interface body's type, as
/// an interface body of its own would: no "has no type" under IMPLICIT
/// NONE, and its references are function references.
#[test]
fn a_procedure_declaration_statement_declares_a_procedure_argument() {
    let ws = fixture("fixed/procedure_argument.f");
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    let u = unit(&ws, "selsum");
    let f = symbol(u, "selctg");
    assert_eq!(f.storage, Storage::Procedure);
    assert!(f.declared && f.attrs.external);
    assert_eq!(f.ty.base, BaseType::Logical);
    let refs = u.stmts.iter().filter(|st| {
        st.kind.exprs().iter().any(|e| {
            let mut called = false;
            e.walk(&mut |x| {
                called |= matches!(&x.kind, ExprKind::FunctionCall { name, .. } if name == "selctg")
            });
            called
        })
    });
    assert_eq!(refs.count(), 1);
}

#[test]
fn use_association_across_files_with_only_and_rename() {
    let ws = load(&[
        fixtures().join("free/multi_use.f90"),
        fixtures().join("free/multi_mod.f90"),
    ]);
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    let u = unit(&ws, "total_area");
    let m = unit(&ws, "shapes_mod");
    assert_eq!(u.uses[0].target, Some(m.id));
    let nshapes = symbol(u, "nshapes");
    assert!(matches!(
        nshapes.storage,
        Storage::Imported { from, via: Association::Use, .. } if from == m.id
    ));
    // `box_area` is `rect_area` renamed; `circle_area` is a module function.
    let mut targets = Vec::new();
    each_expr(u, |x| {
        if let ExprKind::FunctionCall { name, target, .. } = &x.kind {
            targets.push((name.clone(), target.clone()));
        }
    });
    let rect = unit(&ws, "rect_area").id;
    let circ = unit(&ws, "circle_area").id;
    assert!(
        targets.contains(&("box_area".into(), CallTarget::Unit(rect))),
        "{targets:?}"
    );
    assert!(
        targets.contains(&("circle_area".into(), CallTarget::Unit(circ))),
        "{targets:?}"
    );
    // The CALL binds actuals to the callee's formals.
    let grow = unit(&ws, "grow");
    let site = ws
        .program
        .call_graph
        .sites
        .iter()
        .find(|s| s.callee == Callee::Unit(grow.id))
        .expect("call grow");
    assert_eq!(site.bindings[0].formal, Some(grow.args[0]));
    assert_eq!(site.bindings[0].actual, Actual::Var(u.lookup("c").unwrap()));
    assert_eq!(site.bindings[1].actual, Actual::Value);
}

#[test]
fn recursion_is_found_in_the_call_graph() {
    let ws = fixture("free/recursion.f90");
    let g = &ws.program.call_graph;
    let aq = unit(&ws, "adapt_quad").id;
    let refine = unit(&ws, "refine").id;
    let integrand = unit(&ws, "integrand").id;
    assert!(g.recursive[aq] && g.recursive[refine]);
    assert!(!g.recursive[integrand]);
    // Bottom-up order: integrand's component comes before adapt_quad's.
    let pos = |id: UnitId| g.sccs.iter().position(|c| c.contains(&id)).unwrap();
    assert!(pos(integrand) < pos(aq));
    assert_eq!(pos(aq), pos(refine));
    // Module variable read in a module procedure: host association.
    let f = unit(&ws, "integrand");
    assert!(matches!(
        symbol(f, "prm_a").storage,
        Storage::Imported {
            via: Association::Host,
            ..
        }
    ));
}

#[test]
fn labelled_do_loops_nest_and_own_their_terminal_statement() {
    let ws = fixture("free/legacy_in_free.f90");
    let u = unit_with(&ws, |k| {
        matches!(
            k,
            StmtKind::Do {
                end_label: Some(100),
                ..
            }
        )
    });
    let outer = u
        .stmts
        .iter()
        .find(|s| {
            matches!(
                &s.kind,
                StmtKind::Do {
                    end_label: Some(100),
                    ..
                }
            )
        })
        .unwrap();
    let StmtKind::Do { body, .. } = &outer.kind else {
        unreachable!()
    };
    // do 100 j / do 100 i / ... / 100 continue: the inner loop is the outer
    // body's only statement, and the shared CONTINUE ends the inner body.
    assert_eq!(body.len(), 1);
    let inner = u.stmt(body[0]);
    let StmtKind::Do {
        end_label: Some(100),
        body: inner_body,
        ..
    } = &inner.kind
    else {
        panic!("inner loop expected")
    };
    let last = u.stmt(*inner_body.last().unwrap());
    assert_eq!(last.label, Some(100));
    assert!(matches!(last.kind, StmtKind::Continue));
    // A labelled DO ending on an assignment owns that assignment.
    let d300 = u
        .stmts
        .iter()
        .find(|s| {
            matches!(
                &s.kind,
                StmtKind::Do {
                    end_label: Some(300),
                    ..
                }
            )
        })
        .unwrap();
    let StmtKind::Do { body, .. } = &d300.kind else {
        unreachable!()
    };
    assert!(matches!(u.stmt(body[0]).kind, StmtKind::Assign { .. }));
    assert_eq!(u.stmt(body[0]).label, Some(300));
}

#[test]
fn gotos_make_the_cfg_unstructured_and_still_represent_it() {
    let ws = fixture("free/legacy_in_free.f90");
    let u = unit_with(&ws, |k| matches!(k, StmtKind::ArithmeticIf { .. }));
    assert!(!u.cfg.structured);
    let reasons: Vec<&str> = u.cfg.jumps.iter().map(|j| j.reason.as_str()).collect();
    assert!(
        reasons.iter().any(|r| r.starts_with("arithmetic if")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.starts_with("computed go to")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.starts_with("go to")),
        "{reasons:?}"
    );
    // Each jump target has a node with a predecessor.
    for n in &u.cfg.nodes {
        for (s, _) in &n.succs {
            assert!(!u.cfg.node(*s).preds.is_empty());
        }
    }
}

#[test]
fn structured_paper_example_has_definition_1_node_kinds() {
    // Paper 001's example: a loop around a branch.
    let ws = fixture("papers/p001_sec2_orig.f90");
    let u = &ws.program.units[UnitId(0)];
    assert!(u.cfg.structured, "{:?}", u.cfg.jumps);
    let count = |k: NodeKind| u.cfg.nodes.iter().filter(|n| n.kind == k).count();
    assert_eq!(count(NodeKind::Entry), 1);
    assert_eq!(count(NodeKind::Exit), 1);
    assert_eq!(count(NodeKind::Loop), count(NodeKind::EndLoop));
    assert_eq!(count(NodeKind::Branch), count(NodeKind::EndBranch));
    assert!(count(NodeKind::Loop) >= 1 && count(NodeKind::Branch) >= 1);
    for n in &u.cfg.nodes {
        match n.kind {
            NodeKind::Loop => assert_eq!((n.preds.len(), n.succs.len()), (2, 2)),
            NodeKind::EndLoop | NodeKind::BasicBlock => {
                assert_eq!((n.preds.len(), n.succs.len()), (1, 1))
            }
            _ => {}
        }
    }
}

#[test]
fn statement_functions_and_function_references_are_told_apart_from_arrays() {
    let ws = fixture("free/statement_fn.f90");
    let u = ws
        .program
        .units
        .iter()
        .find(|u| !u.stmt_functions.is_empty())
        .expect("a unit with statement functions");
    let mut sf_calls = 0;
    let mut array_refs = 0;
    each_expr(u, |x| match &x.kind {
        ExprKind::FunctionCall {
            target: CallTarget::StatementFunction(_),
            ..
        } => sf_calls += 1,
        ExprKind::ArrayRef { .. } => array_refs += 1,
        ExprKind::Apply { .. } => panic!("unresolved reference left after linking"),
        _ => {}
    });
    assert!(sf_calls > 0);
    assert!(array_refs > 0);
    // Intrinsics are not user calls.
    let ws = fixture("free/reductions.f90");
    let mut intrinsics = Vec::new();
    for u in &ws.program.units {
        each_expr(u, |x| {
            if let ExprKind::Intrinsic { name, .. } = &x.kind {
                intrinsics.push(name.clone());
            }
        });
    }
    for n in ["sum", "dot_product", "matmul"] {
        assert!(
            intrinsics.iter().any(|i| i == n),
            "{n} not seen as intrinsic: {intrinsics:?}"
        );
    }
}

#[test]
fn common_blocks_record_members_in_order() {
    let ws = fixture("fixed/jacobi_common.f");
    let u = &ws.program.units[UnitId(0)];
    let fields = u
        .commons
        .iter()
        .find(|c| c.name == "fields")
        .expect("/fields/");
    let names: Vec<&str> = fields
        .members
        .iter()
        .map(|m| u.symbol(*m).name.as_str())
        .collect();
    assert_eq!(names, vec!["u", "f"]);
    assert!(u.commons.iter().any(|c| c.name.is_empty()), "blank COMMON");
    assert!(!u.equivalences.is_empty());
}

#[test]
fn every_ir_node_keeps_a_source_range_inside_its_file() {
    for dir in ["papers", "free", "fixed"] {
        for path in fortran_files(&fixtures().join(dir)) {
            let ws = load_one(&path);
            for u in &ws.program.units {
                let len = ws.chunk_len(u.span.file);
                // The host cuts a unit with contained procedures into
                // several chunks: its span starts in its own.
                let end = if u.children.is_empty() {
                    u.span.range.end
                } else {
                    u.span.range.start
                };
                assert!(
                    end <= len && !u.span.range.is_empty(),
                    "{}: {}",
                    path.display(),
                    u.name
                );
                for s in &u.stmts {
                    assert!(s.span.range.end <= len, "{}", path.display());
                    assert!(u.span.range.start <= s.span.range.start);
                }
                each_expr(u, |x| {
                    assert!(x.span.range.end <= len);
                    assert!(
                        !x.span.range.is_empty(),
                        "{}: empty expr span",
                        path.display()
                    );
                });
                for sym in &u.symbols {
                    assert!(sym.span.range.end <= len);
                }
            }
        }
    }
}

fn from_text(text: &str) -> Loaded {
    from_sources(vec![(std::path::PathBuf::from("t.f90"), text.to_string())])
}

#[test]
fn where_lowers_to_arms_with_an_else_and_reads_its_masks_in_its_block() {
    let ws = from_text(
        "subroutine w(n, x, y)\n  integer :: n\n  real(8) :: x(n), y(n)\n  where (x > 0) y = x\n  where (x > 1)\n    y = 2*y\n    where (y > 3) y = 3\n  elsewhere (x < -1)\n    y = -y\n  elsewhere\n    y = 0\n  end where\nend subroutine\n",
    );
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    let u = unit(&ws, "w");
    let wheres: Vec<_> = u
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Where {
                arms,
                else_body,
                one_line,
            } => Some((arms.len(), else_body.is_some(), *one_line)),
            _ => None,
        })
        .collect();
    assert_eq!(
        wheres,
        vec![(1, false, true), (2, true, false), (1, false, true)]
    );
    // The construct and its assignments share one basic block.
    let node = |s: StmtId| u.cfg.stmt_node[s].expect("placed");
    let construct = u.body[1];
    for b in u.stmt(construct).kind.blocks() {
        for s in b {
            assert_eq!(node(*s), node(construct));
        }
    }
}

#[test]
fn a_where_body_holds_only_assignments_and_wheres() {
    let ws = from_text(
        "subroutine w(n, x)\n  integer :: n\n  real(8) :: x(n)\n  where (x > 0)\n    call f(x)\n  end where\nend subroutine\n",
    );
    let d = first_with_code(&ws, "unsupported");
    assert!(
        d.message.contains("only assignments and nested WHERE"),
        "{}",
        d.message
    );
}

#[test]
fn do_concurrent_and_forall_lower_to_loops_on_indices_of_their_own() {
    let ws = from_text(
        "subroutine c(n, x, y)\n  integer :: n, i\n  real(8) :: x(n), y(n), t, s\n  i = 7\n  do concurrent (i = 1:n:2, x(i) > 0) local(t) local_init(s)\n    t = x(i) + s\n    y(i) = t\n  end do\n  forall (i = 1:n)\n    y(i) = y(i) * 2\n    x(i) = y(i)\n  end forall\n  y(1) = i\nend subroutine\n",
    );
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    let u = unit(&ws, "c");
    let name = |s: SymbolId| u.symbol(s).name.as_str();
    // do dfort_i_ (the mask an IF inside), then one loop per FORALL
    // assignment; the last statement still reads the outer `i`.
    let heads: Vec<&str> = u
        .body
        .iter()
        .filter_map(|s| match &u.stmt(*s).kind {
            StmtKind::Do {
                control: DoControl::Counted { var, .. },
                ..
            } => Some(name(*var)),
            _ => None,
        })
        .collect();
    assert_eq!(heads, vec!["dfort_i_", "dfort_i_", "dfort_i_"]);
    let StmtKind::Do { body, .. } = &u.stmt(u.body[1]).kind else {
        panic!("a DO")
    };
    let StmtKind::If { arms, .. } = &u.stmt(body[0]).kind else {
        panic!("the mask as an IF")
    };
    // local_init copies the outer value first; local gets a fresh name.
    let firsts: Vec<String> = arms[0]
        .body
        .iter()
        .map(|s| match &u.stmt(*s).kind {
            StmtKind::Assign { lhs, rhs } => {
                format!("{} = {}", dump::expr(u, lhs), dump::expr(u, rhs))
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        firsts,
        vec![
            "dfort_s_ = s",
            "dfort_t_ = x(dfort_i_) + dfort_s_",
            "y(dfort_i_) = dfort_t_"
        ]
    );
    let StmtKind::Assign { rhs, .. } = &u.stmt(*u.body.last().unwrap()).kind else {
        panic!("an assignment")
    };
    assert!(matches!(rhs.kind, ExprKind::Var(s) if name(s) == "i"));
}

#[test]
fn forall_orders_the_sequential_loop_would_change_are_refused() {
    for (body, why) in [
        (
            "forall (i = 2:n) x(i) = x(i-1)",
            "from other elements of it",
        ),
        ("forall (i = 1:n, x(n+1-i) > 0) x(i) = 1", "mask reads `x`"),
        (
            "forall (i = 1:n)\n    where (x > 0) x = 1\n  end forall",
            "other than assignments",
        ),
    ] {
        let ws = from_text(&format!(
            "subroutine f(n, x)\n  integer :: n, i\n  real(8) :: x(n)\n  {body}\nend subroutine\n"
        ));
        let d = first_with_code(&ws, "unsupported");
        assert!(d.message.contains(why), "{body}: {}", d.message);
    }
}

#[test]
fn names_of_the_intrinsic_modules_are_typed_constants_and_kinds() {
    let ws = from_text(
        "module prec\n  use, intrinsic :: iso_fortran_env, only: wp => real64\nend module\n\
         subroutine s(x, y)\n  use prec\n  use, intrinsic :: iso_c_binding, only: c_int, c_loc, c_null_char\n  \
         use, intrinsic :: iso_fortran_env\n  implicit none\n  real(wp), intent(in) :: x\n  real(wp), intent(out) :: y\n  \
         integer(c_int) :: k\n  character :: c\n  k = output_unit + int32\n  c = c_null_char\n  y = x * k\n  \
         write (error_unit, *) y\n  y = y + typo\nend subroutine\n",
    );
    let messages: Vec<String> = ws.diagnostics().iter().map(|d| d.message.clone()).collect();
    assert_eq!(
        messages,
        ["`typo` has no type: it is not declared and IMPLICIT NONE is in effect"],
        "only the name no module gives is reported"
    );
    let u = unit(&ws, "s");
    assert_eq!(symbol(u, "x").ty.kind, Some(8), "real(wp), wp => real64");
    assert_eq!(symbol(u, "k").ty.kind, Some(4), "integer(c_int)");
    for (name, value) in [("output_unit", 6), ("int32", 4), ("error_unit", 0)] {
        let s = symbol(u, name);
        assert!(s.attrs.parameter, "{name} is a named constant");
        assert_eq!(s.ty.base, BaseType::Integer, "{name}");
        assert!(
            matches!(s.init.as_ref().map(|e| &e.kind), Some(ExprKind::Int(v)) if *v == value),
            "{name} = {value}: {:?}",
            s.init
        );
    }
    assert_eq!(symbol(u, "c_null_char").ty.base, BaseType::Character);
    // An internal procedure sees its host's `real(wp)` as real(8) (the
    // fuzzer's seed 2026, case 70: a host variable saved on the tape).
    let ws = from_text(
        "subroutine h(x)\n  use iso_fortran_env, only: wp => real64\n  real(wp) :: x, r\n           call inner()\n  x = r\ncontains\n  subroutine inner()\n    r = 2*x\n  end subroutine\nend subroutine\n",
    );
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    let inner = unit(&ws, "inner");
    assert_eq!(
        symbol(inner, "r").ty.kind,
        Some(8),
        "host-associated real(wp)"
    );
}

/// Issue 46: in an internal procedure, `y(k) = y(k) + …` on the host's
/// array `y` (not declared in the internal procedure) is an assignment to
/// an element, although it opens the executable part as a statement
/// function definition would; its right-hand side names `y` too (it was
/// read as a statement function, and the procedure lost its body).
#[test]
fn a_host_array_assigned_from_itself_in_an_internal_procedure_is_no_statement_function() {
    let ws = fixture("kernels/module_internal.f90");
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    for name in ["addsq", "addcube"] {
        let u = unit(&ws, name);
        assert!(u.stmt_functions.is_empty(), "{name}");
        let stmts: Vec<&Stmt> = u.stmts.iter().collect();
        let [st] = stmts[..] else {
            panic!("{name}: {} statements", stmts.len());
        };
        let StmtKind::Assign { lhs, rhs } = &st.kind else {
            panic!("{name}: {:?}", st.kind);
        };
        assert!(matches!(lhs.kind, ExprKind::ArrayRef { .. }), "{name}");
        let mut elements = 0;
        rhs.walk(&mut |e| {
            if let ExprKind::ArrayRef { array, .. } = &e.kind {
                elements += usize::from(u.symbol(*array).name == "y");
            }
            assert!(!matches!(e.kind, ExprKind::FunctionCall { .. }), "{name}");
        });
        assert_eq!(elements, 2, "{name}");
        assert!(
            matches!(symbol(u, "y").storage, Storage::Imported { .. }),
            "{name}"
        );
    }
}
