//! The Fortran `INCLUDE 'file'` line (issue 18), which compilers read
//! after the C preprocessor: the named file's lines take the place of the
//! line, searched in the directory of the file holding the line, then in
//! the `-I` directories in order; an included file may include others.
//! The included text is not run through the C preprocessor (as gfortran
//! does not).
//!
//! Contract: [`expand_includes`] never fails and does no I/O of its own;
//! the INCLUDE line itself becomes a blank line in place (so that it
//! keeps a position), followed by the included file's lines, each saying
//! which file and line it is ([`OutLine`]). A file that cannot be found is
//! a [`CppDiagnostic`] on the INCLUDE line; so is nesting past 200 deep.

use super::{CppDiagnostic, CppOptions, CppSeverity, IncludeLine, OutLine, Preprocessed};
use std::path::{Path, PathBuf};

const MAX_DEPTH: usize = 200;

/// The file an `INCLUDE 'name'` (or `"name"`) line names; `None` for any
/// other line (a fixed-form comment line, an assignment to a variable
/// called `include`).
pub fn include_line(line: &str, fixed: bool) -> Option<&str> {
    if fixed && !line.starts_with([' ', '\t']) {
        return None;
    }
    let t = line.trim_start();
    let head = t.get(..7)?;
    if !head.eq_ignore_ascii_case("include") {
        return None;
    }
    let rest = t[7..].trim_start();
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = &rest[1..];
    let end = body.find(quote)?;
    let after = body[end + 1..].trim_start();
    if !(after.is_empty() || after.starts_with('!')) {
        return None;
    }
    Some(&body[..end])
}

/// Whether `text` has an INCLUDE line. Only the lines holding the word
/// (in any case) are looked at: the host asks this of every edited
/// document at every edit.
pub fn has_include_line(text: &str, fixed: bool) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr2_iter(b'i', b'I', bytes).any(|at| {
        if !bytes
            .get(at..at + 7)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"include"))
        {
            return false;
        }
        let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |p| p + 1);
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |p| at + p);
        let line = text.get(start..end).unwrap_or("");
        include_line(line.strip_suffix('\r').unwrap_or(line), fixed).is_some()
    })
}

/// `text` of `path` as an output with one line per line and nothing
/// replaced (for a file the C preprocessor does not run on).
pub fn unprocessed(path: &Path, text: &str) -> Preprocessed {
    let mut out = Preprocessed {
        files: vec![path.to_path_buf()],
        ..Preprocessed::default()
    };
    for (k, l) in text.lines().enumerate() {
        out.text.push_str(l.strip_suffix('\r').unwrap_or(l));
        out.text.push('\n');
        out.lines.push(OutLine {
            file: 0,
            line: k as u32,
            replaced: Vec::new(),
        });
    }
    out
}

/// `pp` with its INCLUDE lines replaced by the files they name.
pub fn expand_includes(
    pp: Preprocessed,
    options: &CppOptions,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Preprocessed {
    if !pp
        .text
        .lines()
        .any(|l| include_line(l, options.fixed).is_some())
    {
        return pp;
    }
    let mut out = Preprocessed {
        text: String::with_capacity(pp.text.len()),
        lines: Vec::with_capacity(pp.lines.len()),
        files: pp.files.clone(),
        diagnostics: pp.diagnostics.clone(),
        inactive: pp.inactive.clone(),
        uses: pp.uses.clone(),
        conditions: pp.conditions.clone(),
        includes: pp.includes.clone(),
        renames: pp.renames.clone(),
    };
    for (text, origin) in pp.text.lines().zip(&pp.lines) {
        emit(&mut out, text, origin.clone(), options, read, 0);
    }
    out
}

/// Appends one line (from `origin`), or the file it includes.
fn emit(
    out: &mut Preprocessed,
    text: &str,
    origin: OutLine,
    options: &CppOptions,
    read: &dyn Fn(&Path) -> Option<String>,
    depth: usize,
) {
    let Some(name) = include_line(text, options.fixed) else {
        out.text.push_str(text);
        out.text.push('\n');
        out.lines.push(origin);
        return;
    };
    let (file, line) = (origin.file, origin.line);
    out.text.push('\n');
    out.lines.push(OutLine {
        file,
        line,
        replaced: Vec::new(),
    });
    let problem = |out: &mut Preprocessed, message: String| {
        out.diagnostics.push(CppDiagnostic {
            file,
            line,
            severity: CppSeverity::Error,
            message,
        });
    };
    if depth >= MAX_DEPTH {
        problem(
            out,
            format!("INCLUDE nested {MAX_DEPTH} deep (a file that includes itself?)"),
        );
        return;
    }
    let here = out.files[file as usize].parent().map(Path::to_path_buf);
    let found = here
        .into_iter()
        .chain(options.include.iter().cloned())
        .map(|d| match d.as_os_str().is_empty() {
            true => PathBuf::from(name),
            false => d.join(name),
        })
        .find_map(|p| read(&p).map(|t| (p, t)));
    let Some((path, included)) = found else {
        problem(
            out,
            format!("INCLUDE '{name}': no such file in the including file's directory or the include path"),
        );
        out.includes.push(IncludeLine {
            file,
            line,
            target: None,
        });
        return;
    };
    let target = match out.files.iter().position(|f| *f == path) {
        Some(i) => i as u32,
        None => {
            out.files.push(path);
            (out.files.len() - 1) as u32
        }
    };
    out.includes.push(IncludeLine {
        file,
        line,
        target: Some(target),
    });
    for (k, l) in included.lines().enumerate() {
        let origin = OutLine {
            file: target,
            line: k as u32,
            replaced: Vec::new(),
        };
        emit(
            out,
            l.strip_suffix('\r').unwrap_or(l),
            origin,
            options,
            read,
            depth + 1,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_lines_are_recognised_in_both_forms() {
        assert_eq!(include_line("      INCLUDE 'SIZE.h'", true), Some("SIZE.h"));
        assert_eq!(
            include_line("      include \"a b.h\" ! c", true),
            Some("a b.h")
        );
        assert_eq!(include_line("include 'x.inc'", false), Some("x.inc"));
        for (l, fixed) in [
            ("C     INCLUDE 'SIZE.h'", true),
            ("      include = 'x'", true),
            ("      INCLUDE 'x' + 1", true),
            ("      call include('x')", false),
            ("      includes 'x'", false),
        ] {
            assert_eq!(include_line(l, fixed), None, "{l}");
        }
    }

    use proptest::prelude::*;

    proptest! {
        /// The quick scan finds an INCLUDE line exactly when one line of
        /// the text is one.
        #[test]
        fn has_include_line_is_any_line_an_include_line(
            pieces in prop::collection::vec(
                prop::sample::select(vec![
                    "      INCLUDE 'a.h'", "include \"b.h\" ! c", "InClUdE 'c'",
                    "C     include 'x'", "      x = include", "includes 'y'",
                    "\tinclude 'z'", "\r", "\n", "\r\n", " ", "i", "I", "'", "é",
                ]),
                0..12,
            ),
            fixed in any::<bool>(),
        ) {
            let text = pieces.concat();
            prop_assert_eq!(
                has_include_line(&text, fixed),
                text.lines().any(|l| include_line(l, fixed).is_some()),
                "{:?}", text
            );
        }
    }

    #[test]
    fn included_files_replace_the_line_and_keep_their_positions() {
        let files = |p: &Path| match p.to_str()? {
            "/w/a.h" => Some("      INTEGER n\n      INCLUDE 'b.h'\n".to_string()),
            "/w/inc/b.h" => Some("      PARAMETER (n = 3)\n".to_string()),
            "/w/loop.h" => Some("      INCLUDE 'loop.h'\n".to_string()),
            _ => None,
        };
        let options = CppOptions {
            include: vec![PathBuf::from("/w/inc")],
            define: Vec::new(),
            fixed: true,
        };
        let main = "      SUBROUTINE s\n      INCLUDE 'a.h'\n      INCLUDE 'none.h'\n      END\n";
        let out = expand_includes(unprocessed(Path::new("/w/m.f"), main), &options, &files);
        assert_eq!(
            out.text,
            "      SUBROUTINE s\n\n      INTEGER n\n\n      PARAMETER (n = 3)\n\n      END\n"
        );
        let at: Vec<(u32, u32)> = out.lines.iter().map(|o| (o.file, o.line)).collect();
        assert_eq!(at, [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (0, 2), (0, 3)]);
        assert_eq!(out.files[2], PathBuf::from("/w/inc/b.h"));
        assert_eq!(out.diagnostics.len(), 1);
        assert_eq!((out.diagnostics[0].file, out.diagnostics[0].line), (0, 2));
        // A file including itself stops, with an error.
        let out = expand_includes(
            unprocessed(Path::new("/w/m.f"), "      INCLUDE 'loop.h'\n"),
            &options,
            &files,
        );
        assert!(
            out.diagnostics[0].message.contains("nested"),
            "{:?}",
            out.diagnostics
        );
    }
}
