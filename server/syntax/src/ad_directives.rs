//! AD directives written in comments, dfort's own and other tools': what
//! each one says and whether dfort reads it.
//!
//! * `!$ad independent(x)` / `!$ad dependent(y)`: dfort's roles.
//! * OpenAD's `c$openad INDEPENDENT(x)` / `!$openad DEPENDENT(y)`: read as
//!   the same roles; its other directives (`XXX Template ...`) are ignored.
//! * `!$ad binomial-ckp(nsnap)` before a counted DO loop, or Tapenade's
//!   `$AD BINOMIAL-CKP nsteps nsnap first`: the loop's adjoint is
//!   checkpointed with a binomial schedule of `nsnap` snapshots
//!   ([`BinomialCkp`]; the analyses find the loop it marks).
//! * Tapenade's other `$AD` directives (`NOCHECKPOINT`, `II-LOOP`,
//!   `FP-LOOP`, ...) share the `!$ad` prefix: dfort has none of the
//!   features they steer, so each is ignored with a warning that says so.
//! * TAF's `CADJ ...` (fixed form) and `!$TAF ...` lines steer TAF's own
//!   storing and are ignored; no diagnostic, only a hover.
//!
//! Fixed-form comment lines reach the parser with `!` in column 1, so
//! both `c$openad` and `!$openad` spell the same directive.

/// The tool a directive is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Dfort,
    OpenAd,
    Tapenade,
    Taf,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Dfort => "dfort",
            Tool::OpenAd => "OpenAD",
            Tool::Tapenade => "Tapenade",
            Tool::Taf => "TAF",
        }
    }
}

/// One directive comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdDirective {
    pub tool: Tool,
    /// Lower case: `independent`, `nocheckpoint`, `store`, ...
    pub name: String,
    /// Lower-case arguments (inside the parentheses, or the words after
    /// the name).
    pub args: Vec<String>,
    /// How it is written, up to its name: `$AD NOCHECKPOINT`, `CADJ STORE`.
    pub spelled: String,
}

/// What dfort does with a directive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reading {
    /// `independent` or `dependent`: the unit's roles.
    Role,
    /// Ignored, with a diagnostic saying why.
    Ignored(String),
    /// Ignored silently (TAF's storing directives): the hover says why.
    Silent(String),
    /// `binomial-ckp`: binomial checkpointing of the DO loop that follows.
    Checkpoint,
}

/// What a `binomial-ckp` directive asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinomialCkp {
    /// How many snapshots the schedule may hold at once (the loop's
    /// entry state counts as one).
    pub snapshots: u32,
}

impl BinomialCkp {
    /// The request of a `binomial-ckp` directive's arguments: dfort's one
    /// number (`!$ad binomial-ckp(20)`) or Tapenade's three (`$AD
    /// BINOMIAL-CKP 100 20 1`: steps, snapshots, first step), or why
    /// they are not one.
    pub fn from_args(args: &[String]) -> Result<BinomialCkp, String> {
        let snaps = match args {
            [n] => n,
            [_, n, _] => n,
            _ => {
                return Err(format!(
                    "`binomial-ckp` takes the number of snapshots, `!$ad binomial-ckp(20)` \
                     (or Tapenade's `$AD BINOMIAL-CKP steps snapshots first`), not `{}`",
                    args.join(" ")
                ))
            }
        };
        match snaps.parse::<u32>() {
            Ok(n) if (1..=10_000).contains(&n) => Ok(BinomialCkp { snapshots: n }),
            _ => Err(format!(
                "the number of snapshots of `binomial-ckp` must be an integer from 1 to 10000, not `{snaps}`"
            )),
        }
    }
}

/// The directive in a comment (`!...`, or with `fixed_form`, a comment
/// line starting with `c`, `C` or `*` in column 1), if it is one.
pub fn parse(comment: &str, fixed_form: bool) -> Option<AdDirective> {
    let t = if fixed_form {
        comment
    } else {
        comment.trim_start()
    };
    let mut chars = t.chars();
    let lead = chars.next()?;
    if !(lead == '!' || fixed_form && matches!(lead, 'c' | 'C' | '*')) {
        return None;
    }
    let rest = chars.as_str();
    let lower = rest.to_ascii_lowercase();
    let (tool, prefix) = [
        (Tool::Dfort, "$ad"),
        (Tool::OpenAd, "$openad"),
        (Tool::Taf, "$taf"),
        (Tool::Taf, "adj"),
    ]
    .into_iter()
    .find(|(_, p)| lower.starts_with(p) && lower[p.len()..].starts_with([' ', '\t']))?;
    let body = lower[prefix.len()..].trim();
    let (name, args, parenthesised) = match body.find(['(', ' ', '\t']) {
        Some(p) if body.as_bytes()[p] == b'(' => {
            let inner = body[p + 1..].trim_end();
            (
                body[..p].trim(),
                inner.strip_suffix(')').unwrap_or(inner),
                true,
            )
        }
        Some(p) => (&body[..p], &body[p..], false),
        None => (body, "", false),
    };
    if name.is_empty() {
        return None;
    }
    let args = args
        .split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(String::from)
        .collect();
    let tool = match (tool, name) {
        (Tool::Dfort, "independent" | "dependent") => Tool::Dfort,
        // dfort's own spelling takes its argument in parentheses,
        // Tapenade's `$AD BINOMIAL-CKP steps snapshots first` does not.
        (Tool::Dfort, "binomial-ckp") if parenthesised => Tool::Dfort,
        (Tool::Dfort, n) if TAPENADE.iter().any(|(t, _)| *t == n) => Tool::Tapenade,
        (t, _) => t,
    };
    let written_prefix = &rest[..prefix.len()];
    let written_name = rest[prefix.len()..]
        .trim_start()
        .get(..name.len())
        .unwrap_or(name);
    let spelled = match tool {
        Tool::Taf if prefix == "adj" => format!("{lead}{written_prefix} {written_name}"),
        _ => format!("{written_prefix} {written_name}"),
    };
    Some(AdDirective {
        tool,
        name: name.to_string(),
        args,
        spelled,
    })
}

/// Tapenade's directives and why dfort does without them.
const TAPENADE: &[(&str, &str)] = &[
    (
        "nocheckpoint",
        "dfort's adjoint of a call always saves what the call needs (its snapshot) and has no mode without it",
    ),
    (
        "ii-loop",
        "dfort reverses a loop of independent iterations as any other loop (correct, not specialised)",
    ),
    (
        "binomial-ckp",
        "binomial checkpointing of the DO loop that follows",
    ),
    (
        "fp-loop",
        "dfort has no fixed-point adjoint: the loop is reversed iteration by iteration",
    ),
    (
        "checkpoint-start",
        "dfort places no checkpoints where the user asks",
    ),
    (
        "checkpoint-end",
        "dfort places no checkpoints where the user asks",
    ),
    (
        "do-not-diff",
        "dfort differentiates every statement that needs it",
    ),
    (
        "end-do-not-diff",
        "dfort differentiates every statement that needs it",
    ),
    (
        "label",
        "dfort does not use Tapenade's labels",
    ),
];

impl AdDirective {
    pub fn reading(&self) -> Reading {
        let roles = matches!(self.name.as_str(), "independent" | "dependent");
        if self.name == "binomial-ckp" && matches!(self.tool, Tool::Dfort | Tool::Tapenade) {
            return Reading::Checkpoint;
        }
        match self.tool {
            Tool::Dfort | Tool::OpenAd if roles => Reading::Role,
            Tool::Tapenade => {
                let why = TAPENADE
                    .iter()
                    .find(|(n, _)| *n == self.name)
                    .map_or("dfort does not implement it", |(_, w)| w);
                Reading::Ignored(format!(
                    "Tapenade's directive `{}` is ignored: {why}",
                    self.spelled
                ))
            }
            Tool::OpenAd => Reading::Ignored(format!(
                "OpenAD's directive `{}` is ignored: dfort reads only `INDEPENDENT(...)` and `DEPENDENT(...)` from OpenAD",
                self.spelled
            )),
            Tool::Dfort => Reading::Ignored(format!(
                "unknown directive `{}` is ignored: dfort reads `!$ad independent(...)` and `!$ad dependent(...)`",
                self.spelled
            )),
            Tool::Taf => Reading::Silent(format!(
                "TAF directive `{}`: it tells TAF what to store or how to checkpoint. dfort \
                 ignores it: its own analyses (TBR, address recovery) decide what the adjoint \
                 records; hover a variable to see what is saved and why.",
                self.spelled
            )),
        }
    }

    /// A short text for a hover on the directive's line.
    pub fn hover(&self) -> String {
        match self.reading() {
            Reading::Role => match self.tool {
                Tool::OpenAd => format!(
                    "OpenAD directive `{}`: read as `!$ad {}({})`.",
                    self.spelled,
                    self.name,
                    self.args.join(", ")
                ),
                _ => format!(
                    "dfort directive: the {} variables of this unit are {}.",
                    self.name,
                    self.args
                        .iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            Reading::Checkpoint => match BinomialCkp::from_args(&self.args) {
                Ok(b) => format!(
                    "`{}`: the adjoint of the DO loop that follows runs a binomial \
                     (Revolve) schedule with {} snapshots: the forward sweep runs the loop \
                     without recording it, and the reverse sweep runs its steps again from \
                     snapshots of the loop-carried state, recording one step at a time.",
                    self.spelled, b.snapshots
                ),
                Err(why) => why,
            },
            Reading::Ignored(why) | Reading::Silent(why) => why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_free(c: &str) -> Option<AdDirective> {
        parse(c, false)
    }

    fn parse_fixed(c: &str) -> Option<AdDirective> {
        parse(c, true)
    }

    #[test]
    fn roles_from_dfort_and_openad() {
        let d = parse_free("!$ad independent(x, prm)").unwrap();
        assert_eq!((d.tool, d.name.as_str()), (Tool::Dfort, "independent"));
        assert_eq!(d.args, ["x", "prm"]);
        assert_eq!(d.reading(), Reading::Role);
        let o = parse_free("!$openad INDEPENDENT(X)").unwrap();
        assert_eq!((o.tool, o.name.as_str()), (Tool::OpenAd, "independent"));
        assert_eq!(o.args, ["x"]);
        assert_eq!(o.reading(), Reading::Role);
        let o = parse_fixed("c$openad DEPENDENT(f)").unwrap();
        assert_eq!((o.tool, o.name.as_str()), (Tool::OpenAd, "dependent"));
        let t = parse_free("!$openad XXX Template ad_template.f").unwrap();
        assert!(
            matches!(t.reading(), Reading::Ignored(ref m) if m.starts_with("OpenAD's directive `$openad XXX` is ignored")),
            "{:?}",
            t.reading()
        );
    }

    #[test]
    fn tapenade_directives_are_ignored_with_the_reason() {
        let d = parse_free("!$AD NOCHECKPOINT").unwrap();
        assert_eq!(d.tool, Tool::Tapenade);
        assert!(
            matches!(d.reading(), Reading::Ignored(ref m) if m.starts_with("Tapenade's directive `$AD NOCHECKPOINT` is ignored: ")),
            "{:?}",
            d.reading()
        );
        let b = parse_fixed("C$AD BINOMIAL-CKP 100 5 1").unwrap();
        assert_eq!((b.tool, b.name.as_str()), (Tool::Tapenade, "binomial-ckp"));
        assert_eq!(b.args, ["100", "5", "1"]);
        assert_eq!(b.reading(), Reading::Checkpoint);
        assert_eq!(
            BinomialCkp::from_args(&b.args),
            Ok(BinomialCkp { snapshots: 5 })
        );
        let d = parse_free("!$ad binomial-ckp(20)").unwrap();
        assert_eq!(d.tool, Tool::Dfort);
        assert_eq!(d.reading(), Reading::Checkpoint);
        assert_eq!(
            BinomialCkp::from_args(&d.args),
            Ok(BinomialCkp { snapshots: 20 })
        );
        assert!(BinomialCkp::from_args(&["0".into()]).is_err());
        assert!(BinomialCkp::from_args(&["a".into(), "b".into()]).is_err());
        let u = parse_free("!$ad frobnicate").unwrap();
        assert!(
            matches!(u.reading(), Reading::Ignored(ref m) if m.starts_with("unknown directive `$ad frobnicate`"))
        );
    }

    #[test]
    fn taf_lines_are_silent() {
        let d = parse_fixed("CADJ STORE theta = comlev1, key = ikey").unwrap();
        assert_eq!((d.tool, d.name.as_str()), (Tool::Taf, "store"));
        assert_eq!(d.spelled, "CADJ STORE");
        assert!(matches!(d.reading(), Reading::Silent(_)));
        let f = parse_free("!$TAF INIT tape1 = 'tape1'").unwrap();
        assert_eq!((f.tool, f.name.as_str()), (Tool::Taf, "init"));
        assert_eq!(f.spelled, "$TAF INIT");
    }

    #[test]
    fn ordinary_comments_are_not_directives() {
        assert_eq!(parse("cadj store x", false), None, "free form: code");
        for c in [
            "! $ad x",
            "!$adx",
            "c adjust the flux",
            "CADJUST",
            "! plain",
            "x = 1",
            "!$omp parallel",
            "!$ad ",
        ] {
            assert_eq!(parse(c, false), None, "{c}");
            assert_eq!(parse(c, true), None, "{c}");
        }
    }
}
