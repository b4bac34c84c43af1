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
