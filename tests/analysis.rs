//! Activity and TBR on the papers' worked examples, checked against
//! markers in the fixtures:
//! - `! dfort-tbr: v` at the end of a statement line: the statement records
//!   `v` (and nothing else is recorded in that unit unless marked);
//! - `! dfort-tbr: UNIT: none`: UNIT records nothing;
//! - `! dfort-active: UNIT: a, b`: the variables active anywhere in UNIT.

use crate::support::*;
use dfort_analysis::interproc::analyze_program;
use dfort_analysis::{activity, roles::roles, tbr};
use std::collections::BTreeSet;

struct Marks {
    records: BTreeSet<(String, u32, String)>,
    no_records: Vec<String>,
    active: Vec<(String, Vec<String>)>,
}

fn marks(ws: &Loaded) -> Marks {
    let text = ws.text();
    let path = ws.paths[0].clone();
    let mut m = Marks {
        records: BTreeSet::new(),
        no_records: Vec::new(),
        active: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let line_no = i as u32 + 1;
        for (key, rest) in [("dfort-tbr:", true), ("dfort-active:", false)] {
            let Some(pos) = line.find(key) else { continue };
            let body = line[pos + key.len()..].trim();
            let code = line[..pos].trim_end_matches(['!', ' ']).trim();
            let standalone = code.is_empty() || code.eq_ignore_ascii_case("c");
            if rest && !standalone {
                // Inline: the unit holding this line records these.
                let offset = ws.doc(&path).unwrap().lines.line_start(i as u32).unwrap();
                let unit = ws.unit_at(&path, offset).expect("marker inside a unit");
                for v in body.split(',') {
                    m.records
                        .insert((unit.name.clone(), line_no, v.trim().to_string()));
                }
                continue;
            }
            let (unit, list) = body.split_once(':').expect("UNIT: list");
            let unit = unit.trim().to_ascii_lowercase();
            if rest {
                assert_eq!(list.trim(), "none");
                m.no_records.push(unit);
            } else {
                let mut names: Vec<String> =
                    list.split(',').map(|s| s.trim().to_string()).collect();
                names.sort();
                m.active.push((unit, names));
            }
        }
    }
    m
}

/// Activity of `u` analysed as the root, with its own roles.
fn root_activity(ws: &Loaded, u: &dfort_ir::Unit) -> activity::Activity {
    let r = roles(u, None);
    let pa = analyze_program(&ws.program, &[(u.id, r.independents, r.dependents)]);
    (*pa.activity[u.id].clone().expect("root analysed")).clone()
}

fn check(rel: &str) -> usize {
    let ws = fixture(rel);
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    let m = marks(&ws);
    let mut got = BTreeSet::new();
    let mut checked = 0;
    let units: BTreeSet<String> = m
        .records
        .iter()
        .map(|r| r.0.clone())
        .chain(m.no_records.iter().cloned())
        .chain(m.active.iter().map(|a| a.0.clone()))
        .collect();
    assert!(!units.is_empty(), "{rel} has no markers");
    // Roots: the marked units nobody calls; the others get calling contexts.
    let roots: Vec<_> = units
        .iter()
        .map(|n| unit(&ws, n))
        .filter(|u| ws.program.call_graph.calls_to[u.id].is_empty())
        .map(|u| {
            let r = roles(u, None);
            (u.id, r.independents, r.dependents)
        })
        .collect();
    let pa = analyze_program(&ws.program, &roots);
    let tbrs = tbr::analyze_program(&ws.program, &pa, false, false);
    for name in &units {
        let u = unit(&ws, name);
        let act = pa.activity[u.id].clone().expect("unit reached");
        let t = tbrs[u.id].clone().expect("unit reached");
        for rec in &t.records {
            let line = ws.line_of(u.stmt(rec.stmt).span);
            got.insert((u.name.clone(), line, u.symbol(rec.variable).name.clone()));
        }
        if let Some((_, expect)) = m.active.iter().find(|a| &a.0 == name) {
            let mut active: Vec<String> = act
                .active_anywhere()
                .ids()
                .map(|i| u.symbols[i].name.clone())
                .collect();
            active.sort();
            assert_eq!(&active, expect, "{rel}: active set of {name}");
            checked += 1;
        }
    }
    assert_eq!(
        got, m.records,
        "{rel}: recorded values (unit, line, variable)"
    );
    checked + m.records.len() + m.no_records.len()
}

#[test]
fn figure_1_of_paper_000_records_x_i_and_j_but_never_a() {
    // x before x(i)=… and x(j)=…, i before i=i+1, j before j=j-1.
    assert_eq!(check("papers/p000_fig1.f90"), 5);
}

#[test]
fn bratu_records_nothing_and_its_active_set_is_f_prm_x() {
    check("papers/p000_bratu.f");
    check("papers/p000_bratu_ad.f");
}

#[test]
fn the_control_flow_reversal_example_of_paper_001_records_nothing() {
    check("papers/p001_sec2_orig.f90");
}

#[test]
fn tbr_across_calls_records_in_the_caller_and_in_the_callee() {
    // x is needed by square's adjoint and overwritten by the caller, which
    // records nothing (the call's snapshot saves x); s is needed by the
    // caller and overwritten inside clobber, which records it.
    assert_eq!(check("interproc/callee_activity.f90"), 3);
}

#[test]
fn loop_bounds_are_required_by_the_reversed_loop() {
    assert_eq!(check("analysis/loop_bounds.f90"), 1);
}

#[test]
fn store_all_lists_every_overwritten_active_value() {
    // Without TBR (ADIFOR/Odyssée style) Bratu records its F updates.
    let ws = fixture("papers/p000_bratu_ad.f");
    let u = unit(&ws, "bratuad");
    let act = root_activity(&ws, u);
    let with = tbr::analyze(&ws.program, u, &act, false).records.len();
    let without = tbr::analyze(&ws.program, u, &act, true).records.len();
    assert_eq!(with, 0);
    assert!(without >= 5, "store-all recorded only {without}");
}

/// A COMMON field stepped one level of one tile per call, as MITgcm steps
/// its state: each call's checkpoint saves the part of the field the call
/// (and what it calls) touches and its adjoint reads, from the element it
/// starts at — the tile around `tile_step(bi)`, the level of `theta`
/// around `level_step(k, bi)` — never the whole field.
#[test]
fn checkpoints_save_the_part_of_a_common_field_a_call_touches() {
    let ws = fixture("interproc/common_levels.f90");
    let text = adjoint_named(
        &ws.program,
        "common_levels",
        dfort_analysis::decisions::Recording::Inversion,
        "",
    )
    .expect("written");
    for expected in [
        // Tile bi of both fields: the halo reads and writes columns 0 to
        // nx + 1 of theta, the levels columns 1 to nx of flux.
        "call dfort_push_region_r8_2(theta(0, 1, bi), 10, 1, 10, 1, 1, 4, 1, 40)",
        "call dfort_push_region_r8_2(flux(0, 1, bi), 10, 2, 9, 1, 1, 4, 1, 40)",
        // Level k of tile bi.
        "call dfort_push_region_r8_1(theta(0, k, bi), 1, 10, 1, 10)",
    ] {
        assert!(text.contains(expected), "no `{expected}` in\n{text}");
    }
    // level_step fills flux(1:nx, k, bi) before it reads it: its adjoint
    // reads none of flux on entry ([`dfort_analysis::filled_first`]).
    let unread = "call dfort_push_region_r8_1(flux(0, k, bi)";
    assert!(!text.contains(unread), "`{unread}` in\n{text}");
    for whole in ["call dfort_push(theta)", "call dfort_push(flux)"] {
        assert!(!text.contains(whole), "`{whole}` in\n{text}");
    }
}

/// MITgcm's ways of passing a field on (issue 40): the checkpoints save a
/// level of the field where the callee touches one — through a formal of
/// another shape (one slab of element offsets), through a whole array
/// passed to a formal of its own shape (levels `k - 1` and `k` of tile
/// `bi`), and where the callee's `IF (karg .EQ. 0)` decides between every
/// level and level `karg` (one or the other chosen at run time) — and
/// never the whole field.
#[test]
fn checkpoints_save_the_levels_a_call_touches_through_formals() {
    let ws = fixture("interproc/common_slabs.f90");
    let text = adjoint_named(
        &ws.program,
        "common_slabs",
        dfort_analysis::decisions::Recording::Inversion,
        "",
    )
    .expect("written");
    // Continuation lines joined.
    let flat: String = text.replace('&', "").split_whitespace().collect();
    for expected in [
        // Level k of both tiles, through `ab_step`'s formal of rank 2.
        "dfort_push_region_r8_1(gm(1,1,1),max(8*k-7,1),min(8*k+32,64),1,64)",
        // Levels k - 1 and k of tile bi, the field passed whole.
        "dfort_push_region_r8_2(u(1,1,bi),8,1,8,1,min(max(k,1),max(k-1,1))",
        // Every level when k is 0, else level k.
        "dfort_push_region_r8_2(g(1,1,bi),8,1,8,1,merge(1,max(k,1),k==0),merge(4,min(k,4),k==0)",
    ] {
        assert!(flat.contains(expected), "no `{expected}` in\n{text}");
    }
    for whole in ["dfort_push(g)", "dfort_push(gm)", "dfort_push(u)"] {
        assert!(!flat.contains(whole), "`{whole}` in\n{text}");
    }
}

mod dep {
    use crate::support::*;
    use dfort_analysis::dep::{summarize_all, Iface, Summary};

    fn formal(ws: &Loaded, unit_name: &str, var: &str) -> Iface {
        let u = unit(ws, unit_name);
        let k = u
            .args
            .iter()
            .position(|a| u.symbol(*a).name == var)
            .unwrap_or_else(|| panic!("{var} is not a dummy of {unit_name}"));
        Iface::Formal(k as u32)
    }

    fn summary<'a>(
        ws: &Loaded,
        sums: &'a dfort_analysis::dep::Summaries,
        name: &str,
    ) -> &'a Summary {
        sums[unit(ws, name).id]
            .as_ref()
            .unwrap_or_else(|| panic!("no summary for {name}"))
    }

    fn depends(
        ws: &Loaded,
        sums: &dfort_analysis::dep::Summaries,
        u: &str,
        after: &str,
        before: &str,
    ) -> bool {
        summary(ws, sums, u).depends(&formal(ws, u, after), &formal(ws, u, before))
    }

    #[test]
    fn dep_summaries_follow_calls_commons_modules_and_recursion() {
        let ws = fixture("interproc/callee_activity.f90");
        assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
        let sums = summarize_all(&ws.program);
        // Instruction level: b = 2a.
        assert!(depends(&ws, &sums, "scale", "b", "a"));
        assert!(!depends(&ws, &sums, "scale", "b", "b"), "b is overwritten");
        assert!(depends(&ws, &sums, "scale", "a", "a"), "a is unchanged");
        // Through a callee, with name translation.
        assert!(depends(&ws, &sums, "driver", "y", "x"));
        assert!(!depends(&ws, &sums, "driver", "x", "y"));
        // COMMON written in a callee.
        let fill = summary(&ws, &sums, "fill");
        assert!(fill.iface.iter().any(|i| matches!(i, Iface::Global(_))));
        assert!(depends(&ws, &sums, "use_common", "y", "x"));
        // Module variable written in a module procedure.
        assert!(depends(&ws, &sums, "use_module", "z", "u"));
        // Recursive pair: q depends on p in both.
        assert!(depends(&ws, &sums, "ping", "q", "p"));
        assert!(depends(&ws, &sums, "pong", "q", "p"));
        assert!(!depends(&ws, &sums, "pong", "p", "q"));
    }
}

mod interprocedural {
    use crate::support::*;
    use dfort_analysis::interproc::analyze_program;
    use dfort_analysis::roles::roles;

    /// Active variables of each unit reached from `root` (own symbols).
    fn active_from(root: &str) -> Vec<(String, Vec<String>)> {
        let ws = fixture("interproc/callee_activity.f90");
        let r = unit(&ws, root);
        let rl = roles(r, None);
        let pa = analyze_program(&ws.program, &[(r.id, rl.independents, rl.dependents)]);
        let mut out = Vec::new();
        for u in &ws.program.units {
            if let Some(act) = &pa.activity[u.id] {
                let mut names: Vec<String> = act
                    .active_anywhere()
                    .ids()
                    .filter_map(|i| u.symbols.get(i).map(|s| s.name.clone()))
                    .collect();
                names.sort();
                out.push((u.name.clone(), names));
            }
        }
        out
    }

    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_variable_active_only_through_a_callee_and_two_calling_contexts() {
        // t is active only because scale(x, t) makes it depend on x; the
        // second call scale(c, c) is inactive and c stays inactive in
        // driver although scale itself is active (union of contexts).
        assert_eq!(
            active_from("driver"),
            vec![
                ("driver".to_string(), v(&["t", "x", "y"])),
                ("scale".to_string(), v(&["a", "b"])),
            ]
        );
    }

    #[test]
    fn common_block_state_modified_in_a_callee() {
        assert_eq!(
            active_from("use_common"),
            vec![
                ("use_common".to_string(), v(&["w", "x", "y"])),
                ("fill".to_string(), v(&["v", "w2"])),
            ]
        );
    }

    #[test]
    fn module_variables_flow_through_calls() {
        assert_eq!(
            active_from("use_module"),
            vec![
                ("set_offset".to_string(), v(&["offset", "u"])),
                ("use_module".to_string(), v(&["offset", "u", "z"])),
            ]
        );
    }

    #[test]
    fn a_recursive_pair_reaches_a_fixpoint() {
        assert_eq!(
            active_from("ping"),
            vec![
                ("ping".to_string(), v(&["p", "q"])),
                ("pong".to_string(), v(&["p", "q", "r"])),
            ]
        );
    }
}

#[test]
fn adjoint_liveness_drops_bratus_f_updates_but_keeps_h() {
    // The adjoint of Bratu needs x, prm, h and the indices, never F: every
    // assignment to F is dead in the forward sweep, h = 2/(dim+1) is not.
    let ws = fixture("papers/p000_bratu.f");
    let u = unit(&ws, "bratu");
    let r = roles(u, None);
    let pa = analyze_program(&ws.program, &[(u.id, r.independents, r.dependents)]);
    let tbrs = tbr::analyze_program(&ws.program, &pa, false, false);
    let t = tbrs[u.id].as_ref().unwrap();
    let live = dfort_analysis::liveness::analyze(
        &ws.program,
        u,
        t,
        &dfort_analysis::effects::all(&ws.program),
        &Default::default(),
    );
    let f = u.lookup("f").unwrap();
    let assigns_to = |s: &dfort_ir::Stmt, v| match &s.kind {
        dfort_ir::StmtKind::Assign { lhs, .. } => dfort_ir::dp::target(lhs).map(|t| t.0) == Some(v),
        _ => false,
    };
    let f_assignments: Vec<_> = u
        .stmts
        .iter()
        .filter(|s| assigns_to(s, f))
        .map(|s| s.id)
        .collect();
    assert_eq!(live.dead, f_assignments);
    assert_eq!(live.dead.len(), 8);
    let h = u.lookup("h").unwrap();
    assert!(u
        .stmts
        .iter()
        .any(|s| assigns_to(s, h) && !live.dead.contains(&s.id)));
}

/// The liveness of `name` in `ws` (its roles from intents), with the dead
/// loops added as if every loop were replayed.
fn liveness_with_loops(ws: &Loaded, name: &str) -> (dfort_analysis::liveness::Liveness, usize) {
    let u = unit(ws, name);
    let r = roles(u, None);
    let pa = analyze_program(&ws.program, &[(u.id, r.independents, r.dependents)]);
    let tbrs = tbr::analyze_program(&ws.program, &pa, false, false);
    let t = tbrs[u.id].as_ref().unwrap();
    let mut live = dfort_analysis::liveness::analyze(
        &ws.program,
        u,
        t,
        &dfort_analysis::effects::all(&ws.program),
        &Default::default(),
    );
    let assignments = live.dead.len();
    dfort_analysis::liveness::dead_loops(u, &mut live, |_| true);
    let loops = u
        .stmts
        .iter()
        .filter(|s| live.dead.contains(&s.id) && matches!(s.kind, dfort_ir::StmtKind::Do { .. }))
        .count();
    assert_eq!(live.dead.len(), assignments + loops);
    (live, loops)
}

#[test]
fn a_loop_whose_body_is_dead_is_dropped_unless_its_index_is_read_after_it() {
    // Bratu's loop only updates F: the forward sweep drops it whole.
    let (_, loops) = liveness_with_loops(&fixture("papers/p000_bratu.f"), "bratu");
    assert_eq!(loops, 1);
    let src = |after: &str| {
        format!(
            "subroutine s(n, x, y)\n  integer, intent(in) :: n\n  real(8), intent(in) :: x(n)\n  \
             real(8), intent(out) :: y(n)\n  real(8) :: t(n)\n  integer :: i\n  \
             do i = 1, n - 1\n    t(i) = x(i) * 2.0d0\n  end do\n  \
             y(1) = x(1) * x(2){after}\nend subroutine s\n"
        )
    };
    let ws = from_sources(vec![("s.f90".into(), src(""))]);
    assert_eq!(liveness_with_loops(&ws, "s").1, 1);
    // The index the loop leaves behind is read after it: the loop stays.
    let ws = from_sources(vec![("s.f90".into(), src(" * i"))]);
    assert_eq!(liveness_with_loops(&ws, "s").1, 0);
}

mod incremental {
    use crate::support::*;
    use dfort_analysis::dep::{resummarize, summarize_all};
    use std::path::PathBuf;

    fn workspace(text: &str) -> Loaded {
        from_sources(vec![(PathBuf::from("inc.f90"), text.to_string())])
    }

    const SRC: &str =
        "subroutine top(x, y)\n  real(8) :: x, y, t\n  call mid(x, t)\n  y = t\nend\n\
subroutine mid(a, b)\n  real(8) :: a, b\n  call leaf(a, b)\nend\n\
subroutine leaf(p, q)\n  real(8) :: p, q\n  q = 2.0d0*p\nend\n\
subroutine other(u)\n  real(8) :: u\n  u = u + 1\nend\n";

    #[test]
    fn only_callers_that_see_a_changed_summary_are_recomputed() {
        let ws = workspace(SRC);
        let old = summarize_all(&ws.program);
        let leaf = unit(&ws, "leaf").id;
        // Same dependencies (q still depends on p only): only leaf.
        let edited = workspace(&SRC.replace("q = 2.0d0*p", "q = 3.0d0*p"));
        let (sums, redone) = resummarize(&edited.program, &old, &[leaf]);
        assert_eq!(redone, vec![leaf]);
        assert_eq!(sums, summarize_all(&edited.program));
        // q now also depends on q: leaf, then mid, then top — not other.
        let edited = workspace(&SRC.replace("q = 2.0d0*p", "q = q*p"));
        let (sums, redone) = resummarize(&edited.program, &old, &[leaf]);
        let names: Vec<&str> = redone
            .iter()
            .map(|u| edited.program.unit(*u).name.as_str())
            .collect();
        assert_eq!(names, vec!["leaf", "mid", "top"]);
        assert_eq!(sums, summarize_all(&edited.program));
    }
}
