//! Completion: what may be written at the cursor, from what the statement
//! before it says is wanted there — modules after `use`, a module's
//! entities after `only:`, subroutines after `call`, a derived type's
//! components after `%`, attributes and the dummies still undeclared in
//! a declaration, statement keywords (and variables) at the start of a
//! statement, variables, functions and intrinsics in an expression, and
//! the keywords `name=` of the procedure whose argument list holds the
//! cursor. Resolution adds the documentation: the hover of a variable of
//! the unit (its activity), the declaration of one from elsewhere, a
//! procedure's header and roles, an intrinsic's signature with its
//! derivative rule.
//!
//! Contract: labels follow the case of the name being typed (upper case
//! for `X` or for a fixed-form statement written in capitals); names are
//! kept whose letters appear in order in the typed prefix, starting with
//! its first; nothing is offered in comments, literals or the fixed-form
//! label field; never panics on any offset.

use crate::host::Snapshot;
use crate::intrinsic_docs;
use crate::scope::{self, NameKind, Origin, Place, Visible};
use crate::text::after_if_condition;
use dfort_ir::{Unit, UnitKind};
use dfort_syntax::TextRange;
use std::path::Path;

/// What a completion item names (the client's icon).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Variable,
    Constant,
    Function,
    Subroutine,
    Module,
    Keyword,
    Component,
    /// A keyword argument `name=` of a call.
    Argument,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub label: String,
    pub kind: ItemKind,
    /// One line: the type and where it lives, or the signature.
    pub detail: String,
    /// What orders items: nearer names first.
    pub sort: String,
    /// The text to insert when it is not the label.
    pub insert: Option<String>,
}

/// The items at the cursor and the range the chosen one replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completions {
    pub range: TextRange,
    pub items: Vec<Item>,
}

/// What the statement before the cursor asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Want {
    Modules,
    /// The entities of the named module.
    ModuleEntities(String),
    Subroutines,
    /// Components of the derived-type value named by this `%` chain.
    Components(Vec<String>),
    IntentSpec,
    /// Attributes of a declaration (after `real,`).
    Attributes,
    /// Names being declared: the dummies not yet declared.
    Declared,
    /// At the start of a statement: keywords and variables.
    Statement,
    /// In an expression: variables, functions, intrinsics; in the
    /// argument list of the named procedure, its keywords too.
    Expression(Option<String>),
    /// In a directive naming variables.
    Variables,
}

const TYPES: &[&str] = &[
    "integer",
    "real",
    "double precision",
    "doubleprecision",
    "complex",
    "double complex",
    "logical",
    "character",
    "type(",
    "class(",
];

const ATTRIBUTES: &[&str] = &[
    "allocatable",
    "dimension",
    "external",
    "intent",
    "intrinsic",
    "optional",
    "parameter",
    "pointer",
    "save",
    "target",
];

const STATEMENT_KEYWORDS: &[&str] = &[
    "allocate",
    "backspace",
    "call",
    "case",
    "character",
    "close",
    "common",
    "complex",
    "contains",
    "continue",
    "cycle",
    "data",
    "deallocate",
    "dimension",
    "do",
    "do while",
    "double precision",
    "else",
    "else if",
    "elsewhere",
    "end",
    "end do",
    "end if",
    "end select",
    "end where",
    "equivalence",
    "exit",
    "external",
    "format",
    "function",
    "go to",
    "if",
    "implicit none",
    "include",
    "inquire",
    "integer",
    "interface",
    "intrinsic",
    "logical",
    "module",
    "namelist",
    "nullify",
    "open",
    "parameter",
    "print",
    "program",
    "read",
    "real",
    "return",
    "rewind",
    "save",
    "select case",
    "stop",
    "subroutine",
    "then",
    "type",
    "use",
    "where",
    "write",
];

/// The names of a `%` chain ending `before`: `p(i)%q%` gives `p`, `q`.
fn component_chain(before: &str) -> Option<Vec<String>> {
    let mut rest = before.trim_end().strip_suffix('%')?;
    let mut chain = Vec::new();
    loop {
        rest = rest.trim_end();
        if rest.ends_with(')') {
            // Skip a subscript.
            let mut depth = 0;
            let mut cut = None;
            for (i, c) in rest.char_indices().rev() {
                match c {
                    ')' => depth += 1,
                    '(' => {
                        depth -= 1;
                        if depth == 0 {
                            cut = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = rest[..cut?].trim_end();
        }
        let start = rest
            .bytes()
            .rposition(|b| !(b.is_ascii_alphanumeric() || b == b'_'))
            .map_or(0, |p| p + 1);
        let name = &rest[start..];
        if name.is_empty() {
            return None;
        }
        chain.push(name.to_ascii_lowercase());
        rest = rest[..start].trim_end();
        match rest.strip_suffix('%') {
            Some(r) => rest = r,
            None => break,
        }
    }
    chain.reverse();
    Some(chain)
}

fn want(place: &Place) -> Option<Want> {
    if place.directive {
        return Some(Want::Variables);
    }
    let b = place.before.to_ascii_lowercase();
    let b = b.trim();
    if b.ends_with('%') {
        return component_chain(b).map(Want::Components);
    }
    if let Some(rest) = b.strip_prefix("use") {
        if rest.is_empty() || rest.starts_with([' ', ',', ':']) {
            let after = rest.rsplit_once("::").map_or(rest, |(_, r)| r).trim();
            let after = after.trim_start_matches(',').trim();
            if after.is_empty() || after == "intrinsic" {
                return Some(Want::Modules);
            }
            let module: String = after
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .map(char::from)
                .collect();
            let only = after[module.len()..].trim_start();
            let listing = only
                .strip_prefix(',')
                .map(str::trim_start)
                .and_then(|o| o.strip_prefix("only"))
                .is_some_and(|o| o.trim_start().starts_with(':'));
            return listing.then_some(Want::ModuleEntities(module));
        }
    }
    let words: Vec<&str> = b.split_whitespace().collect();
    if b == "call" || b.ends_with(" call") && after_if_condition(b.trim_end_matches("call").trim())
    {
        return Some(Want::Subroutines);
    }
    if b.ends_with("intent(") || b.ends_with("intent (") {
        return Some(Want::IntentSpec);
    }
    if b.starts_with("external") || b.starts_with("call ") && scope::open_parenthesis(b).is_none() {
        return Some(Want::Subroutines);
    }
    if let Some(t) = TYPES.iter().find(|t| b.starts_with(*t)) {
        let rest = &b[t.len()..];
        let ends_name = !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let typed = ends_name || t.ends_with('(');
        if typed && !b.contains("function") {
            if let Some((_, entities)) = b.split_once("::") {
                // An initialiser (`dp = k|`) or a bound (`x(n|`): an
                // expression.
                let current = entities.rsplit(',').next().unwrap_or("");
                return Some(match scope::open_parenthesis(b) {
                    None if !current.contains('=') => Want::Declared,
                    _ => Want::Expression(None),
                });
            }
            // `real,` or `real(8), dimension(n),`: attributes.
            let spec_end = rest.trim_start();
            let spec_end = spec_end.strip_prefix('*').map_or(spec_end, |r| {
                r.trim_start_matches(|c: char| {
                    c.is_ascii_digit() || c == ' ' || c == '(' || c == ')' || c == '*'
                })
            });
            if spec_end.is_empty() {
                return Some(Want::Declared);
            }
            if b.ends_with(',')
                && scope::open_parenthesis(b).is_none()
                && !spec_end.starts_with(|c: char| c.is_ascii_alphabetic())
            {
                return Some(Want::Attributes);
            }
            if scope::open_parenthesis(b).is_none() {
                return Some(Want::Declared);
            }
        }
    }
    let statement_start = words.is_empty() || after_if_condition(b) || b == "else";
    if statement_start {
        return Some(Want::Statement);
    }
    Some(Want::Expression(scope::open_parenthesis(b).map(|(n, _)| n)))
}

/// Whether `candidate` keeps the letters of `typed` in order, starting
/// with its first (both lower case).
fn matches(candidate: &str, typed: &str) -> bool {
    let mut want = typed.chars();
    let Some(first) = want.next() else {
        return true;
    };
    let mut have = candidate.chars();
    if have.next() != Some(first) {
        return false;
    }
    let mut next = want.next();
    for c in have {
        if Some(c) == next {
            next = want.next();
        }
    }
    next.is_none()
}

fn item_kind(k: NameKind) -> ItemKind {
    match k {
        NameKind::Argument | NameKind::Variable | NameKind::Common => ItemKind::Variable,
        NameKind::Constant => ItemKind::Constant,
        NameKind::Function | NameKind::Procedure => ItemKind::Function,
        NameKind::Subroutine => ItemKind::Subroutine,
        NameKind::Module => ItemKind::Module,
    }
}

/// One line on a visible name: its type and where it lives, or its header.
fn detail(snap: &Snapshot, v: &Visible) -> String {
    match v.origin {
        Origin::Symbol(uid, sid) => {
            let Some(u) = snap.program.units.get(uid) else {
                return String::new();
            };
            let s = u.symbol(sid);
            let ty = dfort_ir::dump::type_name(&s.ty);
            let dims = dfort_ir::dump::dims(u, s);
            let place = match &s.storage {
                dfort_ir::Storage::Dummy(i) => format!("argument {} of {}", i + 1, u.name),
                dfort_ir::Storage::Common { block, .. } if block.is_empty() => {
                    "blank COMMON".to_string()
                }
                dfort_ir::Storage::Common { block, .. } => format!("COMMON /{block}/"),
                dfort_ir::Storage::Result => format!("result of {}", u.name),
                dfort_ir::Storage::UnknownModule { module } => format!("module {module}"),
                dfort_ir::Storage::Procedure => {
                    // A procedure typed here: the one its references
                    // call, when dfort was given it.
                    let graph = &snap.program.call_graph;
                    let called = graph
                        .calls_from
                        .get(uid)
                        .into_iter()
                        .flatten()
                        .find_map(|&i| {
                            let site = graph.sites.get(i)?;
                            match site.callee {
                                dfort_ir::callgraph::Callee::Unit(c) if *site.name == *s.name => {
                                    snap.program.units.get(c)
                                }
                                _ => None,
                            }
                        });
                    return match called {
                        Some(p) => header(snap, p),
                        None => format!("{ty} · external procedure typed in {}", u.name),
                    };
                }
                _ if u.kind == UnitKind::Module => format!("module {}", u.name),
                _ if s.attrs.parameter => format!("constant of {}", u.name),
                _ => format!("local to {}", u.name),
            };
            format!("{ty}{dims} · {place}")
        }
        Origin::Unit(uid) => snap
            .program
            .units
            .get(uid)
            .map(|u| header(snap, u))
            .unwrap_or_default(),
    }
}

/// `subroutine name(a, b) · module m`.
pub(crate) fn header(snap: &Snapshot, u: &Unit) -> String {
    let args: Vec<&str> = u.args.iter().map(|a| u.symbol(*a).name.as_str()).collect();
    let mut h = format!("{} {}", u.kind.as_str(), u.name);
    if u.is_procedure() {
        h.push_str(&format!("({})", args.join(", ")));
    }
    if let Some(p) = u.parent.and_then(|p| snap.program.units.get(p)) {
        h.push_str(&format!(" · {} {}", p.kind.as_str(), p.name));
    }
    h
}

/// The spelling of names as declared, where it mixes cases
/// (`dAHybSigC`): such a name is offered as written.
#[derive(Default)]
struct Spelling<'a> {
    texts: std::collections::HashMap<std::path::PathBuf, Option<&'a str>>,
}

impl<'a> Spelling<'a> {
    fn of(&mut self, snap: &'a Snapshot, v: &Visible) -> Option<String> {
        let span = match v.origin {
            Origin::Symbol(uid, sid) => {
                let s = snap.program.units.get(uid)?.symbol(sid);
                s.declared.then_some(s.span)?
            }
            Origin::Unit(uid) => snap.program.units.get(uid)?.name_span,
        };
        let (path, range) = snap.to_doc(span.file, span.range)?;
        let text = *self
            .texts
            .entry(path.to_path_buf())
            .or_insert_with(|| snap.file_text(path).map(|(t, _)| t));
        let word = text?.get(range.start as usize..)?.get(..v.name.len())?;
        let mixed = word.chars().any(|c| c.is_ascii_uppercase())
            && word.chars().any(|c| c.is_ascii_lowercase());
        (mixed && word.eq_ignore_ascii_case(&v.name)).then(|| word.to_string())
    }
}

/// The case to offer names in: the typed prefix's, else that of the
/// statement before it, else that of the code just above the cursor.
fn upper_case(place: &Place, text: &str) -> bool {
    if place.prefix.chars().any(|c| c.is_ascii_alphabetic()) {
        return !place.prefix.chars().any(|c| c.is_ascii_lowercase());
    }
    let mostly_upper = |t: &str| {
        let upper = t.chars().filter(|c| c.is_ascii_uppercase()).count();
        let lower = t.chars().filter(|c| c.is_ascii_lowercase()).count();
        (upper + lower > 0).then_some(upper > lower)
    };
    if let Some(u) = mostly_upper(&place.before) {
        return u;
    }
    let end = place.range.start as usize;
    let mut start = end.saturating_sub(200);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    mostly_upper(text.get(start..end).unwrap_or("")).unwrap_or(false)
}

/// The names the unit at the cursor sees (computed once per request).
fn visible_at(snap: &Snapshot, unit: Option<&Unit>, place: &Place) -> Vec<Visible> {
    unit.map(|u| scope::visible(snap, u, Some(place.range)))
        .unwrap_or_default()
}

/// Everything that could be written at the cursor in `unit`, which sees
/// `visible`, before the typed prefix filters it (resolution looks items
/// up here).
fn candidates(
    snap: &Snapshot,
    unit: Option<&Unit>,
    place: &Place,
    visible: &[Visible],
) -> Vec<Item> {
    let Some(want) = want(place) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let keyword = |label: &str, sort: &str| Item {
        label: label.to_string(),
        kind: ItemKind::Keyword,
        detail: "keyword".to_string(),
        sort: format!("{sort}{label}"),
        insert: None,
    };
    let names = |out: &mut Vec<Item>, keep: &dyn Fn(&Visible) -> bool| {
        let mut spell = Spelling::default();
        for v in visible.iter().filter(|v| keep(v)) {
            out.push(Item {
                label: spell.of(snap, v).unwrap_or_else(|| v.name.clone()),
                kind: item_kind(v.kind),
                detail: detail(snap, v),
                sort: format!(
                    "{}{}",
                    v.distance + if v.kind.is_procedure() { 2 } else { 0 },
                    v.name
                ),
                insert: None,
            });
        }
    };
    let intrinsics = |out: &mut Vec<Item>, subroutines: bool| {
        for name in intrinsic_docs::names() {
            let Some(doc) = intrinsic_docs::lookup(name) else {
                continue;
            };
            if doc.subroutine == subroutines {
                out.push(Item {
                    label: name.to_string(),
                    kind: if subroutines {
                        ItemKind::Subroutine
                    } else {
                        ItemKind::Function
                    },
                    detail: format!("{} · intrinsic", intrinsic_docs::signature(name, doc)),
                    sort: format!("5{name}"),
                    insert: None,
                });
            }
        }
    };
    match want {
        Want::Modules => {
            for u in snap
                .program
                .all_units()
                .filter(|u| u.kind == UnitKind::Module)
            {
                out.push(Item {
                    label: u.name.clone(),
                    kind: ItemKind::Module,
                    detail: "module".into(),
                    sort: format!("0{}", u.name),
                    insert: None,
                });
            }
            for m in dfort_ir::intrinsic_modules::INTRINSIC_MODULES {
                out.push(Item {
                    label: m.to_string(),
                    kind: ItemKind::Module,
                    detail: "intrinsic module".into(),
                    sort: format!("1{m}"),
                    insert: None,
                });
            }
        }
        Want::ModuleEntities(module) => {
            if let Some(m) = snap
                .program
                .units_named(&module)
                .find(|u| u.kind == UnitKind::Module)
            {
                let entities = scope::visible(snap, m, None);
                for v in entities
                    .into_iter()
                    .filter(|v| v.distance < 2 && v.kind != NameKind::Module && v.name != m.name)
                {
                    out.push(Item {
                        label: v.name.clone(),
                        kind: item_kind(v.kind),
                        detail: detail(snap, &v),
                        sort: format!("0{}", v.name),
                        insert: None,
                    });
                }
            }
        }
        Want::Subroutines => {
            names(&mut out, &|v| {
                matches!(v.kind, NameKind::Subroutine | NameKind::Procedure)
            });
            intrinsics(&mut out, true);
        }
        Want::Components(chain) => out.extend(components(snap, visible, &chain)),
        Want::IntentSpec => {
            for (i, w) in ["in", "out", "inout"].iter().enumerate() {
                out.push(keyword(w, &i.to_string()));
            }
        }
        Want::Attributes => {
            for a in ATTRIBUTES {
                out.push(keyword(a, "0"));
            }
        }
        Want::Declared => {
            if let Some(u) = unit {
                for a in &u.args {
                    let s = u.symbol(*a);
                    if !s.declared {
                        out.push(Item {
                            label: s.name.clone(),
                            kind: ItemKind::Variable,
                            detail: format!("argument of {} not declared yet", u.name),
                            sort: format!("0{}", s.name),
                            insert: None,
                        });
                    }
                }
            }
        }
        Want::Statement => {
            names(&mut out, &|v| {
                !v.kind.is_procedure() && v.kind != NameKind::Module && v.kind != NameKind::Constant
            });
            for k in STATEMENT_KEYWORDS {
                out.push(keyword(k, "4"));
            }
        }
        Want::Variables => {
            names(&mut out, &|v| {
                !v.kind.is_procedure() && v.kind != NameKind::Module && v.distance == 0
            });
        }
        Want::Expression(call) => {
            names(&mut out, &|v| {
                !matches!(v.kind, NameKind::Subroutine | NameKind::Module)
            });
            intrinsics(&mut out, false);
            if let (Some(call), Some(u)) = (call, unit) {
                out.extend(keyword_arguments(snap, u, &call));
            }
        }
    }
    out
}

/// The keywords `name=` of the procedure `call` (its dummies, or an
/// intrinsic's arguments), first in the list.
fn keyword_arguments(snap: &Snapshot, unit: &Unit, call: &str) -> Vec<Item> {
    let array = unit
        .lookup(call)
        .is_some_and(|s| !unit.symbol(s).dims.is_empty());
    if array {
        return Vec::new();
    }
    let dummies: Vec<(String, String)> = match scope::procedure(snap, unit, call) {
        Some(p) => p
            .args
            .iter()
            .map(|a| {
                let s = p.symbol(*a);
                (s.name.clone(), dfort_ir::dump::type_name(&s.ty))
            })
            .collect(),
        None => match intrinsic_docs::lookup(call) {
            Some(doc) => doc
                .params
                .iter()
                .map(|p| p.trim_matches(['[', ']']))
                .filter(|p| !p.contains("..."))
                .map(|p| (p.to_string(), format!("argument of {call}")))
                .collect(),
            None => Vec::new(),
        },
    };
    dummies
        .into_iter()
        .enumerate()
        .map(|(i, (name, ty))| Item {
            label: format!("{name}="),
            kind: ItemKind::Argument,
            detail: ty,
            sort: format!("0{i:03}"),
            insert: Some(format!("{name}=")),
        })
        .collect()
}

/// The components of the derived-type value `chain` names, in a unit
/// that sees `visible`.
fn components(snap: &Snapshot, visible: &[Visible], chain: &[String]) -> Vec<Item> {
    let (first, rest) = match chain.split_first() {
        Some(x) => x,
        None => return Vec::new(),
    };
    let Some(v) = visible.iter().find(|v| v.name == *first) else {
        return Vec::new();
    };
    let Origin::Symbol(uid, sid) = v.origin else {
        return Vec::new();
    };
    let Some(owner) = snap.program.units.get(uid) else {
        return Vec::new();
    };
    let mut ty = owner.symbol(sid).ty.clone();
    let mut scope_unit: &Unit = owner;
    for name in rest {
        let Some((def_unit, def)) = snap.program.type_of(scope_unit, &ty) else {
            return Vec::new();
        };
        let Some(c) = def.component(name) else {
            return Vec::new();
        };
        ty = c.ty.clone();
        if let Some(u) = snap.program.units.get(def_unit) {
            scope_unit = u;
        }
    }
    let Some((_, def)) = snap.program.type_of(scope_unit, &ty) else {
        return Vec::new();
    };
    def.components
        .iter()
        .enumerate()
        .map(|(i, c)| Item {
            label: c.name.clone(),
            kind: ItemKind::Component,
            detail: format!(
                "{}{} · component of type({})",
                dfort_ir::dump::type_name(&c.ty),
                c.dims,
                def.name
            ),
            sort: format!("0{i:03}"),
            insert: None,
        })
        .collect()
}

fn cased(mut item: Item, upper: bool) -> Item {
    let mixed = item.label.chars().any(|c| c.is_ascii_uppercase())
        && item.label.chars().any(|c| c.is_ascii_lowercase());
    if upper && !mixed {
        item.label = item.label.to_ascii_uppercase();
        item.insert = item.insert.map(|i| i.to_ascii_uppercase());
    }
    item
}

/// `textDocument/completion` at document offset `offset`.
pub fn completions(snap: &Snapshot, path: &Path, offset: u32) -> Option<Completions> {
    let doc = snap.doc(path)?;
    if crate::actions::is_generated(&doc.text) {
        return None;
    }
    let place = scope::place(doc, offset)?;
    let typed = place.prefix.to_ascii_lowercase();
    let upper = upper_case(&place, &doc.text);
    let unit = snap.unit_at(path, place.range.start);
    let visible = visible_at(snap, unit, &place);
    let mut items: Vec<Item> = candidates(snap, unit, &place, &visible)
        .into_iter()
        .filter(|i| matches(&i.label.to_ascii_lowercase(), &typed))
        .map(|i| {
            // Names that begin with what was typed before the others.
            let begins = i.label.to_ascii_lowercase().starts_with(&typed);
            let mut i = cased(i, upper);
            i.sort = format!("{}{}", if begins { 0 } else { 1 }, i.sort);
            i
        })
        .collect();
    items.sort_by(|a, b| a.sort.cmp(&b.sort));
    items.dedup_by(|a, b| a.label == b.label);
    Some(Completions {
        range: place.range,
        items,
    })
}

/// `completionItem/resolve`: the documentation of the item `label`
/// offered at `offset` (Markdown).
pub fn documentation(snap: &Snapshot, path: &Path, offset: u32, label: &str) -> Option<String> {
    let doc = snap.doc(path)?;
    let place = scope::place(doc, offset)?;
    let name = label.trim_end_matches('=').to_ascii_lowercase();
    let unit = snap.unit_at(path, place.range.start);
    let visible = visible_at(snap, unit, &place);
    let item = candidates(snap, unit, &place, &visible)
        .into_iter()
        .find(|i| i.label.trim_end_matches('=').eq_ignore_ascii_case(&name))?;
    match item.kind {
        ItemKind::Keyword => None,
        ItemKind::Component | ItemKind::Argument => Some(item.detail),
        _ => {
            let v = visible.into_iter().find(|v| v.name == name);
            match (v, unit) {
                (Some(v), Some(u)) => Some(match v.origin {
                    Origin::Symbol(uid, sid) if uid == u.id => {
                        crate::hover::variable(snap, path, u, sid, place.range)?
                    }
                    Origin::Symbol(uid, sid) => {
                        let owner = snap.program.units.get(uid)?;
                        crate::hover::summary(snap, owner, owner.symbol(sid))
                    }
                    Origin::Unit(uid) => {
                        crate::hover::procedure(snap, snap.program.units.get(uid)?)
                    }
                }),
                _ => match snap
                    .program
                    .units_named(&name)
                    .find(|u| u.kind == UnitKind::Module)
                {
                    Some(m) => Some(crate::hover::procedure(snap, m)),
                    None => intrinsic_docs::markdown(&name),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::snapshot_at as at;

    fn labels(snap: &Snapshot, path: &str, off: u32) -> Vec<String> {
        completions(snap, Path::new(path), off)
            .map(|c| c.items.into_iter().map(|i| i.label).collect())
            .unwrap_or_default()
    }

    const MODULE: &str = "module state\n  real :: temp, salt\n  type point\n    real :: x, y\n  end type\n  type(point) :: origin\ncontains\n  subroutine step(dt)\n    real :: dt\n  end subroutine\nend module\n";

    #[test]
    fn what_each_place_asks_for() {
        let u = "subroutine s(a, nx)\n  use state, only: t => temp, origin, step\n  real :: a\n  integer ncount\n  ncount = 1\n  call st\n  a = sq\n  a = origin%\n  a = t + n\nend\n";
        let files = [("/w/m.f90", MODULE), ("/w/u.f90", u)];
        let (snap, off) = at(&files, "/w/u.f90", "call st");
        let got = labels(&snap, "/w/u.f90", off);
        assert_eq!(got.first().map(String::as_str), Some("step"), "{got:?}");
        assert!(
            !got.contains(&"sqrt".to_string()),
            "no functions after CALL"
        );
        let (snap, off) = at(&files, "/w/u.f90", "a = sq");
        assert!(labels(&snap, "/w/u.f90", off).contains(&"sqrt".to_string()));
        let (snap, off) = at(&files, "/w/u.f90", "origin%");
        assert_eq!(labels(&snap, "/w/u.f90", off), ["x", "y"]);
        let (snap, off) = at(&files, "/w/u.f90", "a = t + n");
        let got = labels(&snap, "/w/u.f90", off);
        // Locals and dummies before intrinsics (nint), no renamed-away name.
        assert_eq!(&got[..2], ["ncount", "nx"], "{got:?}");
        assert!(got.contains(&"nint".to_string()));
        let (snap, off) = at(&files, "/w/u.f90", "use state, only: ");
        let got = labels(&snap, "/w/u.f90", off);
        assert!(
            got.contains(&"temp".into()) && got.contains(&"step".into()),
            "{got:?}"
        );
        let (snap, off) = at(&files, "/w/u.f90", "use ");
        assert!(labels(&snap, "/w/u.f90", off).contains(&"state".to_string()));
        // An initialiser is an expression.
        let k = "module k\n  integer, parameter :: dp = ki\nend module\n";
        let (snap, off) = at(&[("/w/k.f90", k)], "/w/k.f90", "= ki");
        assert_eq!(
            labels(&snap, "/w/k.f90", off).first().map(String::as_str),
            Some("kind")
        );
        // Names beginning with the prefix come before the others.
        let b = "subroutine b(parmax, prm)\n  real :: prm(2)\n  prm(1) = pr\nend\n";
        let (snap, off) = at(&[("/w/b.f90", b)], "/w/b.f90", "= pr");
        let got = labels(&snap, "/w/b.f90", off);
        let place = |n: &str| got.iter().position(|l| l == n);
        assert_eq!(place("prm"), Some(0), "{got:?}");
        assert!(place("parmax") > place("product"), "{got:?}");
    }

    #[test]
    fn fixed_form_in_capitals_gets_capitals_and_keyword_arguments() {
        let f = "      SUBROUTINE S(X, N)\n      REAL*8 X(N)\n      COMMON /BLK/ ALPHA\n      X(1) = AL\n      CALL STEP2(DT=X(1))\n      END\n      SUBROUTINE STEP2(DT)\n      REAL*8 DT\n      END\n";
        let files = [("/w/m.f90", MODULE), ("/w/f.f", f)];
        let (snap, off) = at(&files, "/w/f.f", "= AL");
        let got = labels(&snap, "/w/f.f", off);
        assert_eq!(got.first().map(String::as_str), Some("ALPHA"), "{got:?}");
        assert!(got.contains(&"ALOG".to_string()), "{got:?}");
        let (snap, off) = at(&files, "/w/f.f", "CALL STEP2(");
        assert_eq!(
            labels(&snap, "/w/f.f", off).first().map(String::as_str),
            Some("DT=")
        );
        // Nothing in the label field or a comment.
        let c = "      SUBROUTINE S\nC     a comment\n      END\n";
        let (snap, off) = at(&[("/w/c.f", c)], "/w/c.f", "C     a");
        assert!(completions(&snap, Path::new("/w/c.f"), off).is_none());
        let (snap, off) = at(&[("/w/c.f", c)], "/w/c.f", "\n   ");
        assert!(completions(&snap, Path::new("/w/c.f"), off).is_none());
    }

    #[test]
    fn a_typed_external_function_is_described_as_the_function_it_calls() {
        let u = "subroutine s(j)\n  integer :: j\n  logical :: check, cother\n  do while (check(j) .and. cother(j))\n    j = c\n  end do\nend\nlogical function check(j)\n  integer :: j\n  check = j >= 0\nend function\n";
        let (snap, off) = at(&[("/w/u.f90", u)], "/w/u.f90", "j = c");
        let items = completions(&snap, Path::new("/w/u.f90"), off)
            .unwrap()
            .items;
        let detail = |name: &str| {
            items
                .iter()
                .find(|i| i.label == name)
                .map(|i| i.detail.clone())
                .unwrap_or_else(|| panic!("no {name} in {items:?}"))
        };
        assert_eq!(detail("check"), "function check(j)");
        assert_eq!(
            detail("cother"),
            "logical(4) · external procedure typed in s"
        );
    }

    #[test]
    fn resolution_documents_intrinsics_with_their_derivative() {
        let u = "subroutine s(a)\n  real :: a\n  a = sq\nend\n";
        let (snap, off) = at(&[("/w/u.f90", u)], "/w/u.f90", "a = sq");
        let md = documentation(&snap, Path::new("/w/u.f90"), off, "sqrt").unwrap();
        assert!(md.contains("∂/∂x"), "{md}");
        let md = documentation(&snap, Path::new("/w/u.f90"), off, "a").unwrap();
        assert!(md.contains("argument 1 of `s`"), "{md}");
    }
}
