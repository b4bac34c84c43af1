//! Code generation beyond the numbers (those are in `derivatives.rs`):
//! refusals name their construct, line and rule, callees and functions get
//! derivative routines of their own, and whatever dfort writes for the
//! fixtures compiles with `gfortran -Wall`. gfortran is required (CI
//! installs it).

use crate::support::*;
use std::path::Path;
use std::process::Command;

/// Runs gfortran in `dir`; returns what it wrote to stderr (its warnings).
fn gfortran(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("gfortran")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("gfortran runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "gfortran {args:?} failed:\n{stderr}");
    stderr
}

/// The 1-based line of each refusal.
fn refusal_lines(ws: &Loaded, refusals: &[dfort_codegen::Refusal]) -> Vec<u32> {
    refusals.iter().map(|rf| ws.line_of(rf.span)).collect()
}

#[test]
fn active_arguments_to_routines_without_source_are_refused_with_their_location() {
    let ws = fixture("papers/p000_fig1_fwd.f90");
    let u = unit(&ws, "tbr_fig1_fwd");
    for refusals in [
        tangent_named(&ws.program, &u.name, "").expect_err("refused"),
        adjoint_named(
            &ws.program,
            &u.name,
            dfort_codegen::adjoint::Recording::Inversion,
            "",
        )
        .expect_err("refused"),
    ] {
        assert!(refusal_lines(&ws, &refusals).contains(&15), "{refusals:?}");
        assert!(
            refusals.iter().any(|rf| rf.message.contains("pushreal8")),
            "{refusals:?}"
        );
    }
}

#[test]
fn internal_procedures_cannot_be_roots() {
    let (lines, msgs) = adjoint_refusals("kernels/internal_proc.f90", "smooth_pair");
    assert!(
        msgs.iter()
            .any(|m| m.contains("internal to `internal_proc`")),
        "{msgs:?}"
    );
    assert!(lines.contains(&21), "{lines:?}");
}

#[test]
fn a_callee_and_a_function_get_their_own_derivative_routines() {
    let ws = fixture("kernels/user_function.f90");
    let u = unit(&ws, "user_function");
    let adj = adjoint_named(
        &ws.program,
        &u.name,
        dfort_codegen::adjoint::Recording::Inversion,
        "",
    )
    .expect("written");
    assert!(
        adj.contains("subroutine phi_b(a, ab, b, bb, phib)"),
        "{adj}"
    );
    assert!(adj.contains("call phi_b("), "{adj}");
    let tan = tangent_named(&ws.program, &u.name, "").expect("written");
    assert!(
        tan.contains("subroutine phi_d(a, ad, b, bd, phi, phid)"),
        "{tan}"
    );
}

#[test]
fn a_split_callee_carries_only_what_it_sets_and_names_what_it_does_not_call() {
    // SELSUM runs in split mode under SELTOP: its forward routine leaves
    // its locals on the tape for the reverse routine, but no loop counter
    // it never set (its DO loop is replayed, not counted), and the reverse
    // routine, which calls no SELCTG, names it for gfortran -Wall.
    let ws = fixture("fixed/procedure_argument.f");
    let adj = adjoint_named(
        &ws.program,
        "seltop",
        dfort_codegen::adjoint::Recording::Inversion,
        "",
    )
    .expect("written");
    let routine = |name: &str| {
        let start = adj.find(&format!("subroutine {name}(")).expect(name);
        let end = adj[start..].find("end subroutine").unwrap();
        adj[start..start + end].to_string()
    };
    let fwd = routine("selsum_fwd");
    assert!(fwd.contains("call dfort_push(i)"), "{fwd}");
    assert!(!fwd.contains("dfort_count"), "{fwd}");
    let rev = routine("selsum_rev");
    assert!(!rev.contains("selctg("), "{rev}");
    assert!(
        rev.contains("procedure(logical(4)), pointer :: dfort_unread_selctg\n"),
        "{rev}"
    );
    assert!(rev.contains("  dfort_unread_selctg => selctg\n"), "{rev}");
}

#[test]
fn every_derivative_written_for_the_fixtures_compiles() {
    // Each procedure nobody calls, in every construct and paper fixture:
    // dfort either refuses (with a location) or writes code that gfortran
    // compiles with -Wall without a warning — but a -Wconversion warning
    // the original gives too (its statement is copied).
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dfort-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME).unwrap();
    gfortran(&dir, &["-c", "dfort_stack.f90", "-o", "stack.o"]);
    let (mut written, mut refused) = (0, 0);
    let mut warned = Vec::new();
    for sub in ["free", "fixed", "papers", "kernels", "interproc"] {
        for path in fortran_files(&fixtures().join(sub)) {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name == "bratu_73col.f" || name == "multi_use.f90" {
                continue;
            }
            let ws = load_one(&path);
            let copy = dir.join(&name);
            std::fs::copy(&path, &copy).unwrap();
            // The original's own -Wconversion warnings (a statement copied
            // into the derivative warns there too).
            let original_warnings =
                gfortran(&dir, &["-std=legacy", "-Wall", "-c", &name, "-o", "orig.o"]);
            let own_conversion =
                |l: &str| l.contains("-Wconversion") && original_warnings.lines().any(|o| o == l);
            for u in ws.program.units.iter().filter(|u| {
                u.kind == dfort_ir::UnitKind::Subroutine
                    && ws.program.call_graph.calls_to[u.id].is_empty()
            }) {
                let outputs = [
                    tangent_named(&ws.program, &u.name, ""),
                    adjoint_named(
                        &ws.program,
                        &u.name,
                        dfort_codegen::adjoint::Recording::Inversion,
                        "",
                    ),
                ];
                for out in outputs {
                    match out {
                        Ok(text) => {
                            std::fs::write(dir.join("deriv.f90"), &text).unwrap();
                            let stderr =
                                gfortran(&dir, &["-Wall", "-c", "deriv.f90", "-o", "deriv.o"]);
                            let warnings: Vec<&str> = stderr
                                .lines()
                                .filter(|l| l.starts_with("Warning:") && !own_conversion(l))
                                .collect();
                            if !warnings.is_empty() {
                                warned.push(format!("{name}/{}: {warnings:?}", u.name));
                            }
                            written += 1;
                        }
                        Err(refusals) => {
                            assert!(
                                !refusals.is_empty(),
                                "{name}/{}: refused without a reason",
                                u.name
                            );
                            refused += 1;
                        }
                    }
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(written >= 60, "only {written} derivatives written");
    assert!(
        warned.is_empty(),
        "gfortran -Wall warned on {} of {written}:\n{}",
        warned.len(),
        warned.join("\n")
    );
    println!("{written} derivatives written and compiled, {refused} refused with a location");
}

#[test]
fn the_adjoint_of_bratu_records_none_of_its_residuals() {
    // Paper 000, Appendix A: f(i-1), f(i), f(i+1) are never needed by the
    // adjoint, so TBR records none of them (store-all records them).
    let ws = fixture("papers/p000_bratu.f");
    let u = unit(&ws, "bratu");
    use dfort_codegen::adjoint::Recording;
    let gen = |recording| adjoint_named(&ws.program, &u.name, recording, "").expect("written");
    let tbr = gen(Recording::Inversion);
    assert!(!tbr.contains("call dfort_push(f("), "{tbr}");
    let all = gen(Recording::StoreAll);
    assert!(all.contains("call dfort_push(f("), "{all}");
}

/// Refusals of `root` in `file`, with the first file's 1-based lines.
fn adjoint_refusals(file: &str, root: &str) -> (Vec<u32>, Vec<String>) {
    let ws = fixture(file);
    let u = unit(&ws, root);
    let refusals = adjoint_named(
        &ws.program,
        &u.name,
        dfort_codegen::adjoint::Recording::Inversion,
        "",
    )
    .expect_err("refused");
    (
        refusal_lines(&ws, &refusals),
        refusals.into_iter().map(|r| r.message).collect(),
    )
}

#[test]
fn what_the_analyses_do_not_model_is_refused_not_differentiated() {
    // An active derived-type variable whose type gets no derivative type
    // (an allocatable component).
    let (lines, msgs) = adjoint_refusals("kernels/derived.f90", "mesh_scale");
    assert!(
        msgs.iter()
            .any(|m| m.contains("component `w` of `mesh` is allocatable")),
        "{msgs:?}"
    );
    assert!(!lines.is_empty());
    // A function reaching a module variable the root changes is followed
    // in an assignment (kernel gauss_weight), and read in an IF condition
    // (which carries no derivative and is not evaluated again: kernel
    // cond_fun).
    let ws = fixture("free/recursion.f90");
    let u = unit(&ws, "gauss_weight");
    assert!(adjoint_named(
        &ws.program,
        &u.name,
        dfort_codegen::adjoint::Recording::Inversion,
        ""
    )
    .is_ok());
    let src = std::fs::read_to_string(fixtures().join("free/recursion.f90")).expect("fixture");
    let in_condition = src.replace(
        "  w = 2.0_wp*adapt_quad(0.0_wp, xmax, 1.0e-8_wp, 20)",
        "  w = alpha\n  if (adapt_quad(0.0_wp, xmax, 1.0e-8_wp, 20) > 0.5_wp) w = 2.0_wp*w",
    );
    let (adjoint, _) = refusal_codes(&in_condition, "gauss_weight");
    assert!(adjoint.is_empty(), "{adjoint:?}");
    // An elemental function applied to a section whose bounds the
    // routine changes afterwards: its derivative's result could not be
    // allocated again in the reverse sweep, so both refuse it (the
    // derivative code used not to compile; with fixed bounds it is
    // differentiated, kernel elemental_function).
    let elemental = "module em
contains
  elemental function cube(a) result(r)
    real(8), intent(in) :: a
    real(8) :: r
    r = a * a * a
  end function
  subroutine use_cube(n, x, y)
    integer, intent(in) :: n
    real(8), intent(in) :: x(n)
    real(8), intent(out) :: y(n)
    integer :: k
    k = n - 1
    y = 0.0d0
    y(1:k) = cube(x(1:k)) + cube(x(1))
    k = 2
  end subroutine
end module
";
    let (adjoint, tangent) = refusal_codes(elemental, "use_cube");
    assert_eq!(adjoint, ["not-differentiable"]);
    assert_eq!(tangent, ["not-differentiable"]);
    // Inside a WHERE an elemental function runs only where the mask
    // holds: both refuse it. A non-elemental one whose argument the
    // construct assigns cannot be called before the construct: the
    // tangent refuses it, the adjoint calls it beside the assignment.
    let in_where = "module wm
contains
  elemental function cube(a) result(r)
    real(8), intent(in) :: a
    real(8) :: r
    r = a * a * a
  end function
  function sq(v) result(r)
    real(8), intent(in) :: v(:)
    real(8) :: r(size(v))
    r = v * v
  end function
  subroutine masked_cube(n, x, y)
    integer, intent(in) :: n
    real(8), intent(in) :: x(n)
    real(8), intent(inout) :: y(n)
    where (x > 0.0d0) y = cube(x)
  end subroutine
  subroutine masked_sq(n, x, y)
    integer, intent(in) :: n
    real(8), intent(in) :: x(n)
    real(8), intent(inout) :: y(n)
    where (x > 0.0d0)
      y = y * x
      y = sq(y)
    end where
  end subroutine
end module
";
    let (adjoint, tangent) = refusal_codes(in_where, "masked_cube");
    assert_eq!(adjoint, ["not-differentiable"]);
    assert_eq!(tangent, ["not-differentiable"]);
    let (adjoint, tangent) = refusal_codes(in_where, "masked_sq");
    assert!(adjoint.is_empty(), "{adjoint:?}");
    assert_eq!(tangent, ["not-differentiable"]);
    // An array expression as an elemental function's actual has no
    // derivative to pass element by element (fuzzer, seed 1127, case 8:
    // the tangent did not compile).
    let transposed = in_where.replace("where (x > 0.0d0) y = cube(x)", "y = cube(x(n:1:-1)) + y");
    let transposed = transposed.replace("subroutine masked_cube", "subroutine reversed_cube");
    let (adjoint, tangent) = refusal_codes(&transposed, "reversed_cube");
    assert!(
        adjoint.is_empty() && tangent.is_empty(),
        "{adjoint:?} {tangent:?}"
    );
    let transposed = transposed.replace("cube(x(n:1:-1))", "cube(2.0d0 * x)");
    let (adjoint, tangent) = refusal_codes(&transposed, "reversed_cube");
    assert_eq!(adjoint, ["derivative-argument"]);
    assert_eq!(tangent, ["derivative-argument"]);
}

/// The codes of the refusals of both generators for `root` of `src`
/// (roles from directives or intents), adjoint's first.
/// The workspace of `src`, written to `<root>.f90` in a fresh directory.
fn load_source(src: &str, root: &str) -> Loaded {
    let dir = Scratch::new(&format!("source-{root}"));
    let path = dir.join(format!("{root}.f90"));
    std::fs::write(&path, src).unwrap();
    load_one(&path)
}

/// The adjoint (with inversion) of `root` in `src`, with the roles its
/// intents give.
fn adjoint_text(src: &str, root: &str) -> String {
    let ws = load_source(src, root);
    let u = unit(&ws, root);
    adjoint_named(
        &ws.program,
        &u.name,
        dfort_codegen::adjoint::Recording::Inversion,
        "",
    )
    .expect("adjoint")
}

fn refusal_codes(src: &str, root: &str) -> (Vec<&'static str>, Vec<&'static str>) {
    let ws = load_source(src, root);
    assert!(ws.diagnostics().is_empty(), "{}", ws.render_diagnostics());
    let u = unit(&ws, root);
    let codes = |res: Result<String, Vec<dfort_codegen::Refusal>>| -> Vec<&'static str> {
        let mut c: Vec<_> = res
            .err()
            .unwrap_or_default()
            .iter()
            .map(|r| r.rule.code)
            .collect();
        c.dedup();
        c
    };
    // A root the request cannot use is refused before any generator.
    let problems = root_problems(&ws.program, &u.name);
    if !problems.is_empty() {
        return (problems.clone(), problems);
    }
    let adjoint = codes(adjoint_named(
        &ws.program,
        &u.name,
        dfort_codegen::adjoint::Recording::Inversion,
        "",
    ));
    let tangent = codes(tangent_named(&ws.program, &u.name, ""));
    (adjoint, tangent)
}

/// Issue 15: every refusal belongs to a rule of the registry; the
/// generators' own checks have rules of their own, the rest the general
/// `not-differentiable`.
#[test]
fn refusals_name_their_rule() {
    let program_root = "program sq
  real(8) :: x
  x = 2.0d0
  x = x*x
end program sq
";
    // A main program is no root: the request for it finds no procedure.
    let (adjoint, tangent) = refusal_codes(program_root, "sq");
    assert_eq!(
        (adjoint, tangent),
        (vec!["unknown-root"], vec!["unknown-root"])
    );

    let internal = "subroutine host(x, y)
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  call inner()
contains
  subroutine inner()
    y = x*x
  end subroutine inner
end subroutine host
";
    let (adjoint, tangent) = refusal_codes(internal, "inner");
    assert_eq!(
        (adjoint, tangent),
        (vec!["internal-root"], vec!["internal-root"])
    );

    let side_effect = "real(8) function twice(x)
  real(8), intent(inout) :: x
  x = 2.0d0*x
  twice = x
end function twice
subroutine use_twice(x, y)
  real(8), intent(inout) :: x
  real(8), intent(out) :: y
  real(8), external :: twice
  y = x
  if (twice(x) > 1.0d0) y = 2.0d0*y
end subroutine use_twice
";
    let (adjoint, tangent) = refusal_codes(side_effect, "use_twice");
    assert_eq!(adjoint, ["function-side-effect"]);
    assert_eq!(tangent, ["function-side-effect"]);

    let array_expression = "subroutine smooth(a, n)
  integer, intent(in) :: n
  real(8), intent(inout) :: a(n)
  a = 2.0d0*a
end subroutine smooth
subroutine top(a, y, n)
  integer, intent(in) :: n
  real(8), intent(in) :: a(n)
  real(8), intent(out) :: y
  call smooth(2.0d0*a, n)
  y = a(1)
end subroutine top
";
    let (adjoint, tangent) = refusal_codes(array_expression, "top");
    assert_eq!(adjoint, ["derivative-argument"]);
    assert_eq!(tangent, ["derivative-argument"]);

    // The adjoint replays counted loops from their bounds; the tangent
    // runs forward and has nothing to refuse.
    let bounds = "subroutine shrink(a, x, n)
  integer, intent(inout) :: n
  real(8), intent(inout) :: a(100), x
  integer :: i
  do i = 1, n
    n = n - 1
    a(i) = a(i)*x
  end do
end subroutine shrink
";
    let (adjoint, tangent) = refusal_codes(bounds, "shrink");
    assert_eq!(adjoint, ["bounds-change-inside"]);
    assert!(tangent.is_empty(), "{tangent:?}");

    // A character variable's length is not its value: writing the
    // characters of `line` leaves `len(line)` as it is (MITgcm's
    // `DO l = 1, LEN(ccLine)`), unless the length is deferred.
    let lengths = "subroutine dashes(a, x)
  real(8), intent(inout) :: a(100), x
  character(len=20) :: line
  integer :: l
  do l = 1, len(line)
    line(l:l) = '-'
    a(l) = a(l)*x
  end do
end subroutine dashes
subroutine grows(a, x)
  real(8), intent(inout) :: a(100), x
  character(len=:), allocatable :: line
  integer :: l
  line = '-'
  do l = 1, len(line)
    if (l < 50) line = line // '-'
    a(l) = a(l)*x
  end do
end subroutine grows
";
    let (adjoint, _) = refusal_codes(lengths, "dashes");
    assert!(adjoint.is_empty(), "{adjoint:?}");
    let (adjoint, _) = refusal_codes(lengths, "grows");
    assert_eq!(adjoint, ["bounds-change-inside"]);

    // Calls change a bound through what their callees write, INTENT or
    // not: `n` passed to a callee without INTENT that only reads it, or
    // a COMMON bound a callee changes.
    let through_calls = "subroutine rd(n, a)
  integer n
  real(8) a(*)
  a(1) = a(1) + dble(n)
end subroutine rd
subroutine wr(a)
  integer m
  common /cb/ m
  real(8) a(*)
  a(1) = 2.0d0*a(1)
  m = m - 1
end subroutine wr
subroutine reads_n(a, n)
  integer n, i
  real(8) a(100)
  do i = 1, n
    call rd(n, a(i))
    a(i) = a(i)*a(i)
  end do
end subroutine reads_n
subroutine shrinks_m(a)
  integer m, i
  common /cb/ m
  real(8) a(100)
  do i = 1, m
    call wr(a(i))
    a(i) = a(i)*a(i)
  end do
end subroutine shrinks_m
";
    let (adjoint, _) = refusal_codes(through_calls, "reads_n");
    assert!(adjoint.is_empty(), "{adjoint:?}");
    let (adjoint, _) = refusal_codes(through_calls, "shrinks_m");
    assert_eq!(adjoint, ["bounds-change-inside"]);

    let no_source = "subroutine ext(x, y)
  real(8), intent(in) :: x
  real(8), intent(inout) :: y
  real(8) :: u
  external :: scale
  call scale(2.0d0*x, u)
  y = y + u
end subroutine ext
";
    let (adjoint, tangent) = refusal_codes(no_source, "ext");
    assert_eq!(adjoint, ["no-source"]);
    assert_eq!(tangent, ["no-source"]);

    // A READ that may jump and defines an index its block's adjoint reads.
    let read_end = "subroutine cz(a, x)
  real(8), intent(inout) :: a(100), x
  integer :: k
  k = 2
  a(k) = a(k)*x
  read(11, *, end=20) k
20 a(k) = a(k)*x
end subroutine cz
";
    let (adjoint, _) = refusal_codes(read_end, "cz");
    assert_eq!(adjoint, ["not-differentiable"]);

    for rule in [
        "root-not-subroutine",
        "internal-root",
        "function-side-effect",
        "derivative-argument",
        "bounds-change-inside",
        "no-source",
        "not-differentiable",
    ] {
        assert!(
            dfort_syntax::rules::rule(rule).is_some(),
            "{rule} is not registered"
        );
    }
}

#[test]
fn the_limits_of_the_analyses_have_their_rules() {
    let codes = |file: &str, root: &str| -> Vec<&'static str> {
        let ws = fixture(file);
        let u = unit(&ws, root);
        adjoint_named(
            &ws.program,
            &u.name,
            dfort_codegen::adjoint::Recording::Inversion,
            "",
        )
        .expect_err("refused")
        .iter()
        .map(|r| r.rule.code)
        .collect()
    };
    assert!(codes("kernels/derived.f90", "mesh_scale").contains(&"active-derived-type"));
}

/// Fuzzer-found (seed 1128, case 5363): a function reading a global the
/// root changes, referenced from an internal procedure that activity saw
/// as passive, gave derivatives without the global's. Function
/// references in assignments now run as calls for the analyses (kernel
/// `gr`, checked numerically); referenced anywhere else — here in a
/// CALL's actual argument — such a function is refused wherever the root
/// reaches it.
#[test]
fn globals_read_by_functions_are_followed_in_assignments_and_refused_elsewhere() {
    let src = std::fs::read_to_string(fixtures().join("kernels/function_global_internal.f90"))
        .expect("fixture");
    assert_eq!(refusal_codes(&src, "gr"), (vec![], vec![]));
    let elsewhere = src
        .replace("    r1 = g3(2.0d0)", "    call set(g3(2.0d0), r1)")
        .replace(
            "end subroutine gr",
            "end subroutine gr\nsubroutine set(v, w)\n  real(8), intent(in) :: v\n  real(8), intent(out) :: w\n  w = v\nend subroutine set",
        );
    let (adjoint, tangent) = refusal_codes(&elsewhere, "gr");
    assert_eq!(adjoint, ["global-through-function"]);
    assert_eq!(tangent, ["global-through-function"]);
    // In an IF condition a function may read what the root changes (the
    // arm taken is pushed; kernel `cond_fun`, checked numerically), but
    // not write it.
    let src = std::fs::read_to_string(fixtures().join("kernels/function_in_condition.f90"))
        .expect("fixture");
    assert_eq!(refusal_codes(&src, "cond_fun"), (vec![], vec![]));
    let writes = src.replace(
        "  above = g(i) > 0.5d0",
        "  above = g(i) > 0.5d0\n  g(i) = 0.5d0*g(i)",
    );
    let (adjoint, tangent) = refusal_codes(&writes, "cond_fun");
    assert_eq!(adjoint, ["global-through-function"]);
    assert_eq!(tangent, ["global-through-function"]);
}

/// Fuzzer-found (seed 1134, case 207): the adjoint of `sum(eoshift(v, 2,
/// s))` with `v` passive broadcast the scalar adjoint as `adj + 0*v`,
/// reading `v`, which the forward sweep (rightly) never computes: a
/// signalling NaN there trapped. The broadcast reads `v`'s shape only,
/// and of `sin(v)` the shape of `v` (seed 1136, case 7805).
#[test]
fn broadcast_adjoints_read_only_the_shape_of_passive_arrays() {
    let src = "subroutine eb(n, s)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: s
  real(8) :: t2(n, 2)
  t2 = 0.5d0
  s = sum(eoshift(t2(1, :), 2, s)) + s
  s = sum(eoshift(sin(t2(2, :)), 1, s))
end subroutine eb
";
    let text = adjoint_text(src, "eb");
    let reverse = text
        .split("! reverse sweep")
        .nth(1)
        .expect("a reverse sweep");
    assert!(reverse.contains("eoshift"), "{text}");
    assert!(!reverse.contains("* (t2(1, :))"), "{text}");
    // Seed 1136, case 7805: nor sin(t2(2, :)) for its shape.
    assert!(reverse.contains("size(t2(2, :))"), "{text}");
    assert!(!reverse.contains("sin(t2"), "{text}");
    assert!(
        !text.contains("t2 = 0.5d0"),
        "the forward sweep computes t2: {text}"
    );
}

/// Fuzzer-found (seed 1136, case 7686): `t2(1, :) = matmul(t2, t1)` with
/// `t2` passive before it (its adjoint dies at `t2 = 0.75d0`) accumulated
/// the outer product into `t2b` column by column anyway, reading `t1`,
/// which the forward sweep does not compute for it: a signalling NaN
/// there trapped. The matrix gets an adjoint only where one flows.
#[test]
fn matmul_gives_no_adjoint_to_a_matrix_no_derivative_flows_into() {
    let src = "subroutine mm(n, x, f)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(out) :: f
  real(8) :: t1(n), t2(n, 2)
  t1 = x
  t2 = 0.75d0
  t2(1, :) = matmul(t2, t1)
  f = t2(1, 1)
end subroutine mm
";
    let text = adjoint_text(src, "mm");
    let reverse = text
        .split("! reverse sweep")
        .nth(1)
        .expect("a reverse sweep");
    assert!(reverse.contains("matmul(transpose"), "{text}");
    assert!(!reverse.contains("t1(dfort_j)"), "{text}");
}

#[test]
fn io_statements_run_in_the_derivatives_and_read_resets_derivatives() {
    let src = "subroutine rd(x, y)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8) :: t
  character(len=8) :: line
  t = x*x
  y = t*x
  write(line, '(f8.3)') 1.5d0
  read(line, *) t
  y = y + t*x
  print 10, y
10 format('y =', &
     & es12.4)
end subroutine rd
";
    let text = adjoint_text(src, "rd");
    let (forward, reverse) = text.split_once("! reverse sweep").expect("a reverse sweep");
    assert!(forward.contains("write(line, '(f8.3)') 1.5d0"), "{text}");
    assert!(
        forward.contains("call dfort_push(t)\n  read(line, *) t"),
        "{text}"
    );
    assert!(forward.contains("print 10, y"), "{text}");
    assert!(text.contains("10 format('y =', es12.4)"), "{text}");
    // The READ cuts t's adjoint, then restores the t that y = t*x read.
    let reset = reverse.find("tb = 0.0d0").expect("t's adjoint reset");
    let pop = reverse.find("call dfort_pop(t)").expect("t restored");
    assert!(reset < pop, "{text}");
}

#[test]
fn io_branches_are_reversed_by_blocks_in_the_adjoint() {
    let io = "subroutine rb(x, y)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8) :: t
  t = x
  y = t*t
  read(11, *, end=20) t
20 y = y + t*x
end subroutine rb
";
    // The tangent keeps the jump; the adjoint reverses the unit by basic
    // blocks: the READ's block is recorded after the `t` it overwrites is
    // pushed, and before it runs (it may jump).
    assert_eq!(refusal_codes(io, "rb"), (vec![], vec![]));
    let text = adjoint_text(io, "rb");
    let (forward, _) = text.split_once("! reverse sweep").expect("a reverse sweep");
    let push = forward.find("call dfort_push(t)").expect("t pushed");
    let read = forward.find("read(11, *, end=20) t").expect("the READ");
    let block = forward[push..read].matches("call dfort_push(").count();
    assert_eq!(block, 2, "{text}");
}

#[test]
fn module_allocatables_allocated_before_the_root_get_derivatives_of_their_shape() {
    module_array_allocated_before_the_root("allocatable", "allocated");
}

#[test]
fn module_pointers_associated_before_the_root_get_derivatives_of_their_shape() {
    module_array_allocated_before_the_root("pointer", "associated");
}

/// The caller allocates the module array (`attribute`: allocatable or
/// pointer; `status`: the intrinsic that tells); the root's tangent and
/// adjoint give its derivative the array's shape on entry (and keep it
/// between calls: it is global state, like the array). Checked by the
/// dot-product test, twice.
fn module_array_allocated_before_the_root(attribute: &str, status: &str) {
    let src = "module fld
  implicit none
  real(8), ATTRIBUTE :: u(:)
contains
  subroutine ma(n, x, y)
    integer, intent(in) :: n
    real(8), intent(in) :: x(n)
    real(8), intent(out) :: y
    u = u*x + sin(u)
    y = sum(u**2)
  end subroutine ma
end module fld
"
    .replace("ATTRIBUTE", attribute);
    let src = src.as_str();
    let ws = load_source(src, "ma");
    let u = unit(&ws, "ma");
    let tangent = tangent_named(&ws.program, &u.name, "").expect("tangent");
    let adjoint = adjoint_text(src, "ma");
    assert!(tangent.contains("allocate(ud, mold=u)"), "{tangent}");
    assert!(adjoint.contains("call dfort_shape_fld()"), "{adjoint}");
    let dir = std::env::temp_dir().join(format!("dfort-module-{attribute}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME).unwrap();
    std::fs::write(dir.join("fld.f90"), src).unwrap();
    std::fs::write(dir.join("fld_d.f90"), &tangent).unwrap();
    std::fs::write(dir.join("fld_b.f90"), &adjoint).unwrap();
    std::fs::write(
        dir.join("drive.f90"),
        "program drive
  use fld
  use fld_d, only: ma_d, ud
  use fld_b, only: ma_b, ub
  implicit none
  integer, parameter :: n = 3
  real(8) :: x(n), xd(n), xb(n), y, yd, yb, u0(n)
  integer :: rep
  x = [0.3d0, -1.2d0, 0.7d0]
  xd = [0.5d0, 0.25d0, -1.0d0]
  u0 = [1.1d0, 0.4d0, -0.6d0]
  allocate(u(n))
  do rep = 1, 2
    u = u0
    if (STATUS(ud)) ud = 0.0d0
    call ma_d(n, x, xd, y, yd)
    u = u0
    xb = 0.0d0
    yb = 1.0d0
    call ma_b(n, x, xb, y, yb)
    if (abs(yd - sum(xd*xb)) > 1d-12*abs(yd)) stop 1
    print '(2es24.16)', yd, sum(xd*xb)
  end do
end program drive
"
        .replace("STATUS", status),
    )
    .unwrap();
    for f in ["dfort_stack", "fld", "fld_d", "fld_b", "drive"] {
        gfortran(&dir, &["-fcheck=all", "-c", &format!("{f}.f90")]);
    }
    gfortran(
        &dir,
        &[
            "-o",
            "drive",
            "dfort_stack.o",
            "fld.o",
            "fld_d.o",
            "fld_b.o",
            "drive.o",
        ],
    );
    let out = Command::new(dir.join("drive")).output().expect("runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 2, "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn saved_locals_keep_their_initial_value_and_their_derivatives_start_at_zero() {
    // Seed 1139, cases 301 and 1081: the derivative of an initialised
    // (so saved) local, passed where a function differentiates its
    // argument, was declared without a value and read undefined.
    let src = "subroutine sv(x, y)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8) :: c = 2.0d0
  real(8) :: w(2)
  data w /0.5d0, 1.5d0/
  y = g(c, x) + g(x, w(2))
contains
  real(8) function g(u, v)
    real(8), intent(in) :: u, v
    g = u*v
  end function g
end subroutine sv
";
    let ws = load_source(src, "sv");
    let u = unit(&ws, "sv");
    let text = tangent_named(&ws.program, &u.name, "").expect("tangent");
    assert!(text.contains("real(8) :: c = 2.0d0\n"), "{text}");
    assert!(text.contains("real(8) :: cd = 0.0d0\n"), "{text}");
    assert!(text.contains("data w /0.5d0, 1.5d0/"), "{text}");
}

#[test]
fn quotients_differentiate_without_squaring_the_denominator() {
    // Seed 1140, case 759: -a/b**2 overflowed (and trapped) for a b near
    // 1e160 where the program's a/b did not.
    let src = "subroutine q(a, b, y)
  implicit none
  real(8), intent(in) :: a, b
  real(8), intent(out) :: y
  y = a/b
end subroutine q
";
    let text = adjoint_text(src, "q");
    assert!(text.contains("yb * (a / b / b)"), "{text}");
    assert!(!text.contains("**2"), "{text}");
}

/// Issue 45: a tangent routine keeps its own copy of its procedure's
/// SAVE'd locals. A reference that would run the original procedure —
/// here in a condition, which is not hoisted — would change the
/// original's copy instead, and the two would part: the tangent is
/// refused there. The adjoint shares the state in a module and runs a
/// copy of every procedure that changes it, the one with the condition
/// included: nothing is refused (`counter` of the fixture, checked
/// numerically by the kernels' test).
#[test]
fn a_reference_that_would_run_the_original_of_a_procedure_with_saved_state_is_refused() {
    let src = std::fs::read_to_string(fixtures().join("kernels/saved_state.f90")).expect("fixture");
    assert_eq!(refusal_codes(&src, "counter"), (vec![], vec![]));
    let in_condition = src.replace(
        "  t = scaled(1d0, .false.)",
        "  if (scaled(1d0, .false.) > 5d0) t = 1d0",
    );
    assert_ne!(in_condition, src);
    assert_eq!(
        refusal_codes(&in_condition, "counter"),
        (vec![], vec!["saved-state"])
    );
}

/// Issue 39 (item 2, first part): what dfort refuses before writing any
/// code is a fact of the analyses (`ProgramFacts::refusals`), with its
/// rule and line, and the generators report that list as it is — here the
/// adjoint's SAVE'd state changed in a loop checkpointed with
/// binomial-ckp and the tangent's reference in a condition, and nothing
/// else.
#[test]
fn refusals_decided_before_generating_are_facts_the_generators_report() {
    use dfort_analysis::refusals::Derivative;
    let src = std::fs::read_to_string(fixtures().join("kernels/saved_state.f90")).expect("fixture");
    let in_condition = src
        .replace(
            "  t = scaled(1d0, .false.)",
            "  if (scaled(1d0, .false.) > 5d0) t = 1d0",
        )
        .replace(
            "  do i = 1, n\n    y(i) = scaled(",
            "  !$ad binomial-ckp(2)\n  do i = 1, n\n    y(i) = scaled(",
        );
    assert_eq!(in_condition.matches("binomial-ckp").count(), 1);
    let ws = load_source(&in_condition, "counter");
    let (facts, root) = root_request(
        &ws.program,
        "counter",
        None,
        dfort_analysis::decisions::Recording::Inversion,
    );
    let place = |r: &dfort_codegen::Refusal| (r.rule.code, ws.line_of(r.span));
    let listed = |d| {
        facts
            .refusals(root, d)
            .iter()
            .map(place)
            .collect::<Vec<_>>()
    };
    let reported = |r: Result<String, Vec<dfort_codegen::Refusal>>| {
        r.err()
            .unwrap_or_default()
            .iter()
            .map(place)
            .collect::<Vec<_>>()
    };
    let adjoint = listed(Derivative::Adjoint);
    let tangent = listed(Derivative::Tangent);
    assert!(
        !adjoint.is_empty() && !tangent.is_empty(),
        "{adjoint:?} {tangent:?}"
    );
    assert!(adjoint
        .iter()
        .chain(&tangent)
        .all(|(code, _)| *code == "saved-state"));
    assert_ne!(adjoint, tangent, "the declaration, then the reference");
    assert_eq!(
        reported(dfort_codegen::adjoint::adjoint_of(&facts, root, "").map(|(t, _)| t)),
        adjoint
    );
    assert_eq!(
        reported(dfort_codegen::tangent::tangent_of(&facts, root, "")),
        tangent
    );

    // Statements the adjoint has no reversal for: a READ with END= that
    // defines an index its basic block's adjoint reads, a DO loop whose bound changes inside
    // it, an allocation its caller sees, an association the tape cannot
    // hold, a call whose checkpoint it cannot hold; the tangent runs them.
    let jumpy = "subroutine jumpy(a, x)
  real(8), intent(inout) :: a(100), x
  integer :: k
  k = 2
  a(k) = a(k)*x
  read (5, *, end=10) k
10 continue
  a(k) = a(k)*x
end subroutine jumpy
";
    let shrink = "subroutine shrink(a, x, n)
  integer, intent(inout) :: n
  real(8), intent(inout) :: a(100), x
  integer :: i
  do i = 1, n
    n = n - 1
    a(i) = a(i)*x
  end do
end subroutine shrink
";
    // An allocation the root's caller sees (of an allocatable dummy).
    let grow = "subroutine grow(a, x)
  real(8), allocatable, intent(inout) :: a(:)
  real(8), intent(in) :: x
  allocate(a(3))
  a = x
end subroutine grow
";
    // A pointer association the tape cannot hold (integer(8) data).
    let point8 = "subroutine point8(a, x, k, p)
  real(8), intent(inout) :: a(3)
  real(8), intent(in) :: x
  integer(8), target, intent(in) :: k(3)
  integer(8), pointer :: p(:)
  p => k
  a(p(1)) = a(p(1))*x
end subroutine point8
";
    // Values recorded (every overwritten one: --no-tbr) that the tape
    // cannot hold (real(16)).
    let quad = "subroutine quad(x, y)
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(16) :: q
  q = x
  q = sin(q)*q
  y = q
end subroutine quad
";
    // A call's checkpoint the tape cannot hold: an assumed-size array the
    // callee touches where dfort finds no bound.
    let outer = "subroutine outer(a, n, x)
  integer, intent(in) :: n
  real(8), intent(inout) :: a(*)
  real(8), intent(in) :: x
  call inner(a, n, x)
  a(1) = a(1)*x
end subroutine outer

subroutine inner(b, n, x)
  integer, intent(in) :: n
  real(8), intent(inout) :: b(*)
  real(8), intent(in) :: x
  integer :: i, k(2)
  k(1) = n
  do i = 1, k(1)
    b(i) = b(i)*b(i)*x
  end do
end subroutine inner
";
    use dfort_analysis::decisions::Recording;
    for (src, root_name, recording, expected) in [
        (
            jumpy,
            "jumpy",
            Recording::Inversion,
            vec![("not-differentiable", 6)],
        ),
        (
            shrink,
            "shrink",
            Recording::Inversion,
            vec![("bounds-change-inside", 5)],
        ),
        (
            grow,
            "grow",
            Recording::Inversion,
            vec![("not-differentiable", 4)],
        ),
        (
            point8,
            "point8",
            Recording::Inversion,
            vec![("not-differentiable", 6)],
        ),
        (
            outer,
            "outer",
            Recording::Inversion,
            vec![("not-differentiable", 5)],
        ),
        (
            quad,
            "quad",
            Recording::StoreAll,
            vec![("not-differentiable", 5), ("not-differentiable", 6)],
        ),
    ] {
        let ws = load_source(src, root_name);
        let (facts, root) = root_request(&ws.program, root_name, None, recording);
        let place = |r: &dfort_codegen::Refusal| (r.rule.code, ws.line_of(r.span));
        let adjoint: Vec<_> = facts
            .refusals(root, Derivative::Adjoint)
            .iter()
            .map(place)
            .collect();
        assert_eq!(adjoint, expected);
        assert!(facts.refusals(root, Derivative::Tangent).is_empty());
        let reported = dfort_codegen::adjoint::adjoint_of(&facts, root, "")
            .err()
            .unwrap_or_default();
        assert_eq!(reported.iter().map(place).collect::<Vec<_>>(), adjoint);
        assert!(dfort_codegen::tangent::tangent_of(&facts, root, "").is_ok());
    }
}

/// Issue 39 (item 2): on every fixture of the paper transcriptions, the
/// constructs and the kernels, in the three recording modes, each
/// procedure nobody calls taken as a root, what the generators refuse is
/// exactly the list the facts decide before generating, with each
/// refusal's rule, place and sentence: the generators find nothing more
/// while writing. The list of every root's refusals is a snapshot, so
/// that the facts refusing more (or less) than before shows as a change.
#[test]
fn the_generators_refuse_what_the_facts_decide() {
    use dfort_analysis::refusals::Derivative;
    let (mut roots, mut listed_total) = (0, 0);
    // Every root's refusals, by rule and line: a refusal that appears or
    // goes away (the facts refusing what the generators would write) is a
    // change of this snapshot.
    let mut summary = Vec::new();
    for dir in ["papers", "free", "fixed", "kernels"] {
        for path in fortran_files(&fixtures().join(dir)) {
            let ws = load_one(&path);
            if ws.error_count() > 0 {
                continue;
            }
            for recording in [
                dfort_analysis::decisions::Recording::Inversion,
                dfort_analysis::decisions::Recording::Tbr,
                dfort_analysis::decisions::Recording::StoreAll,
            ] {
                let request = dfort_analysis::facts::Request {
                    recording,
                    ..Default::default()
                };
                let facts = dfort_analysis::facts::analyse(&ws.program, &request, None);
                for (root, _) in &facts.roots {
                    roots += 1;
                    let place =
                        |r: &dfort_codegen::Refusal| (r.rule.code, r.span, r.message.clone());
                    for d in [Derivative::Adjoint, Derivative::Tangent] {
                        let listed: Vec<_> = facts.refusals(*root, d).iter().map(place).collect();
                        let generated = match d {
                            Derivative::Adjoint => {
                                dfort_codegen::adjoint::adjoint_of(&facts, *root, "")
                                    .map(|(t, _)| t)
                            }
                            Derivative::Tangent => {
                                dfort_codegen::tangent::tangent_of(&facts, *root, "")
                            }
                        };
                        let reported: Vec<_> = generated
                            .err()
                            .unwrap_or_default()
                            .iter()
                            .map(place)
                            .collect();
                        let name = &ws.program.unit(*root).name;
                        for l in &listed {
                            assert!(
                                reported.contains(l),
                                "{}: {name} ({d:?}): {l:?} not reported: {reported:?}",
                                path.display()
                            );
                        }
                        for r in &reported {
                            assert!(
                                listed.contains(r),
                                "{}: {name} ({d:?}): {r:?} refused while generating, not decided by the facts",
                                path.display()
                            );
                        }
                        listed_total += listed.len();
                        if !listed.is_empty() {
                            let rel = path.strip_prefix(fixtures()).unwrap_or(&path);
                            let rules: Vec<String> = listed
                                .iter()
                                .map(|(code, span, _)| format!("{code}@{}", ws.line_of(*span)))
                                .collect();
                            summary.push(format!(
                                "{} {name} {recording:?} {d:?}: {}",
                                rel.display(),
                                rules.join(" ")
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(roots > 200, "only {roots} roots");
    assert!(
        listed_total > 0,
        "no fixture has a refusal decided before generating"
    );
    println!("{roots} roots, {listed_total} refusals decided before generating");
    insta::assert_snapshot!(summary.join("\n"));
}

/// Issue 39 (item 2): the refusals the generators used to find only
/// while writing — an elemental function under a WHERE mask, a function
/// reference in a call's actual that cannot be run as a call of its own
/// (fuzzer-found: seed 55055, case 18), a reduction of an expression, an
/// array expression passed to a procedure that differentiates it — are
/// decided by the facts, with their rule and line, for the derivatives
/// that refuse them, and are what the generators refuse.
#[test]
fn refusals_of_references_calls_and_forms_are_facts() {
    use dfort_analysis::decisions::Recording;
    use dfort_analysis::refusals::Derivative;
    let masked = "module wm
contains
  subroutine masked(n, x, y)
    integer, intent(in) :: n
    real(8), intent(in) :: x(n)
    real(8), intent(inout) :: y(n)
    where (x > 0.0d0)
      y = sq(x)
    end where
  end subroutine masked
  elemental function sq(a) result(r)
    real(8), intent(in) :: a
    real(8) :: r
    r = a*a
  end function sq
end module wm
";
    let by_value = "function f1(u) result(r)
  real(8), intent(in) :: u
  real(8) :: r
  r = u*u
end function f1
subroutine q(a, b)
  real(8), intent(in) :: a
  real(8), intent(inout) :: b
  b = b + a
end subroutine q
subroutine byval(x, y)
  real(8), intent(in) :: x
  real(8), intent(inout) :: y
  real(8), external :: f1
  call q(f1(x), y)
end subroutine byval
";
    let reduction = "subroutine peak(n, v, y)
  integer, intent(in) :: n
  real(8), intent(in) :: v(n)
  real(8), intent(out) :: y
  y = 2.0d0 * maxval(abs(v))
end subroutine peak
";
    let expression = "subroutine scale(n, a, b)
  integer, intent(in) :: n
  real(8), intent(in) :: a(n)
  real(8), intent(inout) :: b(n)
  b = b + 2.0d0 * a
end subroutine scale
subroutine twice(n, x, y)
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(inout) :: y(n)
  call scale(n, 3.0d0 * x, y)
end subroutine twice
";
    // Fuzzer-found (seed 4343, case 5570): a derived-type value that is
    // not a data reference (there a defined operator's result, whose
    // hoisting was refused) assigned where derivatives flow; only the
    // generators said so.
    let derived_value = "module pt
  implicit none
  type p2
    real(8) :: a, b
  end type p2
end module pt
subroutine pick(x, y, s)
  use pt
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8), intent(in) :: s
  type(p2) :: u, v
  u%a = x
  u%b = 2 * x
  v%a = 1
  v%b = 3 * x
  v = merge(u, v, s > 0)
  y = v%a + v%b
end subroutine pick
";
    let in_where = "user function references inside WHERE are not differentiated yet";
    for (src, root, adjoint, tangent, said) in [
        (
            derived_value,
            "pick",
            vec![("not-differentiable", 18)],
            vec![("not-differentiable", 18)],
            "`v` is assigned a derived-type value that is not a variable or an element",
        ),
        (
            masked,
            "masked",
            vec![("not-differentiable", 8)],
            vec![("not-differentiable", 8)],
            in_where,
        ),
        (
            by_value,
            "byval",
            vec![("not-differentiable", 15)],
            vec![("not-differentiable", 15)],
            "the result of `f1`",
        ),
        (
            reduction,
            "peak",
            vec![("not-differentiable", 5)],
            vec![("not-differentiable", 5)],
            "no derivative rule for `maxval` of `abs(v)`",
        ),
        (
            expression,
            "twice",
            vec![("derivative-argument", 11)],
            vec![("derivative-argument", 11)],
            "the array expression `3.0d0 * x` is passed to `scale`",
        ),
    ] {
        let ws = load_source(src, root);
        let (facts, id) = root_request(&ws.program, root, None, Recording::Inversion);
        let place = |r: &dfort_codegen::Refusal| (r.rule.code, ws.line_of(r.span));
        for (d, expected) in [
            (Derivative::Adjoint, adjoint),
            (Derivative::Tangent, tangent),
        ] {
            let decided = facts.refusals(id, d);
            assert_eq!(
                decided.iter().map(place).collect::<Vec<_>>(),
                expected,
                "{root} ({d:?}): {decided:?}"
            );
            assert!(
                decided[0].message.starts_with(said),
                "{root}: {}",
                decided[0].message
            );
            let generated = match d {
                Derivative::Adjoint => {
                    dfort_codegen::adjoint::adjoint_of(&facts, id, "").map(|(t, _)| t)
                }
                Derivative::Tangent => dfort_codegen::tangent::tangent_of(&facts, id, ""),
            };
            assert_eq!(
                generated.err().unwrap_or_default(),
                decided,
                "{root} ({d:?})"
            );
        }
    }
}

/// Fuzzer-found (seed 45046, case 1440): a function that changes its
/// inout argument and a module variable, referenced where nothing of it
/// is active, clobbered values the loop before it reads in the reverse
/// sweep (kernel `side_effect_ref`, 6% off). The adjoint now takes such a
/// reference out of its expression and saves around it what it
/// overwrites. Where it cannot be taken out (a reference applied element
/// by element inside its actuals, case 2127), the adjoint is refused at
/// the reference — the tangent, which only runs it forward, is written.
#[test]
fn functions_with_side_effects_are_run_as_calls_in_the_adjoint_or_refused() {
    let src =
        std::fs::read_to_string(fixtures().join("kernels/side_effect_ref.f90")).expect("fixture");
    let text = adjoint_text(&src, "side_effect_ref");
    let forward = text
        .split("subroutine side_effect_ref_b")
        .nth(1)
        .and_then(|r| r.split("! reverse sweep").next())
        .expect("a forward sweep");
    // The reference is hoisted, and what it overwrites that the loop's
    // reverse sweep reads (an element of `coef`, `gain`) is saved first.
    let call = forward.find("dfort_f1 = relax(").expect(&text);
    for saved in ["call dfort_push(coef(1, n))", "call dfort_push(gain)"] {
        let at = forward
            .find(saved)
            .unwrap_or_else(|| panic!("{saved}: {text}"));
        assert!(at < call, "{saved} after the call: {text}");
    }
    assert_eq!(refusal_codes(&src, "side_effect_ref"), (vec![], vec![]));
    let nested = src
        .replace(
            "  end function relax",
            "  end function relax\n  elemental function half(a) result(h)\n    real(8), intent(in) :: a\n    real(8) :: h\n    h = 0.5d0*a\n  end function half",
        )
        .replace("relax(tally(2), coef(1, n))", "relax(sum(half(tally)), coef(1, n))");
    let (adjoint, tangent) = refusal_codes(&nested, "side_effect_ref");
    assert_eq!(adjoint, ["not-differentiable"]);
    assert!(tangent.is_empty(), "{tangent:?}");
}

/// Fuzzer-found (seed 46046, case 564): a loop bound recomputed from
/// `n`, an `intent(in)` dummy, which a function reference later passes
/// to an `intent(in)` formal. Recovery took every actual of a function
/// reference for one it may change, saved `n` after the loop and popped
/// it back: `call dfort_pop(n)` into an `intent(in)` dummy does not
/// compile. Neither the function's `intent(in)` formal nor the caller's
/// `intent(in)` dummy can change.
#[test]
fn intent_in_actuals_of_function_references_are_never_saved() {
    let src = "function dotc(m, x, incx) result(r)
  implicit none
  integer, intent(in) :: m, incx
  real(8), intent(in) :: x(*)
  real(8) :: r
  integer :: i
  r = 0.0d0
  do i = 1, m
    r = r + x(1 + (i - 1)*incx)**2
  end do
end function dotc

subroutine ib(n, x, y)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(out) :: y(n)
  real(8) :: t(n), r
  real(8), external :: dotc
  integer :: i, j, m
  y = x
  do i = 1, 3
    m = n
    do j = 1, m
      y(j) = y(j)*x(j)
    end do
  end do
  t = 1.0d0
  r = dotc(n, t, n)
  y(1) = y(1) + r
end subroutine ib
";
    let text = adjoint_text(src, "ib");
    assert!(!text.contains("dfort_pop(n)"), "{text}");
    assert!(!text.contains("dfort_push(n)"), "{text}");
}

/// Fuzzer-found (seed 45046, case 2509): a function that reads an active
/// module variable, referenced in an active assignment with an array
/// function's result inside its actuals, could not be hoisted and ran as
/// the original: the derivative through the module variable was lost
/// (tangent 25% off). Such a reference is refused now; the same function
/// referenced with a plain actual is hoisted and differentiated.
#[test]
fn an_unhoisted_reference_to_a_function_reading_a_global_is_refused() {
    let src = "module gm
  implicit none
  real(8) :: g
contains
  function p(u) result(r)
    real(8), intent(in) :: u
    real(8) :: r
    r = u*sin(g)
  end function p
end module gm

subroutine rg(n, x, z)
  use gm
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(inout) :: z(n)
  real(8) :: t(n)
  t = 0.5d0
  g = x(1)
  z(1) = z(1) + p(sum(sq(t)))
contains
  function sq(v) result(w)
    real(8), intent(in) :: v(:)
    real(8) :: w(size(v))
    w = v*v
  end function sq
end subroutine rg
";
    let (adjoint, tangent) = refusal_codes(src, "rg");
    assert_eq!(adjoint, ["not-differentiable"]);
    assert_eq!(tangent, ["not-differentiable"]);
    let plain = src.replace("p(sum(sq(t)))", "p(2.0d0)");
    assert_eq!(refusal_codes(&plain, "rg"), (vec![], vec![]));
}

/// SAVE'd state that no derivative reads, but that the procedure's
/// adjoint routine would read undefined if it kept a copy of its own (a
/// history set on the first call and shifted on the next: fuzzer, seed
/// 2914, case 102, was refused for that), is shared by the adjoint like
/// any other (issue 41); so is a counter with an initial value.
#[test]
fn saved_state_no_derivative_reads_is_shared_when_the_adjoint_would_read_it_undefined() {
    let history = "subroutine hist(u, rs, w)
  implicit none
  real(8), intent(in) :: u
  logical, intent(in) :: rs
  real(8), intent(out) :: w
  real(8), save :: h(2)
  if (rs) h = u
  h(2) = h(1)
  h(1) = u
  w = h(1)*h(2)
end subroutine hist

subroutine top(x, z)
  implicit none
  real(8), intent(in) :: x(2)
  real(8), intent(out) :: z
  real(8) :: w
  integer :: k
  z = 0
  do k = 1, 2
    call hist(x(k), k == 1, w)
    z = z + x(k)**2
  end do
end subroutine top
";
    assert_eq!(refusal_codes(history, "top"), (vec![], vec![]));
    let counter = history.replace("real(8), save :: h(2)", "real(8), save :: h(2) = 0d0");
    assert_eq!(refusal_codes(&counter, "top"), (vec![], vec![]));
}
