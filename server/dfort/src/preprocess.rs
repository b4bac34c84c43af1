//! `dfort preprocess`: a file through dfort's own C preprocessor
//! ([`dfort_syntax::cpp`]), printed as `gfortran -cpp -E` prints it: the
//! text, with `# LINE "FILE"` markers where the output moves to another
//! file or skips lines, so that a compiler (and a reader) knows where each
//! line comes from. Directive problems are printed as
//! `file:line: severity: message` on standard error; exit 1 on errors.

use crate::FormArgs;
use dfort_syntax::cpp::{preprocess, CppSeverity, Preprocessed};
use dfort_syntax::SourceForm;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `-I DIR` and `-D NAME[=VALUE]`, as compilers take them.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CppArgs {
    /// Directory searched for `#include` files after the including file's
    /// own (repeatable, in order).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Macro defined before the file is read: NAME (as NAME=1) or
    /// NAME=VALUE (repeatable).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub define: Vec<String>,
}

#[derive(clap::Args)]
pub struct PreprocessArgs {
    file: PathBuf,
    #[command(flatten)]
    form: FormArgs,
}

pub fn run(args: PreprocessArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", args.file.display());
            return ExitCode::from(1);
        }
    };
    let fixed = matches!(args.form.form_of(&args.file), SourceForm::Fixed(_));
    let options = args.form.cpp_config().options(fixed);
    let out = preprocess(&args.file, &text, &options, &read_file);
    print!("{}", with_line_markers(&out));
    let errors = report(&out);
    if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints the preprocessor's problems as `file:line: severity: message`
/// and returns how many are errors.
pub fn report(out: &Preprocessed) -> usize {
    let mut errors = 0;
    for d in &out.diagnostics {
        let severity = match d.severity {
            CppSeverity::Error => {
                errors += 1;
                "error"
            }
            CppSeverity::Warning => "warning",
        };
        eprintln!(
            "{}:{}: {severity}: {}",
            out.files[d.file as usize].display(),
            d.line + 1,
            d.message
        );
    }
    errors
}

/// Reads an included file (`None` when it is no readable file).
pub fn read_file(path: &Path) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The output text with a `# N "file"` marker before each line that does
/// not follow the previous one in the same file.
pub fn with_line_markers(out: &Preprocessed) -> String {
    let mut s = String::with_capacity(out.text.len() + 64);
    let mut previous: Option<(String, u32)> = None;
    for (text, origin) in out.text.lines().zip(&out.lines) {
        let (name, line) = out.presumed(origin);
        let follows = previous
            .as_ref()
            .is_some_and(|(f, l)| *f == name && l + 1 == line);
        if !follows {
            s.push_str(&format!("# {line} \"{name}\"\n"));
        }
        s.push_str(text);
        s.push('\n');
        previous = Some((name, line));
    }
    s
}
