//! `dfort.toml`, the workspace configuration, found in the current
//! directory or the nearest ancestor of the first file given:
//!
//! ```toml
//! [[root]]                     # one table per subroutine to differentiate
//! name = "bratu"
//! independent = ["x", "prm"]
//! dependent = ["f"]
//! ```
//!
//! Roots named here are used when no `--root` is given on the command
//! line; their lists take precedence over `!$ad` directives.

use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub root: Vec<RootConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    pub name: String,
    #[serde(default)]
    pub independent: Vec<String>,
    #[serde(default)]
    pub dependent: Vec<String>,
}

/// The nearest `dfort.toml` at or above `start`.
pub fn find(start: &Path) -> Option<PathBuf> {
    let start = if start.is_dir() {
        start.to_path_buf()
    } else {
        start.parent()?.to_path_buf()
    };
    let start = std::fs::canonicalize(&start).unwrap_or(start);
    start
        .ancestors()
        .map(|d| d.join("dfort.toml"))
        .find(|p| p.is_file())
}

/// Loads the configuration for a run on `files`: `Ok(None)` when there is
/// no `dfort.toml`, an error naming the file when it cannot be read or
/// parsed.
pub fn load(files: &[PathBuf]) -> Result<Option<(PathBuf, Config)>, String> {
    let found = std::env::current_dir()
        .ok()
        .and_then(|d| {
            let p = d.join("dfort.toml");
            p.is_file().then_some(p)
        })
        .or_else(|| files.first().and_then(|f| find(f)));
    let Some(path) = found else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let config: Config = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some((path, config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_roots_and_rejects_unknown_keys() {
        let c: Config = toml::from_str(
            "[[root]]\nname = \"bratu\"\nindependent = [\"x\", \"prm\"]\ndependent = [\"f\"]\n",
        )
        .unwrap();
        assert_eq!(c.root.len(), 1);
        assert_eq!(c.root[0].independent, vec!["x", "prm"]);
        assert!(toml::from_str::<Config>("[[root]]\nname = \"a\"\nindependant = []\n").is_err());
        assert!(toml::from_str::<Config>("").unwrap().root.is_empty());
    }
}
