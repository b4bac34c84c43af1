use super::*;
use std::collections::HashMap;

fn files(list: &[(&str, &str)]) -> HashMap<PathBuf, String> {
    list.iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect()
}

fn run(main: &str, fs: &HashMap<PathBuf, String>, options: &CppOptions) -> Preprocessed {
    let text = &fs[Path::new(main)];
    preprocess(Path::new(main), text, options, &|p: &Path| {
        fs.get(p).cloned()
    })
}

#[test]
fn directives_leave_blank_lines_and_lines_keep_their_place() {
    let fs = files(&[(
        "m/a.F90",
        "#define N 4\nprogram p\n#ifdef MISSING\n  junk ) (\n#else\n  integer :: x(N)\n#endif\nend program\n",
    )]);
    let out = run("m/a.F90", &fs, &CppOptions::default());
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(
        lines,
        [
            "",
            "program p",
            "",
            "",
            "",
            "  integer :: x(4)",
            "",
            "end program"
        ]
    );
    assert_eq!(out.lines.len(), 8);
    assert!(out
        .lines
        .iter()
        .enumerate()
        .all(|(i, l)| l.file == 0 && l.line == i as u32));
    assert_eq!(out.inactive, vec![(0, 3..4)]);
    assert_eq!(out.uses.len(), 1);
    assert_eq!(out.uses[0].name, "N");
    assert_eq!(out.uses[0].columns, 15..16);
    assert_eq!(out.uses[0].defined_at, Some((0, 0)));
}

#[test]
fn includes_search_the_including_directory_then_the_include_path() {
    let fs = files(&[
        (
            "src/a.F",
            "#include \"OPTS.h\"\n#include <SIZE.h>\n      x = NX\n",
        ),
        ("src/OPTS.h", "#define ALLOW_X\n#include \"inner.h\"\n"),
        ("inc/inner.h", "#define NX 7\n"),
        ("inc/SIZE.h", "      INTEGER NY\n"),
        ("src/SIZE.h", "      WRONG\n"),
    ]);
    let options = CppOptions {
        include: vec![PathBuf::from("inc")],
        fixed: true,
        ..CppOptions::default()
    };
    let out = run("src/a.F", &fs, &options);
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    // <SIZE.h> skips the including directory.
    assert!(
        out.text.contains("INTEGER NY") && !out.text.contains("WRONG"),
        "{}",
        out.text
    );
    assert!(out.text.contains("      x = 7"));
    let names: Vec<String> = out.files.iter().map(|f| f.display().to_string()).collect();
    assert_eq!(
        names,
        ["src/a.F", "src/OPTS.h", "inc/inner.h", "inc/SIZE.h"]
    );
    // The header's line is reported in the header.
    let ny = out
        .text
        .lines()
        .position(|l| l.contains("INTEGER NY"))
        .unwrap();
    assert_eq!((out.lines[ny].file, out.lines[ny].line), (3, 0));
    let x = out.text.lines().position(|l| l.contains("x = 7")).unwrap();
    assert_eq!((out.lines[x].file, out.lines[x].line), (0, 2));
}

#[test]
fn conditions_with_defined_arithmetic_and_elif() {
    let src = "#if defined(DM_PARALLEL) && !defined STUBMPI\nA\n#elif ( EM_CORE == 1 ) && RWORDSIZE * 2 == 16\nB\n#else\nC\n#endif\n";
    let fs = files(&[("w.F90", src)]);
    let with = |define: &[(&str, &str)]| {
        let options = CppOptions {
            define: define
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            ..CppOptions::default()
        };
        let out = run("w.F90", &fs, &options);
        assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
        out.text.split_whitespace().collect::<String>()
    };
    assert_eq!(with(&[("DM_PARALLEL", "1")]), "A");
    assert_eq!(with(&[("DM_PARALLEL", "1"), ("STUBMPI", "1")]), "C");
    assert_eq!(with(&[("EM_CORE", "1"), ("RWORDSIZE", "8")]), "B");
    assert_eq!(with(&[("EM_CORE", "1"), ("RWORDSIZE", "4")]), "C");
}

#[test]
fn nested_groups_inside_inactive_regions_stay_inactive() {
    let src = "#if 0\n#if 1\nX\n#else\nY\n#endif\n#elif 1\nZ\n#endif\n#undef Q\n";
    let fs = files(&[("n.F90", src)]);
    let out = run("n.F90", &fs, &CppOptions::default());
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    assert_eq!(out.text.split_whitespace().collect::<String>(), "Z");
    assert_eq!(out.inactive, vec![(0, 1..6)]);
}

#[test]
fn problems_are_located() {
    let src = "#if 1 +\n#endif\n#else\n#foo\n#include \"nowhere.h\"\n#error stop here\n#ifdef A\n";
    let fs = files(&[("e.F90", src)]);
    let out = run("e.F90", &fs, &CppOptions::default());
    let got: Vec<(u32, &str)> = out
        .diagnostics
        .iter()
        .map(|d| (d.line, d.message.as_str()))
        .collect();
    assert_eq!(got.len(), 6, "{got:?}");
    assert_eq!(got[0].0, 0);
    assert_eq!(got[1], (2, "#else without #if"));
    assert_eq!(got[2], (3, "invalid preprocessing directive #foo"));
    assert!(got[3].1.starts_with("nowhere.h: no such file"), "{got:?}");
    assert_eq!(got[4], (5, "#error stop here"));
    assert_eq!(got[5].0, 6);
    assert!(got[5].1.contains("unterminated"));
}

#[test]
fn a_header_that_includes_itself_stops() {
    let fs = files(&[
        ("s.F90", "#include \"s.h\"\n"),
        ("s.h", "#include \"s.h\"\n"),
    ]);
    let out = run("s.F90", &fs, &CppOptions::default());
    assert_eq!(out.diagnostics.len(), 1, "{:?}", out.diagnostics);
    assert!(out.diagnostics[0].message.contains("nested"));
}

#[test]
fn source_columns_map_back_through_replacements() {
    let fs = files(&[("c.F", "#define _RL Real*8\n      _RL x, y\n")]);
    let options = CppOptions {
        fixed: true,
        ..CppOptions::default()
    };
    let out = run("c.F", &fs, &options);
    let line = out.text.lines().nth(1).unwrap();
    assert_eq!(line, "      Real*8 x, y");
    let l = &out.lines[1];
    // Inside the replacement: the macro use; after it: shifted back.
    assert_eq!(l.source_column(8), 6);
    let y_out = line.find('y').unwrap();
    assert_eq!(&"      _RL x, y"[l.source_column(y_out)..], "y");
    assert_eq!(l.source_column(2), 2);
}

#[test]
fn command_line_macros_and_default_extensions() {
    let fs = files(&[("d.F", "      y = 2.0 _d 0\n")]);
    let options = CppOptions {
        define: vec![("_d".into(), "D".into())],
        fixed: true,
        ..CppOptions::default()
    };
    assert_eq!(run("d.F", &fs, &options).text, "      y = 2.0 D 0\n");
    for p in ["a.F", "a.F90", "a.fpp", "a.F08"] {
        assert!(preprocessed_by_default(Path::new(p)), "{p}");
    }
    for p in ["a.f", "a.f90", "a.h", "a"] {
        assert!(!preprocessed_by_default(Path::new(p)), "{p}");
    }
}

#[test]
fn c_comments_are_removed_and_keep_the_lines() {
    let fs = files(&[(
        "t.F90",
        "/* header\n   comment */\n#define CAT(a, b) a/**/b\ninteger :: CAT(tmp,1) ! '/* kept */'\ns = '/* kept */'\n",
    )]);
    let out = run("t.F90", &fs, &CppOptions::default());
    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(
        lines,
        [
            "",
            "",
            "",
            "integer :: tmp1 ! '/* kept */'",
            "s = '/* kept */'"
        ]
    );
}

/// A condition as the test compares it: line, directive, outcome, and
/// each tested name with its replacement and place.
type Seen<'a> = (
    u32,
    &'a str,
    ConditionOutcome,
    Vec<(&'a str, Option<&'a str>, Option<(u32, u32)>)>,
);

#[test]
fn conditions_record_the_macros_they_test_and_what_they_decided() {
    let fs = files(&[(
        "m/c.F",
        "#define ALLOW_A 1\n#define SQ(x) x*x\n#ifdef ALLOW_A\n#if defined(ALLOW_B) || SQ(2) > 3\n#elif ALLOW_A\n#endif\n#else\n#ifndef ALLOW_A\n#endif\n#endif\n",
    )]);
    let options = CppOptions {
        define: vec![("ALLOW_B".into(), "".into())],
        ..CppOptions::default()
    };
    let out = run("m/c.F", &fs, &options);
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    let got: Vec<Seen> = out
        .conditions
        .iter()
        .map(|c| {
            (
                c.line,
                c.directive.as_str(),
                c.outcome,
                c.names
                    .iter()
                    .map(|n| {
                        (
                            n.name.as_str(),
                            n.definition.as_ref().map(|d| d.0.as_str()),
                            n.definition.as_ref().and_then(|d| d.1),
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                2,
                "ifdef",
                ConditionOutcome::Kept,
                vec![("ALLOW_A", Some("1"), Some((0, 0)))]
            ),
            (
                3,
                "if",
                ConditionOutcome::Kept,
                vec![
                    ("ALLOW_B", Some(""), None),
                    ("SQ", Some("(x) x*x"), Some((0, 1)))
                ]
            ),
            (
                4,
                "elif",
                ConditionOutcome::EarlierBranchKept,
                vec![("ALLOW_A", Some("1"), Some((0, 0)))]
            ),
            (
                7,
                "ifndef",
                ConditionOutcome::Enclosed,
                vec![("ALLOW_A", Some("1"), Some((0, 0)))]
            ),
        ]
    );
}
