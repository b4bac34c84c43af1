//! The server's settings: the `dfort` section the client sends (as
//! `initializationOptions` and in `workspace/didChangeConfiguration`) and
//! the workspace's `dfort.toml`.
//!
//! ```json
//! { "inlayHints": { "active": true, "push": true, "reversal": true, "address": true },
//!   "roots": [ { "name": "bratu", "independent": ["x", "prm"], "dependent": ["f"] } ],
//!   "fixedFormExtensions": [".f", ".for", ".f77", ".F"],
//!   "fixedLineLength": 72 }
//! ```
//!
//! Roots given in the settings win over `dfort.toml`'s of the same name.
//! Unknown keys and values of the wrong type are ignored (and reported).

use dfort_ide::analysis::RootSpec;
use dfort_ide::hints::HintKinds;
use dfort_ide::host::HostConfig;
use dfort_syntax::FixedOptions;
use serde_json::Value;
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    pub hints: HintKinds,
    pub roots: Vec<RootSpec>,
    pub fixed_extensions: Option<Vec<String>>,
    /// `Some(None)`: no limit.
    pub fixed_line_length: Option<Option<usize>>,
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| {
        a.iter()
            .filter_map(|s| s.as_str().map(|s| s.to_string()))
            .collect()
    })
}

/// Parses the `dfort` section; problems are returned as messages.
pub fn parse(v: &Value) -> (Settings, Vec<String>) {
    let mut s = Settings::default();
    let mut problems = Vec::new();
    let Some(obj) = v.as_object() else {
        if !v.is_null() {
            problems.push("dfort settings: expected an object".to_string());
        }
        return (s, problems);
    };
    for (key, val) in obj {
        match key.as_str() {
            "inlayHints" => {
                let flag = |k: &str| val.get(k).and_then(Value::as_bool).unwrap_or(true);
                s.hints = HintKinds {
                    active: flag("active"),
                    push: flag("push"),
                    reversal: flag("reversal"),
                    address: flag("address"),
                };
            }
            "roots" => {
                for r in val.as_array().into_iter().flatten() {
                    match r.get("name").and_then(Value::as_str) {
                        Some(name) => s.roots.push(RootSpec {
                            name: name.to_ascii_lowercase(),
                            independent: r.get("independent").and_then(strings).unwrap_or_default(),
                            dependent: r.get("dependent").and_then(strings).unwrap_or_default(),
                        }),
                        None => problems.push("dfort.roots: a root without a name".into()),
                    }
                }
            }
            "fixedFormExtensions" => match strings(val) {
                Some(v) => s.fixed_extensions = Some(v),
                None => problems.push("dfort.fixedFormExtensions: expected a list".into()),
            },
            "fixedLineLength" => match val.as_u64() {
                Some(0) => s.fixed_line_length = Some(None),
                Some(n) if n >= 7 => s.fixed_line_length = Some(Some(n as usize)),
                _ => problems
                    .push("dfort.fixedLineLength: expected 72, 132 or 0 (no limit)".to_string()),
            },
            // Client-side settings the server does not use.
            "serverPath" | "trace" | "path" => {}
            other => problems.push(format!("dfort settings: unknown key `{other}`")),
        }
    }
    (s, problems)
}

/// The host configuration from the settings and the workspace's
/// `dfort.toml` (roots of the settings win by name).
pub fn host_config(s: &Settings, toml_roots: &[RootSpec]) -> HostConfig {
    let mut c = HostConfig::default();
    if let Some(exts) = &s.fixed_extensions {
        let exts: Vec<String> = exts
            .iter()
            .map(|e| e.trim_start_matches('.').to_string())
            .collect();
        c.free_extensions
            .retain(|f| !exts.iter().any(|e| e.eq_ignore_ascii_case(f)));
        c.fixed_extensions = exts;
    }
    if let Some(len) = s.fixed_line_length {
        c.fixed = FixedOptions { line_length: len };
    }
    c.roots = s.roots.clone();
    for r in toml_roots {
        if !c.roots.iter().any(|x| x.name == r.name) {
            c.roots.push(r.clone());
        }
    }
    c
}

/// Roots of the `dfort.toml` in `root` (none when there is none).
pub fn toml_roots(root: &Path) -> Result<Vec<RootSpec>, String> {
    let path = root.join("dfort.toml");
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let c = crate::config::read(&path)?;
    Ok(c.root.iter().map(crate::config::RootConfig::spec).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_the_section_and_reports_what_it_ignores() {
        let (s, problems) = parse(&json!({
            "inlayHints": {"push": false, "address": false},
            "roots": [{"name": "Bratu", "independent": ["x"], "dependent": ["f"]}, {"x": 1}],
            "fixedFormExtensions": [".f", ".F"],
            "fixedLineLength": 0,
            "serverPath": "dfort",
            "colour": "red"
        }));
        assert!(s.hints.active && !s.hints.push && s.hints.reversal && !s.hints.address);
        assert_eq!(s.roots.len(), 1);
        assert_eq!(s.roots[0].name, "bratu");
        assert_eq!(s.fixed_line_length, Some(None));
        assert_eq!(problems.len(), 2, "{problems:?}");
        let c = host_config(
            &s,
            &[RootSpec {
                name: "bratu".into(),
                ..Default::default()
            }],
        );
        assert_eq!(c.roots.len(), 1);
        assert_eq!(c.roots[0].independent, vec!["x"]);
        assert!(c.form_for(Path::new("a.for")).is_none());
        assert!(c.form_for(Path::new("a.F")).is_some());
        let (d, p) = parse(&Value::Null);
        assert_eq!(d, Settings::default());
        assert!(p.is_empty());
    }
}
