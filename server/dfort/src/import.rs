//! `dfort import BUILD`: the preprocessor flags and the file list of a
//! build the user already has, written into `dfort.toml` (its `files` and
//! `[preprocessor]`; its `[[root]]` tables are kept), so the commands and
//! the editor read the code the compiler reads. Three kinds of build:
//!
//! - a genmake2 `Makefile` (MITgcm): `DEFINES` (`-D`), `INCLUDES` (`-I`),
//!   `F77_SRC_FILES` and `F90_SRC_FILES` (relative to the build
//!   directory), with `$(VAR)` references expanded; when its `CPPCMD`
//!   pipes through `set64bitConst.sh` (which turns ` _d ` into `D`), the
//!   macro `_d=D`, which does the same;
//! - `compile_commands.json` (CMake, Bear): the Fortran entries' files and
//!   their `-D` / `-I` (the union, in order; the first value of a macro
//!   wins);
//! - `fpm.toml`: `[preprocess.cpp] macros`, the library's `include-dir`
//!   (default `include`), and the Fortran files under its `source-dir`
//!   (default `src`) and `app/`.

use crate::config::{self, Config};
use clap::Args;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub struct ImportArgs {
    /// A genmake2 `Makefile`, a `compile_commands.json` or an `fpm.toml`.
    build: PathBuf,
    /// The `dfort.toml` to write (default: beside the build file); its
    /// `[[root]]` tables are kept.
    #[arg(long)]
    output: Option<PathBuf>,
}

/// What a build gives: files and the preprocessor's settings (absolute,
/// or relative to the current directory).
#[derive(Debug, Default, PartialEq)]
pub struct Imported {
    pub kind: &'static str,
    pub files: Vec<PathBuf>,
    pub include: Vec<PathBuf>,
    pub define: BTreeMap<String, String>,
}

pub fn run(args: ImportArgs) -> ExitCode {
    let imported = match read_build(&args.build) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {}: {e}", args.build.display());
            return ExitCode::from(1);
        }
    };
    let dir = args.build.parent().unwrap_or(Path::new("."));
    let out = args.output.unwrap_or_else(|| dir.join("dfort.toml"));
    let mut config = if out.is_file() {
        match config::read(&out) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        Config::default()
    };
    let base = out.parent().unwrap_or(Path::new("."));
    config.files = imported.files.iter().map(|f| relative(f, base)).collect();
    config.preprocessor.include = imported.include.iter().map(|d| relative(d, base)).collect();
    config.preprocessor.define = imported.define.clone();
    let text = match toml::to_string_pretty(&config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot write the configuration: {e}");
            return ExitCode::from(1);
        }
    };
    let header = format!(
        "# Imported by `dfort import` from {} ({}).\n",
        args.build.display(),
        imported.kind
    );
    if let Err(e) = std::fs::write(&out, header + &text) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return ExitCode::from(1);
    }
    println!(
        "{}: {} files, {} macros, {} include directories (from {})",
        out.display(),
        config.files.len(),
        config.preprocessor.define.len(),
        config.preprocessor.include.len(),
        imported.kind
    );
    ExitCode::SUCCESS
}

/// Reads a build file, by its name.
pub fn read_build(path: &Path) -> Result<Imported, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.ends_with(".json") {
        from_compile_commands(&text, dir)
    } else if name == "fpm.toml" {
        from_fpm(&text, dir)
    } else {
        from_genmake2(&text, dir)
    }
}

/// `-DNAME[=VALUE]` → (NAME, VALUE or "1").
fn macro_of(flag: &str) -> Option<(String, String)> {
    let d = flag.strip_prefix("-D")?;
    let (name, value) = d.split_once('=').unwrap_or((d, "1"));
    (!name.is_empty()).then(|| (name.to_string(), value.to_string()))
}

/// The `-D` and `-I` of a list of flags (`-I DIR` or `-IDIR`), include
/// directories relative to `dir`.
fn flags(words: &[String], dir: &Path, out: &mut Imported) {
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if let Some((n, v)) = macro_of(w) {
            out.define.entry(n).or_insert(v);
        } else if w == "-D" {
            if let Some((n, v)) = words.get(i + 1).and_then(|x| macro_of(&format!("-D{x}"))) {
                out.define.entry(n).or_insert(v);
            }
            i += 1;
        } else if let Some(d) = w.strip_prefix("-I") {
            let d = if d.is_empty() {
                i += 1;
                words.get(i).map(String::as_str).unwrap_or("")
            } else {
                d
            };
            let p = dir.join(d);
            if !d.is_empty() && !out.include.contains(&p) {
                out.include.push(p);
            }
        }
        i += 1;
    }
}

/// A genmake2 Makefile's variables (continuation lines joined), with
/// `$(VAR)` references expanded from earlier variables.
fn make_variables(text: &str) -> BTreeMap<String, String> {
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut logical = String::new();
    for line in text.lines() {
        if let Some(head) = line.strip_suffix('\\') {
            logical.push_str(head);
            logical.push(' ');
            continue;
        }
        logical.push_str(line);
        let l = std::mem::take(&mut logical);
        if l.starts_with(['\t', '#']) {
            continue;
        }
        let Some((name, value)) = l.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let value = expand(value.trim(), &vars);
        vars.insert(name.to_string(), value);
    }
    vars
}

/// `value` with `$(VAR)` and `${VAR}` replaced by the variables' values
/// (unknown ones by nothing).
fn expand(value: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let close = match after.chars().next() {
            Some('(') => ')',
            Some('{') => '}',
            _ => {
                out.push('$');
                rest = after;
                continue;
            }
        };
        match after.find(close) {
            Some(end) => {
                let name = &after[1..end];
                // `$(VAR:.F=.o)` substitutions and functions are left out.
                if let Some(v) = vars.get(name) {
                    out.push_str(v);
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// A genmake2 `Makefile` in `dir`.
pub fn from_genmake2(text: &str, dir: &Path) -> Result<Imported, String> {
    let vars = make_variables(text);
    if !vars.contains_key("DEFINES") && !vars.contains_key("F77_SRC_FILES") {
        return Err("not a genmake2 Makefile (no DEFINES, no F77_SRC_FILES)".into());
    }
    let mut out = Imported {
        kind: "genmake2 Makefile",
        ..Imported::default()
    };
    for v in ["DEFINES", "INCLUDES"] {
        if let Some(s) = vars.get(v) {
            flags(&words(s), dir, &mut out);
        }
    }
    if vars
        .get("CPPCMD")
        .is_some_and(|c| c.contains("set64bitConst.sh"))
    {
        out.define.entry("_d".into()).or_insert("D".into());
    }
    for v in ["F77_SRC_FILES", "F90_SRC_FILES"] {
        if let Some(s) = vars.get(v) {
            out.files.extend(words(s).into_iter().map(|f| dir.join(f)));
        }
    }
    Ok(out)
}

/// One entry of `compile_commands.json`.
#[derive(serde::Deserialize)]
struct CompileCommand {
    directory: PathBuf,
    file: PathBuf,
    #[serde(default)]
    arguments: Vec<String>,
    #[serde(default)]
    command: Option<String>,
}

/// A `compile_commands.json` in `dir`: its Fortran entries.
pub fn from_compile_commands(text: &str, dir: &Path) -> Result<Imported, String> {
    let entries: Vec<CompileCommand> =
        serde_json::from_str(text).map_err(|e| format!("not a compilation database: {e}"))?;
    let mut out = Imported {
        kind: "compile_commands.json",
        ..Imported::default()
    };
    for e in entries {
        let directory = dir.join(&e.directory);
        let file = directory.join(&e.file);
        if !is_fortran(&file) {
            continue;
        }
        let args = if e.arguments.is_empty() {
            e.command.as_deref().map(words).unwrap_or_default()
        } else {
            e.arguments
        };
        flags(&args, &directory, &mut out);
        if !out.files.contains(&file) {
            out.files.push(file);
        }
    }
    if out.files.is_empty() {
        return Err("no Fortran file among its entries".into());
    }
    Ok(out)
}

/// An `fpm.toml` in `dir`.
pub fn from_fpm(text: &str, dir: &Path) -> Result<Imported, String> {
    let t: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Imported {
        kind: "fpm.toml",
        ..Imported::default()
    };
    let library = t.get("library").and_then(|l| l.as_table());
    let get = |key: &str, default: &str| {
        library
            .and_then(|l| l.get(key))
            .and_then(|v| v.as_str())
            .unwrap_or(default)
            .to_string()
    };
    let include = dir.join(get("include-dir", "include"));
    if include.is_dir() {
        out.include.push(include);
    }
    let macros = t
        .get("preprocess")
        .and_then(|p| p.get("cpp"))
        .and_then(|c| c.get("macros"))
        .and_then(|m| m.as_array());
    for m in macros.into_iter().flatten() {
        if let Some((n, v)) = m.as_str().and_then(|s| macro_of(&format!("-D{s}"))) {
            out.define.entry(n).or_insert(v);
        }
    }
    for src in [get("source-dir", "src"), "app".to_string()] {
        out.files.extend(crate::lsp::index::fortran_files(
            &dir.join(src),
            &is_fortran,
        ));
    }
    if out.files.is_empty() {
        return Err("no Fortran file under its source directories".into());
    }
    Ok(out)
}

/// Fortran sources, by extension (as gfortran takes them).
fn is_fortran(p: &Path) -> bool {
    let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
    [
        "f", "for", "f77", "ftn", "f90", "f95", "f03", "f08", "fpp", "F", "FOR", "F77", "FTN",
        "F90", "F95", "F03", "F08", "FPP",
    ]
    .contains(&ext)
}

/// `p` relative to `base` when it lies under it (`./x` spelled `x`), else
/// absolute (a path relative to the current directory would not be one
/// relative to `dfort.toml`).
fn relative(p: &Path, base: &Path) -> PathBuf {
    let clean = |q: &Path| -> PathBuf {
        q.components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect()
    };
    let (p, base) = (clean(p), clean(base));
    match p.strip_prefix(&base) {
        Ok(r) if !r.as_os_str().is_empty() => r.to_path_buf(),
        Ok(_) => PathBuf::from("."),
        Err(_) => std::path::absolute(&p).unwrap_or(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genmake2_defines_includes_and_sources() {
        let mk = "ROOTDIR     = ../../..\n\
                  INCLUDEDIRS =  ../code $(ROOTDIR)/model/inc\n\
                  DEFINES = -DWORDLENGTH=4 -DNML_TERMINATOR \n\
                  INCLUDES = -I$(ROOTDIR)/eesupp/inc -I inc\n\
                  F77_SRC_FILES =  \\\n a.F \\\n b.F\n\
                  F90_SRC_FILES = \n\
                  \t$(CPP) x\n\
                  CPPCMD = cat $< |  cpp -traditional -P $(DEFINES) | $(TOOLSDIR)/set64bitConst.sh\n";
        let i = from_genmake2(mk, Path::new("b")).unwrap();
        assert_eq!(i.files, [PathBuf::from("b/a.F"), PathBuf::from("b/b.F")]);
        assert_eq!(
            i.include,
            [
                PathBuf::from("b/../../../eesupp/inc"),
                PathBuf::from("b/inc")
            ]
        );
        let d: Vec<(&str, &str)> = i
            .define
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(
            d,
            [("NML_TERMINATOR", "1"), ("WORDLENGTH", "4"), ("_d", "D")]
        );
        assert!(from_genmake2("all:\n\tcc x.c\n", Path::new(".")).is_err());
    }

    #[test]
    fn compile_commands_take_fortran_entries_and_their_flags() {
        let json = r#"[
          {"directory": "/p/build", "file": "../src/a.f90",
           "arguments": ["gfortran", "-DN=3", "-I", "../inc", "-c", "../src/a.f90"]},
          {"directory": "/p/build", "file": "/p/src/b.F90",
           "command": "gfortran -DN=4 -DFAST -I/p/inc2 -c /p/src/b.F90"},
          {"directory": "/p/build", "file": "c.c", "command": "cc -DC -c c.c"}
        ]"#;
        let i = from_compile_commands(json, Path::new("/x")).unwrap();
        assert_eq!(
            i.files,
            [
                PathBuf::from("/p/build/../src/a.f90"),
                PathBuf::from("/p/src/b.F90")
            ]
        );
        assert_eq!(
            i.include,
            [PathBuf::from("/p/build/../inc"), PathBuf::from("/p/inc2")]
        );
        assert_eq!(i.define.get("N").map(String::as_str), Some("3"));
        assert_eq!(i.define.get("FAST").map(String::as_str), Some("1"));
        assert!(!i.define.contains_key("C"));
        assert!(from_compile_commands("{}", Path::new(".")).is_err());
    }

    #[test]
    fn fpm_takes_macros_include_dir_and_sources() {
        let dir = std::env::temp_dir().join(format!("dfort-fpm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["src/sub", "app", "include", "test"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        for f in [
            "src/a.f90",
            "src/sub/b.F90",
            "app/main.f90",
            "test/t.f90",
            "src/notes.txt",
        ] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let fpm = "name = \"p\"\n[preprocess.cpp]\nmacros = [\"USE_MPI\", \"N=3\"]\n";
        let i = from_fpm(fpm, &dir).unwrap();
        let names: Vec<String> = i
            .files
            .iter()
            .map(|f| f.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["src/a.f90", "src/sub/b.F90", "app/main.f90"]);
        assert_eq!(i.include, [dir.join("include")]);
        assert_eq!(i.define.get("USE_MPI").map(String::as_str), Some("1"));
        assert_eq!(i.define.get("N").map(String::as_str), Some("3"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn paths_under_the_configuration_are_relative() {
        assert_eq!(
            relative(Path::new("./b/a.F"), Path::new("./b")),
            PathBuf::from("a.F")
        );
        assert_eq!(
            relative(Path::new("/m/inc"), Path::new("/w")),
            PathBuf::from("/m/inc")
        );
        assert_eq!(relative(Path::new("b"), Path::new("b")), PathBuf::from("."));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            relative(Path::new("b/a.F"), Path::new("/w")),
            cwd.join("b/a.F")
        );
    }
}
