//! `dfort rules [CODE]`: the registry of diagnostic rules
//! (`dfort_syntax::rules`) for people — every rule's code, severity and
//! summary, or one rule's documentation — and the page `docs/rules.md`,
//! generated from the same registry (`dfort rules --markdown`; a test
//! fails when it is out of date, and
//! `DFORT_UPDATE_DOCS=1 cargo test -p dfort --lib rules` rewrites it).

use clap::Args;
use dfort_syntax::rules::{rule, Group, Rule, RULES};
use std::process::ExitCode;

#[derive(Args)]
pub struct RulesArgs {
    /// Print this rule's documentation (e.g. `no-source`) instead of the list.
    code: Option<String>,
    /// Print every rule's documentation as Markdown (the page docs/rules.md).
    #[arg(long, conflicts_with = "code")]
    markdown: bool,
}

pub fn run(args: RulesArgs) -> ExitCode {
    if args.markdown {
        print!("{}", markdown());
        return ExitCode::SUCCESS;
    }
    match args.code {
        None => {
            print!("{}", list());
            ExitCode::SUCCESS
        }
        Some(code) => match rule(&code.to_ascii_lowercase()) {
            Some(r) => {
                print!("{}", explain(r));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("error: no rule `{code}`; `dfort rules` lists them all");
                ExitCode::from(1)
            }
        },
    }
}

fn in_group(g: Group) -> impl Iterator<Item = &'static Rule> {
    RULES.iter().copied().filter(move |r| r.group == g)
}

/// Every rule by group: code, severity, summary.
fn list() -> String {
    let width = RULES.iter().map(|r| r.code.len()).max().unwrap_or(0);
    let mut out = String::new();
    for g in Group::ALL {
        out.push_str(&format!("{}:\n", g.title()));
        for r in in_group(g) {
            out.push_str(&format!(
                "  {:width$}  {:7}  {}\n",
                r.code,
                r.severity.as_str(),
                r.summary
            ));
        }
        out.push('\n');
    }
    out.push_str("`dfort rules CODE` explains one.\n");
    out
}

/// One rule's documentation, as text for a terminal.
fn explain(r: &Rule) -> String {
    let mut out = format!(
        "{} ({}, {})\n\n{}.\n",
        r.code,
        r.severity.as_str(),
        r.group.title().to_lowercase(),
        capitalised(r.summary),
    );
    for paragraph in r.doc.split("\n\n") {
        out.push('\n');
        out.push_str(&wrap(paragraph, 79));
    }
    if let Some(e) = r.example {
        out.push_str("\nExample:\n\n");
        for line in e.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

/// `text` cut into lines of at most `width` characters at spaces (a
/// longer word stays whole), each ended by a newline.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The page `docs/rules.md`.
fn markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from server/syntax/src/rules.rs by \
         `DFORT_UPDATE_DOCS=1 cargo test -p dfort --lib rules`; do not edit. -->\n\n\
         # dfort's diagnostic rules\n\n\
         Every diagnostic dfort reports, and every refusal of its generators, belongs to one \
         of these rules. The code is printed after the message (`dfort check`: \
         `file:line:col: severity: message [code]`) and sent to the editor with each \
         diagnostic. `dfort rules` lists them; `dfort rules CODE` prints one rule's \
         documentation. Severity `note` is shown as information in the editor.\n\n",
    );
    for g in Group::ALL {
        out.push_str(&format!("- [{}](#{})\n", g.title(), anchor(g.title())));
    }
    for g in Group::ALL {
        out.push_str(&format!("\n## {}\n\n{}\n\n", g.title(), g.about()));
        out.push_str("| Code | Severity | Summary |\n|---|---|---|\n");
        for r in in_group(g) {
            out.push_str(&format!(
                "| [`{}`](#{}) | {} | {} |\n",
                r.code,
                r.code,
                r.severity.as_str(),
                r.summary
            ));
        }
        for r in in_group(g) {
            out.push_str(&format!(
                "\n### {}\n\n*{}.* {}.\n\n{}\n",
                r.code,
                capitalised(r.severity.as_str()),
                capitalised(r.summary),
                r.doc
            ));
            if let Some(e) = r.example {
                out.push_str(&format!("\n```fortran\n{e}```\n"));
            }
        }
    }
    out
}

/// GitHub's anchor for a heading.
fn anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn page() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/rules.md")
    }

    /// The page is the registry's: regenerate it with
    /// `DFORT_UPDATE_DOCS=1 cargo test -p dfort --lib rules`.
    #[test]
    fn docs_rules_md_is_up_to_date() {
        let want = markdown();
        if std::env::var_os("DFORT_UPDATE_DOCS").is_some() {
            std::fs::write(page(), &want).expect("write docs/rules.md");
        }
        let have = std::fs::read_to_string(page()).unwrap_or_default();
        assert!(
            have == want,
            "docs/rules.md is out of date: run `DFORT_UPDATE_DOCS=1 cargo test -p dfort --lib rules` and review the diff"
        );
    }

    #[test]
    fn the_list_and_the_page_hold_every_rule() {
        let list = list();
        let page = markdown();
        for r in RULES {
            let line = format!("{:7}  {}\n", r.severity.as_str(), r.summary);
            assert!(
                list.lines().any(
                    |l| l.trim_start().starts_with(r.code) && format!("{l}\n").ends_with(&line)
                ),
                "`{}` is not listed:\n{list}",
                r.code
            );
            assert!(page.contains(&format!("\n### {}\n", r.code)), "{}", r.code);
            assert!(page.contains(r.doc), "{}", r.code);
        }
    }

    #[test]
    fn a_rule_is_explained_with_its_documentation_and_example() {
        let r = rule("no-source").expect("no-source is registered");
        let text = explain(r);
        assert!(
            text.starts_with("no-source (warning, differentiability)\n"),
            "{text}"
        );
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let body = text.split("\nExample:\n").next().unwrap_or_default();
        assert!(words(body).ends_with(&words(r.doc)), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 79), "{text}");
        assert!(text.contains("\n    external :: scale\n"), "{text}");
    }

    #[test]
    fn paragraphs_are_wrapped_at_spaces() {
        assert_eq!(wrap("a bb ccc dddd", 6), "a bb\nccc\ndddd\n");
        assert_eq!(wrap("averylongword x", 4), "averylongword\nx\n");
        assert_eq!(wrap("", 10), "");
    }

    #[test]
    fn headings_get_github_anchors() {
        assert_eq!(anchor("Front end"), "front-end");
        assert_eq!(anchor("Generator refusals"), "generator-refusals");
    }
}
