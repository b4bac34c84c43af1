//! `dfort verify`: generates the tangent and the adjoint of a root,
//! compiles them with gfortran beside the original sources and a driver,
//! and reports, over several random points, the relative errors of the
//! tangent against central finite differences (at the points where two
//! step sizes agree: elsewhere the differences are unreliable) and of the
//! adjoint's dot-product test, and whether the adjoint's tape balances.
//!
//! The pieces (planning the driver's arguments, a scratch directory,
//! writing the original sources, compiling them in dependency order,
//! linking, running) are also used by `cargo xtask bench-adjoint`,
//! `bench-inversion` and `fuzz`.

use crate::config::IntValue;
use crate::tangent::{load_root, DiffArgs, Loaded};
use dfort_codegen::driver::{driver, parse_output, DriverArg, DriverSpec, MatrixInit, MatrixKind};
use dfort_ir::*;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    diff: DiffArgs,
    /// Values of the root's integer arguments: NAME=VALUE, comma-separated;
    /// an integer array's as a list, NAME=[V1,V2,...]. Integer arguments
    /// the root writes (such as `info`) default to 0.
    #[arg(long = "int", value_delimiter = ',', value_name = "NAME=VALUE")]
    ints: Vec<String>,
    /// Inputs a routine needs of a special kind, for its real(8) matrix
    /// arguments: NAME=spd (symmetric positive definite) or
    /// NAME=diag-dominant, comma-separated. The leading square block of the
    /// array (its declared leading dimension by its columns) is made so.
    #[arg(long = "matrix", value_delimiter = ',', value_name = "NAME=KIND")]
    matrices: Vec<String>,
    /// Sizes of array arguments whose bounds are not given by integer
    /// arguments (assumed shape or size): NAME=N, comma-separated.
    #[arg(long = "size", value_delimiter = ',', value_name = "NAME=N")]
    sizes: Vec<String>,
    /// Values of the root's character arguments (flags such as `uplo`,
    /// `trans`): NAME=VALUE, comma-separated.
    #[arg(long = "char", value_delimiter = ',', value_name = "NAME=VALUE")]
    chars: Vec<String>,
    /// Values of the root's logical arguments: NAME=true|false,
    /// comma-separated.
    #[arg(
        long = "logical",
        value_delimiter = ',',
        value_name = "NAME=true|false"
    )]
    logicals: Vec<String>,
    /// Largest relative error accepted.
    #[arg(long, default_value_t = 1e-6)]
    tolerance: f64,
    /// Generate the adjoint recording every overwritten active value
    /// instead of TBR's choice (as `dfort adjoint --no-tbr`).
    #[arg(long)]
    no_tbr: bool,
    /// Generate the adjoint storing every overwritten address value (as
    /// `dfort adjoint --no-inversion`).
    #[arg(long)]
    no_inversion: bool,
    /// Generate the adjoint preaccumulating local Jacobians (as `dfort
    /// adjoint --preaccumulate`; `cost`, `all` or `off`; default:
    /// `dfort.toml`'s).
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "cost", require_equals = true)]
    preaccumulate: Option<crate::config::Preaccumulate>,
    /// Random points to check at.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    points: u32,
    /// Print every point's differences, tangent and adjoint values.
    #[arg(long)]
    verbose: bool,
    /// Also check array bounds in the derivative code (gfortran
    /// -fcheck=bounds; arrays declared with a dummy extent such as
    /// `x(1)` make it fail where the original only reads past it).
    #[arg(long)]
    bounds: bool,
    /// Build everything with AddressSanitizer (gfortran
    /// -fsanitize=address) and fail on any read or write outside an
    /// array: what the adjoint saves and restores around calls must stay
    /// inside the actual arguments.
    #[arg(long)]
    sanitize: bool,
    /// Build in this directory and keep it (sources, derivatives, driver,
    /// objects and the executable `run`) instead of a temporary one.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// For editors: when the root's arguments need values that neither the
    /// command line nor `dfort.toml` gives, print them as one JSON object
    /// (`{"root", "config", "missing": [{"name", "key", "what", "form"}]}`)
    /// on standard output and exit with status 3.
    #[arg(long)]
    missing_json: bool,
}

/// The exit status of `dfort verify --missing-json` when values are
/// missing.
pub const MISSING_VALUES: u8 = 3;

/// Why `verify` stopped before checking.
enum Stop {
    Error(String),
    /// Values are missing; the JSON object `--missing-json` prints.
    Missing(serde_json::Value),
}

impl From<String> for Stop {
    fn from(e: String) -> Stop {
        Stop::Error(e)
    }
}

impl From<&str> for Stop {
    fn from(e: &str) -> Stop {
        Stop::Error(e.to_string())
    }
}

/// Flags for derivative code under test: the locals of a derivative
/// routine start as signalling NaNs and huge integers, so that a value the
/// derivative reads without computing it (or restoring it) spoils the
/// result instead of passing by the luck of a reused stack slot.
pub const POISON: [&str; 3] = ["-O2", "-finit-real=snan", "-finit-integer=-2147483647"];

/// Two step sizes whose differences disagree by more than this (relative)
/// mean a kink or a jump near the point.
pub const SMOOTH: f64 = 1e-4;

/// What the points say, as `dfort verify` reports it.
pub struct Verdict {
    /// The largest tangent error over the smooth points (`None`: no point
    /// was smooth).
    pub tangent: Option<f64>,
    /// The largest dot-product error over all points.
    pub adjoint: Option<f64>,
    pub smooth_points: usize,
    /// Entries an adjoint left on its tape (0 when it balances).
    pub depth: i64,
    /// The most bytes one adjoint call pushed, and the most its tape held
    /// (`None`: no adjoint ran).
    pub tape: Option<(i64, i64)>,
}

impl Verdict {
    pub fn of(points: &[dfort_codegen::driver::Point]) -> Verdict {
        let max = |v: Vec<f64>| {
            v.into_iter()
                .reduce(|a, b| if b > a || b.is_nan() { b } else { a })
        };
        let smooth: Vec<_> = points.iter().filter(|p| p.smooth(SMOOTH)).collect();
        Verdict {
            tangent: max(smooth.iter().filter_map(|p| p.tangent_error()).collect()),
            adjoint: max(points.iter().filter_map(|p| p.adjoint_error()).collect()),
            smooth_points: smooth.len(),
            depth: points
                .iter()
                .map(|p| p.depth)
                .find(|d| *d != 0)
                .unwrap_or(0),
            tape: points
                .iter()
                .filter_map(|p| p.tape)
                .reduce(|a, b| (a.0.max(b.0), a.1.max(b.1))),
        }
    }
}

/// `--int` items, split at every comma, joined again where a list
/// (`ipiv=[2,2,3]`) was split: the scalars and the lists.
pub type IntItems = (HashMap<String, i64>, HashMap<String, Vec<i64>>);

pub fn int_items(items: &[String]) -> Result<IntItems, String> {
    let mut joined: Vec<String> = Vec::new();
    for it in items {
        match joined.last_mut() {
            Some(last) if last.contains('[') && !last.contains(']') => {
                last.push(',');
                last.push_str(it);
            }
            _ => joined.push(it.clone()),
        }
    }
    let (lists, scalars): (Vec<String>, Vec<String>) =
        joined.into_iter().partition(|it| it.contains('['));
    let lists = pairs_of(&lists, |v| {
        let v = v.trim();
        let inner = v
            .strip_prefix('[')
            .and_then(|v| v.strip_suffix(']'))
            .ok_or_else(|| format!("`{v}` is not a list [V1,V2,...]"))?;
        inner
            .split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| {
                x.trim()
                    .parse()
                    .map_err(|_| format!("`{x}` is not an integer"))
            })
            .collect()
    })?;
    Ok((pairs(&scalars)?, lists))
}

/// The inputs `--matrix` asks for.
pub fn matrix_kind(v: &str) -> Result<MatrixKind, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "spd" => Ok(MatrixKind::Spd),
        "diag-dominant" | "diagonally-dominant" => Ok(MatrixKind::DiagDominant),
        _ => Err(format!("`{v}` is not spd or diag-dominant")),
    }
}

/// `NAME=VALUE` items as a map from lower-case names.
pub fn pairs(items: &[String]) -> Result<HashMap<String, i64>, String> {
    pairs_of(items, |v| {
        v.trim()
            .parse()
            .map_err(|_| format!("`{v}` is not an integer"))
    })
}

/// `NAME=VALUE` items as a map from lower-case names, each value read by
/// `value`.
fn pairs_of<V>(
    items: &[String],
    value: impl Fn(&str) -> Result<V, String>,
) -> Result<HashMap<String, V>, String> {
    items
        .iter()
        .map(|it| {
            let (k, v) = it
                .split_once('=')
                .ok_or_else(|| format!("expected NAME=VALUE, got `{it}`"))?;
            Ok((k.trim().to_ascii_lowercase(), value(v)?))
        })
        .collect()
}

/// `true`/`false` (also `.true.`, `t`, `f`, `1`, `0`).
fn logical(v: &str) -> Result<bool, String> {
    match v.trim().trim_matches('.').to_ascii_lowercase().as_str() {
        "true" | "t" | "1" => Ok(true),
        "false" | "f" | "0" => Ok(false),
        _ => Err(format!("`{v}` is not true or false")),
    }
}

/// The values `dfort verify` gives a root's passive arguments, and the
/// sizes of its arrays, by lower-case name.
#[derive(Clone, Debug, Default)]
pub struct ArgValues {
    pub ints: HashMap<String, i64>,
    pub sizes: HashMap<String, i64>,
    pub chars: HashMap<String, String>,
    pub logicals: HashMap<String, bool>,
    /// Values of integer array arguments.
    pub int_arrays: HashMap<String, Vec<i64>>,
    /// Real(8) matrices made symmetric positive definite or diagonally
    /// dominant.
    pub matrices: HashMap<String, MatrixKind>,
    /// Integer arguments the root writes: 0 (or zeros) when not given.
    pub outputs: std::collections::HashSet<String>,
}

/// Integer value of a bound expression, given the integer arguments.
fn eval(unit: &Unit, e: &Expr, ints: &HashMap<String, i64>) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Var(s) => {
            let sym = unit.symbol(*s);
            match (&sym.init, sym.attrs.parameter) {
                (Some(init), true) => eval(unit, init, ints),
                _ => ints.get(&sym.name).copied(),
            }
        }
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => eval(unit, operand, ints).map(|v| -v),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (eval(unit, lhs, ints)?, eval(unit, rhs, ints)?);
            match op {
                BinaryOp::Add => a.checked_add(b),
                BinaryOp::Sub => a.checked_sub(b),
                BinaryOp::Mul => a.checked_mul(b),
                BinaryOp::Div => a.checked_div(b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A value `dfort verify` needs and cannot choose: an argument of the
/// root that neither the command line nor `dfort.toml` gives.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Missing {
    /// The argument's name (lower case).
    pub name: String,
    /// The key of the root's table in `dfort.toml` that holds it, and the
    /// command-line flag without its dashes: `int`, `size`, `char` or
    /// `logical`.
    pub key: String,
    /// What it is, for a prompt: "the integer argument `dim`".
    pub what: String,
    /// The form of a value: `VALUE`, `[V1,V2,...]`, `N`, `true|false`.
    pub form: String,
}

impl Missing {
    fn new(name: &str, key: &str, what: &str, form: &str) -> Missing {
        Missing {
            name: name.to_string(),
            key: key.to_string(),
            what: format!("{what} `{name}`"),
            form: form.to_string(),
        }
    }

    /// The command-line flag that gives it: `--int dim=VALUE`.
    pub fn flag(&self) -> String {
        format!("--{} {}={}", self.key, self.name, self.form)
    }
}

/// Why `driver_args` has no arguments for a root.
#[derive(Debug, PartialEq)]
pub enum ArgsError {
    /// Values only the user can give.
    Missing(Vec<Missing>),
    /// An argument the driver cannot make.
    Unsupported(String),
}

impl ArgsError {
    /// The error as `dfort verify` prints it: every missing value with its
    /// flag, then the `[[root]]` table of `dfort.toml` that gives them once
    /// for all (`config` is the file the run read, if any).
    pub fn message(&self, root: &str, config: Option<&Path>) -> String {
        let missing = match self {
            ArgsError::Unsupported(e) => return e.clone(),
            ArgsError::Missing(m) => m,
        };
        let mut text = format!("`{root}` needs values dfort verify cannot choose:\n");
        for m in missing {
            text.push_str(&format!("  {}: {}\n", m.what, m.flag()));
        }
        let file = config.map_or("dfort.toml".to_string(), |p| p.display().to_string());
        text.push_str(&format!("or give them once in {file}:\n"));
        text.push_str(&toml_table(root, missing));
        text.trim_end().to_string()
    }
}

/// The missing values as an editor says them, without flags: what each
/// is, then the `[[root]]` table of `file` that gives them.
pub fn missing_for_editors(root: &str, missing: &[Missing], file: &Path) -> String {
    let what: Vec<&str> = missing.iter().map(|m| m.what.as_str()).collect();
    format!(
        "`{root}` needs values dfort verify cannot choose: {}. Give them in {}:\n{}",
        what.join(", "),
        file.display(),
        toml_table(root, missing).trim_end()
    )
}

impl From<String> for ArgsError {
    fn from(e: String) -> ArgsError {
        ArgsError::Unsupported(e)
    }
}

/// The `[[root]]` table of `dfort.toml` that gives `missing`, with the
/// values' forms for values.
pub fn toml_table(root: &str, missing: &[Missing]) -> String {
    let mut text = format!("  [[root]]\n  name = \"{root}\"\n");
    for key in ["int", "size", "char", "logical"] {
        let entries: Vec<String> = missing
            .iter()
            .filter(|m| m.key == key)
            .map(|m| format!("{} = {}", m.name, m.form))
            .collect();
        if !entries.is_empty() {
            text.push_str(&format!("  {key} = {{ {} }}\n", entries.join(", ")));
        }
    }
    text
}

/// The driver's arguments for `unit`: integer values from `ints`, array
/// sizes from `sizes`, else from the bounds evaluated with `ints`. When
/// values are missing, all of them are reported at once, except the sizes
/// of explicit-shape arrays while integer arguments are missing (their
/// bounds may follow from them).
pub fn driver_args(unit: &Unit, values: &ArgValues) -> Result<Vec<DriverArg>, ArgsError> {
    let ints = &values.ints;
    let mut out = Vec::new();
    let mut missing = Vec::new();
    // Sizes of explicit-shape arrays whose bounds are not known yet.
    let mut unknown_bounds = Vec::new();
    let mut size_of = |s: &Symbol, missing: &mut Vec<Missing>| match array_size(unit, s, values) {
        Ok(n) => Some(n),
        Err(Bounds::Assumed) => {
            missing.push(Missing::new(&s.name, "size", "the size of the array", "N"));
            None
        }
        Err(Bounds::Unknown) => {
            unknown_bounds.push(Missing::new(&s.name, "size", "the size of the array", "N"));
            None
        }
    };
    for a in &unit.args {
        let s = unit.symbol(*a);
        let name = s.name.clone();
        match (s.ty.base, s.rank()) {
            (BaseType::Character, 0) => match values.chars.get(&name) {
                Some(v) => out.push(DriverArg::Char {
                    name,
                    value: v.clone(),
                }),
                None => missing.push(Missing::new(&name, "char", "the character argument", "VALUE")),
            },
            (BaseType::Logical, 0) => match values.logicals.get(&name) {
                Some(v) => out.push(DriverArg::Logical { name, value: *v }),
                None => missing.push(Missing::new(
                    &name,
                    "logical",
                    "the logical argument",
                    "true|false",
                )),
            },
            (BaseType::Integer, 0) => match ints.get(&name) {
                Some(v) => out.push(DriverArg::Int { name, value: *v }),
                None if values.outputs.contains(&name) => {
                    out.push(DriverArg::Int { name, value: 0 })
                }
                None => missing.push(Missing::new(&name, "int", "the integer argument", "VALUE")),
            },
            (BaseType::Integer, _) if matches!(s.ty.kind, Some(4) | None) => {
                let values = match values.int_arrays.get(&name) {
                    Some(v) => v.clone(),
                    None if values.outputs.contains(&name) => {
                        let Some(n) = size_of(s, &mut missing) else {
                            continue;
                        };
                        vec![0; usize::try_from(n).unwrap_or(0)]
                    }
                    None => {
                        missing.push(Missing::new(
                            &name,
                            "int",
                            "the values of the integer array",
                            "[V1,V2,...]",
                        ));
                        continue;
                    }
                };
                out.push(DriverArg::IntArray { name, values });
            }
            (BaseType::Real, 0) if s.ty.kind == Some(8) => {
                out.push(DriverArg::Real { name, size: 0 })
            }
            (BaseType::Real, _) if s.ty.kind == Some(8) => {
                let Some(size) = size_of(s, &mut missing) else {
                    continue;
                };
                out.push(DriverArg::Real {
                    name,
                    size: usize::try_from(size).unwrap_or(0),
                });
            }
            _ => {
                return Err(ArgsError::Unsupported(format!(
                    "verify can drive integer, character and logical scalars and real(8) arguments only; `{name}` is {}",
                    dfort_ir::dump::type_name(&s.ty)
                )))
            }
        }
    }
    if !missing.iter().any(|m| m.key == "int") {
        missing.append(&mut unknown_bounds);
    }
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(ArgsError::Missing(missing))
    }
}

/// Why an array's size is not known.
enum Bounds {
    /// Assumed shape or size: only a given size tells it.
    Assumed,
    /// Explicit bounds that the integer values given do not evaluate.
    Unknown,
}

fn array_size(unit: &Unit, s: &Symbol, values: &ArgValues) -> Result<i64, Bounds> {
    if let Some(n) = values.sizes.get(&s.name) {
        return Ok(*n);
    }
    let mut total: i64 = 1;
    for d in &s.dims {
        let lo = match &d.lower {
            Some(l) => eval(unit, l, &values.ints),
            None => Some(1),
        };
        let hi = d.upper.as_ref().and_then(|u| eval(unit, u, &values.ints));
        match (d.kind, lo, hi) {
            (DimKind::Explicit, Some(lo), Some(hi)) => total *= (hi - lo + 1).max(0),
            (DimKind::Explicit, _, _) => return Err(Bounds::Unknown),
            _ => return Err(Bounds::Assumed),
        }
    }
    Ok(total)
}

/// How the driver makes the `--matrix` arguments of `unit`: each a real(8)
/// array of rank 2 whose leading dimension the integer arguments give;
/// its leading square block, of the order of the smaller of that dimension
/// and its number of columns.
pub fn matrix_inits(
    unit: &Unit,
    args: &[DriverArg],
    values: &ArgValues,
) -> Result<Vec<MatrixInit>, String> {
    let mut out = Vec::new();
    let mut names: Vec<&String> = values.matrices.keys().collect();
    names.sort();
    for name in names {
        let kind = values.matrices[name];
        let Some(size) = args.iter().find_map(|a| match a {
            DriverArg::Real { name: n, size } if n == name => Some(*size),
            _ => None,
        }) else {
            return Err(format!(
                "--matrix {name}: `{name}` is not a real(8) array argument of `{}`",
                unit.name
            ));
        };
        let sym = unit
            .args
            .iter()
            .map(|a| unit.symbol(*a))
            .find(|s| &s.name == name)
            .ok_or_else(|| format!("--matrix {name}: no argument `{name}`"))?;
        let ld = match (sym.rank(), sym.dims.first()) {
            (2, Some(d)) => {
                let lo = match &d.lower {
                    Some(l) => eval(unit, l, &values.ints),
                    None => Some(1),
                };
                let hi = d.upper.as_ref().and_then(|u| eval(unit, u, &values.ints));
                match (lo, hi) {
                    (Some(lo), Some(hi)) if hi >= lo => (hi - lo + 1) as usize,
                    _ => return Err(format!("--matrix {name}: its leading dimension is not known from the integer arguments")),
                }
            }
            _ => {
                return Err(format!(
                    "--matrix {name}: `{name}` is not a matrix (rank 2)"
                ))
            }
        };
        let order = ld.min(size / ld.max(1));
        out.push(MatrixInit {
            name: name.clone(),
            kind,
            ld,
            order,
        });
    }
    Ok(out)
}

/// `flags` over the values of a `dfort.toml` table: a name the flags give
/// keeps the flag's value. Also returns the names taken from the table.
fn with_config<V: Clone + std::fmt::Display>(
    mut flags: HashMap<String, V>,
    config: Option<&BTreeMap<String, V>>,
) -> (HashMap<String, V>, Vec<String>) {
    let mut from_config = Vec::new();
    for (k, v) in config.into_iter().flatten() {
        if let Entry::Vacant(slot) = flags.entry(k.to_ascii_lowercase()) {
            from_config.push(format!("{}={v}", slot.key()));
            slot.insert(v.clone());
        }
    }
    (flags, from_config)
}

/// A fresh directory under the system's temporary directory, removed
/// (with its contents) when dropped.
pub struct Scratch {
    pub dir: PathBuf,
    /// Whether the directory stays when dropped.
    pub keep: bool,
}

impl Scratch {
    pub fn new(tag: &str) -> Result<Scratch, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("dfort-{tag}-{}-{n}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Scratch { dir, keep: false })
    }

    /// `dir` itself (created if needed), kept when dropped.
    pub fn kept(dir: &Path) -> Result<Scratch, String> {
        Scratch::at(dir.to_path_buf(), true)
    }

    /// `dir` itself (created if needed), removed when dropped unless
    /// `keep`.
    pub fn at(dir: PathBuf, keep: bool) -> Result<Scratch, String> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // Absolute: the programs built there run with it as their
        // working directory (`--keep k` could not run `k/run`).
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        Ok(Scratch { dir, keep })
    }

    pub fn write(&self, name: &str, text: &str) -> Result<(), String> {
        std::fs::write(self.dir.join(name), text).map_err(|e| format!("cannot write {name}: {e}"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            std::fs::remove_dir_all(&self.dir).ok();
        }
    }
}

/// Writes the sources (path, text) into `scratch` as `src<i>.<ext>` (the
/// extension keeps gfortran's choice of source form, in lower case: the
/// text of a preprocessed file is the preprocessor's output, which
/// gfortran must not preprocess again) and returns the names.
pub fn write_originals(
    scratch: &Scratch,
    sources: &[(&Path, &str)],
) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for (i, (path, text)) in sources.iter().enumerate() {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("f90")
            .to_ascii_lowercase();
        let ext = match ext.as_str() {
            "for" | "fpp" | "ftn" => "f".to_string(),
            _ => ext,
        };
        let name = format!("src{i}.{ext}");
        // gfortran reads a `.f90` name as free form, where `0. D 0` (from
        // MITgcm's `_d` macro) is joined as dfort read it.
        let joined = (ext != "f")
            .then(|| dfort_syntax::free_form::join_real_literals(text))
            .flatten();
        scratch.write(&name, joined.as_deref().unwrap_or(text))?;
        names.push(name);
    }
    Ok(names)
}

/// The files holding the adjoints the user supplies that the adjoint of
/// `root` calls, except those among the files read (compiled with the
/// originals): an error names a supplied adjoint without a file.
fn supplied_sources(
    facts: &dfort_analysis::facts::ProgramFacts,
    root: dfort_ir::UnitId,
    supplied: &[(String, Option<PathBuf>)],
    read: &[PathBuf],
) -> Result<Vec<(String, PathBuf)>, String> {
    let set = facts
        .derivative_set(root)
        .map(|s| s.units)
        .unwrap_or_default();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let mut out = Vec::new();
    for u in set.into_iter().filter(|u| facts.is_supplied(*u)) {
        let name = &facts.program.unit(u).name;
        match supplied.iter().find(|(n, _)| n == name) {
            Some((_, Some(f))) if read.iter().any(|r| same(r, f)) => {}
            Some((_, Some(f))) => out.push((name.clone(), f.clone())),
            _ => {
                return Err(format!(
                    "the adjoint calls `{name}_b`, which you supply: give its file with \
                     `--supplied {name}=FILE` or in dfort.toml (`[adjoint] supplied = {{ {name} = \"FILE\" }}`)"
                ))
            }
        }
    }
    Ok(out)
}

/// Checks that gfortran can be run.
pub fn gfortran_available() -> Result<(), String> {
    match Command::new("gfortran").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(_) => Err("gfortran --version failed".into()),
        Err(e) => Err(format!("cannot run gfortran ({e})")),
    }
}

/// Runs gfortran in `dir`; the error holds its messages.
pub fn gfortran(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("gfortran")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run gfortran ({e})"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "gfortran {}:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Compiles `file` (in `dir`) to `<file>.o` with `flags`; returns the object.
pub fn compile(dir: &Path, file: &str, flags: &[&str]) -> Result<String, String> {
    let object = format!("{file}.o");
    let mut args = flags.to_vec();
    args.extend(["-c", file, "-o", &object]);
    gfortran(dir, &args)?;
    Ok(object)
}

/// Puts the stack runtime, compiled with `flags`, into `dir`: its object
/// (`dfort_stack.f90.o`, returned) and module file (`dfort_stack.mod`).
/// Compiled once per runtime text, flags and gfortran version into the
/// cache directory ([`cache_dir`]) and copied from there afterwards: the
/// runtime is long (every stack of every kind and rank) and takes
/// gfortran seconds at -O2, where a kernel's derivatives take a fraction
/// of one. Without a usable cache directory it is compiled in `dir`.
pub fn runtime_object(dir: &Path, flags: &[&str]) -> Result<String, String> {
    runtime_object_cached(dir, flags, cache_dir().as_deref())
}

/// [`runtime_object`] with the cache directory given (`None`: compile in
/// `dir`).
fn runtime_object_cached(
    dir: &Path,
    flags: &[&str],
    cache: Option<&Path>,
) -> Result<String, String> {
    const FILES: [&str; 2] = ["dfort_stack.f90.o", "dfort_stack.mod"];
    let compile_here = || {
        std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME)
            .map_err(|e| format!("cannot write dfort_stack.f90: {e}"))?;
        compile(dir, "dfort_stack.f90", flags)
    };
    let Some(cache) = cache else {
        return compile_here();
    };
    let version = Command::new("gfortran")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let key = fnv1a(&[dfort_codegen::adjoint::RUNTIME, &flags.join(" "), &version]);
    let entry = cache.join(format!("runtime-{key:016x}"));
    if !FILES.iter().all(|f| entry.join(f).is_file()) {
        // Built beside the entry and renamed into place: a concurrent
        // build of the same entry either wins the rename or is dropped.
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let building = cache.join(format!("building-{key:016x}-{}-{n}", std::process::id()));
        if std::fs::create_dir_all(&building).is_err() {
            return compile_here();
        }
        let built = std::fs::write(
            building.join("dfort_stack.f90"),
            dfort_codegen::adjoint::RUNTIME,
        )
        .map_err(|e| format!("cannot write dfort_stack.f90: {e}"))
        .and_then(|()| compile(&building, "dfort_stack.f90", flags));
        if let Err(e) = built {
            std::fs::remove_dir_all(&building).ok();
            return Err(e);
        }
        if std::fs::rename(&building, &entry).is_err() {
            std::fs::remove_dir_all(&building).ok();
        }
    }
    for f in FILES {
        if std::fs::copy(entry.join(f), dir.join(f)).is_err() {
            return compile_here();
        }
    }
    Ok(FILES[0].to_string())
}

/// Where dfort keeps what it compiles once for many runs: `DFORT_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/dfort`, else `$HOME/.cache/dfort` (created when
/// missing); `None` when none can be created.
pub fn cache_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = env("DFORT_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("dfort")))
        .or_else(|| env("HOME").map(|d| d.join(".cache/dfort")))?;
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// The 64-bit FNV-1a hash of `parts` (each followed by a zero byte): a
/// key that stays the same from one build of dfort to the next.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Compiles `files` in an order that satisfies their `use`s (by retrying
/// those that fail until no more succeed); returns the objects in the order
/// compiled, or the last compiler error.
pub fn compile_in_order(
    dir: &Path,
    files: &[String],
    flags: &[&str],
) -> Result<Vec<String>, String> {
    let mut pending = files.to_vec();
    let mut objects = Vec::new();
    let mut last_err = String::new();
    while !pending.is_empty() {
        let mut next = Vec::new();
        for f in &pending {
            match compile(dir, f, flags) {
                Ok(o) => objects.push(o),
                Err(e) => {
                    last_err = e;
                    next.push(f.clone());
                }
            }
        }
        if next.len() == pending.len() {
            return Err(last_err);
        }
        pending = next;
    }
    Ok(objects)
}

/// Compiles `main` and links it with `objects` into `dir/<exe>`.
pub fn link(
    dir: &Path,
    main: &str,
    objects: &[String],
    flags: &[&str],
    exe: &str,
) -> Result<(), String> {
    let mut args = flags.to_vec();
    args.push(main);
    args.extend(objects.iter().map(String::as_str));
    args.extend(["-o", exe]);
    gfortran(dir, &args)
}

/// Runs `dir/<exe>` and returns what it printed on standard output.
pub fn run_program(dir: &Path, exe: &str) -> Result<String, String> {
    outcome(run_output(dir, exe, &[])?)
}

/// Runs `dir/<exe>` with the environment variables `env` added.
fn run_output(dir: &Path, exe: &str, env: &[(&str, &str)]) -> Result<Output, String> {
    Command::new(dir.join(exe))
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("cannot run the driver: {e}"))
}

/// What a driver printed on standard output, or why it failed.
fn outcome(out: Output) -> Result<String, String> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    // The first line says what happened; the rest is all the driver printed.
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let first = first_line(&all);
    Err(format!(
        "the driver failed ({}): {first}\n{all}",
        out.status
    ))
}

/// gfortran's flags for AddressSanitizer (`verify --sanitize`).
pub const SANITIZE: [&str; 2] = ["-fsanitize=address", "-fno-omit-frame-pointer"];

/// [`run_program`] for a build with [`SANITIZE`]: an access outside an
/// array is reported with the sanitizer's first line and the routines it
/// happened in.
pub fn run_sanitized(dir: &Path, exe: &str) -> Result<String, String> {
    let out = run_output(dir, exe, &[("ASAN_OPTIONS", "detect_leaks=0")])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(first) = stderr
        .lines()
        .find(|l| l.contains("ERROR: AddressSanitizer"))
    {
        let frames: Vec<String> = stderr
            .lines()
            .filter_map(|l| l.split_once(" in ").map(|(_, rest)| rest))
            .filter_map(|rest| rest.split_whitespace().next())
            .filter(|name| !name.starts_with("__asan") && !name.starts_with("main"))
            .take(4)
            .map(str::to_string)
            .collect();
        let what = first.split_once("ERROR: ").map_or(first, |(_, w)| w);
        return Err(format!(
            "the build reads or writes outside an array: {} (in {})",
            what.split(" on address").next().unwrap_or(what),
            frames.join(" < ")
        ));
    }
    outcome(out)
}

/// The first non-empty line of a tool's output (what went wrong).
pub fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// The dummies of a root outside a module that the driver declares in an
/// interface block (rank-1 assumed shape), or why it cannot call the
/// root: dummies of higher rank with assumed shape, allocatable or
/// pointer ones (the driver passes flat arrays).
pub fn interface_dummies(unit: &dfort_ir::Unit) -> Result<Vec<String>, String> {
    let mut rank1 = Vec::new();
    let mut unsupported = Vec::new();
    for s in unit.args.iter().map(|a| unit.symbol(*a)) {
        let kinds: Vec<_> = s.dims.iter().map(|d| d.kind).collect();
        match kinds.as_slice() {
            [dfort_ir::DimKind::AssumedShape] => rank1.push(s.name.clone()),
            k if k.iter().any(|d| {
                matches!(
                    d,
                    dfort_ir::DimKind::AssumedShape | dfort_ir::DimKind::Deferred
                )
            }) =>
            {
                unsupported.push(format!("`{}`", s.name))
            }
            _ => {}
        }
    }
    if unsupported.is_empty() {
        return Ok(rank1);
    }
    Err(format!(
        "`{}` is not in a module and its dummies {} (assumed shape of rank 2 or more, allocatable or pointer) need an explicit interface the verification driver does not write: put `{}` in a module (its derivatives then go in the module's derivative modules) to verify it",
        unit.name,
        unsupported.join(", "),
        unit.name
    ))
}

/// For a function root, the name the driver gives its result
/// (`dv_result`); an error for a result the driver cannot hold.
pub fn function_result(unit: &Unit, assumed_shape: &[String]) -> Result<Option<String>, String> {
    if unit.kind != UnitKind::Function {
        return Ok(None);
    }
    let Some(r) = unit.result.map(|r| unit.symbol(r)) else {
        return Ok(None);
    };
    if !(r.ty.base == BaseType::Real && r.ty.kind == Some(8) && r.rank() == 0) {
        return Err(format!(
            "verify can drive functions with a real(8) scalar result only; `{}` returns {}",
            unit.name,
            dfort_ir::dump::type_name(&r.ty)
        ));
    }
    if !assumed_shape.is_empty() {
        return Err(format!(
            "verify cannot declare the function `{}` with assumed-shape dummies outside a module: put it in a module to verify it",
            unit.name
        ));
    }
    Ok(Some("dv_result".into()))
}

/// The integer arguments root `root` may write (`info`, `ipiv`), which
/// need no value.
pub fn written_integers(
    facts: &dfort_analysis::facts::ProgramFacts,
    root: UnitId,
) -> std::collections::HashSet<String> {
    let unit = facts.program.unit(root);
    let Some(fx) = facts.effects().get(root) else {
        return Default::default();
    };
    unit.args
        .iter()
        .enumerate()
        .filter(|(k, a)| {
            fx.written_formals.contains(&(*k as u32))
                && unit.symbol(**a).ty.base == BaseType::Integer
        })
        .map(|(_, a)| unit.symbol(*a).name.clone())
        .collect()
}

pub fn run(args: VerifyArgs) -> ExitCode {
    match verify(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(Stop::Error(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
        Err(Stop::Missing(json)) => {
            println!("{json}");
            ExitCode::from(MISSING_VALUES)
        }
    }
}

fn verify(args: &VerifyArgs) -> Result<bool, Stop> {
    let ((ints, int_arrays), sizes) = (int_items(&args.ints)?, pairs(&args.sizes)?);
    let matrices = pairs_of(&args.matrices, matrix_kind)?;
    let chars = pairs_of(&args.chars, |v| Ok(v.to_string()))?;
    let logicals = pairs_of(&args.logicals, logical)?;
    let recording = crate::adjoint::recording(args.no_tbr, args.no_inversion);
    let Some(loaded) = load_root(&args.diff, recording, args.preaccumulate.map(|p| p.mode()))
    else {
        return Err("nothing to verify".into());
    };
    let Loaded {
        session,
        root,
        roles,
        config,
        supplied,
    } = &loaded;
    let root = *root;
    let snap = &session.snap;
    let facts = snap.analysis();
    let unit = snap.program.unit(root);
    // `int` of dfort.toml holds the scalars and the arrays.
    let (mut int_config, mut array_config) = (BTreeMap::new(), BTreeMap::new());
    for (k, v) in config.iter().flat_map(|(_, c)| &c.int) {
        if let IntValue::One(one) = v {
            int_config.insert(k.clone(), *one);
        } else {
            array_config.insert(k.clone(), v.clone());
        }
    }
    let arrays = int_arrays.into_iter().map(|(k, v)| (k, IntValue::Many(v)));
    let (int_arrays, from_array) = with_config(arrays.collect(), Some(&array_config));
    let int_arrays = int_arrays
        .into_iter()
        .filter_map(|(k, v)| match v {
            IntValue::Many(v) => Some((k, v)),
            IntValue::One(_) => None,
        })
        .collect();
    let (ints, from_int) = with_config(ints, config.as_ref().map(|_| &int_config));
    let (sizes, from_size) = with_config(sizes, config.as_ref().map(|(_, c)| &c.size));
    let (chars, from_char) = with_config(chars, config.as_ref().map(|(_, c)| &c.char));
    let (logicals, from_logical) = with_config(logicals, config.as_ref().map(|(_, c)| &c.logical));
    if let Some((path, _)) = &config {
        let used: Vec<String> = from_int
            .into_iter()
            .chain(from_array)
            .chain(from_size)
            .chain(from_char)
            .chain(from_logical)
            .collect();
        if !used.is_empty() {
            eprintln!(
                "note: {}: {} from {}",
                unit.name,
                used.join(", "),
                path.display()
            );
        }
    }
    let module = dfort_codegen::calls::host_module(&snap.program, unit);
    let assumed_shape = match module {
        Some(_) => Vec::new(),
        None => interface_dummies(unit)?,
    };
    let values = ArgValues {
        ints,
        sizes,
        chars,
        logicals,
        int_arrays,
        matrices,
        outputs: written_integers(facts, root),
    };
    let dn = dfort_codegen::tangent::derivative_names_of(facts, root);
    let mut dargs = match driver_args(unit, &values) {
        Ok(a) => a,
        Err(ArgsError::Missing(missing)) if args.missing_json => {
            return Err(Stop::Missing(serde_json::json!({
                "root": unit.name,
                "config": config.as_ref().map(|(p, _)| p),
                "missing": missing,
            })))
        }
        Err(e) => {
            return Err(e
                .message(&unit.name, config.as_ref().map(|(p, _)| p.as_path()))
                .into())
        }
    };
    let matrices = matrix_inits(unit, &dargs, &values)?;
    let mut with_derivative: Vec<bool> = unit.args.iter().map(|a| dn.contains_key(a)).collect();
    // A function's result: a scalar of the driver's own name.
    let result = function_result(unit, &assumed_shape)?;
    if let Some(r) = &result {
        dargs.push(DriverArg::Real {
            name: r.clone(),
            size: 0,
        });
        with_derivative.push(true);
    }
    let (ind, dep) = (&roles.independents, &roles.dependents);
    // The driver perturbs the independents at entry: one that takes its
    // values after a call of the root is not perturbed there.
    if let Some((u, at)) = roles.after.last() {
        let callee = match facts.program.unit(*u).stmts.get(*at).map(|s| &s.kind) {
            Some(dfort_ir::StmtKind::Call { name, .. }) => name.clone(),
            _ => String::from("?"),
        };
        return Err(format!(
            "the independents of `{}` take their values after the call to `{callee}`: dfort verify's driver perturbs them on entry only, so it cannot check this root (`dfort adjoint` and `dfort tangent` write its derivatives)",
            unit.name
        )
        .into());
    }
    // The driver declares no COMMON block: a role in one is not checked.
    let in_common = |s: dfort_ir::SymbolId| match unit.symbols.get(s).map(|x| &x.storage) {
        Some(dfort_ir::Storage::Common { block, .. }) => Some(block.clone()),
        _ => None,
    };
    let common_role = ind
        .ids::<dfort_ir::SymbolId>()
        .chain(dep.ids())
        .find_map(|s| Some((s, in_common(s)?)));
    if let Some((s, block)) = common_role {
        let role = if ind.contains_id(s) {
            "an independent"
        } else {
            "a dependent"
        };
        return Err(format!(
            "`{}` (in COMMON /{block}/) is {role} of `{}`: dfort verify's driver declares no COMMON block, so it cannot check it (`dfort adjoint` and `dfort tangent` write the derivatives, with the block's derivatives in COMMON /{block}_b/ and /{block}_d/)",
            unit.symbol(s).name,
            unit.name
        )
        .into());
    }
    let tangent = dfort_codegen::tangent::tangent_of(facts, root, "dfort verify");
    let adjoint =
        dfort_codegen::adjoint::adjoint_of(facts, root, "dfort verify").map(|(text, _)| text);
    for (what, r) in [("tangent", &tangent), ("adjoint", &adjoint)] {
        if let Err(refusals) = r {
            crate::tangent::report_refusals(snap, &unit.name, what, refusals);
        }
    }
    // A refused adjoint does not keep the tangent from being checked (the
    // run still fails).
    let Ok(tangent) = tangent else {
        return Ok(false);
    };
    let adjoint = adjoint.ok();
    let supplied_files = match adjoint {
        Some(_) => supplied_sources(facts, root, supplied, &session.paths)?,
        None => Vec::new(),
    };
    let names = |set: &dfort_ir::bitset::BitSet| -> Vec<String> {
        set.ids()
            .filter_map(|i| {
                if Some(i) == unit.result {
                    return result.clone();
                }
                unit.symbols.get(i).map(|s| s.name.clone())
            })
            .collect()
    };
    let spec = DriverSpec {
        root: unit.name.clone(),
        with_derivative,
        args: dargs,
        independents: names(ind),
        dependents: names(dep),
        tangent: true,
        adjoint: adjoint.is_some(),
        module,
        points: args.points as usize,
        gradient: false,
        seed: 12345,
        assumed_shape,
        result,
        matrices,
        step: dfort_codegen::driver::STEP,
    };
    let scratch = match &args.keep {
        Some(d) => Scratch::kept(d)?,
        None => Scratch::new("verify")?,
    };
    let dir = scratch.dir.as_path();
    let originals = write_originals(&scratch, &session.sources())?;
    scratch.write("tangent.f90", &tangent)?;
    let mut derivatives = vec!["tangent.f90"];
    if let Some(adjoint) = &adjoint {
        scratch.write("adjoint.f90", adjoint)?;
        derivatives.push("adjoint.f90");
    }
    scratch.write("driver.f90", &driver(&spec))?;
    let sanitize: &[&str] = if args.sanitize { &SANITIZE } else { &[] };
    let plain = [&["-O2"], sanitize].concat();
    let mut objects = compile_in_order(dir, &originals, &plain)
        .map_err(|e| format!("the original sources do not compile: {e}"))?;
    objects.push(runtime_object(dir, &plain)?);
    let mut flags = [&POISON[..], sanitize].concat();
    if args.bounds {
        flags.push("-fcheck=bounds");
    }
    for f in derivatives {
        objects.push(compile(dir, f, &flags)?);
    }
    for (i, (name, path)) in supplied_files.iter().enumerate() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {} (`{name}_b`): {e}", path.display()))?;
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("f90");
        let file = format!("supplied{i}.{ext}");
        scratch.write(&file, &text)?;
        objects.push(
            compile(dir, &file, &plain).map_err(|e| {
                format!("your `{name}_b` ({}) does not compile: {e}", path.display())
            })?,
        );
    }
    link(dir, "driver.f90", &objects, &plain, "run")?;
    let text = match args.sanitize {
        true => run_sanitized(dir, "run")?,
        false => run_program(dir, "run")?,
    };
    let points = parse_output(&text);
    if points.is_empty() {
        return Err(format!("the driver printed no result: {text}").into());
    }
    let v = Verdict::of(&points);
    if args.verbose {
        for (i, p) in points.iter().enumerate() {
            let show = |x: Option<(f64, f64)>| x.map_or("-".into(), |(v, _)| format!("{v:.15e}"));
            println!(
                "point {}: differences {:.15e} (h) {:.15e} (h/2) {:.15e} (h/4){}; tangent {}; adjoint {}",
                i + 1,
                p.fd[0],
                p.fd[1],
                p.fd[2],
                if p.smooth(SMOOTH) { "" } else { ", not smooth" },
                show(p.tangent),
                show(p.adjoint)
            );
        }
    }
    let verdict = |e: f64| {
        if e <= args.tolerance {
            "ok"
        } else {
            "TOO LARGE"
        }
    };
    let name = &unit.name;
    let n = points.len();
    let tangent_ok = match v.tangent {
        Some(t) => {
            let skipped = match n - v.smooth_points {
                0 => String::new(),
                k => format!(
                    ", at the {} of {n} points where two step sizes agree",
                    n - k
                ),
            };
            println!(
                "{name}: tangent relative error {t:.2e} against central finite differences{skipped} ({})",
                verdict(t)
            );
            let checkable = dfort_codegen::driver::LARGEST_CHECKABLE;
            if t > args.tolerance
                && dfort_codegen::driver::only_large_tangents_disagree(
                    &points,
                    SMOOTH,
                    args.tolerance,
                    checkable,
                )
            {
                println!(
                    "{name}: the tangent disagrees only where it is past {checkable:e}: derivatives that large (grown through a chaotic stretch of a loop, say, whose values then settle) are beyond what finite differences can check, so this failure may be the check's"
                );
            }
            t <= args.tolerance
        }
        None => {
            println!(
                "{name}: finite differences unreliable here (non-smooth point?): their extrapolations from steps h, h/2 and h/4 disagree at all {n} points; the tangent is not checked"
            );
            false
        }
    };
    let adjoint_ok = match v.adjoint {
        Some(a) => {
            println!(
                "{name}: adjoint relative error {a:.2e} in the dot-product test ({})",
                verdict(a)
            );
            a <= args.tolerance
        }
        None => {
            if adjoint.is_none() {
                println!("{name}: no adjoint to check (refused, above)");
            }
            false
        }
    };
    if let Some((pushed, peak)) = v.tape {
        println!("{name}: the adjoint pushed {pushed} bytes to its tape (at most {peak} at once)");
    }
    if v.depth != 0 {
        println!(
            "{name}: the adjoint left {} entries on its tape: its pushes and pops do not match (WRONG)",
            v.depth
        );
    }
    Ok(tangent_ok && adjoint_ok && v.depth == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_is_compiled_once_into_the_cache_and_copied_from_it() {
        if gfortran_available().is_err() || std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
            return;
        }
        let cache = Scratch::new("runtime-cache").unwrap();
        let (first, second) = (
            Scratch::new("runtime-use").unwrap(),
            Scratch::new("runtime-use").unwrap(),
        );
        let object = runtime_object_cached(&first.dir, &["-O0"], Some(&cache.dir)).unwrap();
        assert!(first.dir.join(&object).is_file() && first.dir.join("dfort_stack.mod").is_file());
        let entries: Vec<PathBuf> = std::fs::read_dir(&cache.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert!(entries[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("runtime-"));
        // The second use copies the cached object (marked here) instead
        // of compiling the runtime again.
        std::fs::write(entries[0].join(&object), "cached").unwrap();
        runtime_object_cached(&second.dir, &["-O0"], Some(&cache.dir)).unwrap();
        assert_eq!(
            std::fs::read_to_string(second.dir.join(&object)).unwrap(),
            "cached"
        );
        // Other flags are another entry.
        runtime_object_cached(&second.dir, &["-O1"], Some(&cache.dir)).unwrap();
        assert_eq!(std::fs::read_dir(&cache.dir).unwrap().count(), 2);
    }

    #[test]
    fn flags_win_over_dfort_toml_values() {
        let flags = pairs(&["DIM=8".into()]).unwrap();
        let config: BTreeMap<String, i64> = [("dim".into(), 12), ("ParMax".into(), 2)].into();
        let (merged, from_config) = with_config(flags, Some(&config));
        assert_eq!(merged.get("dim"), Some(&8));
        assert_eq!(merged.get("parmax"), Some(&2));
        assert_eq!(from_config, vec!["parmax=2".to_string()]);
        let (merged, from_config) = with_config(HashMap::<String, i64>::new(), None);
        assert!(merged.is_empty() && from_config.is_empty());
    }
}
