//! Random, truncated and mangled Fortran through the whole front end, in
//! both source forms: nothing panics, every diagnostic points inside its
//! file, and every folding range spans lines of it.

use crate::support::*;
use proptest::prelude::*;
use std::path::PathBuf;

fn check(text: String, ext: &str) {
    let text_for_folds = text.clone();
    let lines = text.lines().count().max(1) as u32;
    let ws = from_sources(vec![(PathBuf::from(format!("t.{ext}")), text)]);
    for d in ws.diagnostics() {
        assert!(d.line >= 1 && d.line <= lines + 1 && d.col >= 1, "{d:?}");
    }
    for u in &ws.program.units {
        assert!(ws.location(u.span).is_some(), "{} has no place", u.name);
    }
    let _ = ws.dump();
    analyze_all(&ws.program);
    let form = match ext {
        "f" => dfort_syntax::SourceForm::Fixed(Default::default()),
        _ => dfort_syntax::SourceForm::Free,
    };
    for f in dfort_ide::folding::folding_ranges(&text_for_folds, &form) {
        assert!(f.start_line < f.end_line && f.end_line < lines, "{f:?}");
    }
}

/// Every analysis from every procedure nobody calls: must not panic on
/// any IR, however broken the source was.
fn analyze_all(program: &dfort_ir::Program) {
    use dfort_analysis::{interproc, liveness, tbr};
    let roots = interproc::default_roots(program);
    let pa = interproc::analyze_program(program, &roots);
    let effects = dfort_analysis::effects::all(program);
    for (store_all, inversion) in [(false, true), (false, false), (true, false)] {
        let tbrs = tbr::analyze_program(program, &pa, store_all, inversion);
        for (u, t) in program.units.iter().zip(&tbrs) {
            if let Some(t) = t {
                let _ = liveness::analyze(program, u, t, &effects, &Default::default());
            }
        }
    }
    // Code generation from every root, each analysed on its own as the
    // command line asks: a derivative or refusals, never a panic.
    use dfort_analysis::decisions::Recording;
    use dfort_analysis::facts::{analyse, Request};
    for (root, _, _) in &roots {
        let spec = dfort_analysis::roots::RootSpec {
            name: program.unit(*root).name.clone(),
            independent: Vec::new(),
            dependent: Vec::new(),
            after: None,
        };
        use dfort_analysis::preaccumulation::Preaccumulation;
        for (recording, preaccumulate) in [
            (Recording::Inversion, Preaccumulation::Off),
            (Recording::Tbr, Preaccumulation::Off),
            (Recording::StoreAll, Preaccumulation::Off),
            (Recording::Inversion, Preaccumulation::All),
        ] {
            let request = Request {
                roots: vec![spec.clone()],
                others: false,
                recording,
                preaccumulate,
                supplied: Vec::new(),
            };
            let facts = analyse(program, &request, None);
            for u in facts.program.all_units() {
                for j in facts
                    .local_jacobians(u.id)
                    .iter()
                    .flat_map(|b| &b.jacobians)
                {
                    local_graph_meets_its_contract(j);
                }
            }
            for (id, _) in &facts.roots {
                if recording == Recording::Inversion && preaccumulate == Preaccumulation::Off {
                    let _ = dfort_codegen::tangent::tangent_of(&facts, *id, "");
                }
                let _ = dfort_codegen::adjoint::adjoint_of(&facts, *id, "");
            }
        }
    }
}

/// A local graph as elimination needs it (paper 004's numbering: edges
/// go up, every intermediate between an independent and a dependent,
/// dependents maximal), and its best sequence costing what it says and
/// leaving the Jacobian's entries.
fn local_graph_meets_its_contract(j: &dfort_analysis::preaccumulation::LocalJacobian) {
    let d = &j.graph.dag;
    let v = d.n + d.p + d.m;
    assert_eq!(j.graph.labels.len(), v, "{j:?}");
    // What the generator reads: a label per edge, a reference per
    // independent, a statement per dependent.
    assert_eq!(j.graph.edge_labels.len(), d.edges.len(), "{j:?}");
    assert_eq!(j.graph.independents.len(), d.n, "{j:?}");
    assert_eq!(j.graph.dependents.len(), d.m, "{j:?}");
    assert!(d.m > 0 && d.n > 0, "{j:?}");
    for &(a, b) in &d.edges {
        assert!(a < b && b < v && b >= d.n && a < d.n + d.p, "{j:?}");
    }
    for x in 0..d.n + d.p {
        assert!(
            d.edges.iter().any(|e| e.0 == x),
            "{x} has no successor: {j:?}"
        );
    }
    for x in d.n..v {
        assert!(
            d.edges.iter().any(|e| e.1 == x),
            "{x} has no predecessor: {j:?}"
        );
    }
    let c = &j.costs;
    assert_eq!(
        dfort_analysis::elimination::cost_of(d, &c.best_sequence),
        (c.best, c.jacobian_entries),
        "{j:?}"
    );
    assert!(
        c.best <= c.forward.min(c.reverse).min(c.markowitz).min(c.edge),
        "{j:?}"
    );
}

#[test]
fn every_fixture_analyses_without_panicking() {
    let mut n = 0;
    for dir in [
        "papers",
        "free",
        "fixed",
        "diagnostics",
        "interproc",
        "analysis",
        "kernels",
    ] {
        for p in fortran_files(&fixtures().join(dir)) {
            let ws = load_one(&p);
            analyze_all(&ws.program);
            n += 1;
        }
    }
    assert!(n > 100);
}

fn corpus() -> Vec<String> {
    let mut v = Vec::new();
    for dir in ["papers", "free", "fixed", "diagnostics"] {
        for p in fortran_files(&fixtures().join(dir)) {
            v.push(std::fs::read_to_string(p).unwrap());
        }
    }
    v
}

/// Fortran-ish tokens, to reach deeper into the grammar than random bytes.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("subroutine s(x)\n".to_string()),
        Just("end\n".to_string()),
        Just("end if\n".to_string()),
        Just("do i = 1, n\n".to_string()),
        Just("do 10 i = 1, n\n".to_string()),
        Just("10 continue\n".to_string()),
        Just("if (x > 0) then\n".to_string()),
        Just("else\n".to_string()),
        Just("x(i) = x(i-1)*2.0d0 + f(y)\n".to_string()),
        Just("go to 10\n".to_string()),
        Just("call s(a, *)\n".to_string()),
        Just("     &  + 1\n".to_string()),
        Just("C comment\n".to_string()),
        Just("\t1 continued\n".to_string()),
        Just("module m\ncontains\n".to_string()),
        Just("real(8) :: a(:), b(0:n, *)\n".to_string()),
        Just("implicit none\n".to_string()),
        Just("!$ad independent(x)\n".to_string()),
        Just("select case (k)\ncase (1:2)\n".to_string()),
        Just("'unterminated\n".to_string()),
        "[a-z0-9()=+*/,:&!' \t\n.-]{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}", fixed in any::<bool>()) {
        check(text, if fixed { "f" } else { "f90" });
    }

    #[test]
    fn fortran_token_soup_never_panics(tokens in prop::collection::vec(token(), 0..40), fixed in any::<bool>()) {
        check(tokens.concat(), if fixed { "f" } else { "f90" });
    }

    #[test]
    fn truncated_and_mangled_fixtures_never_panic(
        pick in any::<prop::sample::Index>(),
        cut in any::<prop::sample::Index>(),
        drop_line in any::<prop::sample::Index>(),
        fixed in any::<bool>(),
    ) {
        let corpus = corpus();
        let text = &corpus[pick.index(corpus.len())];
        // Truncate at a char boundary.
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) { at -= 1; }
        check(text[..at].to_string(), if fixed { "f" } else { "f90" });
        // Delete one line (an `end if`, a header, a continuation...).
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        if !lines.is_empty() {
            let k = drop_line.index(lines.len());
            let mangled: String = lines.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, l)| *l).collect();
            check(mangled, if fixed { "f" } else { "f90" });
        }
    }
}

#[test]
fn every_prefix_of_a_fixed_form_file_is_handled() {
    // Half-typed code, one character at a time, as an editor would send it.
    let text = std::fs::read_to_string(fixtures().join("papers/p000_bratu.f")).unwrap();
    let mut n = 0;
    for (i, _) in text.char_indices().step_by(7) {
        check(text[..i].to_string(), "f");
        n += 1;
    }
    assert!(n > 50);
}

/// Edits document `path` of `host`: the first `old` becomes `new`.
fn replace_text(
    host: &mut dfort_ide::host::Host,
    path: &std::path::Path,
    old: &str,
    new: &str,
    version: i32,
) {
    let doc = host.document(path).expect("open").text.to_string();
    let at = doc.find(old).expect("edit site") as u32;
    host.edit(
        path,
        &[dfort_ide::host::TextChange {
            range: Some(dfort_syntax::TextRange::new(at, at + old.len() as u32)),
            text: new.to_string(),
        }],
        version,
    );
}

/// Replaces the first `old` of the document at `path` with `new` through
/// `host` (as document version `version`), and gives the host's snapshot
/// and that of a host loaded with the edited text from scratch.
fn edit_and_reload(
    host: &mut dfort_ide::host::Host,
    path: &std::path::Path,
    old: &str,
    new: &str,
    version: i32,
) -> (
    std::sync::Arc<dfort_ide::host::Snapshot>,
    std::sync::Arc<dfort_ide::host::Snapshot>,
) {
    replace_text(host, path, old, new, version);
    let snap = host.snapshot();
    let mut fresh = dfort_ide::host::Host::default();
    fresh.set_text(path, &snap.doc(path).expect("doc").text, true, 1);
    let scratch = fresh.snapshot();
    (snap, scratch)
}

/// The snapshots of the calls of unit `name`, in statement order, as the
/// analyses of `snap` decided them.
fn call_snapshots(snap: &dfort_ide::host::Snapshot, name: &str) -> Vec<Vec<String>> {
    let unit = snap.program.units_named(name).next().expect("the unit");
    let analysed = snap.analysis().unit(unit.id).expect("analysed");
    let d = snap.analysis().decisions_of(unit.id).expect("decisions");
    d.calls
        .values()
        .map(|cp| cp.snapshot.iter().map(|s| s.text(analysed)).collect())
        .collect()
}

/// What a snapshot says, in a form two snapshots can be compared by:
/// diagnostics, and per unit its linked IR (as `dfort ir` prints it), its
/// host, its calling context, its active variables and what TBR records.
fn summary(snap: &dfort_ide::host::Snapshot, path: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = snap
        .diagnostics(path)
        .iter()
        .map(|d| format!("{:?} {} {}", d.range, d.code, d.message))
        .collect();
    // Ranges are chunk-relative and compared through the diagnostics;
    // the dump's line numbers all read 1 here.
    let line = |_: dfort_ir::Span| 1;
    // A document's units, as the features find them, are the units of
    // its chunks, in program order.
    for doc in snap.docs.values() {
        let found: Vec<dfort_ir::UnitId> = snap.units_of(&doc.path).map(|u| u.id).collect();
        let owned: Vec<dfort_ir::UnitId> = snap
            .program
            .all_units()
            .filter(|u| doc.chunks.iter().any(|(f, _, _)| *f == u.span.file))
            .map(|u| u.id)
            .collect();
        assert_eq!(found, owned, "the units of {}", doc.path.display());
    }
    for u in snap.program.all_units() {
        let parent = u.parent.map(|p| snap.program.unit(p).name.clone());
        let active = snap.analysis().activity.activity[u.id].as_ref().map(|a| {
            let set = a.active_anywhere();
            let mut n: Vec<&str> = set.ids().map(|i| u.symbols[i].name.as_str()).collect();
            n.sort();
            n.join(",")
        });
        let records: Option<Vec<(u32, &str)>> = snap.analysis().tbr_of(u.id).map(|t| {
            t.records
                .iter()
                .map(|r| (r.stmt.0, u.symbol(r.variable).name.as_str()))
                .collect()
        });
        // What each call's checkpoint saves (it reads the callees'
        // decisions: reused only while none of them changed).
        let calls: Option<Vec<String>> = snap
            .analysis()
            .decisions_of(u.id)
            .zip(snap.analysis().unit(u.id))
            .map(|(d, analysed)| {
                d.calls
                    .iter()
                    .map(|(id, cp)| {
                        let texts = |l: &[dfort_analysis::checkpoint::Saved]| {
                            l.iter()
                                .map(|s| format!("{}:{:?}", s.text(analysed), s.why))
                                .collect::<Vec<_>>()
                        };
                        format!(
                            "{} {} {:?} {:?} {:?} {:?}",
                            id.0,
                            cp.callee_routine,
                            texts(&cp.records),
                            texts(&cp.snapshot),
                            cp.hidden,
                            cp.problems
                        )
                    })
                    .collect()
            });
        // Its sites in the call graph (a relink reuses an unchanged
        // unit's), and the sites that call it.
        let graph = &snap.program.call_graph;
        let site = |i: &usize| {
            let s = &graph.sites[*i];
            let callee = match s.callee {
                dfort_ir::callgraph::Callee::Unit(c) => snap.program.unit(c).name.clone(),
                dfort_ir::callgraph::Callee::External => "external".into(),
            };
            format!(
                "{}@{} {} -> {callee} {:?} {:?}",
                s.caller.0, s.stmt.0, s.name, s.function, s.bindings
            )
        };
        let sites: Vec<String> = graph.calls_from[u.id].iter().map(site).collect();
        let callers: Vec<String> = graph.calls_to[u.id].iter().map(site).collect();
        // Its variables with a derivative, and whether it gets a
        // derivative routine.
        let carriers = &snap.analysis().carriers;
        let mut with_d: Vec<&str> = carriers.with_d[u.id]
            .ids()
            .filter_map(|s: dfort_ir::SymbolId| u.symbols.get(s).map(|x| x.name.as_str()))
            .collect();
        with_d.sort();
        v.push(format!(
            "{} {:?} in {parent:?}: context {:?} active {active:?} records {records:?} calls {calls:?} sites {sites:?} called by {callers:?} recursive {} derivatives {with_d:?} routine {}\n{}",
            u.name,
            u.kind,
            // As sets: equal sets may hold different trailing words.
            snap.analysis().context(u.id).map(|(i, o)| (
                i.ids::<dfort_ir::SymbolId>().collect::<Vec<_>>(),
                o.ids::<dfort_ir::SymbolId>().collect::<Vec<_>>()
            )),
            graph.recursive[u.id],
            carriers.routine[u.id],
            dfort_ir::dump::unit(&snap.program, u, &line)
        ));
    }
    let carriers = &snap.analysis().carriers;
    let module_vars: Vec<String> = (carriers.module_vars.iter())
        .map(|(m, s)| {
            let m = snap.program.unit(*m);
            format!("{}::{}", m.name, m.symbol(*s).name)
        })
        .collect();
    v.push(format!(
        "COMMON members with a derivative {:?}, module variables {module_vars:?}",
        carriers.commons
    ));
    v
}

/// Every feature at every offset of a file of each form, also
/// preprocessed (with a multi-byte character in a comment and a literal):
/// none panics,
/// and a name half-typed at a statement's start gets items.
#[test]
fn completion_and_signature_help_answer_at_every_offset() {
    let free = "module m\n  real :: temp ! température\ncontains\n  subroutine s(a, n)\n    integer :: n\n    real :: a(n)\n    a(1) = max(temp, sqrt(a(2)), 'é')\n    call s(a, n)\n  end subroutine\nend module\n";
    let fixed = "C     température\n      SUBROUTINE F(X, N)\n      REAL*8 X(N)\n      X(1) = DSQRT(X(2)) +\n     &  MAX(X(1), 'é')\n  10  CONTINUE\n      END\n";
    // Preprocessed: macro uses, conditions (also unterminated and inside
    // left-out lines) and left-out lines, where the hover reads the
    // preprocessor's records.
    let free_cpp = "#define N 3\nsubroutine p(x)\n  real :: x(N) ! é\n#if defined(A) && N > 2\n  x = 1\n#elif B\n#ifdef C\n  x = 'é'\n#endif\n#else\n  x = 2\n#endif\n#ifndef\nend subroutine\n#if (\n";
    let fixed_cpp = "#define _RL REAL*8\nC     é\n      SUBROUTINE P(X)\n      _RL X\n#ifdef ALLOW_X\n      X = 1\n#else\n      X = 2\n#endif\n      END\n#ifdef\n";
    for (name, text) in [
        ("/ws/c.f90", free),
        ("/ws/c.f", fixed),
        ("/ws/p.F90", free_cpp),
        ("/ws/p.F", fixed_cpp),
    ] {
        let path = PathBuf::from(name);
        let mut host = dfort_ide::host::Host::default();
        host.set_text(&path, text, true, 1);
        let snap = host.snapshot();
        for offset in 0..=text.len() as u32 + 2 {
            poke(&snap, &path, offset);
        }
    }
    // The preprocessed files were read as such.
    let mut host = dfort_ide::host::Host::default();
    let path = PathBuf::from("/ws/p.F");
    host.set_text(&path, fixed_cpp, true, 1);
    let at = fixed_cpp.find("ALLOW_X").unwrap() as u32;
    let h = dfort_ide::hover::hover(&host.snapshot(), &path, at).expect("a hover on ALLOW_X");
    assert!(h.markdown.contains("**not defined**"), "{}", h.markdown);
    let mut host = dfort_ide::host::Host::default();
    let path = PathBuf::from("/ws/c.f90");
    host.set_text(&path, free, true, 1);
    let snap = host.snapshot();
    let at = free.find("    call").unwrap() as u32 + 6;
    let got = dfort_ide::completion::completions(&snap, &path, at).expect("items at `ca|`");
    assert!(
        got.items.iter().any(|i| i.label == "call"),
        "{:?}",
        got.items
    );
}

/// Every feature at `offset`: none may panic.
fn poke(snap: &dfort_ide::host::Snapshot, path: &std::path::Path, offset: u32) {
    use dfort_ide::{actions, completion, hints, hover, navigation, references, signature};
    let _ = hover::hover(snap, path, offset);
    let _ = references::references(snap, path, offset, true);
    let _ = references::highlights(snap, path, offset);
    let _ = references::prepare_rename(snap, path, offset);
    if let Some(c) = completion::completions(snap, path, offset) {
        if let Some(first) = c.items.first() {
            let _ = completion::documentation(snap, path, offset, &first.label);
        }
    }
    let _ = signature::signature_help(snap, path, offset);
    let _ = navigation::definition(snap, path, offset);
    let _ = navigation::document_symbols(snap, path);
    let _ = actions::code_actions(snap, path, offset);
    let _ = dfort_ide::lens::code_lenses(snap, path);
    let _ = hints::inlay_hints(
        snap,
        path,
        dfort_syntax::TextRange::new(0, u32::MAX),
        Default::default(),
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random edits through the language server's host (which reparses
    /// only the chunks an edit touches) never panic, every feature answers
    /// at random offsets, and the final state equals a host loaded with
    /// the final text from scratch.
    #[test]
    fn random_edit_sequences_keep_the_host_consistent(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), 0usize..40, token(), any::<bool>()), 1..8),
        fixed in any::<bool>(),
    ) {
        use dfort_ide::host::{Host, TextChange};
        let corpus = corpus();
        let mut text = corpus[pick.index(corpus.len())].clone();
        let path = PathBuf::from(if fixed { "/ws/t.f" } else { "/ws/t.f90" });
        let mut host = Host::default();
        host.set_text(&path, &text, true, 1);
        let _ = host.snapshot();
        for (k, (at, len, insert, look)) in edits.into_iter().enumerate() {
            let start = at.index(text.len() + 1);
            let end = (start + len).min(text.len());
            host.edit(&path, &[TextChange {
                range: Some(dfort_syntax::TextRange::new(start as u32, end as u32)),
                text: insert,
            }], k as i32 + 2);
            text = host.document(&path).unwrap().text.to_string();
            if look {
                let snap = host.snapshot();
                poke(&snap, &path, start as u32);
            }
        }
        let incremental = host.snapshot();
        let mut fresh = Host::default();
        fresh.set_text(&path, &text, true, 1);
        let scratch = fresh.snapshot();
        prop_assert_eq!(summary(&incremental, &path), summary(&scratch, &path));
    }
}

/// Module procedures are parsed and lowered apart from their module in
/// the language server; the program it links must mean what the whole
/// file lowered at once means: the same units, hosts and activity.
#[test]
fn module_procedures_chunked_apart_match_the_whole_module() {
    let mut compared = 0;
    for dir in ["free", "papers"] {
        for p in fortran_files(&fixtures().join(dir)) {
            let text = std::fs::read_to_string(&p).unwrap();
            if !text.to_ascii_lowercase().contains("contains") {
                continue;
            }
            let ws = from_sources(vec![(p.clone(), text.clone())]);
            if ws.error_count() > 0 {
                continue;
            }
            let mut host = dfort_ide::host::Host::default();
            host.set_text(&p, &text, true, 1);
            let snap = host.snapshot();
            let analysis = dfort_analysis::facts::analyse(
                &ws.program,
                &dfort_analysis::facts::Request::default(),
                None,
            );
            let describe = |program: &dfort_ir::Program, a: &dfort_ide::analysis::Analysis| {
                let mut v: Vec<String> = program
                    .units
                    .iter()
                    .map(|u| {
                        let parent = u.parent.map(|x| program.unit(x).name.clone());
                        let active = a.activity.activity[u.id].as_ref().map(|act| {
                            let mut n: Vec<String> = act
                                .active_anywhere()
                                .ids()
                                .map(|i| u.symbols[i].name.clone())
                                .collect();
                            n.sort();
                            n
                        });
                        let records = a.tbr_of(u.id).map(|t| t.records.len());
                        format!(
                            "{} {:?} in {parent:?}: {active:?} tbr {records:?}",
                            u.name, u.kind
                        )
                    })
                    .collect();
                v.sort();
                v
            };
            assert_eq!(
                describe(&snap.program, snap.analysis()),
                describe(&ws.program, &analysis),
                "{}",
                p.display()
            );
            assert!(
                snap.diagnostics(&p)
                    .iter()
                    .all(|d| d.severity != dfort_syntax::Severity::Error),
                "{}: {:?}",
                p.display(),
                snap.diagnostics(&p)
            );
            compared += 1;
        }
    }
    assert!(compared >= 5, "only {compared} files with modules compared");
}

/// A snapshot is the linked program first; its analyses run at their
/// first read, from the previous snapshot's. Snapshots nobody asked
/// about chain (each analysed from the one before when it is read, the
/// oldest analysed when the chain grows long), and the last still ends
/// where an analysis from scratch does.
#[test]
fn analyses_run_at_their_first_read_and_chain_across_unread_snapshots() {
    use dfort_ide::host::Host;
    let text = "\
subroutine sq(x, y)
  real, intent(in) :: x
  real, intent(out) :: y
  y = x * x
end subroutine sq
subroutine top(u, v)
  real, intent(in) :: u
  real, intent(out) :: v
  real :: t
  call sq(u, t)
  v = t + 2.5
end subroutine top
";
    let path = PathBuf::from("/ws/lazy.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    let first = host.snapshot();
    assert!(!first.is_analysed(), "built without its analyses");
    assert_eq!(first.program.units_named("top").count(), 1);
    let edits = [
        ("2.5", "2.75"),
        ("2.75", "3.5"),
        ("y = x * x", "y = 3.0"),
        ("3.5", "4.5"),
        ("4.5", "5.5"),
        ("y = 3.0", "y = x + 1.0"),
        ("5.5", "6.5"),
    ];
    let mut snaps = vec![first];
    for (version, (old, new)) in edits.into_iter().enumerate() {
        let (snap, _) = edit_and_reload(&mut host, &path, old, new, version as i32 + 2);
        snaps.push(snap);
    }
    // The chain was cut: an early snapshot was analysed when a later one
    // was built, the last not yet.
    assert!(
        snaps.iter().any(|s| s.is_analysed()),
        "a snapshot analysed on the way"
    );
    let last = snaps.last().expect("snapshots");
    assert!(!last.is_analysed());
    let (_, scratch) = edit_and_reload(&mut host, &path, "6.5", "6.5", 20);
    assert_eq!(summary(last, &path), summary(&scratch, &path));
    assert!(last.is_analysed() && last.analysis_time().is_some());
    // Incremental from the one before: a constant in `top` recomputes it alone.
    assert_eq!(last.analysis().recomputed(), (1, 1));
}

/// The host re-analyses only the units whose inputs an edit changed (the
/// edited unit, callers whose callee summary changed, callees whose
/// calling context changed), everything after an edit of a module's
/// declarations, and always ends where an analysis from scratch does.
#[test]
fn edits_reanalyse_only_the_units_they_reach() {
    use dfort_ide::host::Host;
    let text = "module m
  implicit none
  real :: g
contains
  subroutine sq(x, y)
    real, intent(in) :: x
    real, intent(out) :: y
    y = x * x
  end subroutine sq
  subroutine other(a, b)
    real, intent(in) :: a
    real, intent(out) :: b
    b = sin(a) + 1.5
  end subroutine other
  subroutine top(u, v)
    real, intent(in) :: u
    real, intent(out) :: v
    real :: t
    call sq(u, t)
    v = t + 2.5
  end subroutine top
end module m
";
    let path = PathBuf::from("/ws/m.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    assert_eq!(host.snapshot().analysis().recomputed(), (3, 3));
    let active_in = |snap: &dfort_ide::host::Snapshot, unit: &str| {
        let u = snap.program.units_named(unit).next().expect("unit");
        let set = snap.analysis().activity.activity[u.id]
            .as_ref()
            .expect("analysed")
            .active_anywhere();
        let mut names: Vec<String> = set.ids().map(|i| u.symbols[i].name.clone()).collect();
        names.sort();
        names.join(",")
    };
    assert_eq!(active_in(&host.snapshot(), "top"), "t,u,v");
    // (old text, new text, units whose activity and TBR are recomputed)
    let steps: [(&str, &str, usize); 6] = [
        // A constant in `other`: nothing else reads it.
        ("sin(a) + 1.5", "sin(a) + 1.75", 1),
        // `sq` no longer passes x to y: its summary changes, so its caller
        // `top` is re-analysed too.
        ("y = x * x", "y = 3.0", 2),
        // `top` no longer uses t: `sq`'s calling context changes.
        ("v = t + 2.5", "v = u + 2.5", 2),
        // A module declaration: every unit links against it.
        ("real :: g\n", "real :: g, h\n", 3),
        // An unclosed IF while typing: `sq` keeps its header and
        // declarations (its statements are left out), so nothing else is
        // relinked; its summary changes (y now keeps its value), so its
        // caller is re-analysed, and again when the IF is removed.
        ("y = 3.0", "if (x > 0.0) then\n    y = 3.0", 2),
        ("if (x > 0.0) then\n    y = 3.0", "y = 3.0", 2),
    ];
    for (version, (old, new, expected)) in steps.into_iter().enumerate() {
        let (snap, scratch) = edit_and_reload(&mut host, &path, old, new, version as i32 + 2);
        assert_eq!(
            snap.analysis().recomputed(),
            (expected, expected),
            "after {old:?} -> {new:?}"
        );
        assert_eq!(
            summary(&snap, &path),
            summary(&scratch, &path),
            "after {old:?} -> {new:?}"
        );
    }
    assert_eq!(active_in(&host.snapshot(), "top"), "u,v");
}

/// A call's checkpoint reads its callee's decisions (what the callee's
/// adjoint reads): an edit of the callee that changes them without
/// re-analysing the caller still updates the caller's checkpoint, as an
/// analysis from scratch has it. (`sq`'s local array keeps the call in
/// joint mode, where the snapshot is.)
#[test]
fn a_callee_edit_updates_its_callers_call_checkpoint() {
    use dfort_ide::host::Host;
    let text = "subroutine sq(x, y, k)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  integer, intent(in) :: k
  real(8) :: w(1)
  y = x*x
end subroutine sq

subroutine top(u, v, n)
  implicit none
  real(8), intent(in) :: u
  real(8), intent(out) :: v
  integer, intent(inout) :: n
  real(8) :: t
  call sq(u, t, n)
  n = n + 1
  v = t*2.0d0
end subroutine top
";
    let path = PathBuf::from("/ws/c.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    let snapshot_of_call = |snap: &dfort_ide::host::Snapshot| -> Vec<String> {
        let [one] = &call_snapshots(snap, "top")[..] else {
            panic!("one call");
        };
        one.clone()
    };
    // `sq`'s adjoint does not read `k`.
    assert!(!snapshot_of_call(&host.snapshot()).contains(&"n".to_string()));
    // Now it does (its forward sweep evaluates `k > 0`), and `n` changes
    // after the call: the caller saves it.
    let (old, new) = (
        "  y = x*x\n",
        "  if (k > 0) then\n    y = x*x\n  else\n    y = 2.0d0*x*x\n  end if\n",
    );
    let (snap, scratch) = edit_and_reload(&mut host, &path, old, new, 2);
    assert!(snapshot_of_call(&scratch).contains(&"n".to_string()));
    assert_eq!(snapshot_of_call(&snap), snapshot_of_call(&scratch));
    assert_eq!(summary(&snap, &path), summary(&scratch, &path));
}

/// A call given more arguments than its callee has dummies is an error
/// after each edit that makes it so, and only then: the call graph lists
/// the overfull sites and an edit that keeps the calls patches the list.
#[test]
fn argument_count_errors_follow_edits_of_the_call() {
    use dfort_ide::host::Host;
    let text = "subroutine f(x, y)
  real, intent(in) :: x
  real, intent(out) :: y
  y = x
end subroutine f

subroutine top(a, b)
  real, intent(in) :: a
  real, intent(out) :: b
  call f(a, b)
end subroutine top
";
    let path = PathBuf::from("/ws/n.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    let counted = |snap: &dfort_ide::host::Snapshot| {
        (snap.diagnostics(&path).iter())
            .filter(|d| d.code == "argument-count")
            .count()
    };
    assert_eq!(counted(&host.snapshot()), 0);
    // (old, new, argument-count errors after the edit)
    let steps = [
        ("call f(a, b)", "call f(a, b, a)", 1),
        ("y = x", "y = 2.0 * x", 1),
        ("call f(a, b, a)", "call f(a, b)", 0),
        ("call f(a, b)", "call f(a, b, a, a)", 1),
        ("subroutine f(x, y)", "subroutine f(x, y, z, w)", 0),
    ];
    for (version, (old, new, errors)) in steps.into_iter().enumerate() {
        let (snap, scratch) = edit_and_reload(&mut host, &path, old, new, version as i32 + 2);
        assert_eq!(
            (counted(&snap), counted(&scratch)),
            (errors, errors),
            "after {old:?} -> {new:?}"
        );
        assert_eq!(
            summary(&snap, &path),
            summary(&scratch, &path),
            "after {old:?} -> {new:?}"
        );
    }
}

/// Whether a call runs split depends on its callee's locals: an edit that
/// gives the callee a local array, without re-analysing the caller, turns
/// the caller's call back to joint mode, as an analysis from scratch has
/// it (TBR's choice and the checkpoint alike).
#[test]
fn a_callee_edit_that_gives_it_a_local_array_makes_its_call_joint() {
    use dfort_ide::host::Host;
    let text = "subroutine sq(x, y)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8) :: t
  t = x*x
  y = t*x
end subroutine sq

subroutine top(u, v)
  implicit none
  real(8), intent(inout) :: u
  real(8), intent(out) :: v
  real(8) :: t
  call sq(u, t)
  u = 0.5d0*u
  v = t*u
end subroutine top
";
    let path = PathBuf::from("/ws/s.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    // (split, snapshot, what TBR records in `top`)
    let call_of_top = |snap: &dfort_ide::host::Snapshot| -> (bool, usize, usize) {
        let top = snap.program.units_named("top").next().expect("top");
        let d = snap.analysis().decisions_of(top.id).expect("decisions");
        let [(_, cp)] = d.calls.iter().collect::<Vec<_>>()[..] else {
            panic!("one call");
        };
        let t = snap.analysis().tbr_of(top.id).expect("tbr");
        assert_eq!(
            cp.split,
            t.split.len() == 1,
            "the checkpoint reads TBR's choice"
        );
        (cp.split, cp.snapshot.len(), t.records.len())
    };
    // Split: no snapshot; `u`, which `sq`'s reverse reads after the call,
    // is recorded where `top` overwrites it.
    assert_eq!(call_of_top(&host.snapshot()), (true, 0, 1));
    let (old, new) = (
        "  real(8) :: t\n  t = x*x\n  y = t*x\n",
        "  real(8) :: t(1)\n  t(1) = x*x\n  y = t(1)*x\n",
    );
    let (snap, scratch) = edit_and_reload(&mut host, &path, old, new, 2);
    // Joint: the snapshot saves `u`; TBR records nothing in `top`.
    assert_eq!(call_of_top(&scratch), (false, 1, 0));
    assert_eq!(call_of_top(&snap), call_of_top(&scratch));
}

/// Typing inside a line keeps the document's cut into chunks (the host
/// reuses it instead of scanning the whole text) only while the cut
/// cannot change: after every keystroke — plain text, or words that open,
/// close or divide a unit, at the start or the end of a line — the chunks
/// are those a host loaded with the same text from scratch cuts.
#[test]
fn typing_inside_lines_cuts_the_same_chunks_as_a_fresh_load() {
    use dfort_ide::host::{Host, TextChange};
    let cut = |snap: &dfort_ide::host::Snapshot, path: &std::path::Path| -> Vec<(u32, u32)> {
        let doc = snap.doc(path).expect("the document");
        doc.chunks
            .iter()
            .map(|(_, base, len)| (*base, *len))
            .collect()
    };
    let typed = [
        "x",
        " ",
        "&",
        "!",
        "(",
        "'",
        "end",
        "contains",
        ";",
        "module m",
        "end module",
        "subroutine s",
        "interface",
        "1",
    ];
    let mut edits = 0;
    for name in ["advection1d.f90", "multi_mod.f90", "shallow_water.f90"] {
        let mut text = std::fs::read_to_string(fixtures().join("free").join(name)).unwrap();
        let path = PathBuf::from(format!("/ws/{name}"));
        let mut host = Host::default();
        host.set_text(&path, &text, true, 1);
        let _ = host.snapshot();
        let lines = text.lines().count();
        for i in 0..lines {
            for at_end in [false, true] {
                let index = dfort_syntax::line_index::LineIndex::new(&text);
                let start = index.line_start(i as u32).unwrap() as usize;
                let line_len = text[start..].find('\n').unwrap_or(text.len() - start);
                let at = if at_end { start + line_len } else { start };
                let insert = typed[edits % typed.len()];
                edits += 1;
                host.edit(
                    &path,
                    &[TextChange {
                        range: Some(dfort_syntax::TextRange::new(at as u32, at as u32)),
                        text: insert.to_string(),
                    }],
                    edits as i32 + 1,
                );
                text = host.document(&path).unwrap().text.to_string();
                let incremental = host.snapshot();
                let mut fresh = Host::default();
                fresh.set_text(&path, &text, true, 1);
                assert_eq!(
                    cut(&incremental, &path),
                    cut(&fresh.snapshot(), &path),
                    "{name}: after typing {insert:?} on line {}",
                    i + 1
                );
            }
        }
    }
    assert!(edits > 100, "only {edits} edits");
}

/// The regions a checkpoint saves are remembered from one analysis to the
/// next for the units an edit leaves alone; an edit to a callee forgets
/// its own and its callers', so the caller saves the levels the edited
/// callee touches, as an analysis from scratch has it.
#[test]
fn a_callee_edit_updates_the_region_its_caller_saves() {
    use dfort_ide::host::Host;
    let text = "subroutine mix(bi, k, tr)
  implicit none
  integer, intent(in) :: bi, k
  real(8), intent(inout) :: tr(8, 4, 2)
  integer :: i
  real(8) :: w(8)
  do i = 1, 8
    w(i) = tr(i, k - 1, bi)
    tr(i, k, bi) = tr(i, k, bi)*w(i)
  end do
end subroutine mix

subroutine other(bi, k, tr)
  implicit none
  integer, intent(in) :: bi, k
  real(8), intent(inout) :: tr(8, 4, 2)
  tr(1, k, bi) = sin(tr(1, k, bi))
end subroutine other

subroutine top(tr, s)
  implicit none
  real(8), intent(inout) :: tr(8, 4, 2)
  real(8), intent(out) :: s
  integer :: k
  s = 0
  do k = 3, 4
    call mix(1, k, tr)
    call other(2, k, tr)
    s = s + tr(1, k, 1)**2 + tr(1, k, 2)**2
  end do
  tr = 2*tr
end subroutine top
";
    let path = PathBuf::from("/ws/levels.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    let saved =
        |snap: &dfort_ide::host::Snapshot| -> Vec<String> { call_snapshots(snap, "top").concat() };
    let before = saved(&host.snapshot());
    // (mix's local array keeps its calls joint: split mode carries only
    // scalar locals from the forward routine to the reverse one.)
    let (old, new) = ("= tr(i, k - 1, bi)", "= tr(i, k - 2, bi)");
    let (snap, scratch) = edit_and_reload(&mut host, &path, old, new, 2);
    assert_ne!(saved(&scratch), before, "the edit changes what is saved");
    assert_eq!(saved(&snap), saved(&scratch));
    assert_eq!(summary(&snap, &path), summary(&scratch, &path));
}

/// The arrays a unit references from its host's or a module's scope get
/// their symbols in the order the unit first references them, in a
/// relink after an edit as in a fresh link (they were added in a hash
/// map's order, which differs from one map to the next: an edit that
/// changed nothing of a unit but renumbered its symbols had the analyses
/// recompute everything that reads the unit).
#[test]
fn a_relink_numbers_imported_arrays_as_a_fresh_link() {
    use dfort_ide::host::Host;
    let user = "module mid
  use lower, only: a1, a2, a3, a4, a5, a6
  implicit none
contains
  subroutine setv(x)
    real(8), intent(in) :: x
    a5(1) = x * x
    a2(2) = a4(1) + a1(3)
    a6(1) = a3(2) * a5(1)
  end subroutine setv
end module mid
";
    let lower = "module lower
  implicit none
  real(8) :: a1(4), a2(4), a3(4), a4(4), a5(4), a6(4)
end module lower
";
    let symbols = |snap: &dfort_ide::host::Snapshot| -> Vec<String> {
        let unit = snap.program.units_named("setv").next().expect("setv");
        unit.symbols.iter().map(|s| s.name.clone()).collect()
    };
    // The user sorts before the module it uses, as in a model's tree.
    let (a, b) = (PathBuf::from("/ws/a.f90"), PathBuf::from("/ws/b.f90"));
    let mut host = Host::default();
    host.set_text(&a, user, true, 1);
    host.set_text(&b, lower, true, 1);
    let first = symbols(&host.snapshot());
    let arrays: Vec<&str> = first
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with('a'))
        .collect();
    assert_eq!(arrays, ["a5", "a2", "a4", "a1", "a6", "a3"], "{first:?}");
    for (k, (old, new)) in [("x * x", "x * x * 2"), ("x * x * 2", "x * x")]
        .into_iter()
        .enumerate()
    {
        let doc = host.document(&a).expect("open").text.to_string();
        let at = doc.find(old).expect("edit site") as u32;
        host.edit(
            &a,
            &[dfort_ide::host::TextChange {
                range: Some(dfort_syntax::TextRange::new(at, at + old.len() as u32)),
                text: new.to_string(),
            }],
            k as i32 + 2,
        );
        assert_eq!(symbols(&host.snapshot()), first, "after edit {}", k + 1);
    }
}

/// An edit that breaks a recursive cycle splits its call-graph component:
/// the callers that were inside it now give their callees a context from
/// outside (the incremental analyses gather it afresh, as a fresh load
/// does), and the reverse, an edit that closes a cycle.
#[test]
fn an_edit_that_breaks_or_closes_a_cycle_gives_the_contexts_of_a_fresh_load() {
    use dfort_ide::host::Host;
    let text = "subroutine r(x, y)
  real x, y
  call a(x, y)
end
subroutine a(p, q)
  real p, q, t
  t = p * 2.0
  call b(t, q)
end
subroutine b(u, v)
  real u, v
  call c(u, v)
end
subroutine c(s, w)
  real s, w
  w = w + s * s
  if (w < 0.0) call a(s, w)
end
";
    let path = PathBuf::from("/ws/cycle.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    let _ = host.snapshot();
    let c_active = |snap: &dfort_ide::host::Snapshot| {
        let u = snap.program.units_named("c").next().expect("c");
        snap.analysis().activity.activity[u.id]
            .as_ref()
            .map(|a| a.active_anywhere().ids::<dfort_ir::SymbolId>().count())
    };
    for (k, (old, new)) in [
        ("call a(s, w)", "w = w + 0.5"),
        ("w = w + 0.5", "call a(s, w)"),
    ]
    .into_iter()
    .enumerate()
    {
        let (snap, scratch) = edit_and_reload(&mut host, &path, old, new, k as i32 + 2);
        assert_ne!(c_active(&scratch), Some(0), "c is active in a fresh load");
        assert_eq!(
            summary(&snap, &path),
            summary(&scratch, &path),
            "after edit {}",
            k + 1
        );
    }
}

/// An edit inside a routine that keeps its calls keeps the call graph's
/// numbering, indexes and components (shared with the last snapshot's);
/// one that adds or removes a call builds the indexes again but keeps
/// the components unless the call closes or breaks a cycle. Each gives
/// what a fresh load gives.
#[test]
fn an_edit_keeping_the_calls_shares_the_call_graph_of_the_last_snapshot() {
    use dfort_ide::host::Host;
    let text = "subroutine top(x, y)
  real x, y, t
  t = x * 2.0
  call mid(t, y)
  y = y + f(t)
end
subroutine mid(u, v)
  real u, v
  v = u * u
  call leaf(v)
end
subroutine leaf(w)
  real w
  w = sin(w)
end
real function f(z)
  real z
  f = z * 3.0
end
";
    let path = PathBuf::from("/ws/graph.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    let mut last = host.snapshot();
    // (old, new, indexes shared, components shared)
    let edits = [
        // Inside statements, the calls kept: shared.
        ("t = x * 2.0", "t = x * 2.5 + 1.0", true, true),
        ("call mid(t, y)", "call mid(t + 1.0, y)", true, true),
        ("v = u * u", "v = u * u * 3.0", true, true),
        // A call added: the sites and indexes built again, the
        // components kept (the call closes no cycle).
        ("w = sin(w)", "w = sin(w)\n  call leaf2(w)", false, true),
        // A call removed, then one retargeted into a cycle, then removed
        // again: the last two change the components.
        ("  y = y + f(t)\n", "", false, true),
        ("call leaf(v)", "call top(v, u)", false, false),
        ("call top(v, u)", "v = v", false, false),
    ];
    for (k, (old, new, shared, components)) in edits.into_iter().enumerate() {
        let (snap, scratch) = edit_and_reload(&mut host, &path, old, new, k as i32 + 2);
        let (a, b) = (&last.program.call_graph, &snap.program.call_graph);
        assert_eq!(
            std::sync::Arc::ptr_eq(&a.calls_to, &b.calls_to),
            shared,
            "edit {}: {old} -> {new}",
            k + 1
        );
        assert_eq!(
            std::sync::Arc::ptr_eq(&a.sccs, &b.sccs),
            components,
            "edit {}: {old} -> {new}",
            k + 1
        );
        assert_eq!(
            summary(&snap, &path),
            summary(&scratch, &path),
            "after edit {}",
            k + 1
        );
        last = snap;
    }
}

/// An edit that keeps every document's links (the names, kinds and
/// nesting of its units) relinks only the edited document: the other
/// documents' views and the name index are the last snapshot's, and
/// the result is a fresh load's. An edit that changes what other
/// documents link against links everything again.
#[test]
fn an_edit_inside_a_routine_relinks_only_its_document() {
    use dfort_ide::host::Host;
    use std::sync::Arc;
    let files = [
        (
            "/ws/a_state.f90",
            "module state\n  real :: s\ncontains\n  subroutine bump(x)\n    real x\n    s = s + x\n  end subroutine\nend module\n",
        ),
        (
            "/ws/b_top.f90",
            "subroutine top(x, y)\n  use state\n  real x, y\n  call bump(x)\n  call mid(x, y)\n  y = y + s\nend\n",
        ),
        (
            "/ws/c_mid.f90",
            "subroutine mid(u, v)\n  real u, v\n  v = u * u\nend\nsubroutine other(w)\n  real w\n  w = 2.0 * w\nend\n",
        ),
    ];
    let mut host = Host::default();
    for (p, t) in files {
        host.set_text(std::path::Path::new(p), t, false, 1);
    }
    let mut last = host.snapshot();
    // (document, old, new, whether only that document is relinked)
    let edits = [
        ("/ws/c_mid.f90", "v = u * u", "v = u * u * 3.0", true),
        ("/ws/b_top.f90", "y = y + s", "y = y + 2.0 * s", true),
        // A routine renamed: others link against the name.
        (
            "/ws/c_mid.f90",
            "subroutine other(w)",
            "subroutine other2(w)",
            false,
        ),
        ("/ws/c_mid.f90", "w = 2.0 * w", "w = 4.0 * w", true),
        // A module procedure's statement: linked against by name.
        ("/ws/a_state.f90", "s = s + x", "s = s + 2.0 * x", true),
        // A module's specification part: its users read it whole.
        ("/ws/a_state.f90", "real :: s", "real :: s, s2", false),
    ];
    for (k, (path, old, new, only)) in edits.into_iter().enumerate() {
        replace_text(
            &mut host,
            std::path::Path::new(path),
            old,
            new,
            k as i32 + 2,
        );
        let snap = host.snapshot();
        let shared_views = snap
            .docs
            .iter()
            .filter(|(p, d)| Arc::ptr_eq(d, &last.docs[*p]))
            .count();
        assert_eq!(
            (
                Arc::ptr_eq(&snap.program.names, &last.program.names),
                shared_views
            ),
            (only, if only { 2 } else { 0 }),
            "edit {}: {old} -> {new}",
            k + 1
        );
        // Every chunk of every document has its place, and no other.
        let chunks: usize = snap.docs.values().map(|d| d.chunks.len()).sum();
        assert_eq!(snap.places.len(), chunks);
        for d in snap.docs.values() {
            for (f, base, _) in &d.chunks {
                let place = snap.places.get(f).expect("place");
                assert_eq!((&*place.path, place.base), (d.path.as_path(), *base));
            }
        }
        let mut fresh = Host::default();
        for d in snap.docs.values() {
            fresh.set_text(&d.path, &d.text, false, 1);
        }
        let scratch = fresh.snapshot();
        for d in snap.docs.values() {
            assert_eq!(
                summary(&snap, &d.path),
                summary(&scratch, &d.path),
                "{} after edit {}",
                d.path.display(),
                k + 1
            );
        }
        last = snap;
    }
}

/// The closure of the variables with a derivative starts from the last
/// snapshot's: grown when an edit only adds facts or rules (a routine's
/// body restored, a call added), with the facts it may take away and
/// what they derived retracted first when it takes one away; either way
/// it ends where an analysis from scratch does, module variables and
/// COMMON members included.
#[test]
fn an_edit_restarts_the_last_derivative_closure() {
    use dfort_analysis::derivatives::Restart;
    use dfort_ide::host::Host;
    let text = "module state
  real :: g
end module state
subroutine top(x, y)
  use state
  real x, y
  common /blk/ c, d
  real c, d
  c = x
  call mid(x, y)
  if (x > 0.0) then
    y = y + g * d
  end if
end
subroutine mid(u, v)
  use state
  real u, v, w
  common /blk/ c, d
  real c, d
  w = u * 2.0
  if (w > 1.0) then
    v = v + c * w
  end if
  d = v
  g = g + v
end
subroutine side(p, q)
  real p, q
  q = p
end
";
    let path = PathBuf::from("/ws/closure.f90");
    let mut host = Host::default();
    host.set_text(&path, text, true, 1);
    let _ = host.snapshot();
    // (old, new, how the closure starts again from the last one)
    let edits = [
        // `end if` deleted: `mid` loses its statements, so facts go.
        ("c * w\n  end if\n", "c * w\n", Restart::Retracted),
        // Restored: its statements, bindings and symbols come back.
        ("c * w\n", "c * w\n  end if\n", Restart::Grown),
        // A call added: a binding more.
        ("  q = p\n", "  q = p\n  call mid(p, q)\n", Restart::Grown),
        // And removed again.
        ("  call mid(p, q)\n", "", Restart::Retracted),
    ];
    for (k, (old, new, restart)) in edits.into_iter().enumerate() {
        let (snap, scratch) = edit_and_reload(&mut host, &path, old, new, k as i32 + 2);
        let carriers = &snap.analysis().carriers;
        assert_eq!(
            carriers.restart(),
            restart,
            "edit {}: {old:?} -> {new:?}",
            k + 1
        );
        assert_eq!(scratch.analysis().carriers.restart(), Restart::Afresh);
        assert_eq!(
            summary(&snap, &path),
            summary(&scratch, &path),
            "after edit {}",
            k + 1
        );
        // With `mid` whole, the members of /blk/ carry derivatives.
        let d = summary(&snap, &path).join("\n");
        assert_eq!(d.contains("\"blk\""), k > 0, "after edit {}:\n{d}", k + 1);
    }
}
