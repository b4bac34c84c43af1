//! Signature help: inside the argument list of a call or a function
//! reference, the procedure's dummy arguments with their declarations
//! (or an intrinsic's arguments and what it computes), and which one the
//! cursor is at — by position, or by the keyword `name=` being written.
//!
//! Contract: `None` outside an argument list, in a subscript of an array,
//! or for a procedure dfort has no source or table entry for; parameter
//! ranges are byte offsets into the label; never panics on any offset.

use crate::host::Snapshot;
use crate::intrinsic_docs;
use crate::scope;
use dfort_syntax::TextRange;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// Its place in [`Signature::label`].
    pub range: TextRange,
    /// Its declaration (`real(8), intent(in) :: x(n)`).
    pub documentation: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// `name(a, b, c)`.
    pub label: String,
    pub documentation: String,
    pub parameters: Vec<Parameter>,
    /// The parameter the cursor is at.
    pub active: Option<u32>,
}

/// The arguments written so far, split at top-level commas.
fn arguments(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut quote = None;
    let mut start = 0;
    for (i, c) in list.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[') => depth += 1,
            (None, ')' | ']') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out
}

/// The keyword of an argument `name = value` (lower case).
fn keyword_of(arg: &str) -> Option<String> {
    let (k, rest) = arg.split_once('=')?;
    if rest.starts_with(['=', '>']) {
        return None;
    }
    let k = k.trim().to_ascii_lowercase();
    (!k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then_some(k)
}

/// The signature of a procedure: label, parameters, their names.
fn build(name: &str, params: &[(String, String)]) -> (String, Vec<Parameter>) {
    let mut label = format!("{name}(");
    let mut out = Vec::new();
    for (i, (p, doc)) in params.iter().enumerate() {
        if i > 0 {
            label.push_str(", ");
        }
        let start = label.len() as u32;
        label.push_str(p);
        out.push(Parameter {
            range: TextRange::new(start, label.len() as u32),
            documentation: doc.clone(),
        });
    }
    label.push(')');
    (label, out)
}

/// `textDocument/signatureHelp` at document offset `offset`.
pub fn signature_help(snap: &Snapshot, path: &Path, offset: u32) -> Option<Signature> {
    let doc = snap.doc(path)?;
    let place = scope::place(doc, offset)?;
    if place.directive {
        return None;
    }
    let before = format!("{}{}", place.before, place.prefix);
    let (name, at) = scope::open_parenthesis(&before)?;
    let list = &before[at + 1..];
    let unit = snap.unit_at(path, place.range.start)?;
    if unit
        .lookup(&name)
        .is_some_and(|s| !unit.symbol(s).dims.is_empty())
    {
        return None; // a subscript
    }
    let (names, params, documentation): (Vec<String>, Vec<(String, String)>, String) =
        match scope::procedure(snap, unit, &name) {
            Some(p) => {
                let params: Vec<(String, String)> = p
                    .args
                    .iter()
                    .map(|a| {
                        let s = p.symbol(*a);
                        (s.name.clone(), declaration(p, s))
                    })
                    .collect();
                (
                    params.iter().map(|(n, _)| n.clone()).collect(),
                    params,
                    crate::completion::header(snap, p),
                )
            }
            None => {
                let d = intrinsic_docs::lookup(&name)?;
                let params: Vec<(String, String)> = d
                    .params
                    .iter()
                    .map(|p| (p.to_string(), String::new()))
                    .collect();
                (
                    d.params
                        .iter()
                        .map(|p| p.trim_matches(['[', ']']).to_string())
                        .collect(),
                    params,
                    format!("intrinsic: {}", d.summary),
                )
            }
        };
    let (label, parameters) = build(&name, &params);
    let args = arguments(list);
    let current = args.last().copied().unwrap_or("");
    let position = args.len() - 1;
    let active = match keyword_of(current) {
        Some(k) => names.iter().position(|n| *n == k),
        None if args[..position].iter().any(|a| keyword_of(a).is_some()) => {
            // After keyword arguments: the first one not given yet.
            let given: Vec<String> = args[..position]
                .iter()
                .filter_map(|a| keyword_of(a))
                .collect();
            names.iter().position(|n| !given.contains(n))
        }
        None => {
            // A variadic intrinsic (`max(a1, a2, [a3, ...])`) stays on its last.
            let variadic = names.last().is_some_and(|n| n.contains("..."));
            match position < names.len() {
                true => Some(position),
                false if variadic => Some(names.len() - 1),
                false => None,
            }
        }
    };
    Some(Signature {
        label,
        documentation,
        parameters,
        active: active.map(|a| a as u32),
    })
}

/// `real(8), intent(in) :: x(n)` for a dummy argument.
fn declaration(unit: &dfort_ir::Unit, s: &dfort_ir::Symbol) -> String {
    let mut d = dfort_ir::dump::type_name(&s.ty);
    if let Some(i) = s.intent {
        d.push_str(&format!(", intent({})", i.as_str()));
    }
    if s.attrs.optional {
        d.push_str(", optional");
    }
    d.push_str(" :: ");
    d.push_str(&s.name);
    d.push_str(&dfort_ir::dump::dims(unit, s));
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(files: &[(&str, &str)], path: &str, marker: &str) -> Option<Signature> {
        let (snap, off) = scope::snapshot_at(files, path, marker);
        signature_help(&snap, Path::new(path), off)
    }

    #[test]
    fn the_active_parameter_follows_commas_and_keywords_in_both_forms() {
        let free = "subroutine axpy(n, a, x, y)\n  integer, intent(in) :: n\n  real(8), intent(in) :: a, x(n)\n  real(8), intent(inout) :: y(n)\nend\nsubroutine s(v, w)\n  real(8) :: v(3), w(3)\n  call axpy(3, 2d0, v(1:2), &\n            w)\n  call axpy(n=3, y=w, a=1d0, x=v)\n  v(1) = max(v(2), 1d0, v(3))\nend\n";
        let files = [("/w/a.f90", free)];
        let s = help(&files, "/w/a.f90", "call axpy(").unwrap();
        assert_eq!(s.label, "axpy(n, a, x, y)");
        assert_eq!(s.active, Some(0));
        assert_eq!(
            &s.label[s.parameters[2].range.start as usize..s.parameters[2].range.end as usize],
            "x"
        );
        assert_eq!(s.parameters[2].documentation, "real(8), intent(in) :: x(n)");
        let s = help(&files, "/w/a.f90", "v(1:2), &\n            ").unwrap();
        assert_eq!(s.active, Some(3));
        let s = help(&files, "/w/a.f90", "y=w, a=").unwrap();
        assert_eq!(s.active, Some(1), "by keyword");
        let s = help(&files, "/w/a.f90", "call axpy(n=3, y=w, ").unwrap();
        assert_eq!(s.active, Some(1), "the first not given");
        let s = help(&files, "/w/a.f90", "max(v(2), 1d0, ").unwrap();
        assert_eq!(
            (s.label.as_str(), s.active),
            ("max(a1, a2, [a3, ...])", Some(2))
        );
        // In a subscript of an array: nothing.
        assert_eq!(help(&files, "/w/a.f90", "max(v("), None);
        let fixed =
            "      SUBROUTINE S(X)\n      REAL*8 X(2)\n      X(1) = DSQRT(X(2))\n      END\n";
        let s = help(&[("/w/f.f", fixed)], "/w/f.f", "DSQRT(").unwrap();
        assert_eq!((s.label.as_str(), s.active), ("dsqrt(x)", Some(0)));
    }
}
