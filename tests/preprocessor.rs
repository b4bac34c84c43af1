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
