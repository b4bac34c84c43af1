//! The source-form options every command that reads Fortran files takes
//! (`--fixed`, `--free`, `--fixed-line-length`; the C preprocessor's
//! `--cpp`, `--no-cpp`, `-I`, `-D`), and their conversion to the workspace
//! loader's options.

use clap::Args;
use dfort_syntax::FixedOptions;

#[derive(Args, Clone)]
pub struct FormArgs {
    /// Treat every file as fixed form (default: by extension, .f .for .f77 .F are fixed).
    #[arg(long, conflicts_with = "free")]
    fixed: bool,
    /// Treat every file as free form.
    #[arg(long)]
    free: bool,
    /// Fixed-form line length: 72 (default, like compilers), 132, or none.
    #[arg(long, default_value = "72", value_parser = parse_line_length)]
    fixed_line_length: LineLength,
    /// Run the C preprocessor on every file (default: on `.F`, `.F90`,
    /// `.F95`, `.F03`, `.F08`, `.FOR`, `.fpp` and `.FPP` files, as gfortran
    /// does).
    #[arg(long, conflicts_with = "no_cpp")]
    cpp: bool,
    /// Run the C preprocessor on no file.
    #[arg(long)]
    no_cpp: bool,
    #[command(flatten)]
    pub pp: crate::preprocess::CppArgs,
}

#[derive(Clone, Copy)]
struct LineLength(Option<usize>);

fn parse_line_length(s: &str) -> Result<LineLength, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(LineLength(None));
    }
    match s.parse::<usize>() {
        Ok(n) if n >= 7 => Ok(LineLength(Some(n))),
        _ => Err(format!(
            "expected a column number of at least 7, or `none`; got `{s}`"
        )),
    }
}

impl Default for FormArgs {
    /// By extension, fixed form cut at column 72.
    fn default() -> Self {
        FormArgs {
            fixed: false,
            free: false,
            fixed_line_length: LineLength(Some(72)),
            cpp: false,
            no_cpp: false,
            pp: crate::preprocess::CppArgs::default(),
        }
    }
}

impl FormArgs {
    /// How fixed-form lines are read.
    pub fn fixed_options(&self) -> FixedOptions {
        FixedOptions {
            line_length: self.fixed_line_length.0,
        }
    }

    /// The form every file is read in, when `--fixed` or `--free` says.
    pub fn forced_form(&self) -> Option<dfort_syntax::SourceForm> {
        if self.fixed {
            Some(dfort_syntax::SourceForm::Fixed(self.fixed_options()))
        } else if self.free {
            Some(dfort_syntax::SourceForm::Free)
        } else {
            None
        }
    }

    /// The preprocessor's settings: which files, `-I`, `-D`.
    pub fn cpp_config(&self) -> dfort_ide::preprocessing::CppConfig {
        use dfort_ide::preprocessing::CppConfig;
        CppConfig {
            forced: match (self.cpp, self.no_cpp) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            include: self.pp.include.clone(),
            define: self
                .pp
                .define
                .iter()
                .map(|d| CppConfig::parse_define(d))
                .collect(),
        }
    }

    /// The source form of `path` under these options.
    pub fn form_of(&self, path: &std::path::Path) -> dfort_syntax::SourceForm {
        self.forced_form()
            .unwrap_or_else(|| dfort_syntax::source_form::form_for_path(path, self.fixed_options()))
    }
}
