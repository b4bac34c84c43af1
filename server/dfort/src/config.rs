//! `dfort.toml`, the workspace configuration, found in the current
//! directory or the nearest ancestor of the first file given:
//!
//! ```toml
//! [[root]]                     # one table per subroutine to differentiate
//! name = "bratu"
//! independent = ["x", "prm"]
//! dependent = ["f"]
//! after = "init_state"         # optional: the independents take their values when this call returns
//! int = { dim = 12, parmax = 2, ipiv = [2, 2, 3] } # optional: integer arguments (and arrays) for `dfort verify`
//! size = { x = 12 }                # optional: array sizes for `dfort verify`
//! char = { trans = "T" }           # optional: character arguments for `dfort verify`
//! logical = { upper = true }       # optional: logical arguments for `dfort verify`
//!
//! [preprocessor]               # optional: the C preprocessor's settings
//! include = ["inc", "../model/inc"]  # like -I, relative to this file
//! define = { _d = "D", ALLOW_COST = "1" } # like -D NAME=VALUE
//!
//! files = ["src/a.F", "src/b.F"] # optional: the workspace's files, relative to this file
//!
//! [adjoint]                    # optional
//! supplied = { cg2d = "cg2d_ad.F" }  # subroutines whose adjoint (cg2d_b) you write, and its file
//! preaccumulate = "cost"       # optional: "off" (default), "cost" or "all", as --preaccumulate
//! ```
//!
//! (`files` is written before the tables.)
//!
//! `files` (top level, before any table) is the file set the commands
//! read when given none, and the one the editor indexes instead of
//! scanning the workspace folder. `dfort import` writes it and
//! `[preprocessor]` from the build a user already has (a genmake2
//! `Makefile`, `compile_commands.json`, `fpm.toml`).
//!
//! The `[preprocessor]` settings come before the command line's: its
//! include directories are searched after `-I`'s, and a `-D` redefines a
//! macro it defines.
//!
//! `dfort analyze` uses the roots named here when no `--root` is given.
//! `dfort tangent`, `adjoint` and `verify` take the independent and
//! dependent lists of the `[[root]]` named like `--root` when neither
//! `--independent` nor `--dependent` is given (a root with both lists empty
//! leaves the choice to `!$ad` directives, then intents). The lists take
//! precedence over `!$ad` directives. `dfort verify` takes a value from
//! `int` / `size` for every name `--int` / `--size` does not give.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The workspace's files, relative to `dfort.toml`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PathBuf>,
    #[serde(default)]
    pub preprocessor: PreprocessorConfig,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub root: Vec<RootConfig>,
    #[serde(default, skip_serializing_if = "AdjointConfig::is_empty")]
    pub adjoint: AdjointConfig,
}

/// `[adjoint]`: settings of every adjoint of the workspace.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdjointConfig {
    /// Subroutines whose adjoint `<name>_b` the user writes, each with the
    /// file holding it (relative to `dfort.toml`; `dfort verify` compiles
    /// it with the generated adjoint).
    #[serde(default)]
    pub supplied: BTreeMap<String, PathBuf>,
    /// Whether the adjoint preaccumulates local Jacobians (as
    /// `--preaccumulate`; the editor's generated adjoints too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preaccumulate: Option<Preaccumulate>,
}

/// When the adjoint preaccumulates a basic block's local Jacobian
/// (`--preaccumulate[=WHEN]`, `[adjoint] preaccumulate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Preaccumulate {
    /// Never: statement-level adjoints.
    Off,
    /// Where the Jacobian has fewer entries than the statements' adjoints
    /// would record.
    Cost,
    /// Every graph it can (for testing).
    All,
}

impl Preaccumulate {
    pub fn mode(self) -> dfort_analysis::preaccumulation::Preaccumulation {
        use dfort_analysis::preaccumulation::Preaccumulation as P;
        match self {
            Preaccumulate::Off => P::Off,
            Preaccumulate::Cost => P::Cost,
            Preaccumulate::All => P::All,
        }
    }
}

impl AdjointConfig {
    fn is_empty(&self) -> bool {
        self.supplied.is_empty() && self.preaccumulate.is_none()
    }

    /// The preaccumulation asked for (off when none is).
    pub fn preaccumulation(&self) -> dfort_analysis::preaccumulation::Preaccumulation {
        self.preaccumulate
            .map(Preaccumulate::mode)
            .unwrap_or_default()
    }

    /// The supplied adjoints (lower-case names) with their files, relative
    /// to `dfort.toml` at `path`.
    pub fn supplied_files(&self, path: &Path) -> Vec<(String, PathBuf)> {
        let base = path.parent().unwrap_or(Path::new("."));
        self.supplied
            .iter()
            .map(|(n, f)| (n.to_ascii_lowercase(), base.join(f)))
            .collect()
    }
}

/// `[preprocessor]`: include directories and macros.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PreprocessorConfig {
    #[serde(default)]
    pub include: Vec<PathBuf>,
    #[serde(default)]
    pub define: BTreeMap<String, String>,
}

impl PreprocessorConfig {
    /// Adds these settings to the command line's `cpp` (of `dfort.toml`
    /// at `path`): directories after its own, relative to the file's
    /// directory; macros before its own, which may redefine them.
    pub fn apply(&self, path: &Path, cpp: &mut dfort_ide::preprocessing::CppConfig) {
        let base = path.parent().unwrap_or(Path::new("."));
        cpp.include
            .extend(self.include.iter().map(|d| base.join(d)));
        let mut define: Vec<(String, String)> = self
            .define
            .iter()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        define.append(&mut cpp.define);
        cpp.define = define;
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub independent: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependent: Vec<String>,
    /// A procedure the root calls once: the independents take their values
    /// when that call returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Values of integer arguments and integer arrays (`dfort verify`'s
    /// `--int`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub int: BTreeMap<String, IntValue>,
    /// Sizes of array arguments (`dfort verify`'s `--size`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub size: BTreeMap<String, i64>,
    /// Values of character arguments (`dfort verify`'s `--char`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub char: BTreeMap<String, String>,
    /// Values of logical arguments (`dfort verify`'s `--logical`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub logical: BTreeMap<String, bool>,
}

/// The value of an integer argument in `dfort.toml`: a scalar's, or an
/// integer array's values.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum IntValue {
    One(i64),
    Many(Vec<i64>),
}

impl std::fmt::Display for IntValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntValue::One(v) => write!(f, "{v}"),
            IntValue::Many(vs) => {
                let vs: Vec<String> = vs.iter().map(i64::to_string).collect();
                write!(f, "[{}]", vs.join(","))
            }
        }
    }
}

impl RootConfig {
    /// The root as the analyses take it (name in lower case).
    pub fn spec(&self) -> dfort_analysis::roots::RootSpec {
        dfort_analysis::roots::RootSpec {
            name: self.name.to_ascii_lowercase(),
            independent: self.independent.clone(),
            dependent: self.dependent.clone(),
            after: self.after.as_ref().map(|a| a.to_ascii_lowercase()),
        }
    }

    /// Whether the root gives independents or dependents.
    pub fn has_lists(&self) -> bool {
        !self.independent.is_empty() || !self.dependent.is_empty()
    }
}

impl Config {
    /// `files` as paths (those of `dfort.toml` at `path` are relative to
    /// its directory).
    pub fn listed_files(&self, path: &Path) -> Vec<PathBuf> {
        let base = path.parent().unwrap_or(Path::new("."));
        self.files.iter().map(|f| base.join(f)).collect()
    }

    /// The `[[root]]` named `name` (case-insensitive).
    pub fn root_named(&self, name: &str) -> Option<&RootConfig> {
        self.root.iter().find(|r| r.name.eq_ignore_ascii_case(name))
    }
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
    let cwd = std::env::current_dir().unwrap_or_default();
    let Some(path) = locate(&cwd, files) else {
        return Ok(None);
    };
    let config = read(&path)?;
    Ok(Some((path, config)))
}

/// The `dfort.toml` a command run in `cwd` on `files` reads: the one in
/// `cwd`, else the nearest at or above the first file.
pub fn locate(cwd: &Path, files: &[PathBuf]) -> Option<PathBuf> {
    let here = cwd.join("dfort.toml");
    if here.is_file() {
        return Some(here);
    }
    files.first().and_then(|f| find(f))
}

/// The files a command reads: those given, else the `files` of the
/// `dfort.toml` in the current directory; an error when there are none.
pub fn files_or_listed(given: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    if !given.is_empty() {
        return Ok(given.to_vec());
    }
    match load(given)? {
        Some((path, c)) if !c.files.is_empty() => Ok(c.listed_files(&path)),
        Some((path, _)) => Err(format!(
            "no files given, and {} lists none (`files = [...]`, or `dfort import` a build)",
            path.display()
        )),
        None => {
            Err("no files given, and no dfort.toml here lists them (`dfort import` a build)".into())
        }
    }
}

/// Reads and parses one `dfort.toml`; the error names the file.
pub fn read(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preprocessor_settings_come_before_the_command_line() {
        let c: Config = toml::from_str(
            "[preprocessor]\ninclude = [\"inc\"]\ndefine = { _d = \"D\", N = \"4\" }\n",
        )
        .unwrap();
        let mut cpp = dfort_ide::preprocessing::CppConfig {
            forced: None,
            include: vec![PathBuf::from("cli")],
            define: vec![("N".into(), "8".into())],
        };
        c.preprocessor.apply(Path::new("/ws/dfort.toml"), &mut cpp);
        assert_eq!(
            cpp.include,
            [PathBuf::from("cli"), PathBuf::from("/ws/inc")]
        );
        assert_eq!(
            cpp.define,
            [
                ("N".to_string(), "4".to_string()),
                ("_d".to_string(), "D".to_string()),
                ("N".to_string(), "8".to_string())
            ]
        );
        assert!(toml::from_str::<Config>("[preprocessor]\nincludes = []\n").is_err());
    }

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
        assert!(c.root[0].int.is_empty() && c.root[0].size.is_empty());
    }

    #[test]
    fn parses_int_and_size_tables() {
        let c: Config = toml::from_str(
            "[[root]]\nname = \"Bratu\"\nint = { dim = 12, parmax = 2 }\nsize = { x = 100 }\n",
        )
        .unwrap();
        let r = c.root_named("bratu").unwrap();
        assert_eq!(r.int.get("dim"), Some(&IntValue::One(12)));
        assert_eq!(r.int.get("parmax"), Some(&IntValue::One(2)));
        assert_eq!(r.size.get("x"), Some(&100));
        assert!(!r.has_lists());
        assert!(c.root_named("other").is_none());
        assert!(toml::from_str::<Config>("[[root]]\nname = \"a\"\nint = { n = 1.5 }\n").is_err());
        let c: Config =
            toml::from_str("[[root]]\nname = \"a\"\nint = { ipiv = [2, 2, 3] }\n").unwrap();
        let ipiv = c.root[0].int.get("ipiv").unwrap();
        assert_eq!(ipiv, &IntValue::Many(vec![2, 2, 3]));
        assert_eq!(ipiv.to_string(), "[2,2,3]");
        assert!(toml::from_str::<Config>("[[root]]\nname = \"a\"\nsizes = { x = 1 }\n").is_err());
    }
}
