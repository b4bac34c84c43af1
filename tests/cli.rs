//! The `dfort` binary: `check` output format and exit codes, `ir`, and
//! errors naming files that cannot be read.

use crate::support::*;
use std::process::Command;

fn dfort(args: &[&str]) -> (i32, String, String) {
    dfort_in(&root(), args)
}

/// `dfort` run in `cwd`: status, standard output and error.
fn dfort_in(cwd: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dfort"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run dfort");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writes `text` to `name` in a directory of its own for this test run
/// (`tag` names it), and gives the file's path.
fn scratch_file(tag: &str, name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dfort-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn check_clean_files_exits_zero_and_prints_nothing() {
    let (code, out, err) = dfort(&[
        "check",
        "tests/fixtures/papers/p000_bratu.f",
        "tests/fixtures/free/tridiag.f90",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("0 error(s)"), "{err}");
}

#[test]
fn check_reports_file_line_col_and_exits_one_on_errors() {
    let (code, out, _) = dfort(&["check", "tests/fixtures/diagnostics/undefined_label_bad.f"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("tests/fixtures/diagnostics/undefined_label_bad.f:8:35: error: label 99"),
        "{out}"
    );
}

#[test]
fn warnings_alone_exit_zero() {
    let (code, out, _) = dfort(&["check", "tests/fixtures/diagnostics/seqnum_bad.f"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(":8:73: warning:"), "{out}");
}

#[test]
fn fixed_line_length_option_accepts_132_and_none() {
    for len in ["132", "none"] {
        let (code, out, err) = dfort(&[
            "check",
            "--fixed-line-length",
            len,
            "tests/fixtures/papers/bratu_73col.f",
        ]);
        assert_eq!(code, 0, "{len}: {out}{err}");
    }
    let (code, _, err) = dfort(&["check", "--fixed-line-length", "abc", "x.f"]);
    assert_eq!(code, 2);
    assert!(err.contains("abc"), "{err}");
}

#[test]
fn missing_and_non_utf8_files_are_named() {
    let (code, _, err) = dfort(&["check", "no/such/file.f90"]);
    assert_eq!(code, 1);
    assert!(err.contains("no/such/file.f90"), "{err}");
    let dir = std::env::temp_dir().join(format!("dfort-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("latin1.f90");
    std::fs::write(&bad, b"subroutine s\n! caf\xe9\nend\n").unwrap();
    let (code, _, err) = dfort(&["check", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("latin1.f90") && err.contains("UTF-8"), "{err}");
    let (code, _, err) = dfort(&["ir", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("latin1.f90"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ir_dumps_one_unit_or_says_it_is_missing() {
    let (code, out, err) = dfort(&[
        "ir",
        "tests/fixtures/free/recursion.f90",
        "--unit",
        "REFINE",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("subroutine refine in quad_mod"), "{out}");
    assert!(out.contains("cfg:"), "{out}");
    assert!(!out.contains("function integrand"), "{out}");
    let (code, _, err) = dfort(&["ir", "tests/fixtures/free/recursion.f90", "--unit", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn ir_resolves_against_other_files_with_with() {
    let (code, out, err) = dfort(&[
        "ir",
        "tests/fixtures/free/multi_use.f90",
        "--with",
        "tests/fixtures/free/multi_mod.f90",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("box_area -> shapes_mod.rect_area"), "{out}");
}

#[test]
fn analyze_prints_json_with_active_sets_and_records() {
    let (code, out, err) = dfort(&[
        "analyze",
        "tests/fixtures/papers/p000_fig1.f90",
        "--root",
        "tbr_fig1",
        "--format",
        "json",
        "--no-inversion",
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(doc["tbr_mode"], "tbr");
    let unit = &doc["units"][0];
    assert_eq!(unit["name"], "tbr_fig1");
    assert_eq!(unit["address_recovery"], serde_json::json!([]));
    assert_eq!(unit["active"], serde_json::json!(["x"]));
    let tbr: Vec<(u64, String)> = unit["tbr"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["variable"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        tbr,
        vec![
            (15, "x".into()),
            (17, "x".into()),
            (19, "i".into()),
            (20, "j".into())
        ]
    );
}

#[test]
fn analyze_reads_roots_from_dfort_toml_and_names_a_bad_one() {
    let dir = std::env::temp_dir().join(format!("dfort-toml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("bratu.f");
    std::fs::copy(fixtures().join("papers/p000_bratu.f"), &src).unwrap();
    std::fs::write(
        dir.join("dfort.toml"),
        "[[root]]\nname = \"bratu\"\nindependent = [\"x\"]\ndependent = [\"f\"]\n",
    )
    .unwrap();
    let (code, out, err) = dfort(&["analyze", src.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["units"][0]["independents"], serde_json::json!(["x"]));
    assert_eq!(doc["units"][0]["active"], serde_json::json!(["f", "x"]));
    std::fs::write(dir.join("dfort.toml"), "[[root]]\nnam = 1\n").unwrap();
    let (code, _, err) = dfort(&["analyze", src.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("dfort.toml"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn analyze_explains_why_a_variable_is_active() {
    let (code, out, err) = dfort(&[
        "analyze",
        "tests/fixtures/interproc/callee_activity.f90",
        "--root",
        "driver",
        "--explain",
        "t",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("t is active. Why:"), "{out}");
    assert!(
        out.contains("line 22: t is set from varied arguments by this call"),
        "{out}"
    );
    assert!(
        out.contains("line 24: y depends on t through this statement"),
        "{out}"
    );
    assert!(out.contains("y is a dependent"), "{out}");
    let (_, out, _) = dfort(&[
        "analyze",
        "tests/fixtures/interproc/callee_activity.f90",
        "--root",
        "driver",
        "--explain",
        "c",
    ]);
    assert!(out.contains("c is not active"), "{out}");
}

#[test]
fn adjoint_writes_the_routine_and_the_runtime_or_refuses_with_a_location() {
    let dir = std::env::temp_dir().join(format!("dfort-adj-{}", std::process::id()));
    let (code, out, err) = dfort(&[
        "adjoint",
        "tests/fixtures/papers/p000_fig1.f90",
        "--root",
        "tbr_fig1",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("p000_fig1_b.f90"), "{out}");
    let text = std::fs::read_to_string(dir.join("p000_fig1_b.f90")).unwrap();
    assert!(
        text.starts_with("! Adjoint of tbr_fig1 generated by dfort"),
        "{text}"
    );
    assert!(text.contains("subroutine tbr_fig1_b(x, xb)"), "{text}");
    assert!(dir.join("dfort_stack.f90").exists());
    // An active derived-type variable whose type gets no derivative type
    // is refused: an error naming the line, no file.
    let (code, _, err) = dfort(&[
        "adjoint",
        "tests/fixtures/kernels/derived.f90",
        "--root",
        "mesh_scale",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("derived.f90:139:"), "{err}");
    assert!(err.contains("active-derived-type"), "{err}");
    assert!(!dir.join("derived_b.f90").exists());
    // Complex values (default kind here) are differentiated.
    let (code, out, err) = dfort(&[
        "adjoint",
        "tests/fixtures/fixed/tab_reduce.f",
        "--root",
        "hfit",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tab_reduce_b.f90"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `dfort import` writes a genmake2 build's macros and files into
/// `dfort.toml` (keeping its roots), and `dfort check` without files reads
/// that set with those macros: `_d`, which set64bitConst.sh stands for in
/// the build, makes `2.0 _d 0` read.
#[test]
fn import_takes_a_genmake2_build_and_check_reads_its_files() {
    let ocean = root().join("tests/fixtures/cpp/ocean");
    let o = ocean.display();
    let makefile = format!(
        "ROOTDIR = {o}\nTOOLSDIR = $(ROOTDIR)/tools\nDEFINES = -DWORDLENGTH=4 -DNML_TERMINATOR\n\
         INCLUDES = -I$(ROOTDIR)\nF77_SRC_FILES = \\\n $(ROOTDIR)/calc_diffusion.F \\\n $(ROOTDIR)/timestep.F\n\
         F90_SRC_FILES = \nCPPCMD = cat $< | cpp -traditional -P $(DEFINES) $(INCLUDES) | $(TOOLSDIR)/set64bitConst.sh\n"
    );
    let mk = scratch_file("import", "Makefile", &makefile);
    let dir = mk.parent().unwrap().to_path_buf();
    std::fs::write(dir.join("dfort.toml"), "[[root]]\nname = \"timestep\"\n").unwrap();
    let (code, out, err) = dfort(&["import", mk.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("2 files, 3 macros, 1 include directories (from genmake2 Makefile)"),
        "{out}"
    );
    let toml = std::fs::read_to_string(dir.join("dfort.toml")).unwrap();
    assert!(
        toml.contains("_d = \"D\"") && toml.contains("WORDLENGTH = \"4\""),
        "{toml}"
    );
    assert!(
        toml.contains("name = \"timestep\""),
        "the roots are kept: {toml}"
    );
    let check = |cwd: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_dfort"))
            .arg("check")
            .current_dir(cwd)
            .output()
            .expect("run dfort");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = check(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("2 file(s)") && err.contains("0 error(s)"),
        "{err}"
    );
    // Without `_d`, `2.0 _d 0` does not read: the macros are the build's.
    let toml = toml.replace("_d = \"D\"", "");
    std::fs::write(dir.join("dfort.toml"), toml).unwrap();
    let (code, _) = check(&dir);
    assert_eq!(code, 1);
    // No files and no list: said.
    let empty = scratch_file("import-none", "x.txt", "");
    let (code, err) = check(empty.parent().unwrap());
    assert_eq!(code, 1);
    assert!(err.contains("no files given"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// ENTRY reads; the derivatives refuse the unit holding it and every call
/// to the entry point (the analyses do not follow it), naming the lines,
/// and a root that reaches neither is differentiated.
#[test]
fn entry_points_read_and_their_callers_are_refused_with_the_line() {
    let file = "tests/fixtures/fixed/entry_point.f";
    let (code, out, err) = dfort(&["check", file]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    let (code, out, _) = dfort(&["check", file, "--root", "step"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("entry_point.f:20:7: error: `setyear` is an ENTRY point of `caldate`"),
        "{out}"
    );
    let (code, out, _) = dfort(&["check", file, "--root", "caldate"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("entry_point.f:11:7: error: ENTRY `setyear` cannot be differentiated"),
        "{out}"
    );
    let (code, out, err) = dfort(&["check", file, "--root", "scale"]);
    assert_eq!(code, 0, "{out}{err}");
    let dir = std::env::temp_dir().join(format!("dfort-entry-{}", std::process::id()));
    let (code, _, err) = dfort(&[
        "adjoint",
        file,
        "--root",
        "step",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("entry_point.f:20:"), "{err}");
    assert!(!dir.join("entry_point_b.f90").exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// A loop left on a test of a varied value (an iterative solver) is
/// differentiated iteration by iteration, and `check --root` says so where
/// the test is: EXIT, DO WHILE and GO TO out of the loop; a test on the
/// counter is not one.
#[test]
fn loops_left_on_a_varied_test_are_warned_about() {
    let file = "tests/fixtures/free/convergence.f90";
    let (code, out, err) = dfort(&["check", file, "--root", "solve"]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with("[convergence-test]"))
        .map(|l| l.split(": warning").next().unwrap_or(""))
        .collect();
    assert_eq!(
        lines,
        [
            "tests/fixtures/free/convergence.f90:14:8",
            "tests/fixtures/free/convergence.f90:17:12",
            "tests/fixtures/free/convergence.f90:23:8",
        ],
        "{out}"
    );
    assert!(out.contains("a test of `r`"), "{out}");
    // Without a root nothing is active: no warning.
    let (code, out, _) = dfort(&["check", file]);
    assert_eq!(code, 0);
    assert!(!out.contains("convergence-test"), "{out}");
}

/// A value that depends on the independents, written to a file and read
/// back, gets derivative 0 where it is read: `check --root` and `adjoint`
/// say so on the READ, naming the WRITE (rule `cut-by-io`), and the
/// adjoint is still written. A READ of a unit nothing writes in that form
/// is not warned about.
#[test]
fn reading_back_an_active_value_is_warned_about() {
    let file = "tests/fixtures/free/file_roundtrip.f90";
    let warned = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.ends_with("[cut-by-io]"))
            .map(|l| l.split(" here:").next().unwrap_or("").to_string())
            .collect()
    };
    let expected = [
        "tests/fixtures/free/file_roundtrip.f90:15:3: warning: `t` gets derivative 0",
        "tests/fixtures/free/file_roundtrip.f90:18:3: warning: `s` gets derivative 0",
    ];
    let (code, out, err) = dfort(&["check", file, "--root", "roundtrip"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(warned(&out), expected, "{out}");
    assert!(
        out.contains(
            "the value of `x` that the WRITE at tests/fixtures/free/file_roundtrip.f90:12 wrote"
        ),
        "{out}"
    );
    assert!(
        out.contains("the WRITE at tests/fixtures/free/file_roundtrip.f90:13 wrote"),
        "{out}"
    );
    let dir = std::env::temp_dir().join(format!("dfort-roundtrip-{}", std::process::id()));
    let (code, _, err) = dfort(&[
        "adjoint",
        file,
        "--root",
        "roundtrip",
        "--independent",
        "x",
        "--dependent",
        "y",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(warned(&err), expected, "{err}");
    assert!(dir.join("file_roundtrip_b.f90").exists());
    std::fs::remove_dir_all(&dir).ok();
    // Without a root nothing is active: no warning.
    let (_, out, _) = dfort(&["check", file]);
    assert!(!out.contains("cut-by-io"), "{out}");
}

#[test]
fn verify_reports_both_relative_errors_and_asks_for_missing_sizes() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let (code, out, err) = dfort(&[
        "verify",
        "tests/fixtures/papers/p000_bratu_ad.f",
        "--root",
        "bratuad",
        "--int",
        "dim=16,parmax=2",
        "--keep",
        "target/verify-keep-relative",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("bratuad: tangent relative error"), "{out}");
    assert!(out.contains("in the dot-product test (ok)"), "{out}");
    // A relative `--keep` directory keeps the build (it could not run
    // the driver there).
    assert!(root()
        .join("target/verify-keep-relative/driver.f90")
        .exists());
    std::fs::remove_dir_all(root().join("target/verify-keep-relative")).ok();
    let (code, _, err) = dfort(&[
        "verify",
        "tests/fixtures/papers/p000_bratu_ad.f",
        "--root",
        "bratuad",
    ]);
    assert_eq!(code, 1);
    // Every value, with its flag, and the dfort.toml table that gives them.
    assert!(
        err.contains("the integer argument `dim`: --int dim=VALUE"),
        "{err}"
    );
    assert!(
        err.contains("the integer argument `parmax`: --int parmax=VALUE"),
        "{err}"
    );
    assert!(
        err.contains("  [[root]]\n  name = \"bratuad\"\n  int = { dim = VALUE, parmax = VALUE }"),
        "{err}"
    );
}

#[test]
fn verify_says_when_finite_differences_are_unreliable() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let (code, out, err) = dfort(&[
        "verify",
        "tests/fixtures/kernels/ripple.f90",
        "--root",
        "ripple",
        "--points",
        "2",
        "--verbose",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("ripple: finite differences unreliable here (non-smooth point?)"),
        "{out}"
    );
    assert!(!out.contains("TOO LARGE"), "{out}");
    assert_eq!(out.matches(", not smooth;").count(), 2, "{out}");
    // The dot-product test still holds there.
    assert!(out.contains("in the dot-product test (ok)"), "{out}");
}

#[test]
fn verify_no_tbr_checks_the_store_all_adjoint() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let (code, out, err) = dfort(&[
        "verify",
        "tests/fixtures/papers/p000_bratu_ad.f",
        "--root",
        "bratuad",
        "--int",
        "dim=16,parmax=2",
        "--no-tbr",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("in the dot-product test (ok)"), "{out}");
}

#[test]
fn adjoint_and_verify_take_roles_ints_and_sizes_from_dfort_toml() {
    let dir = std::env::temp_dir().join(format!("dfort-toml-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("bratu.f");
    std::fs::copy(fixtures().join("papers/p000_bratu.f"), &src).unwrap();
    std::fs::write(
        dir.join("dfort.toml"),
        "[[root]]\nname = \"bratu\"\nindependent = [\"x\"]\ndependent = [\"f\"]\n\
         int = { dim = 12, parmax = 2 }\n",
    )
    .unwrap();
    let src = src.to_str().unwrap();
    let out_dir = dir.join("out");
    let (code, out, err) = dfort(&[
        "adjoint",
        src,
        "--root",
        "bratu",
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("dfort.toml"), "{err}");
    let text = std::fs::read_to_string(out_dir.join("bratu_b.f90")).unwrap();
    // prm is not an independent here, so it has no adjoint.
    assert!(
        text.contains("subroutine bratu_b(dim, parmax, x, xb, prm, f, fb)"),
        "{text}"
    );
    // The command line wins over dfort.toml.
    let (code, _, err) = dfort(&[
        "adjoint",
        src,
        "--root",
        "bratu",
        "--independent",
        "x,prm",
        "--dependent",
        "f",
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(out_dir.join("bratu_b.f90")).unwrap();
    assert!(
        text.contains("subroutine bratu_b(dim, parmax, x, xb, prm, prmb, f, fb)"),
        "{text}"
    );
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_none() {
        let (code, out, err) = dfort(&["verify", src, "--root", "bratu"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(err.contains("dim=12, parmax=2 from"), "{err}");
        assert!(out.contains("in the dot-product test (ok)"), "{out}");
        let (code, out, err) = dfort(&["verify", src, "--root", "bratu", "--int", "dim=7"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            err.contains("parmax=2 from") && !err.contains("dim=12"),
            "{err}"
        );
    }
    std::fs::write(
        dir.join("dfort.toml"),
        "[[root]]\nname = \"bratu\"\nint = { dim = 12 }\nsizes = { x = 3 }\n",
    )
    .unwrap();
    let (code, _, err) = dfort(&["tangent", src, "--root", "bratu"]);
    assert_eq!(code, 1);
    assert!(err.contains("dfort.toml") && err.contains("sizes"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `dfort analyze` JSON of one unit, with extra flags.
fn analyze_json(file: &str, root: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["analyze", file, "--root", root, "--format", "json"];
    args.extend_from_slice(extra);
    let (code, out, err) = dfort(&args);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    doc["units"][0].clone()
}

#[test]
fn analyze_reports_each_blocks_local_jacobians_and_their_elimination_costs() {
    // Paper 004's code list: |E| = 10, forward and reverse vertex
    // elimination 13 multiplications, the best found 12.
    let unit = analyze_json("tests/fixtures/papers/p004_codelist.f90", "codelist", &[]);
    let j = &unit["local_jacobians"];
    assert_eq!(j.as_array().map(Vec::len), Some(1), "{j}");
    let g = &j[0];
    let size = |k: &str| g[k].as_u64().unwrap();
    assert_eq!(
        ["n", "p", "m", "edges", "forward", "reverse", "best", "entries"].map(size),
        [2, 5, 2, 10, 13, 13, 12, 4],
        "{g}"
    );
    assert_eq!(
        (g["first_line"].as_u64(), g["last_line"].as_u64()),
        (Some(11), Some(12))
    );
    assert_eq!(g["best_sequence"].as_array().map(Vec::len), Some(5), "{g}");
    // Its face search needs more line-graph states than analyze spends
    // (the unit test proves 12 the face optimum too): null, not absent.
    assert_eq!(
        g.get("face_elimination"),
        Some(&serde_json::Value::Null),
        "{g}"
    );
    // Paper 002's Figure 2: mem(iz) after iz = iz + k may be the element
    // a1 wrote: two graphs, the second from line 15; Figure 1 (the same
    // z read back) stays one.
    let unit = analyze_json("tests/fixtures/papers/p002_fig2.f90", "flat_fig2", &[]);
    let j = unit["local_jacobians"].as_array().unwrap().clone();
    assert_eq!(j.len(), 2, "{j:?}");
    assert_eq!(j[0]["split_before_line"], 15, "{j:?}");
    assert_eq!(
        (j[1]["first_line"].as_u64(), j[1]["n"].as_u64()),
        (Some(15), Some(2))
    );
    let unit = analyze_json("tests/fixtures/papers/p002_fig1.f90", "flat_fig1", &[]);
    assert_eq!(
        unit["local_jacobians"].as_array().map(Vec::len),
        Some(1),
        "{unit}"
    );
    // A graph small enough for the face search to end: no face sequence
    // beats the best vertex or edge sequence, so its optimum is that.
    let g = &unit["local_jacobians"][0];
    assert_eq!(g["face_elimination"], g["best"], "{g}");
    assert_eq!(g["best"], 6, "{g}");
    let (code, out, err) = dfort(&["analyze", "tests/fixtures/papers/p004_codelist.f90"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("lines 11-12: 2×2, n 2, p 5, m 2, |E| 10, 4 entries; multiplications: forward 13, reverse 13, Markowitz 12, optimal vertex 12, edge 12, face search stopped at 1000 states; best 12"),
        "{out}"
    );
}

/// The bytes `dfort verify` says the adjoint pushed, after checking it
/// passed (tangent and dot-product test).
fn verified_tape_bytes(args: &[&str]) -> u64 {
    let mut all = vec!["verify"];
    all.extend_from_slice(args);
    let (code, out, err) = dfort(&all);
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    assert!(out.contains("in the dot-product test (ok)"), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("bytes to its tape"))
        .unwrap_or_else(|| panic!("no tape line: {out}"));
    line.split_whitespace()
        .skip_while(|w| *w != "pushed")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no byte count: {line}"))
}

/// Issue 43: `--preaccumulate` chooses per graph. Where nothing after a
/// graph overwrites its inputs the reverse sweep recomputes its Jacobian
/// and nothing is pushed (an equation of state: 0 bytes against 7 values
/// per cell; a shallow-water flux likewise); where the graph overwrites an
/// input (the same state updated in place) it pushes the Jacobian's
/// entries when they are fewer (6 against 7 per cell); where the
/// statements record nothing (a linear block) it keeps them. `analyze`
/// says which.
#[test]
fn preaccumulation_pushes_fewer_values_where_the_jacobian_is_smaller() {
    let eos = "tests/fixtures/kernels/preacc_eos.f90";
    let decision = |unit: &serde_json::Value| {
        let g = &unit["local_jacobians"][0];
        (
            g["adjoint"].as_str().map(str::to_string),
            g["jacobian"].as_str().map(str::to_string),
            g["entries"].as_u64(),
            g["statement_level"].as_u64(),
        )
    };
    let pre = |a: &str, j: Option<&str>, e: u64, sl: u64| {
        (
            Some(a.to_string()),
            j.map(str::to_string),
            Some(e),
            Some(sl),
        )
    };
    let unit = analyze_json(eos, "eos_density", &["--preaccumulate"]);
    assert_eq!(
        decision(&unit),
        pre("preaccumulated", Some("recomputed"), 3, 7),
        "{unit}"
    );
    let off = analyze_json(eos, "eos_density", &[]);
    assert_eq!(off["local_jacobians"][0]["adjoint"], "off", "{off}");
    assert!(off["local_jacobians"][0]["jacobian"].is_null(), "{off}");
    // The state updated in place after the density: the graph overwrites
    // its input `t(k)`.
    let src = std::fs::read_to_string(root().join(eos)).unwrap();
    let inplace = src
        .replace(
            "real(8), intent(in) :: t(n), s(n), p(n)",
            "real(8), intent(inout) :: t(n)\n  real(8), intent(in) :: s(n), p(n)",
        )
        .replace(
            "    rho(k) = rs / (1.0d0 - p1 / bulk)\n",
            "    rho(k) = rs / (1.0d0 - p1 / bulk)\n    t(k) = t(k) - 1.0d-3 * rho(k)\n",
        );
    assert_ne!(inplace, src);
    let inplace = scratch_file("preacc-inplace", "eos_inplace.f90", &inplace);
    let inplace = inplace.to_str().unwrap();
    let unit = analyze_json(inplace, "eos_density", &["--preaccumulate"]);
    assert_eq!(
        decision(&unit),
        pre("preaccumulated", Some("pushed"), 6, 7),
        "{unit}"
    );
    // A linear block: its statements record nothing.
    let linear = scratch_file(
        "preacc-linear",
        "linear.f90",
        "subroutine lin(n, x, y)\n  integer :: n, k\n  real(8) :: x(n), y(n), t\n  do k = 1, n\n    t = 2.0d0 * x(k)\n    y(k) = t + 3.0d0 * x(k)\n  end do\nend subroutine lin\n",
    );
    let unit = analyze_json(linear.to_str().unwrap(), "lin", &["--preaccumulate=cost"]);
    let g = &unit["local_jacobians"][0];
    assert_eq!(
        (g["adjoint"].as_str(), g["statement_level"].as_u64()),
        (Some("statement-level"), Some(0)),
        "{unit}"
    );
    assert!(
        g["adjoint_reason"]
            .as_str()
            .is_some_and(|r| r.contains("no fewer entries")),
        "{g}"
    );
    let (code, out, err) = dfort(&["analyze", eos, "--preaccumulate"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Jacobian recomputed in the reverse sweep"),
        "{out}"
    );
    let (code, out, err) = dfort(&["analyze", inplace, "--preaccumulate"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("preaccumulated: 6 Jacobian entries pushed"),
        "{out}"
    );
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    // The bytes each verified adjoint pushes over 8 cells.
    let bytes = |file: &str, root: &str, extra: &[&str]| {
        let mut a = vec![file, "--root", root, "--int", "n=8", "--bounds"];
        a.extend_from_slice(extra);
        verified_tape_bytes(&a)
    };
    // 8 cells of 8-byte values: statement by statement (without the
    // recomputation of intermediates, `--no-inversion`) 7 a cell; with it
    // none, or, where the body overwrites `t`, the 4 computed from it.
    assert_eq!(bytes(eos, "eos_density", &["--no-inversion"]), 8 * 7 * 8);
    assert_eq!(bytes(eos, "eos_density", &[]), 0);
    assert_eq!(bytes(eos, "eos_density", &["--preaccumulate"]), 0);
    assert_eq!(
        bytes(inplace, "eos_density", &["--no-inversion"]),
        8 * 7 * 8
    );
    assert_eq!(bytes(inplace, "eos_density", &[]), 8 * 4 * 8);
    assert_eq!(
        bytes(inplace, "eos_density", &["--preaccumulate"]),
        8 * 6 * 8
    );
    let swe = "tests/fixtures/kernels/preacc_swe_flux.f90";
    assert!(bytes(swe, "swe_flux", &["--no-inversion"]) > 0);
    assert_eq!(bytes(swe, "swe_flux", &[]), 0);
    assert_eq!(bytes(swe, "swe_flux", &["--preaccumulate"]), 0);
}

/// `[adjoint] preaccumulate` in `dfort.toml` turns preaccumulation on for
/// `dfort adjoint` (the command line's `--preaccumulate=off` wins), and a
/// value it does not know is an error naming the key.
#[test]
fn dfort_toml_asks_for_preaccumulation() {
    let src = std::fs::read_to_string(fixtures().join("kernels/preacc_eos.f90")).unwrap();
    let file = scratch_file("preacc-toml", "eos.f90", &src);
    let dir = file.parent().unwrap().to_path_buf();
    std::fs::write(
        dir.join("dfort.toml"),
        "[adjoint]\npreaccumulate = \"cost\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let od = out_dir.to_str().unwrap();
    let written = |extra: &[&str]| {
        let mut a = vec![
            "adjoint",
            "eos.f90",
            "--root",
            "eos_density",
            "--output-dir",
            od,
        ];
        a.extend_from_slice(extra);
        let (code, _, err) = dfort_in(&dir, &a);
        assert_eq!(code, 0, "{err}");
        std::fs::read_to_string(out_dir.join("eos_b.f90")).unwrap()
    };
    // Nothing overwrites the cells' inputs: the reverse sweep recomputes
    // the Jacobian.
    assert!(written(&[]).contains("dfort_pa("));
    assert!(!written(&["--preaccumulate=off"]).contains("dfort_pa"));
    std::fs::write(
        dir.join("dfort.toml"),
        "[adjoint]\npreaccumulate = \"sometimes\"\n",
    )
    .unwrap();
    let (code, _, err) = dfort_in(
        &dir,
        &[
            "adjoint",
            "eos.f90",
            "--root",
            "eos_density",
            "--output-dir",
            od,
        ],
    );
    assert_eq!(code, 1);
    assert!(err.contains("preaccumulate"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn analyze_reports_how_each_loop_index_is_recovered() {
    // Paper 003, Figure 8 with i = max(k, 2*l): the heuristic stores k
    // (the operand of max), m is recomputed, i, j and l are inverted.
    let unit = analyze_json(
        "tests/fixtures/papers/p003_fig8_loop_max.f90",
        "fig8l_max",
        &[],
    );
    let loops = unit["address_recovery"].as_array().expect("loops");
    assert_eq!(loops.len(), 1, "{unit}");
    let lp = &loops[0];
    assert_eq!(lp["loop_line"], 16);
    assert_eq!(lp["stored_per_iteration"], 1);
    // l's final value comes from the trip count of the counted WHILE
    // loop ('l = 0; do while (l < ilb); ...; l = l + 1'): not saved.
    assert_eq!(lp["saved_after_loop"], serde_json::json!(["i", "j"]));
    // A counted WHILE loop: l's final value comes from the trip count.
    assert_eq!(
        lp["computed_after_loop"],
        serde_json::json!({"variable": "l", "text": "l ← max(0, ilb)"})
    );
    let choice = |v: &str| {
        let var = lp["variables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["variable"] == v)
            .unwrap_or_else(|| panic!("no {v} in {lp}"))
            .clone();
        (var["choice"].as_str().unwrap().to_string(), var)
    };
    let (k, kv) = choice("k");
    assert_eq!(k, "stored");
    assert_eq!(kv["reason"], "`max`");
    assert_eq!(kv["reason_line"], 19);
    assert_eq!(kv["stored_per_iteration"], 1);
    assert_eq!(choice("m").0, "recomputed");
    for v in ["i", "j", "l"] {
        assert_eq!(choice(v).0, "inverted", "{v}");
    }
    let (_, jv) = choice("j");
    let texts: Vec<&str> = jv["recoveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert!(texts.contains(&"j ← j - 4 - m"), "{texts:?}");
    // Without inversion, TBR records every index the loop overwrites.
    let plain = analyze_json(
        "tests/fixtures/papers/p003_fig8_loop_max.f90",
        "fig8l_max",
        &["--no-inversion"],
    );
    assert_eq!(plain["address_recovery"], serde_json::json!([]));
    let recorded: Vec<&str> = plain["tbr"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["variable"].as_str().unwrap())
        .collect();
    for v in ["i", "j", "k", "m"] {
        assert!(recorded.contains(&v), "{v} not recorded: {recorded:?}");
    }
}

#[test]
fn analyze_reports_the_monte_carlo_loop_of_a_unit_with_jumps() {
    // Paper 003, Figure 14(b) made active: one report for the whole unit
    // (it is reversed through basic-block ids). k2 and k3 are inverted;
    // m is inverted at m = m+1 and stored where it is reset.
    let unit = analyze_json(
        "tests/fixtures/papers/p003_fig14b_montecarlo_active.f",
        "mcsrcha",
        &["--independent", "d,x", "--dependent", "x"],
    );
    let reports = unit["address_recovery"].as_array().expect("reports");
    assert_eq!(reports.len(), 1, "{unit}");
    let r = &reports[0];
    assert_eq!(r["scope"], "unit");
    assert_eq!(r["loop_line"], serde_json::Value::Null);
    let var = |v: &str| {
        r["variables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["variable"] == v)
            .unwrap_or_else(|| panic!("no {v} in {r}"))
            .clone()
    };
    for v in ["k2", "k3"] {
        assert_eq!(var(v)["choice"], "inverted", "{v}");
        assert_eq!(var(v)["stored_per_iteration"], 0, "{v}");
    }
    assert_eq!(var("k2")["recoveries"][0]["text"], "k2 ← k2 - 1");
    let m = var("m");
    assert_eq!(m["choice"], "stored");
    assert_eq!(m["reason"], "an assignment that does not read it");
    let how: Vec<(&str, u64)> = m["recoveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["choice"].as_str().unwrap(),
                x["defined_line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(how, [("stored", 23), ("inverted", 51), ("stored", 54)]);
    assert_eq!(var("j5")["choice"], "stored");
}

#[test]
fn analyze_names_the_integer_division_that_forces_storage() {
    // Paper 003, Figure 14(a) (ICCG): ii is stored because of ii/2, ipntp
    // is inverted, ipnt recomputed; the inner loop inverts i.
    let unit = analyze_json("tests/fixtures/papers/p003_fig14a_iccg.f90", "iccg", &[]);
    let loops = unit["address_recovery"].as_array().expect("loops");
    let outer = loops
        .iter()
        .find(|l| l["loop_line"] == 17)
        .unwrap_or_else(|| panic!("{unit}"));
    let var = |v: &str| {
        outer["variables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["variable"] == v)
            .cloned()
            .unwrap_or_else(|| panic!("no {v} in {outer}"))
    };
    assert_eq!(var("ii")["choice"], "stored");
    assert_eq!(var("ii")["reason"], "integer division");
    assert_eq!(var("ii")["reason_line"], 20);
    assert_eq!(var("ipntp")["choice"], "inverted");
    assert_eq!(var("ipnt")["choice"], "recomputed");
    assert_eq!(outer["stored_per_iteration"], 1);
    let inner = loops.iter().find(|l| l["loop_line"] == 22).expect("inner");
    assert_eq!(inner["stored_per_iteration"], 0);
    assert_eq!(inner["saved_after_loop"], serde_json::json!(["i"]));
}

/// The statements (spaces removed, lower case) between `! forward sweep`
/// and `! reverse sweep` of `name` in a generated adjoint file.
fn forward_sweep(text: &str, name: &str) -> Vec<String> {
    let start = format!("subroutine {name}(");
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(&start))
        .take_while(|l| l.trim() != format!("end subroutine {name}"))
        .collect();
    body.iter()
        .skip_while(|l| l.trim() != "! forward sweep")
        .skip(1)
        .take_while(|l| l.trim() != "! reverse sweep")
        .map(|l| l.replace(' ', "").to_lowercase())
        .collect()
}

#[test]
fn analyze_reports_the_forward_sweep_drops_the_adjoint_makes_in_callees() {
    let file = "tests/fixtures/interproc/callee_drops.f90";
    let doc = {
        let (code, out, err) = dfort(&["analyze", file, "--root", "top", "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let dir = std::env::temp_dir().join(format!("dfort-drops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (code, _, err) = dfort(&[
        "adjoint",
        file,
        "--root",
        "top",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let generated = std::fs::read_to_string(dir.join("callee_drops_b.f90")).unwrap();
    let source = std::fs::read_to_string(root().join(file)).unwrap();
    let mut checked = 0;
    for unit in doc["units"].as_array().unwrap() {
        let name = unit["name"].as_str().unwrap();
        let drops: Vec<u64> = unit["forward_sweep_drops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_u64().unwrap())
            .collect();
        let sweep = forward_sweep(&generated, &format!("{name}_b"));
        // Every assignment of the unit: in the forward sweep exactly when
        // analyze does not report it dropped.
        let (first, last) = match name {
            "top" => (3, 10),
            _ => (12, 19),
        };
        for (i, line) in source.lines().enumerate() {
            let n = i as u64 + 1;
            let stmt = line.replace(' ', "").to_lowercase();
            if n < first || n > last || !stmt.contains('=') || stmt.contains("::") {
                continue;
            }
            let kept = sweep.contains(&stmt);
            assert_eq!(
                kept,
                !drops.contains(&n),
                "{name} line {n} `{}`: analyze drops {drops:?}, forward sweep {sweep:?}",
                line.trim()
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 3, "the fixture's three assignments are compared");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_dfort_toml_root_with_a_name_only_takes_roles_from_intents_everywhere() {
    let dir = std::env::temp_dir().join(format!("dfort-name-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("top.f90");
    std::fs::write(
        &src,
        "subroutine top(x, y)\n  real(8), intent(in) :: x\n  real(8), intent(out) :: y\n  y = x*x\nend subroutine top\n",
    )
    .unwrap();
    std::fs::write(dir.join("dfort.toml"), "[[root]]\nname = \"top\"\n").unwrap();
    let (code, out, err) = dfort(&["analyze", src.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["units"][0]["independents"], serde_json::json!(["x"]));
    assert_eq!(doc["units"][0]["dependents"], serde_json::json!(["y"]));
    assert_eq!(doc["units"][0]["active"], serde_json::json!(["x", "y"]));
    // The adjoint takes the same roles.
    let (code, _, err) = dfort(&["adjoint", src.to_str().unwrap(), "--root", "top"]);
    assert_eq!(code, 0, "{err}");
    let generated = std::fs::read_to_string(dir.join("top_b.f90")).unwrap();
    assert!(
        generated.contains("subroutine top_b(x, xb, y, yb)"),
        "{generated}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `dfort rules` lists every rule of the registry with its severity;
/// `dfort rules CODE` explains one; an unknown code is an error.
#[test]
fn rules_lists_every_rule_and_explains_one() {
    let (code, out, err) = dfort(&["rules"]);
    assert_eq!(code, 0, "{err}");
    for r in dfort_syntax::rules::RULES {
        assert!(
            out.lines().any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.first() == Some(&r.code) && cols.get(1) == Some(&r.severity.as_str())
            }),
            "`{}` is not listed:\n{out}",
            r.code
        );
    }
    let (code, out, err) = dfort(&["rules", "address-stored"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("address-stored (note, address recovery)\n"),
        "{out}"
    );
    assert!(out.contains("paper 003"), "{out}");
    let (code, out, err) = dfort(&["rules", "no-such-rule"]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("no rule `no-such-rule`"), "{err}");
}

/// A root outside a module with assumed-shape dummies: the driver called
/// it through an implicit interface (it crashed). Rank-1 ones are declared
/// in an interface block and verified; others are refused with the reason
/// before anything is compiled.
#[test]
fn verify_declares_rank1_assumed_shape_roots_and_refuses_others() {
    let rank2 = scratch_file(
        "verify-shape",
        "sq2.f90",
        "subroutine sq2(a, y)\n  real(8), intent(in) :: a(:, :)\n  real(8), intent(out) :: y(:)\n  y = a(:, 1)*a(:, 2)\nend subroutine sq2\n",
    );
    let (code, out, err) = dfort(&[
        "verify",
        rank2.to_str().unwrap(),
        "--root",
        "sq2",
        "--size",
        "a=8,y=4",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("`sq2` is not in a module") && err.contains("`a`") && !err.contains("`y`"),
        "{err}"
    );
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let rank1 = scratch_file(
        "verify-shape",
        "sq.f90",
        "subroutine sq(n, x, y)\n  integer, intent(in) :: n\n  real(8), intent(in) :: x(:)\n  real(8), intent(out) :: y(:)\n  y = x*x + sin(x(n))\nend subroutine sq\n",
    );
    let (code, out, err) = dfort(&[
        "verify",
        rank1.to_str().unwrap(),
        "--root",
        "sq",
        "--int",
        "n=2",
        "--size",
        "x=4,y=4",
        "--bounds",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("against central finite differences (ok)"),
        "{out}"
    );
    assert!(out.contains("in the dot-product test (ok)"), "{out}");
}

/// Issue 19: `dfort verify` drives character and logical arguments, from
/// the command line or from `dfort.toml` (`char`, `logical`), and says
/// which one it lacks.
#[test]
fn verify_drives_character_and_logical_flags() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dfort-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("lgemv.f");
    std::fs::copy(fixtures().join("linalg/lgemv.f"), &src).unwrap();
    let src = src.to_str().unwrap();
    let (code, _, err) = dfort(&[
        "verify",
        src,
        "--root",
        "lgemv",
        "--int",
        "m=3,n=2,lda=3",
        "--size",
        "a=6,x=3,y=3",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("the character argument `trans`: --char trans=VALUE"),
        "{err}"
    );
    std::fs::write(
        dir.join("dfort.toml"),
        "[[root]]\nname = \"lgemv\"\nint = { m = 3, n = 2, lda = 3 }\nsize = { a = 6, x = 3, y = 3 }\n\
         char = { trans = \"T\" }\n\n[[root]]\nname = \"lscal\"\nint = { n = 3 }\nsize = { x = 3 }\n\
         logical = { negate = true, square = false }\n",
    )
    .unwrap();
    for root in ["lgemv", "lscal"] {
        let (code, out, err) = dfort(&["verify", src, "--root", root]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("in the dot-product test (ok)"), "{out}");
        assert!(
            err.contains("trans=T from") || err.contains("negate=true"),
            "{err}"
        );
    }
    // The command line wins over dfort.toml.
    let (code, out, err) = dfort(&["verify", src, "--root", "lgemv", "--char", "trans=N"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("trans=T"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `dfort verify --sanitize` builds with AddressSanitizer: an access past
/// an array fails the check, and the regions the library's adjoints save
/// around calls stay inside the matrix.
#[test]
fn verify_sanitize_finds_accesses_outside_arrays_and_region_saves_make_none() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    // A root that reads one element past its argument: AddressSanitizer
    // reports it, verify fails and names the routine.
    let past = scratch_file(
        "asan",
        "past.f90",
        "subroutine past(n, x, y)\n  integer :: n\n  real(8) :: x(n), y\n  y = x(1)*x(n + 1)\nend subroutine past\n",
    );
    let (code, out, err) = dfort(&[
        "verify",
        past.to_str().unwrap(),
        "--root",
        "past",
        "--int",
        "n=3",
        "--sanitize",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("outside an array") && err.contains("past"),
        "{err}"
    );
    // The drivers and the blocked Cholesky, with the matrix exactly
    // n*lda long: the regions saved around `xpotrf` and `xgetf2`, and
    // around the level-1 calls given `lda` as an increment, once read
    // past it (AddressSanitizer: stack-buffer-overflow in
    // `dfort_push_region_r8_1`).
    let lib = fixtures().join("linalg");
    let (lapack, blas) = (lib.join("xlapack.f"), lib.join("xblas.f"));
    let (lapack, blas) = (lapack.to_str().unwrap(), blas.to_str().unwrap());
    let runs: [&[&str]; 4] = [
        &[
            "--root",
            "xposv",
            "--int",
            "n=7,nrhs=2,lda=8,ldb=8,nb=3",
            "--size",
            "a=56,b=16",
            "--char",
            "uplo=L",
            "--matrix",
            "a=spd",
        ],
        &[
            "--root",
            "xposv",
            "--int",
            "n=7,nrhs=2,lda=8,ldb=8,nb=3",
            "--size",
            "a=56,b=16",
            "--char",
            "uplo=U",
            "--matrix",
            "a=spd",
        ],
        &[
            "--root",
            "xpotrf",
            "--int",
            "n=7,lda=8,nb=3",
            "--size",
            "a=56",
            "--char",
            "uplo=L",
            "--matrix",
            "a=spd",
        ],
        &[
            "--root",
            "xgesv",
            "--int",
            "n=7,nrhs=2,lda=8,ldb=8",
            "--size",
            "a=56,b=16,ipiv=7",
        ],
    ];
    for run in runs {
        let mut args = vec!["verify", lapack, blas, "--sanitize"];
        args.extend_from_slice(run);
        let (code, out, err) = dfort(&args);
        assert_eq!(code, 0, "{run:?}: {out}{err}");
        assert!(out.contains("in the dot-product test (ok)"), "{out}");
    }
}

/// The tape of the LU driver's adjoint grows as n², not n³: the column and
/// row each step's rank-1 update reads are saved by that call's snapshot,
/// so TBR does not make the later updates restore the trailing blocks they
/// overwrite (`xger`'s adjoint pushes nothing of `a`, and drops the update
/// from its forward sweep). Store-all (`--no-tbr`) still saves them, which
/// shows the measure tells the two apart. `dfort verify` reports the bytes.
#[test]
fn the_lu_adjoint_tape_grows_with_the_square_of_n() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let lib = fixtures().join("linalg");
    let (lapack, blas) = (lib.join("xlapack.f"), lib.join("xblas.f"));
    let (lapack, blas) = (lapack.to_str().unwrap(), blas.to_str().unwrap());
    let pushed = |n: usize, mode: Option<&str>| -> f64 {
        let ints = format!("n={n},nrhs=1,lda={n},ldb={n}");
        let sizes = format!("a={},b={n},ipiv={n}", n * n);
        let mut args = vec![
            lapack, blas, "--root", "xgesv", "--int", &ints, "--size", &sizes,
        ];
        args.extend(mode);
        verified_tape_bytes(&args) as f64
    };
    let tbr = pushed(32, None) / pushed(16, None);
    assert!(tbr < 4.5, "doubling n multiplies the tape by {tbr:.2}");
    let store_all = pushed(32, Some("--no-tbr")) / pushed(16, Some("--no-tbr"));
    assert!(store_all > 5.5, "store-all: {store_all:.2}");
}

/// Issue 19: `dfort verify` takes integer arrays as lists and makes named
/// matrices symmetric positive definite; an integer array the root only
/// reads needs its values, one it writes (`ipiv`, `info`) does not.
#[test]
fn verify_takes_integer_arrays_and_spd_matrices() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let lib = fixtures().join("linalg");
    let (lapack, blas) = (lib.join("xlapack.f"), lib.join("xblas.f"));
    let (lapack, blas) = (lapack.to_str().unwrap(), blas.to_str().unwrap());
    let (code, _, err) = dfort(&[
        "verify",
        lapack,
        blas,
        "--root",
        "xlaswp",
        "--int",
        "n=2,lda=3,k1=1,k2=3",
        "--size",
        "a=6",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("the values of the integer array `ipiv`: --int ipiv=[V1,V2,...]"),
        "{err}"
    );
    // What an editor reads: every missing value, as JSON, status 3.
    let (code, out, _) = dfort(&[
        "verify",
        lapack,
        blas,
        "--root",
        "xlaswp",
        "--size",
        "a=6",
        "--missing-json",
    ]);
    assert_eq!(code, 3, "{out}");
    let json: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(json["root"], "xlaswp");
    let missing: Vec<(&str, &str)> = json["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["key"].as_str().unwrap()))
        .collect();
    assert_eq!(
        missing,
        [
            ("n", "int"),
            ("lda", "int"),
            ("k1", "int"),
            ("k2", "int"),
            ("ipiv", "int")
        ]
    );
    // An integer array's values from dfort.toml.
    let dir = root().join("target/verify-int-array-config");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("dfort.toml"),
        "[[root]]\nname = \"xlaswp\"\nint = { n = 2, lda = 3, k1 = 1, k2 = 3, ipiv = [3, 3, 3] }\nsize = { a = 6 }\n",
    )
    .unwrap();
    let (code, out, err) = dfort_in(&dir, &["verify", lapack, blas, "--root", "xlaswp"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("ipiv=[3,3,3]"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
    let (code, out, err) = dfort(&[
        "verify",
        lapack,
        blas,
        "--root",
        "xlaswp",
        "--int",
        "n=2,lda=3,k1=1,ipiv=[3,3,3],k2=3",
        "--size",
        "a=6",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("in the dot-product test (ok)"), "{out}");
    let (code, _, err) = dfort(&[
        "verify",
        lapack,
        blas,
        "--root",
        "xpotf2",
        "--int",
        "n=3,lda=3",
        "--size",
        "a=9",
        "--char",
        "uplo=U",
        "--matrix",
        "a=orthogonal",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("`orthogonal` is not spd or diag-dominant"),
        "{err}"
    );
    // With --matrix a=spd the whole matrix factorises.
    let (code, out, err) = dfort(&[
        "verify",
        lapack,
        blas,
        "--root",
        "xpotf2",
        "--int",
        "n=3,lda=3",
        "--size",
        "a=9",
        "--char",
        "uplo=L",
        "--matrix",
        "a=spd",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("in the dot-product test (ok)"), "{out}");
}

/// Issue 19: a call whose callee reaches an assumed-size array through a
/// subscript dfort cannot bound is refused, naming the subscript.
#[test]
fn a_region_without_bounds_is_refused_naming_the_subscript() {
    let dir = std::env::temp_dir().join(format!("dfort-region-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("gather.f");
    std::fs::write(
        &src,
        "      SUBROUTINE TOP(N, IDX, X, Y)
      INTEGER N, IDX(*), I
      DOUBLE PRECISION X(*), Y
      DO 10 I = 1, N
         CALL GATHER(N, IDX, X, Y)
         X(I) = X(I)*Y
   10 CONTINUE
      END
      SUBROUTINE GATHER(N, IDX, X, S)
      INTEGER N, IDX(*), I
      DOUBLE PRECISION X(*), S
      S = 0.0D0
      DO 10 I = 1, N
         S = S + X(IDX(I))**2
   10 CONTINUE
      END
",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let (code, out, err) = dfort(&[
        "adjoint",
        src.to_str().unwrap(),
        "--root",
        "top",
        "--independent",
        "x",
        "--dependent",
        "x",
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("the assumed-size array `x` would have to be saved whole")
            && err.contains("the subscript `idx(i)` of `x`"),
        "{err}"
    );
    assert!(!out_dir.join("gather_b.f90").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issues 45 and 41: SAVE'd locals that carry a value from one call to the
/// next are state of their procedure. `analyze` shows `s` of `ema` active
/// in `filter`'s call tree, and why. The adjoint shares each such local in
/// a module of its own (`dfort_save_<p>`) and runs a copy of each
/// procedure that changes one (`<p>_p`) in place of the original; the
/// kernels' test checks these adjoints numerically in the three recording
/// modes. A SAVE'd local it cannot share — one of an internal procedure —
/// is refused at its declaration (exit 1, no file written).
#[test]
fn saved_state_is_followed_by_the_analyses_and_shared_by_the_adjoint() {
    let file = "tests/fixtures/kernels/saved_state.f90";
    let (code, out, err) = dfort(&["analyze", file, "--root", "filter", "--explain", "s"]);
    assert_eq!(code, 0, "{err}");
    let ema = out.split("subroutine filter").next().unwrap_or_default();
    assert!(ema.contains("active: ema, s, v"), "{out}");
    assert!(ema.contains("s is active. Why:"), "{out}");
    assert!(
        ema.contains("line 16: ema depends on s through this statement"),
        "{out}"
    );
    let (code, out, err) = dfort(&["analyze", file, "--root", "filter", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    let unit = |name: &str| {
        json["units"]
            .as_array()
            .and_then(|u| u.iter().find(|u| u["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        unit("ema")["shared_state"],
        serde_json::json!(["s"]),
        "{out}"
    );
    assert_eq!(unit("ema")["runs_as_copy"], true, "{out}");
    assert_eq!(
        unit("filter")["shared_state"],
        serde_json::json!([]),
        "{out}"
    );
    assert_eq!(unit("filter")["runs_as_copy"], false, "{out}");
    for (root, owner, copy) in [
        ("filter", "ema", "function ema_p(v, start) result(ema)"),
        ("smooth", "window", "subroutine window_p(v, reset, w)"),
        ("weigh", "weight", "function weight_p(k, v) result(weight)"),
        ("counter", "scaled", "subroutine bump_p()"),
    ] {
        let dir =
            std::env::temp_dir().join(format!("dfort-saved-state-{root}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let d = dir.to_str().expect("utf-8 path");
        let (code, _, err) = dfort(&["adjoint", file, "--root", root, "--output-dir", d]);
        assert_eq!(code, 0, "{root}: {err}");
        let text = std::fs::read_to_string(dir.join("saved_state_b.f90")).expect("adjoint");
        assert!(
            text.contains(&format!("module dfort_save_{owner}")),
            "{root}: {text}"
        );
        assert!(text.contains(copy), "{root}: {text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    let internal = scratch_file(
        "saved-internal",
        "inner.f90",
        "subroutine outer(n, x, y)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(out) :: y(n)
  integer :: i
  do i = 1, n
    y(i) = run(x(i), i == 1)
  end do
contains
  real(8) function run(v, reset)
    real(8), intent(in) :: v
    logical, intent(in) :: reset
    real(8), save :: s = 0d0
    if (reset) s = 0d0
    s = s + v*v
    run = s
  end function run
end subroutine outer
",
    );
    let out_dir = internal.with_file_name("out");
    let (code, _, err) = dfort(&[
        "adjoint",
        internal.to_str().expect("utf-8"),
        "--root",
        "outer",
        "--output-dir",
        out_dir.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{err}");
    let refused: Vec<&str> = err
        .lines()
        .filter(|l| l.ends_with("[saved-state]"))
        .collect();
    assert_eq!(refused.len(), 1, "{err}");
    assert!(
        refused[0].contains("inner.f90:14:")
            && refused[0].contains("`s` is a SAVE'd local of `run`")
            && refused[0].contains("an internal procedure"),
        "{err}"
    );
    assert!(!out_dir.join("inner_b.f90").exists());
    let _ = std::fs::remove_dir_all(internal.parent().expect("dir"));
}

/// `dfort verify` on a root whose independent is a COMMON member says it
/// cannot check it (its driver declares no COMMON block) instead of
/// failing to compile its driver; the adjoint itself is written.
#[test]
fn verify_says_it_cannot_check_a_common_role() {
    let file = "tests/fixtures/fixed/jacobi_common.f";
    let (code, _, err) = dfort(&[
        "verify", file, "--root", "jaccst", "--int", "nx=6", "--int", "ny=5", "--int", "nit=4",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("`f` (in COMMON /fields/) is an independent of `jaccst`")
            && err.contains("declares no COMMON block"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("dfort-common-role-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().expect("utf-8 path");
    let (code, _, err) = dfort(&["adjoint", file, "--root", "jaccst", "--output-dir", d]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("jacobi_common_b.f90")).expect("adjoint written");
    assert!(text.contains("common /fields_b/ ub, fb"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A supplied adjoint (`--supplied`, `[adjoint] supplied`): the adjoint
/// calls the user's `solve_b` and writes none, its header says how it is
/// called, and `dfort verify` compiles the user's file and checks the
/// whole adjoint against the tangent, which differentiates the solver's
/// iterations; a supplied adjoint without its file, a name that is no
/// subroutine, or a wrong hand-written adjoint are reported.
#[test]
fn a_supplied_adjoint_is_called_and_verified() {
    let dir = Scratch::new("supplied");
    let out_dir = dir.join("out");
    let (code, out, err) = dfort(&[
        "adjoint",
        "tests/fixtures/supplied/model.f90",
        "--root",
        "model",
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(out_dir.join("model_b.f90")).unwrap();
    assert!(
        !text.lines().any(|l| l.starts_with("subroutine solve_b(")),
        "{text}"
    );
    assert!(
        text.contains("!   subroutine solve_b(n, a, b, bb, x, xb)"),
        "{text}"
    );
    assert_eq!(text.matches("call solve_b(n, a, b, bb, x, xb)").count(), 2);
    // Verified with dfort.toml's file: the dot-product test compares the
    // hand-written adjoint with the differentiated iterations.
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_none() {
        let (code, out, err) = dfort(&[
            "verify",
            "tests/fixtures/supplied/model.f90",
            "--root",
            "model",
        ]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("in the dot-product test (ok)"), "{out}");
    }
    // Without dfort.toml: the command line names the subroutine.
    let model = std::fs::read_to_string(root().join("tests/fixtures/supplied/model.f90")).unwrap();
    let copy = dir.join("model.f90");
    std::fs::write(&copy, &model).unwrap();
    let copy = copy.to_str().unwrap();
    let (code, _, err) = dfort(&[
        "verify",
        copy,
        "--root",
        "model",
        "--int",
        "n=5",
        "--supplied",
        "solve",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("give its file with `--supplied solve=FILE`"),
        "{err}"
    );
    for (name, says) in [
        ("nosuch", "no subroutine `nosuch`"),
        ("model", "the root's adjoint is what dfort writes"),
    ] {
        let (code, _, err) = dfort(&[
            "adjoint",
            copy,
            "--root",
            "model",
            "--supplied",
            name,
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    // A hand-written adjoint that is wrong fails the dot-product test.
    let right =
        std::fs::read_to_string(root().join("tests/fixtures/supplied/solve_adjoint.f90")).unwrap();
    let wrong = right.replace("bb = bb + lambda", "bb = bb + 0.5d0 * lambda");
    assert_ne!(wrong, right);
    let wrong_path = dir.join("wrong.f90");
    std::fs::write(&wrong_path, wrong).unwrap();
    let supplied = format!("solve={}", wrong_path.display());
    let (code, out, err) = dfort(&[
        "verify",
        copy,
        "--root",
        "model",
        "--int",
        "n=5",
        "--supplied",
        &supplied,
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("in the dot-product test (TOO LARGE)"), "{out}");
}

/// Issue 41: TRANSFER between one real type and kind is a copy and is
/// differentiated (kernel `packed`); between kinds it reinterprets the
/// bits and both derivatives are refused, naming the reference and the
/// line, with no file written.
#[test]
fn transfer_between_kinds_is_refused_with_the_line() {
    let dir = std::env::temp_dir().join(format!("dfort-transfer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("bits.f90");
    std::fs::write(
        &src,
        "subroutine bits(x, y)
  real(8), intent(in) :: x(2)
  real(8), intent(out) :: y
  real(4) :: h(4)
  h = transfer(x, h)
  y = x(1) + h(1)
end subroutine bits
",
    )
    .unwrap();
    for (mode, file) in [("adjoint", "bits_b.f90"), ("tangent", "bits_d.f90")] {
        let out_dir = dir.join(mode);
        let (code, out, err) = dfort(&[
            mode,
            src.to_str().unwrap(),
            "--root",
            "bits",
            "--independent",
            "x",
            "--dependent",
            "y",
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{mode}: {out}{err}");
        assert!(
            err.contains("bits.f90:5:")
                && err.contains("`transfer(x, h)`")
                && err.contains("reinterprets the bits"),
            "{mode}: {err}"
        );
        assert!(!out_dir.join(file).exists(), "{mode}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program whose derivatives grow past 1e13 through a chaotic loop
/// (the logistic map) and whose values then settle on a fixed point bit
/// for bit: the differences are 0, the tangent is right and huge (the
/// adjoint agrees). `dfort verify` still fails the check, and says why
/// finite differences cannot judge it (the fuzzer's seed 7070, case 476).
#[test]
fn verify_explains_a_tangent_too_large_for_the_differences() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let src = scratch_file(
        "chaos",
        "chaos.f90",
        "subroutine chaos(x, y)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8) :: t
  integer :: k
  t = 0.3d0 + 0.01d0*x
  do k = 1, 120
    t = 4.0d0*t*(1.0d0 - t)
  end do
  do k = 1, 30
    t = 0.5d0*cos(t)
  end do
  y = t
end subroutine chaos
",
    );
    let dir = src.parent().unwrap().to_path_buf();
    let (code, out, err) = dfort(&[
        "verify",
        src.to_str().unwrap(),
        "--root",
        "chaos",
        "--independent",
        "x",
        "--dependent",
        "y",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        out.contains("(TOO LARGE)")
            && out.contains("the tangent disagrees only where it is past 1e6")
            && out.contains("adjoint relative error")
            && out.contains("(ok)"),
        "{out}{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An IF or SELECT CASE whose arms give the reverse sweep nothing to do
/// records no arm, and one whose arms are dead too leaves the forward
/// sweep (issue 44); the IF with active arms still records its arm.
/// How `dfort analyze` says the construct at `line` of `unit` is reversed.
fn reversal_at(unit: &serde_json::Value, line: u64) -> Option<String> {
    unit["reversal"]
        .as_array()?
        .iter()
        .find(|r| r["line"] == line)
        .map(|r| r["how"].as_str().unwrap_or_default().to_string())
}

/// The adjoint `dfort adjoint FILE --root ROOT ARGS` writes into
/// `<stem>_b.f90` (`tag` names its scratch directory).
fn adjoint_text(file: &str, root: &str, args: &[&str], tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!("dfort-{tag}-{}", std::process::id()));
    let mut all = vec!["adjoint", file, "--root", root];
    all.extend(args);
    all.extend(["--output-dir", dir.to_str().unwrap()]);
    let (code, _, err) = dfort(&all);
    assert_eq!(code, 0, "{err}");
    let stem = std::path::Path::new(file)
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap();
    let text = std::fs::read_to_string(dir.join(format!("{stem}_b.f90"))).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    text
}

#[test]
fn branches_with_nothing_to_reverse_record_no_arm() {
    let file = "tests/fixtures/kernels/idle_branches.f90";
    let unit = analyze_json(file, "idle_branches", &[]);
    let how = |line| reversal_at(&unit, line);
    assert_eq!(how(15).as_deref(), Some("nothing-to-reverse"), "{unit}");
    assert_eq!(how(16).as_deref(), Some("nothing-to-reverse"), "{unit}");
    // Its condition reads an input: evaluated again, not pushed.
    assert_eq!(how(22).as_deref(), Some("branch-recomputed"), "{unit}");
    assert_eq!(how(25).as_deref(), Some("nothing-to-reverse"), "{unit}");
    let drops = unit["forward_sweep_drops"].to_string();
    for line in ["16", "25"] {
        assert!(drops.contains(line), "line {line} kept: {drops}");
    }
    let text = adjoint_text(file, "idle_branches", &[], "idle");
    assert!(!text.contains("dfort_branch"), "{text}");
    assert_eq!(text.matches("call dfort_push(").count(), 1, "{text}");
    assert!(!text.contains("select case"), "{text}");
    assert!(text.contains("im = n"), "{text}");
}

#[test]
fn branches_whose_conditions_nothing_changes_are_tested_again_not_pushed() {
    let file = "tests/fixtures/kernels/branch_retest.f90";
    let unit = analyze_json(file, "branch_retest", &[]);
    // An input, the replayed loop's index, a value set before the loop.
    for line in [17, 22, 29] {
        assert_eq!(
            reversal_at(&unit, line).as_deref(),
            Some("branch-recomputed"),
            "line {line}: {unit}"
        );
    }
    // Its own arm changes `s`.
    assert_eq!(
        reversal_at(&unit, 37).as_deref(),
        Some("push-branch"),
        "{unit}"
    );
    let text = adjoint_text(file, "branch_retest", &[], "retest");
    let reverse = &text[text
        .find("call dfort_pop(dfort_branch)")
        .expect("the IF on s pops its arm")..];
    assert_eq!(
        reverse.matches("call dfort_pop(dfort_branch)").count(),
        1,
        "{text}"
    );
    for test in [
        "if (x(i) > 0.0d0) then",
        "else if (i < n / 2) then",
        "select case (form)",
    ] {
        assert!(reverse.contains(test), "{test} not tested again: {text}");
    }
}

#[test]
fn intermediates_of_an_edge_loop_are_recomputed_not_pushed() {
    let file = "tests/fixtures/kernels/edge_loop.f90";
    let unit = analyze_json(file, "edge_flux", &[]);
    assert_eq!(unit["tbr"].as_array().map(Vec::len), Some(0), "{unit}");
    let r = &unit["recomputed"][0];
    assert_eq!(r["loop_line"], 13, "{unit}");
    assert_eq!(
        r["variables"],
        serde_json::json!(["len2", "nuex", "nuor", "vx", "vy"]),
        "{unit}"
    );
    assert_eq!(
        r["lines"],
        serde_json::json!([14, 15, 16, 17, 18]),
        "{unit}"
    );
    let roles = ["--independent", "coor,w", "--dependent", "res"];
    let text = adjoint_text(file, "edge_flux", &roles, "edge");
    assert!(!text.contains("dfort_push"), "{text}");
    let reverse = text.split("! reverse sweep").nth(1).unwrap();
    assert!(
        reverse.contains("vx = coor(1, nuex) - coor(1, nuor)"),
        "{text}"
    );
    let forward = text.split("! forward sweep").nth(1).unwrap();
    assert!(
        !forward
            .split("! reverse sweep")
            .next()
            .unwrap()
            .contains("do ie"),
        "{text}"
    );
}

#[test]
fn a_module_array_a_calls_snapshot_restores_is_not_recorded_again_by_the_callee() {
    // ocean_cost's time loop calls step, which reads the module arrays h
    // and flux. The call's snapshot saves them, so the next step's writes
    // need not record them for this one: step records h (its own adjoint
    // reads h after overwriting it) and not flux.
    let file = "tests/fixtures/kernels/fields.f90";
    let roles = ["--independent", "h0,dt", "--dependent", "cost"];
    let args = [
        &["analyze", file, "--root", "ocean_cost", "--format", "json"],
        &roles[..],
    ]
    .concat();
    let (code, out, err) = dfort(&args);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let unit = doc["units"]
        .as_array()
        .and_then(|us| us.iter().find(|u| u["name"] == "step"))
        .expect("step analysed");
    let records: Vec<_> = unit["tbr"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["variable"].clone())
        .collect();
    assert_eq!(records, ["h"], "{unit}");
    let step = |text: &str| {
        let body = &text[text.find("subroutine step_b").expect("step_b")..];
        body[..body.find("end subroutine step_b").unwrap()].to_string()
    };
    let text = adjoint_text(file, "ocean_cost", &roles, "modsnap");
    let body = step(&text);
    assert!(body.contains("call dfort_push(h(i))"), "{body}");
    assert!(!body.contains("call dfort_push(flux"), "{body}");
    // The snapshot around the call still saves h.
    assert!(text.contains("    call dfort_push(h)\n"), "{text}");
    // Without TBR (every overwrite recorded), step records flux too.
    let all = adjoint_text(
        file,
        "ocean_cost",
        &[&roles[..], &["--no-tbr"]].concat(),
        "modsnap-all",
    );
    assert!(step(&all).contains("call dfort_push(flux(i))"), "{all}");
}

#[test]
fn an_array_the_callee_fills_before_reading_it_is_left_out_of_the_snapshot() {
    // step fills flux(1:n-1) before its second loop reads flux(1:n-1):
    // step_b never reads flux's value on entry, so the call's snapshot
    // saves h alone.
    let file = "tests/fixtures/kernels/fields.f90";
    let roles = ["--independent", "h0,dt", "--dependent", "cost"];
    let text = adjoint_text(file, "ocean_cost", &roles, "filled");
    let root = &text[text.find("subroutine ocean_cost_b").expect("ocean_cost_b")..];
    assert!(root.contains("    call dfort_push(h)\n"), "{root}");
    assert!(!root.contains("call dfort_push(flux)"), "{root}");
    assert!(!root.contains("call dfort_pop(flux)"), "{root}");
}

#[test]
fn a_loop_free_callee_in_a_time_loop_runs_split_instead_of_snapshotting_the_particle() {
    // fly's `call kick(ps(i), dt, 9.81d0)` in its time loop: kick has no
    // loop and sets three components of p. Split, its forward routine
    // records the one an adjoint reads back (p%vel%y: the positions are
    // read only by the energy, after the time loop); joint, the caller
    // pushed the whole particle before each call and kick ran twice.
    let file = "tests/fixtures/kernels/derived.f90";
    let text = adjoint_text(file, "fly", &[], "loopfree");
    let root = &text[text.find("subroutine fly_b").expect("fly_b")..];
    assert!(root.contains("call kick_fwd(ps(i), dt, 9.81d0)"), "{root}");
    assert!(
        root.contains("call kick_rev(ps(i), psb(i), dt, dtb, 9.81d0)"),
        "{root}"
    );
    assert!(!root.contains("call dfort_push(ps(i))"), "{root}");
    let fwd = &text[text.find("subroutine kick_fwd").expect("kick_fwd")..];
    let fwd = &fwd[..fwd.find("end subroutine kick_fwd").unwrap()];
    assert_eq!(fwd.matches("call dfort_push(").count(), 1, "{fwd}");
    assert!(fwd.contains("call dfort_push(p%vel%y)"), "{fwd}");
    // A callee whose split routine would record more than the snapshot
    // saves stays joint: accumulate(x(k), y) sets b, which joint mode
    // never saves (its adjoint does not read it).
    let file = "tests/fixtures/kernels/intent_in_actual.f90";
    let text = adjoint_text(file, "intent_in_actual", &[], "loopfree");
    assert!(
        text.contains("call accumulate_b(x(k), xb(k), y, yb)"),
        "{text}"
    );
    assert!(!text.contains("call accumulate_fwd"), "{text}");
}

#[test]
fn a_callee_recording_the_elements_its_snapshot_would_save_runs_split_in_a_time_loop() {
    // soak's `call relax(cs, m, n, 0.1d0)` in its time loop: relax
    // records two components and a branch of every cell it updates. Joint
    // mode pushed the whole array of cells before each call and made the
    // same records again in its reverse sweep; split, relax_fwd's records
    // are all, and relax runs once.
    let file = "tests/fixtures/kernels/record_snapshots.f90";
    let text = adjoint_text(file, "soak", &[], "withinsnap");
    let root = &text[text.find("subroutine soak_b").expect("soak_b")..];
    assert!(root.contains("call relax_fwd(cs, m, n, 0.1d0)"), "{root}");
    assert!(root.contains("call stir_fwd(row, n)"), "{root}");
    assert!(!root.contains("call dfort_push(cs)"), "{root}");
    assert!(!root.contains("call dfort_push(row)"), "{root}");
    // A callee that records nothing joint but every element split (a
    // swap of two rows) stays joint.
    let file = "tests/fixtures/linalg/xlapack.f";
    let blas = ["tests/fixtures/linalg/xblas.f"];
    let text = adjoint_text(file, "xlaswp", &blas, "withinsnap");
    assert!(text.contains("call xswap_b("), "{text}");
    assert!(!text.contains("call xswap_fwd("), "{text}");
}

#[test]
fn backward_go_to_loops_are_reversed_as_structured_loops() {
    // gsweep's `10 CONTINUE … IF (IT .LT. ITERS) GO TO 10` around a DO
    // (tested at its end) and goto_counters' `10 if (i > n) goto 20 …
    // goto 10` (tested at its head): each unit is reversed as structured
    // code, its trip count pushed once, not a basic-block id per block.
    let cases = [
        ("tests/fixtures/kernels/goto_sweep.f", "gsweep", 10),
        (
            "tests/fixtures/kernels/goto_counters.f90",
            "goto_counters",
            13,
        ),
    ];
    for (file, root, head) in cases {
        let unit = analyze_json(file, root, &[]);
        assert_eq!(unit["reversed_by_blocks"], false, "{unit}");
        let trips = unit["reversal"].as_array().is_some_and(|r| {
            r.iter()
                .any(|r| r["line"] == head && r["how"] == "push-trips")
        });
        assert!(trips, "{unit}");
        let text = adjoint_text(file, root, &[], "gotoloops");
        assert!(!text.contains("dfort_branch"), "{text}");
        assert!(!text.contains("go to"), "{text}");
    }
    let text = adjoint_text(cases[1].0, "goto_counters", &[], "gotoloops");
    assert!(text.contains("do while (.not. i > n)"), "{text}");
    // Its counter is inverted in the reversed iterations, not pushed.
    assert!(text.contains("i = i - 1"), "{text}");
    assert!(
        !text.contains("call dfort_push(i)\n    i = i + 1"),
        "{text}"
    );
}

#[test]
fn a_function_references_actuals_are_left_to_its_snapshot_and_an_unread_result_is_not_pushed() {
    // `a = corner(k); b = …; perim = perim + dist(a, b)` in a loop:
    // dist's snapshot restores a and b, so their assignments record
    // nothing, and the sum does not read dist's result.
    let file = "tests/fixtures/kernels/derived.f90";
    let args = ["analyze", file, "--root", "polygon", "--format", "json"];
    let (code, out, err) = dfort(&args);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let unit = doc["units"]
        .as_array()
        .and_then(|us| us.iter().find(|u| u["name"] == "polygon"))
        .expect("polygon analysed");
    assert_eq!(unit["tbr"].as_array().map(Vec::len), Some(0), "{unit}");
    let text = adjoint_text(file, "polygon", &[], "refsnap");
    let body = &text[text.find("subroutine polygon_b").expect("polygon_b")..];
    let body = &body[..body.find("end subroutine polygon_b").unwrap()];
    assert_eq!(body.matches("call dfort_push(").count(), 2, "{body}");
    assert!(body.contains("call dfort_push(a)"), "{body}");
    assert!(!body.contains("call dfort_push(dfort_f"), "{body}");
}
