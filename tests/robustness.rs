//! Random, truncated and mangled Fortran through the whole front end, in
//! both source forms: nothing panics, and every diagnostic points inside
//! its file.

mod support;

use dfort_ide::{LoadOptions, Workspace};
use proptest::prelude::*;
use std::path::PathBuf;
use support::*;

fn check(text: String, ext: &str) {
    let len = text.len() as u32;
    let ws = Workspace::from_sources(
        vec![(PathBuf::from(format!("t.{ext}")), text)],
        LoadOptions::default(),
    );
    for d in &ws.diagnostics {
        assert!(d.range.end <= len && d.line >= 1 && d.col >= 1);
    }
    for u in &ws.program.units {
        assert!(u.span.range.end <= len);
        let _ = dfort_ir::dump::unit(&ws.program, u, &ws.files[0].lines);
    }
    analyze_all(&ws.program);
}

/// Every analysis from every procedure nobody calls: must not panic on
/// any IR, however broken the source was.
fn analyze_all(program: &dfort_ir::Program) {
    use dfort_analysis::{interproc, liveness, tbr};
    let roots = interproc::default_roots(program);
    let pa = interproc::analyze_program(program, &roots);
    for store_all in [false, true] {
        let tbrs = tbr::analyze_program(program, &pa, store_all);
        for (u, t) in program.units.iter().zip(&tbrs) {
            if let Some(t) = t {
                let _ = liveness::analyze(program, u, t, &Default::default());
            }
        }
    }
    // Code generation from every root: a derivative or refusals, never a
    // panic.
    for (root, ind, dep) in &roots {
        let _ = dfort_codegen::tangent::tangent(program, *root, ind, dep, "");
        for store_all in [false, true] {
            let _ = dfort_codegen::adjoint::adjoint(program, *root, ind, dep, store_all, "");
        }
    }
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
