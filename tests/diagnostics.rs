//! Each `NAME_bad` fixture must give exactly the diagnostics its
//! `dfort-expect:` comments list (severity, code, line and, where given,
//! column of the original text), and its `NAME_ok` twin must give none.

use crate::support::*;
use dfort_syntax::Severity;

#[derive(Debug)]
struct Expect {
    severity: String,
    code: String,
    line: u32,
    col: Option<u32>,
}

fn expectations(text: &str) -> Vec<Expect> {
    text.lines()
        .filter_map(|l| l.split_once("dfort-expect:").map(|(_, r)| r))
        .map(|r| {
            let parts: Vec<&str> = r.split_whitespace().collect();
            assert!(parts.len() >= 3, "bad dfort-expect line: {r}");
            let (line, col) = match parts[2].split_once(':') {
                Some((l, c)) => (l.parse().unwrap(), Some(c.parse().unwrap())),
                None => (parts[2].parse().unwrap(), None),
            };
            Expect {
                severity: parts[0].to_string(),
                code: parts[1].to_string(),
                line,
                col,
            }
        })
        .collect()
}

#[test]
fn bad_fixtures_give_exactly_the_expected_diagnostics_and_ok_twins_none() {
    let dir = fixtures().join("diagnostics");
    let files = fortran_files(&dir);
    let bad: Vec<_> = files
        .iter()
        .filter(|p| p.file_stem().unwrap().to_string_lossy().ends_with("_bad"))
        .collect();
    assert!(
        bad.len() >= 8,
        "expected at least 8 pairs, found {}",
        bad.len()
    );
    let mut checked = 0;
    for b in bad {
        let stem = b.file_stem().unwrap().to_string_lossy().to_string();
        let ok = b.with_file_name(format!(
            "{}_ok.{}",
            stem.trim_end_matches("_bad"),
            b.extension().unwrap().to_string_lossy()
        ));
        assert!(ok.exists(), "{} has no _ok twin", b.display());

        let ws = load_one(&ok);
        assert!(
            ws.diagnostics().is_empty(),
            "{} must give no diagnostics, gave:\n{}",
            ok.display(),
            ws.render_diagnostics()
        );

        let text = std::fs::read_to_string(b).unwrap();
        let expected = expectations(&text);
        assert!(
            !expected.is_empty(),
            "{} has no dfort-expect line",
            b.display()
        );
        let ws = load_one(b);
        let got = ws.diagnostics();
        for e in &expected {
            let found = got.iter().any(|d| {
                d.severity.as_str() == e.severity
                    && d.code == e.code
                    && d.line == e.line
                    && e.col.is_none_or(|c| c == d.col)
            });
            assert!(
                found,
                "{}: expected {:?}, got:\n{}",
                b.display(),
                e,
                ws.render_diagnostics()
            );
        }
        for d in got.iter().filter(|d| d.severity != Severity::Note) {
            let wanted = expected
                .iter()
                .any(|e| d.severity.as_str() == e.severity && d.code == e.code && d.line == e.line);
            assert!(
                wanted,
                "{}: unexpected diagnostic {}:{} {} [{}]",
                b.display(),
                d.line,
                d.col,
                d.message,
                d.code
            );
        }
        checked += 1;
    }
    println!("{checked} diagnostic fixture pairs checked");
}

#[test]
fn broken_fixed_form_continuation_points_at_the_original_column() {
    // The extra `)` sits on a column-6 continuation line; the normalised
    // text has a different layout, yet the error must land on the
    // original line 9, column 24.
    let ws = fixture("diagnostics/continuation_bad.f");
    let d = first_with_code(&ws, "syntax-error");
    assert_eq!((d.line, d.col), (9, 24), "{}", ws.render_diagnostics());
    // Same through TAB-form continuation.
    let ws = fixture("diagnostics/tab_continuation_bad.f");
    let d = first_with_code(&ws, "syntax-error");
    assert_eq!((d.line, d.col), (10, 15), "{}", ws.render_diagnostics());
}

#[test]
fn an_unclosed_if_damages_only_its_own_unit() {
    let ws = fixture("diagnostics/unclosed_if_bad.f90");
    assert!(
        ws.diagnostics().iter().all(|d| d.line < 11),
        "{}",
        ws.render_diagnostics()
    );
    let second = unit(&ws, "scale_flux");
    assert!(!second.body.is_empty());
    assert!(second.cfg.structured);
}

#[test]
fn the_73_column_bratu_line_is_reported_as_truncated() {
    let ws = fixture("papers/bratu_73col.f");
    let warn = first_with_code(&ws, "fixed-line-length");
    assert_eq!(warn.col, 73);
    let err = first_with_code(&ws, "syntax-error");
    assert_eq!(err.line, warn.line);
    assert!(err.message.contains("truncated"), "{}", err.message);
    // With a 132-column limit the same file is clean.
    let config = dfort_ide::host::HostConfig {
        fixed: dfort_syntax::FixedOptions {
            line_length: Some(132),
        },
        ..Default::default()
    };
    let path = fixtures().join("papers/bratu_73col.f");
    let (mut host, _) = dfort_ide::host::Host::load(std::slice::from_ref(&path), config);
    let diags = dfort_ide::diagnostics::front_end(&host.snapshot(), &path);
    assert!(diags.is_empty(), "{diags:?}");
}
