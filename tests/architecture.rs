//! The pipeline direction of docs/architecture.md: a crate depends only on crates to
//! its left (syntax → ir → analysis → codegen → ide → dfort → xtask),
//! every crate of the workspace has its place in that order, and only the
//! drivers — the product crate `dfort` and the developer commands of
//! `xtask`, which drives it — may name the protocol and runtime crates
//! (tower-lsp, lsp-types, tokio, serde_json).

use crate::support::root;

const PIPELINE: &[(&str, &str)] = &[
    ("dfort-syntax", "server/syntax"),
    ("dfort-ir", "server/ir"),
    ("dfort-analysis", "server/analysis"),
    ("dfort-codegen", "server/codegen"),
    ("dfort-ide", "server/ide"),
    ("dfort", "server/dfort"),
    ("xtask", "server/xtask"),
];
/// The crates that drive the pipeline: the product (CLI and language
/// server) and the developer commands (`cargo xtask`).
const DRIVERS: &[&str] = &["dfort", "xtask"];
const BINARY_ONLY: &[&str] = &[
    "tower-lsp",
    "tower-lsp-server",
    "lsp-types",
    "ls-types",
    "tokio",
    "serde_json",
];

/// Dependency names in the `[dependencies]` and `[dev-dependencies]`
/// sections of a manifest.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_deps = t.ends_with("dependencies]");
            continue;
        }
        if in_deps && !t.is_empty() && !t.starts_with('#') {
            if let Some((name, _)) = t.split_once('=') {
                let name = name.trim().trim_matches('"');
                let name = name.split('.').next().unwrap_or(name);
                deps.push(name.to_string());
            }
        }
    }
    deps
}

#[test]
fn crates_depend_only_leftwards_and_protocol_crates_only_in_the_drivers() {
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    for (i, (name, dir)) in PIPELINE.iter().enumerate() {
        assert!(workspace.contains(dir), "{dir} missing from the workspace");
        let manifest = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
        let deps = dependencies(&manifest);
        for d in &deps {
            if let Some(j) = PIPELINE.iter().position(|(n, _)| n == d) {
                assert!(j < i, "{name} depends on {d}, which is not to its left");
            }
            if !DRIVERS.contains(name) {
                assert!(
                    !BINARY_ONLY.contains(&d.as_str()),
                    "{name} depends on {d}; only the drivers {DRIVERS:?} may"
                );
            }
        }
    }
}

/// The `members = [...]` of the workspace manifest.
fn members(workspace: &str) -> Vec<String> {
    let Some(start) = workspace.find("members") else {
        return Vec::new();
    };
    let list = &workspace[start..];
    let (Some(open), Some(close)) = (list.find('['), list.find(']')) else {
        return Vec::new();
    };
    list[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

#[test]
fn every_workspace_crate_has_its_place_in_the_pipeline() {
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let members = members(&workspace);
    assert!(members.len() >= PIPELINE.len(), "members: {members:?}");
    for m in &members {
        assert!(
            PIPELINE.iter().any(|(_, dir)| dir == m),
            "{m} is in the workspace but not in the pipeline order of this test"
        );
    }
}

#[test]
fn the_parser_finds_dependencies() {
    // Guard against the check above passing because it reads nothing.
    let ir = std::fs::read_to_string(root().join("server/ir/Cargo.toml")).unwrap();
    assert!(dependencies(&ir).contains(&"dfort-syntax".to_string()));
    assert!(dependencies("[dependencies]\ntokio = \"1\"\n").contains(&"tokio".to_string()));
    assert_eq!(
        members("[workspace]\nmembers = [\"a/b\", \"c\"]\n[x]\ny = [1]\n"),
        ["a/b", "c"]
    );
}

/// The crates that read the analyses' results: they may name any type of
/// the analysis crate (the typed decisions), but call its functions only
/// through `dfort_analysis::facts` — the one entry point — and the methods
/// of what it returns. Pure questions about the IR live in `dfort_ir`.
const READERS: &[&str] = &[
    "server/codegen/src",
    "server/ide/src",
    "server/dfort/src",
    "server/xtask/src",
];

/// The analysis module whose free functions readers may call.
const FRONT_DOOR: &str = "facts";

/// `.rs` files under `dir`, recursively.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    &s[..s.find(|c| !is_ident(c)).unwrap_or(s.len())]
}

/// `(module, item)` for every function (a lower-case item) of an analysis
/// module other than the front door that `source` names: by path
/// (`dfort_analysis::m::f`), by import (`use dfort_analysis::m::{f, T}`),
/// or through an imported module (`use dfort_analysis::m;` … `m::f(`).
fn analysis_functions_named(source: &str) -> Vec<(String, String)> {
    let code: String = source
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    // Modules imported by name: (name in this file, module).
    let mut modules: Vec<(String, String)> = Vec::new();
    let note = |m: &str, item: &str, found: &mut Vec<(String, String)>| {
        let item = item.split(" as ").next().unwrap_or("").trim();
        if m != FRONT_DOOR && item.starts_with(|c: char| c.is_ascii_lowercase()) && item != "self" {
            found.push((m.to_string(), item.to_string()));
        }
    };
    for (at, _) in code.match_indices("dfort_analysis::") {
        let rest = &code[at + "dfort_analysis::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use dfort_analysis::{m1, m2}`: modules imported by name.
            let inner = &group[..group.find('}').unwrap_or(0)];
            modules.extend(inner.split(',').map(|m| {
                let m = ident(m.trim()).to_string();
                (m.clone(), m)
            }));
            continue;
        }
        let m = ident(rest);
        let after = &rest[m.len()..];
        if let Some(path) = after.strip_prefix("::") {
            if let Some(group) = path.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(0)];
                for item in inner.split(',') {
                    note(m, item, &mut found);
                }
            } else {
                let item = ident(path);
                if !path[item.len()..].starts_with("::") {
                    note(m, item, &mut found);
                }
            }
        } else if after.trim_start().starts_with(';') || after.trim_start().starts_with("as ") {
            // `use dfort_analysis::m;` (or `as alias`).
            let alias = after
                .trim_start()
                .strip_prefix("as")
                .map(|a| ident(a.trim_start()))
                .unwrap_or(m);
            modules.push((alias.to_string(), m.to_string()));
        }
    }
    for (alias, m) in modules.iter().filter(|(a, _)| !a.is_empty()) {
        let prefix = format!("{alias}::");
        for (at, _) in code.match_indices(&prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| is_ident(c) || c == ':') {
                continue;
            }
            let path = &code[at + prefix.len()..];
            let item = ident(path);
            if !path[item.len()..].starts_with("::") {
                note(m, item, &mut found);
            }
        }
    }
    found
}

#[test]
fn readers_call_the_analyses_only_through_the_facts() {
    let mut files = Vec::new();
    for dir in READERS {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 50, "only {} files read", files.len());
    let mut named = 0;
    let mut offences = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        named += text.matches("dfort_analysis::").count();
        for (m, item) in analysis_functions_named(&text) {
            offences.push(format!(
                "{}: dfort_analysis::{m}::{item}",
                f.strip_prefix(root()).unwrap_or(f).display()
            ));
        }
    }
    assert!(named > 100, "only {named} paths into the analysis crate");
    assert!(
        offences.is_empty(),
        "functions of analysis modules called past `dfort_analysis::{FRONT_DOOR}` (ask the facts, \
         or move a pure question about the IR into dfort_ir):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_scan_finds_calls_past_the_facts() {
    // Guard against the check above passing because it finds nothing.
    let seen = |s: &str| analysis_functions_named(s);
    assert_eq!(
        seen("let x = dfort_analysis::dep::summarize_all(p);"),
        [("dep".to_string(), "summarize_all".to_string())]
    );
    assert_eq!(
        seen("use dfort_analysis::tbr::{analyze_program, Tbr};"),
        [("tbr".to_string(), "analyze_program".to_string())]
    );
    assert_eq!(
        seen(
            "use dfort_analysis::{effects, facts};\nfn f() { effects::all(p); facts::analyse(p); }"
        ),
        [("effects".to_string(), "all".to_string())]
    );
    assert_eq!(
        seen("use dfort_analysis::activity as a;\nlet s = a::active_sets(u);"),
        [("activity".to_string(), "active_sets".to_string())]
    );
    // Types, the front door's functions, and comments are not calls past it.
    assert!(seen(
        "use dfort_analysis::checkpoint::{CallCheckpoint, Why};\n\
         let f = dfort_analysis::facts::analyse(p, &r, None);\n\
         // dfort_analysis::dep::summarize_all\n\
         let r: dfort_analysis::decisions::Recording = d;"
    )
    .is_empty());
}
