//! The server's settings: the `dfort` section the client sends (as
//! `initializationOptions` and in `workspace/didChangeConfiguration`) and
//! the workspace's `dfort.toml`.
//!
//! ```json
//! { "inlayHints": { "active": true, "push": true, "reversal": true, "address": true },
//!   "roots": [ { "name": "bratu", "independent": ["x", "prm"], "dependent": ["f"] } ],
//!   (a root may also give "after": a procedure it calls once, whose return is when its independents take their values),
//!   "fixedFormExtensions": [".f", ".for", ".f77", ".F"],
//!   "fixedLineLength": 72,
//!   "preprocessor": { "enabled": true, "include": ["inc"], "define": { "_d": "D" } } }
//! ```
//!
//! Roots given in the settings win over `dfort.toml`'s of the same name.
//! `preprocessor.enabled` forces the C preprocessor on (`true`) or off
//! (`false`) for every file (default: by extension, as gfortran does);
//! `include` (relative to the workspace folder) and `define` act as the
//! command line's `-I` and `-D`, after `dfort.toml`'s `[preprocessor]`.
//! Unknown keys and values of the wrong type are ignored (and reported).

use crate::config::Config;
use dfort_ide::analysis::RootSpec;
use dfort_ide::hints::HintKinds;
use dfort_ide::host::HostConfig;
use dfort_syntax::FixedOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    pub hints: HintKinds,
    pub roots: Vec<RootSpec>,
    pub fixed_extensions: Option<Vec<String>>,
    /// `Some(None)`: no limit.
    pub fixed_line_length: Option<Option<usize>>,
    /// The C preprocessor's settings (include directories as given).
    pub cpp: dfort_ide::preprocessing::CppConfig,
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
                            after: r
                                .get("after")
                                .and_then(Value::as_str)
                                .map(str::to_ascii_lowercase),
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
            "preprocessor" => preprocessor(val, &mut s.cpp, &mut problems),
            // Client-side settings the server does not use.
            "serverPath" | "trace" | "path" => {}
            other => problems.push(format!("dfort settings: unknown key `{other}`")),
        }
    }
    (s, problems)
}

/// `preprocessor`: `enabled`, `include`, `define`.
fn preprocessor(
    val: &Value,
    cpp: &mut dfort_ide::preprocessing::CppConfig,
    problems: &mut Vec<String>,
) {
    let Some(obj) = val.as_object() else {
        problems.push("dfort.preprocessor: expected an object".into());
        return;
    };
    for (key, v) in obj {
        match key.as_str() {
            "enabled" => cpp.forced = v.as_bool(),
            "include" => match strings(v) {
                Some(dirs) => cpp.include = dirs.into_iter().map(Into::into).collect(),
                None => problems.push("dfort.preprocessor.include: expected a list".into()),
            },
            "define" => match v.as_object() {
                Some(m) => {
                    cpp.define = m
                        .iter()
                        .map(|(n, x)| {
                            let value = match x {
                                Value::String(t) => t.clone(),
                                other => other.to_string(),
                            };
                            (n.clone(), value)
                        })
                        .collect()
                }
                None => problems.push("dfort.preprocessor.define: expected an object".into()),
            },
            other => problems.push(format!("dfort.preprocessor: unknown key `{other}`")),
        }
    }
}

/// The host configuration from the settings and the workspace's
/// `dfort.toml` at `toml` (roots of the settings win by name; its
/// `[preprocessor]` comes before the settings'), in the workspace folder
/// `root` (where relative include directories are).
pub fn host_config(
    s: &Settings,
    toml: Option<&(PathBuf, Config)>,
    root: Option<&Path>,
) -> HostConfig {
    let mut c = HostConfig::default();
    let toml_roots: Vec<RootSpec> = toml
        .map(|(_, t)| t.root.iter().map(crate::config::RootConfig::spec).collect())
        .unwrap_or_default();
    c.cpp = s.cpp.clone();
    if let Some(root) = root {
        for d in &mut c.cpp.include {
            if d.is_relative() {
                *d = root.join(&*d);
            }
        }
    }
    if let Some((path, t)) = toml {
        t.preprocessor.apply(path, &mut c.cpp);
        c.preaccumulate = t.adjoint.preaccumulation();
        c.supplied = t
            .adjoint
            .supplied_files(path)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
    }
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
    for r in &toml_roots {
        if !c.roots.iter().any(|x| x.name == r.name) {
            c.roots.push(r.clone());
        }
    }
    c
}

/// The `dfort.toml` in `root`, read (none when there is none).
pub fn workspace_toml(root: &Path) -> Result<Option<(PathBuf, Config)>, String> {
    let path = root.join("dfort.toml");
    if !path.is_file() {
        return Ok(None);
    }
    let c = crate::config::read(&path)?;
    Ok(Some((path, c)))
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
        let toml: Config = toml::from_str("[[root]]\nname = \"bratu\"\n").unwrap();
        let c = host_config(&s, Some(&(PathBuf::from("/ws/dfort.toml"), toml)), None);
        assert_eq!(c.roots.len(), 1);
        assert_eq!(c.roots[0].independent, vec!["x"]);
        assert!(c.form_for(Path::new("a.for")).is_none());
        assert!(c.form_for(Path::new("a.F")).is_some());
        let (d, p) = parse(&Value::Null);
        assert_eq!(d, Settings::default());
        assert!(p.is_empty());
    }

    #[test]
    fn preprocessor_settings_follow_dfort_toml() {
        let (s, problems) = parse(&json!({
            "preprocessor": {"enabled": true, "include": ["inc", "/abs"],
                             "define": {"_d": "D", "N": 4}, "colour": 1}
        }));
        assert_eq!(problems, ["dfort.preprocessor: unknown key `colour`"]);
        let toml: Config =
            toml::from_str("[preprocessor]\ninclude = [\"h\"]\ndefine = { N = \"2\" }\n").unwrap();
        let c = host_config(
            &s,
            Some(&(PathBuf::from("/ws/dfort.toml"), toml)),
            Some(Path::new("/ws")),
        );
        assert_eq!(c.cpp.forced, Some(true));
        assert_eq!(
            c.cpp.include,
            [
                PathBuf::from("/ws/inc"),
                PathBuf::from("/abs"),
                PathBuf::from("/ws/h")
            ]
        );
        // dfort.toml's N first: the settings' N = 4 redefines it.
        let defined: Vec<(&str, &str)> = c
            .cpp
            .define
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(defined, [("N", "2"), ("N", "4"), ("_d", "D")]);
    }
}
