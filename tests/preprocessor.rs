//! dfort's C preprocessor against gfortran's (issue 18): every source of
//! every configuration of tests/fixtures/cpp/corpus.toml is run through
//! `dfort preprocess` and `gfortran -cpp -E` with the configuration's
//! `-I` and `-D`, and the two outputs must hold the same Fortran tokens on
//! the same lines of the same files (whitespace normalised; comments
//! dropped, since dfort does not replace macros in Fortran comments where
//! gfortran does). Set DFORT_SKIP_GFORTRAN=1 to skip it without gfortran.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Deserialize)]
struct Corpus {
    config: Vec<Config>,
}

#[derive(Deserialize)]
struct Config {
    name: String,
    files: Vec<String>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    define: BTreeMap<String, String>,
}

impl Config {
    fn flags(&self) -> Vec<String> {
        let mut f: Vec<String> = self.include.iter().map(|d| format!("-I{d}")).collect();
        for (k, v) in &self.define {
            f.push(if v.is_empty() {
                format!("-D{k}")
            } else {
                format!("-D{k}={v}")
            });
        }
        f
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cpp")
}

/// A line of preprocessed output: file, 1-based line, normalised tokens.
type Origin = (String, u32, String);

/// The non-blank lines of `-E` output with their origins, comments
/// dropped and blanks collapsed.
fn lines_of(output: &str, fixed: bool) -> Vec<Origin> {
    let mut file = String::new();
    let mut line = 0u32;
    let mut out = Vec::new();
    for text in output.lines() {
        if let Some(marker) = text.strip_prefix("# ") {
            let mut parts = marker.splitn(2, ' ');
            if let (Some(n), Some(rest)) = (parts.next(), parts.next()) {
                if let Ok(n) = n.parse::<u32>() {
                    line = n;
                    file = rest.split('"').nth(1).unwrap_or("").to_string();
                    continue;
                }
            }
        }
        let code = strip_comment(text, fixed);
        let normal = code.split_whitespace().collect::<Vec<_>>().join(" ");
        if !normal.is_empty() {
            out.push((file.clone(), line, normal));
        }
        line += 1;
    }
    out
}

/// `text` without its Fortran comment.
fn strip_comment(text: &str, fixed: bool) -> &str {
    if fixed && matches!(text.as_bytes().first(), Some(b'c' | b'C' | b'*' | b'!')) {
        return "";
    }
    let b = text.as_bytes();
    let mut quote: Option<u8> = None;
    for (i, &c) in b.iter().enumerate() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'!' && !(fixed && i == 5) => return &text[..i],
            None => {}
        }
    }
    text
}

fn run(program: &str, args: &[String], dir: &Path) -> (bool, String, String) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cpp_corpus_preprocesses_as_gfortran_does() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let dir = corpus_dir();
    let text = std::fs::read_to_string(dir.join("corpus.toml")).expect("corpus.toml");
    let corpus: Corpus = toml::from_str(&text).expect("corpus.toml parses");
    assert!(corpus.config.len() >= 4, "too few configurations");
    let mut checked = 0;
    let mut failures = Vec::new();
    for config in &corpus.config {
        for file in &config.files {
            let fixed = file.ends_with(".F") || file.ends_with(".FOR");
            let mut args = vec!["preprocess".to_string(), file.clone()];
            args.extend(config.flags());
            let (ok, ours, err) = run(env!("CARGO_BIN_EXE_dfort"), &args, &dir);
            if !ok {
                failures.push(format!(
                    "{} {file}: dfort preprocess failed:\n{err}",
                    config.name
                ));
                continue;
            }
            let mut gargs = vec!["-cpp".to_string(), "-E".to_string()];
            gargs.extend(config.flags());
            gargs.push(file.clone());
            let (gok, theirs, gerr) = run("gfortran", &gargs, &dir);
            assert!(gok, "gfortran -cpp -E {file}: {gerr}");
            let (a, b) = (lines_of(&ours, fixed), lines_of(&theirs, fixed));
            if a != b {
                let first = a
                    .iter()
                    .zip(&b)
                    .position(|(x, y)| x != y)
                    .unwrap_or(a.len().min(b.len()));
                failures.push(format!(
                    "{} {file}: first difference at output line {first}:\n  dfort:    {:?}\n  gfortran: {:?}",
                    config.name,
                    a.get(first),
                    b.get(first)
                ));
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 40, "only {checked} files checked");
}

#[test]
fn preprocess_reports_directive_errors_at_their_file_and_line() {
    let dir = std::env::temp_dir().join(format!("dfort-cpp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("h.h"), "#if 0\n#elif\n#endif\n").unwrap();
    std::fs::write(
        dir.join("a.F90"),
        "#include \"h.h\"\n#include \"missing.h\"\nprogram p\n#ifdef X\nend program\n",
    )
    .unwrap();
    let (ok, out, err) = run(
        env!("CARGO_BIN_EXE_dfort"),
        &["preprocess".into(), "a.F90".into()],
        &dir,
    );
    assert!(!ok, "{out}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].starts_with("./h.h:2: error:") || lines[0].starts_with("h.h:2: error:"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("a.F90:2: error: missing.h: no such file"),
        "{err}"
    );
    assert!(
        lines[2].starts_with("a.F90:4: error: unterminated #if"),
        "{err}"
    );
    assert!(out.starts_with("# 1 \"h.h\"\n"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `dfort check` on every configuration of the corpus, with its `-I` and
/// `-D`: the front end reads the preprocessor's output (headers with
/// COMMON blocks and PARAMETERs, `_RL` type macros, `2.0 _d 0` literals
/// spliced by `-D_d=D`, `CHARACTER*(*)`, statement macros, WRF-style `#if`)
/// and finds no error and no warning.
#[test]
fn the_cpp_corpus_checks_clean_under_its_settings() {
    let dir = corpus_dir();
    let text = std::fs::read_to_string(dir.join("corpus.toml")).expect("corpus.toml");
    let corpus: Corpus = toml::from_str(&text).expect("corpus.toml parses");
    let mut files = 0;
    for config in &corpus.config {
        let mut args = vec!["check".to_string()];
        args.extend(config.files.iter().cloned());
        args.extend(config.flags());
        let (ok, out, err) = run(env!("CARGO_BIN_EXE_dfort"), &args, &dir);
        assert!(ok, "{}: {out}{err}", config.name);
        let summary = err.lines().last().unwrap_or("");
        assert!(
            summary.ends_with(": 0 error(s), 0 warning(s)"),
            "{}: {out}{err}",
            config.name
        );
        files += config.files.len();
    }
    assert!(files >= 100, "only {files} files checked");
    // `dfort ir` lowers the preprocessor's output, with the lines of the
    // file itself (the SUBROUTINE statement is on line 6 of cost_theta.F,
    // after the #include lines).
    let args: Vec<String> = ["ir", "ocean/cost_theta.F", "-Iocean", "-D_d=D"]
        .map(String::from)
        .to_vec();
    let (ok, out, err) = run(env!("CARGO_BIN_EXE_dfort"), &args, &dir);
    assert!(ok, "{out}{err}");
    assert!(out.contains("common /cost_r/"), "{out}");
    assert!(
        out.starts_with("subroutine cost_theta (lines 6-42)"),
        "{out}"
    );
    // Without `-D_d=D`, `_d` stays in the literals: syntax errors at the
    // file's own lines and columns (the headers are found next to it).
    let (ok, out, err) = run(
        env!("CARGO_BIN_EXE_dfort"),
        &["check".into(), "ocean/cost_theta.F".into()],
        &dir,
    );
    assert!(!ok, "{err}");
    assert!(
        out.lines()
            .next()
            .is_some_and(|l| l.starts_with("ocean/cost_theta.F:32:19: error: syntax error")),
        "{out}"
    );
}

/// Positions map back through the preprocessor: an error in an included
/// header is reported in the header at its own line; one in the file
/// after an include and a multi-line macro expansion at the file's line;
/// an `#error` and a `#warning` at theirs. `dfort.toml`'s
/// `[preprocessor]` gives what `-I` and `-D` would.
#[test]
fn diagnostics_of_preprocessed_files_land_in_the_file_that_holds_the_text() {
    let dir = std::env::temp_dir().join(format!("dfort-cpp-pos-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(
        dir.join("inc/decls.h"),
        "      REAL*8 a, b\n      COMMON /ab/ a, b\n      REAL*8 c = = 1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.F"),
        "#define TWICE(x) \\\n  (2 _d 0*(x))\n\
         #warning \"not tested\"\n\
         \x20     SUBROUTINE s(y)\n\
         #include \"decls.h\"\n\
         \x20     REAL*8 y\n\
         \x20     y = TWICE(a) + b\n\
         \x20     y = y 2\n\
         \x20     END\n\
         \x20     SUBROUTINE t(y)\n\
         #include \"decls.h\"\n\
         \x20     REAL*8 y\n\
         \x20     y = a\n\
         \x20     END\n\
         #if N > 3\n\
         #error \"N too large\"\n\
         #endif\n",
    )
    .unwrap();
    let check = |extra: &[&str]| {
        let mut args = vec!["check".to_string(), "main.F".to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        run(env!("CARGO_BIN_EXE_dfort"), &args, &dir)
    };
    let (ok, err, _) = check(&["-Iinc", "-D_d=D", "-DN=4"]);
    assert!(!ok, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let has = |prefix: &str, code: &str| {
        lines
            .iter()
            .any(|l| l.starts_with(prefix) && l.ends_with(&format!("[{code}]")))
    };
    assert!(
        has("main.F:3:1: warning: #warning", "preprocessor-warning"),
        "{err}"
    );
    assert!(
        has(
            "main.F:16:1: error: #error \"N too large\"",
            "preprocessor-error"
        ),
        "{err}"
    );
    assert!(
        has("main.F:8:13: error: syntax error", "syntax-error"),
        "{err}"
    );
    // The header's error, once, though two routines include it.
    let in_header: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("inc/decls.h:"))
        .collect();
    assert_eq!(in_header.len(), 1, "{err}");
    assert!(in_header[0].starts_with("inc/decls.h:3:"), "{err}");
    // No error lands on a line of main.F that holds none.
    for l in &lines {
        if let Some(rest) = l.strip_prefix("main.F:") {
            let line: u32 = rest.split(':').next().unwrap().parse().unwrap();
            assert!([3, 8, 16].contains(&line), "{err}");
        }
    }
    // The same settings from dfort.toml; the command line's -D wins.
    std::fs::write(
        dir.join("dfort.toml"),
        "[preprocessor]\ninclude = [\"inc\"]\ndefine = { _d = \"D\", N = \"4\" }\n",
    )
    .unwrap();
    let (_, from_toml, _) = check(&[]);
    // (Its directories are relative to dfort.toml, printed as found.)
    let from_toml = from_toml.replace(&format!("{}/", dir.display()), "");
    assert_eq!(from_toml, err);
    let (_, overridden, _) = check(&["-DN=2"]);
    assert!(!overridden.contains("N too large"), "{overridden}");
    // --no-cpp: the directives are not Fortran.
    let (ok, raw, _) = check(&["--no-cpp"]);
    assert!(!ok && !raw.contains("preprocessor"), "{raw}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `dfort verify` on routines of the ocean corpus that read their
/// PARAMETERs and COMMON blocks from headers and their literals through
/// `_d`: tangent against finite differences and adjoint by the dot-product
/// test, compiled from the preprocessor's output.
#[test]
fn routines_built_from_headers_and_macros_are_gradient_checked() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let dir = corpus_dir();
    for (files, root, ints) in [
        (vec!["ocean/cost_theta.F"], "cost_theta", "n=4"),
        (vec!["ocean/calc_diffusion.F"], "calc_diffusion", "mythid=1"),
    ] {
        let mut args = vec!["verify".to_string()];
        args.extend(files.iter().map(|f| f.to_string()));
        for a in ["--root", root, "--int", ints, "-Iocean", "-D_d=D"] {
            args.push(a.to_string());
        }
        let (ok, out, err) = run(env!("CARGO_BIN_EXE_dfort"), &args, &dir);
        assert!(ok, "{root}: {out}{err}");
        assert!(
            out.contains("tangent relative error") && out.contains("(ok)"),
            "{out}"
        );
        assert!(out.contains("dot-product test (ok)"), "{out}");
    }
}

/// The Fortran `INCLUDE 'file'` line, in a file the C preprocessor does
/// not run on: found in the file's directory, then with `-I`; a missing
/// one reported on its line; the routine differentiated and verified.
#[test]
fn fortran_include_lines_are_read_with_the_include_path() {
    let dir = std::env::temp_dir().join(format!("dfort-include-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(
        dir.join("inc/size.inc"),
        "      INTEGER n\n      PARAMETER (n = 4)\n      REAL*8 w(n)\n      COMMON /wc/ w\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.f"),
        "      SUBROUTINE s(x, y)\n      INCLUDE 'size.inc'\n      REAL*8 x(n), y\n      INTEGER i\n      y = 0\n      DO i = 1, n\n        y = y + x(i)**2 + w(i)*x(i)\n      ENDDO\n      END\n",
    )
    .unwrap();
    let dfort = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        run(env!("CARGO_BIN_EXE_dfort"), &args, &dir)
    };
    let (ok, out, err) = dfort(&["check", "main.f", "-Iinc"]);
    assert!(ok, "{out}{err}");
    let (ok, out, _) = dfort(&["check", "main.f"]);
    assert!(!ok);
    assert!(
        out.starts_with("main.f:2:1: error: INCLUDE 'size.inc': no such file")
            && out.trim_end().ends_with("[preprocessor-error]"),
        "{out}"
    );
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_none() {
        let (ok, out, err) = dfort(&["verify", "main.f", "--root", "s", "-Iinc"]);
        assert!(ok && out.contains("dot-product test (ok)"), "{out}{err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
