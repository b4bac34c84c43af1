//! Lowering of unit headers and specification statements: types and kinds,
//! attributes, array bounds, PARAMETER, IMPLICIT, COMMON, EQUIVALENCE,
//! DATA, USE, EXTERNAL/INTRINSIC, interface blocks.

use super::{children, field, fields, label_value, named_children, UnitLowerer};
use crate::ir::*;
use dfort_syntax::flat::FNode;
use dfort_syntax::rules::UNSUPPORTED;

impl<'f, 'a> UnitLowerer<'f, 'a> {
    pub(crate) fn header(&mut self, n: FNode<'a>) {
        let name_node =
            field(n, "name").or_else(|| named_children(n).into_iter().find(|c| c.kind() == "name"));
        if let Some(name) = name_node {
            self.unit.name = self.lname(name);
            self.unit.name_span = self.span(name);
        }
        // The prefixes (a procedure named `pure` is not one).
        for c in children(n)
            .into_iter()
            .filter(|c| Some(c.range()) != name_node.map(|m| m.range()))
        {
            match self.text(c).to_ascii_lowercase().as_str() {
                "recursive" => self.unit.recursive = true,
                "elemental" => self.unit.elemental = true,
                "pure" => self.unit.pure = true,
                _ => {}
            }
        }
        if let Some(params) = field(n, "parameters") {
            // Comment lines between continuation lines are no dummies.
            let params = named_children(params)
                .into_iter()
                .filter(|p| p.kind() != "comment");
            for (i, p) in params.enumerate() {
                if p.kind() != "identifier" {
                    let s = self.span(p);
                    self.fx.report(
                        &UNSUPPORTED,
                        s,
                        "dfort does not support alternate returns (`*` dummy arguments)",
                    );
                    continue;
                }
                let name = self.lname(p);
                let span = self.span(p);
                let id = self.symbol(&name, span);
                self.sym_mut(id).storage = Storage::Dummy(i as u32);
                self.unit.args.push(id);
            }
        }
        if self.unit.kind == UnitKind::Function {
            let result = named_children(n)
                .into_iter()
                .find(|c| c.kind() == "function_result")
                .and_then(|r| named_children(r).into_iter().next());
            let (rname, rspan) = match result {
                Some(r) => (self.lname(r), self.span(r)),
                None => (self.unit.name.clone(), self.unit.name_span),
            };
            let id = self.symbol(&rname, rspan);
            self.sym_mut(id).storage = Storage::Result;
            self.unit.result = Some(id);
            if let Some(tn) = field(n, "type") {
                let ty = self.lower_type(tn);
                let s = self.sym_mut(id);
                s.ty = ty;
                s.typing = Typing::Declared;
                s.declared = true;
            }
        }
    }

    /// Handles a specification-part node; false when `n` is not one.
    pub(crate) fn specification(&mut self, n: FNode<'a>) -> bool {
        match n.kind() {
            "variable_declaration" => self.variable_declaration(n),
            "variable_modification" => self.variable_modification(n),
            "parameter_statement" => {
                for pa in named_children(n) {
                    let kids = named_children(pa);
                    if let (Some(name), Some(value)) = (kids.first(), kids.get(1)) {
                        let nm = self.lname(*name);
                        let span = self.span(*name);
                        let v = self.expr(*value);
                        let id = self.symbol(&nm, span);
                        let s = self.sym_mut(id);
                        s.attrs.parameter = true;
                        s.init = Some(v);
                        s.declared = true;
                    }
                }
            }
            "implicit_statement" => self.implicit_statement(n),
            "common_statement" => self.common_statement(n),
            "equivalence_statement" => {
                for set in named_children(n) {
                    let mut members = Vec::new();
                    let mut texts = Vec::new();
                    for m in named_children(set) {
                        let base = base_identifier(m);
                        if let Some(b) = base {
                            let nm = self.lname(b);
                            let sp = self.span(b);
                            members.push(self.symbol(&nm, sp));
                            texts.push(super::io::one_line(self.text(m)).to_lowercase());
                        }
                    }
                    if !members.is_empty() {
                        self.unit.equivalences.push(members);
                        self.unit.equivalence_text.push(texts);
                    }
                }
            }
            "data_statement" => {
                let text = super::io::one_line(&self.with_holleriths(n));
                self.unit.data.push(text);
                for set in named_children(n) {
                    for m in named_children(set) {
                        if m.kind() == "data_value" {
                            continue;
                        }
                        for b in data_objects(m) {
                            let nm = self.lname(b);
                            let sp = self.span(b);
                            let id = self.symbol(&nm, sp);
                            self.sym_mut(id).attrs.initialized = true;
                        }
                    }
                }
            }
            "use_statement" => self.use_statement(n),
            "save_statement" => {
                let kids = named_children(n);
                if kids.is_empty() {
                    for s in &mut self.unit.symbols {
                        s.attrs.save = true;
                    }
                } else {
                    for k in kids {
                        if k.kind() == "identifier" {
                            let nm = self.lname(k);
                            let sp = self.span(k);
                            let id = self.symbol(&nm, sp);
                            self.sym_mut(id).attrs.save = true;
                        }
                    }
                }
            }
            "namelist_statement" => self.namelist_statement(n),
            "interface" => self.interface_block(n),
            "derived_type_definition" => self.derived_type_definition(n),
            "import_statement"
            | "private_statement"
            | "public_statement"
            | "enum"
            | "format_statement"
            | "procedure_statement" => {
                if n.kind() == "format_statement" {
                    // A FORMAT's label is defined by the preceding label node;
                    // handled by the caller.
                }
            }
            _ => return false,
        }
        true
    }

    /// A derived-type definition: its name and components (types, bounds
    /// as written, allocatable and pointer), and what dfort does not give
    /// a derivative type.
    fn derived_type_definition(&mut self, n: FNode<'a>) {
        let mut def = crate::types::TypeDef {
            name: String::new(),
            span: self.span(n),
            components: Vec::new(),
            unsupported: None,
            sequence: false,
        };
        for c in named_children(n) {
            match c.kind() {
                "derived_type_statement" => {
                    for k in named_children(c) {
                        match k.kind() {
                            "type_name" | "name" if def.name.is_empty() => {
                                def.name = self.lname(k);
                                def.span = self.span(k);
                            }
                            "access_specifier" => {}
                            _ => {
                                let t = self.text(k).trim().to_ascii_lowercase();
                                def.unsupported.get_or_insert(format!("`{t}`"));
                            }
                        }
                    }
                }
                "variable_declaration" => self.components(c, &mut def),
                "sequence_statement" => def.sequence = true,
                "end_type_statement" | "comment" | "private_statement" | "public_statement" => {}
                other => {
                    def.unsupported
                        .get_or_insert(format!("a {}", other.replace('_', " ")));
                }
            }
        }
        if !def.name.is_empty() {
            self.unit.types.push(def);
        }
    }

    /// The components one declaration inside a type definition declares.
    fn components(&mut self, n: FNode<'a>, def: &mut crate::types::TypeDef) {
        let ty = field(n, "type")
            .map(|t| self.lower_type(t))
            .unwrap_or_else(Type::none);
        let (mut allocatable, mut pointer) = (false, false);
        let mut dims_attr = String::new();
        for q in fields(n, "attribute") {
            let t = self.text(q).trim().to_ascii_lowercase();
            if t.starts_with("allocatable") {
                allocatable = true;
            } else if t.starts_with("pointer") {
                pointer = true;
            } else if let Some(rest) = t.strip_prefix("dimension") {
                dims_attr = rest.trim().to_string();
            } else {
                def.unsupported
                    .get_or_insert(format!("a component declared `{t}`"));
            }
        }
        for d in fields(n, "declarator") {
            let target = match d.kind() {
                "init_declarator" | "pointer_init_declarator" => field(d, "left"),
                _ => Some(d),
            };
            let Some(target) = target else { continue };
            let (name, size) = match target.kind() {
                "identifier" => (Some(target), None),
                "sized_declarator" => {
                    let kids = named_children(target);
                    (
                        kids.iter().copied().find(|k| k.kind() == "identifier"),
                        kids.iter().copied().find(|k| k.kind() == "size"),
                    )
                }
                _ => (None, None),
            };
            let Some(name) = name else { continue };
            let mut dims = match size {
                Some(s) => self.text(s).trim().to_ascii_lowercase(),
                None => dims_attr.clone(),
            };
            dims.retain(|c| !c.is_whitespace());
            if !dims.is_empty() && !dims.starts_with('(') {
                dims = format!("({dims})");
            }
            def.components.push(crate::types::ComponentDef {
                name: self.lname(name),
                ty: ty.clone(),
                rank: rank_of_bounds(&dims),
                dims,
                allocatable,
                pointer,
                span: self.span(name),
            });
        }
    }

    fn interface_block(&mut self, n: FNode<'a>) {
        let mut block = InterfaceBlock {
            text: self.text(n).trim_end().to_string(),
            names: Vec::new(),
            generic: None,
            specifics: Vec::new(),
        };
        if let Some(stmt) = named_children(n)
            .into_iter()
            .find(|c| c.kind() == "interface_statement")
        {
            if let Some(name) = named_children(stmt)
                .into_iter()
                .find(|c| c.kind() == "name")
            {
                let nm = self.lname(name);
                let sp = self.span(name);
                let id = self.symbol(&nm, sp);
                let s = self.sym_mut(id);
                s.storage = Storage::Procedure;
                s.declared = true;
                block.generic = Some(nm);
            }
            // `interface operator(.dot.)`, `interface assignment(=)`.
            for c in named_children(stmt) {
                match c.kind() {
                    "operator" => {
                        let op = named_children(c)
                            .into_iter()
                            .find(|k| k.kind() == "operator_name")
                            .map(|k| self.text(k).to_string())
                            .unwrap_or_default();
                        block.generic = Some(operator_generic(&op));
                    }
                    "assignment" => block.generic = Some(ASSIGNMENT_GENERIC.to_string()),
                    _ => {}
                }
            }
        }
        for c in named_children(n) {
            if c.kind() == "procedure_statement" {
                // `module procedure scale_r, scale_v`
                for d in fields(c, "declarator") {
                    block.specifics.push(self.lname(d));
                }
            }
            if matches!(c.kind(), "subroutine" | "function") {
                let header = named_children(c).into_iter().next();
                if let Some(name) = header.and_then(|h| field(h, "name")) {
                    // A function's type given in its prefix
                    // (`LOGICAL FUNCTION F(…)`), which a procedure
                    // declaration naming this interface gives its names.
                    let ty = header
                        .and_then(|h| field(h, "type"))
                        .map(|t| self.lower_type(t));
                    let nm = self.procedure_symbol(name, ty.map(|t| (t, Typing::Declared)));
                    if block.generic.is_some() {
                        block.specifics.push(nm.clone());
                    }
                    block.names.push(nm);
                }
            }
        }
        self.unit.interface_blocks.push(block);
    }

    /// `PROCEDURE(iface) :: f, g` (a procedure declaration statement, as
    /// current LAPACK declares its procedure arguments; the grammar reads it
    /// as a declaration of type `procedure`): each name is a procedure with
    /// the interface's type, as if an interface body of its own declared
    /// it. A procedure pointer (`, POINTER`) is left as declared.
    fn procedure_declaration(&mut self, n: FNode<'a>, ty: FNode<'a>) {
        let pointer = fields(n, "attribute")
            .iter()
            .any(|q| self.text(*q).trim().eq_ignore_ascii_case("pointer"));
        if pointer {
            return;
        }
        let interface = named_children(ty)
            .into_iter()
            .find(|c| c.kind() == "procedure_interface")
            .map(|i| self.lname(i));
        let typed = interface
            .and_then(|i| self.unit.lookup(&i))
            .map(|i| (self.unit.symbol(i).ty.clone(), self.unit.symbol(i).typing));
        for d in fields(n, "declarator") {
            if d.kind() != "identifier" {
                continue;
            }
            self.procedure_symbol(d, typed.clone());
        }
    }

    /// Declares the name `name` as an external procedure, of type `typed`
    /// when given; its name.
    fn procedure_symbol(&mut self, name: FNode<'a>, typed: Option<(Type, Typing)>) -> String {
        let nm = self.lname(name);
        let sp = self.span(name);
        let id = self.symbol(&nm, sp);
        let s = self.sym_mut(id);
        s.storage = Storage::Procedure;
        s.attrs.external = true;
        s.declared = true;
        if let Some((ty, typing)) = typed {
            s.ty = ty;
            s.typing = typing;
        }
        nm
    }

    fn use_statement(&mut self, n: FNode<'a>) {
        let mut decl = UseDecl {
            module: String::new(),
            only: None,
            renames: Vec::new(),
            span: self.stmt_span(n),
            target: None,
        };
        for c in named_children(n) {
            match c.kind() {
                "module_name" => decl.module = self.lname(c),
                "included_items" => {
                    let mut only = Vec::new();
                    for item in named_children(c) {
                        match item.kind() {
                            "use_alias" => {
                                if let Some(p) = self.alias(item) {
                                    only.push(p);
                                }
                            }
                            _ => {
                                let nm = self.lname(item);
                                only.push((nm.clone(), nm));
                            }
                        }
                    }
                    decl.only = Some(only);
                }
                "use_alias" => {
                    if let Some(p) = self.alias(c) {
                        decl.renames.push(p);
                    }
                }
                _ => {}
            }
        }
        // `use m, only:` with an empty list still parses as an only list.
        if decl.only.is_none() && self.text(n).to_ascii_lowercase().contains("only") {
            decl.only = Some(Vec::new());
        }
        self.unit.uses.push(decl);
    }

    fn alias(&self, n: FNode<'a>) -> Option<(String, String)> {
        let kids = named_children(n);
        let local = kids.iter().find(|k| k.kind() == "local_name")?;
        let remote = kids.iter().rev().find(|k| k.kind() != "local_name")?;
        Some((self.lname(*local), self.lname(*remote)))
    }

    fn implicit_statement(&mut self, n: FNode<'a>) {
        let kids = named_children(n);
        if kids.iter().any(|k| k.kind() == "none") {
            self.unit.implicit.none = true;
            for l in std::sync::Arc::make_mut(&mut self.unit.implicit.letters) {
                *l = None;
            }
            return;
        }
        // implicit TYPE (ranges) [, TYPE (ranges)]...
        let mut current: Option<Type> = None;
        for k in kids {
            match k.kind() {
                "intrinsic_type" | "derived_type" => current = Some(self.lower_type(k)),
                "implicit_range" => {
                    let t = self.text(k).to_ascii_lowercase();
                    let letters: Vec<u8> = t.bytes().filter(|b| b.is_ascii_lowercase()).collect();
                    let (lo, hi) = match letters.as_slice() {
                        [a] => (*a, *a),
                        [a, b, ..] => (*a, *b),
                        _ => continue,
                    };
                    if let Some(ty) = &current {
                        self.unit.implicit.none = false;
                        for c in lo..=hi.max(lo) {
                            if let Some(slot) =
                                std::sync::Arc::make_mut(&mut self.unit.implicit.letters)
                                    .get_mut((c - b'a') as usize)
                            {
                                *slot = Some(ty.clone());
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn common_statement(&mut self, n: FNode<'a>) {
        let mut block_name = String::new();
        let mut members: Vec<SymbolId> = Vec::new();
        let span = self.stmt_span(n);
        let flush = |this: &mut Self, name: &str, members: &mut Vec<SymbolId>| {
            if members.is_empty() {
                return;
            }
            let idx = match this.unit.commons.iter().position(|c| c.name == name) {
                Some(i) => i,
                None => {
                    this.unit.commons.push(CommonBlock {
                        name: name.to_string(),
                        members: Vec::new(),
                        span,
                    });
                    this.unit.commons.len() - 1
                }
            };
            for m in members.drain(..) {
                let pos = this.unit.commons[idx].members.len() as u32;
                this.unit.commons[idx].members.push(m);
                this.sym_mut(m).storage = Storage::Common {
                    block: name.to_string(),
                    index: pos,
                };
            }
        };
        for c in named_children(n) {
            match c.kind() {
                "variable_group" => {
                    flush(self, &block_name, &mut members);
                    block_name.clear();
                    for g in named_children(c) {
                        if g.kind() == "name" {
                            block_name = self.lname(g);
                        } else if let Some(id) = self.declarator_symbol(g) {
                            members.push(id);
                        }
                    }
                    flush(self, &block_name, &mut members);
                    block_name.clear();
                }
                _ => {
                    if let Some(id) = self.declarator_symbol(c) {
                        members.push(id);
                    }
                }
            }
        }
        flush(self, &block_name, &mut members);
    }

    /// `NAMELIST /g/ a, b /h/ c`: each group and its members.
    fn namelist_statement(&mut self, n: FNode<'a>) {
        for group in named_children(n) {
            if group.kind() != "variable_group" {
                continue;
            }
            let mut list = Namelist {
                name: String::new(),
                members: Vec::new(),
            };
            for g in named_children(group) {
                if g.kind() == "name" {
                    list.name = self.lname(g);
                } else if let Some(id) = self.declarator_symbol(g) {
                    list.members.push(id);
                }
            }
            // A group named again adds to its list.
            match self.unit.namelists.iter_mut().find(|l| l.name == list.name) {
                Some(l) => l.members.extend(list.members),
                None => self.unit.namelists.push(list),
            }
        }
    }

    /// A declarator inside COMMON or DIMENSION-like statements: creates the
    /// symbol and records bounds given there.
    fn declarator_symbol(&mut self, d: FNode<'a>) -> Option<SymbolId> {
        let (name_node, size) = match d.kind() {
            "identifier" => (d, None),
            "sized_declarator" => {
                let kids = named_children(d);
                let name = *kids.iter().find(|k| k.kind() == "identifier")?;
                (name, kids.into_iter().find(|k| k.kind() == "size"))
            }
            _ => return None,
        };
        let nm = self.lname(name_node);
        let sp = self.span(name_node);
        let id = self.symbol(&nm, sp);
        if let Some(size) = size {
            let dims = self.dims(size, false);
            self.sym_mut(id).dims = dims;
        }
        Some(id)
    }

    fn variable_declaration(&mut self, n: FNode<'a>) {
        if let Some(t) = field(n, "type").filter(|t| t.kind() == "procedure") {
            return self.procedure_declaration(n, t);
        }
        let ty = field(n, "type")
            .map(|t| self.lower_type(t))
            .unwrap_or_else(Type::none);
        let mut attrs = Attrs::default();
        let mut intent = None;
        let mut dims_attr: Option<FNode<'a>> = None;
        let attr_nodes: Vec<FNode<'a>> = fields(n, "attribute");
        for q in attr_nodes {
            self.qualifier(q, &mut attrs, &mut intent, &mut dims_attr);
        }
        let deferred = attrs.allocatable || attrs.pointer;
        let dims_from_attr = dims_attr.map(|d| self.dims(d, deferred));
        let decls: Vec<FNode<'a>> = fields(n, "declarator");
        for d in decls {
            let (target, init) = match d.kind() {
                "init_declarator" | "pointer_init_declarator" => {
                    (field(d, "left"), field(d, "right"))
                }
                _ => (Some(d), None),
            };
            let Some(target) = target else { continue };
            let (name_node, size, char_len) = match target.kind() {
                "identifier" => (Some(target), None, None),
                "sized_declarator" => {
                    let kids = named_children(target);
                    (
                        kids.iter().copied().find(|k| k.kind() == "identifier"),
                        kids.iter().copied().find(|k| k.kind() == "size"),
                        kids.iter()
                            .copied()
                            .find(|k| k.kind() == "character_length"),
                    )
                }
                other => {
                    let sp = self.stmt_span(target);
                    self.fx.report(
                        &UNSUPPORTED,
                        sp,
                        format!(
                            "dfort does not support `{}` declarators",
                            other.replace('_', " ")
                        ),
                    );
                    (None, None, None)
                }
            };
            let Some(name_node) = name_node else { continue };
            let nm = self.lname(name_node);
            let sp = self.span(name_node);
            let id = self.symbol(&nm, sp);
            let dims = match size {
                Some(s) => Some(self.dims(s, deferred)),
                None => dims_from_attr.clone(),
            };
            let init_expr = init.map(|e| self.expr(e));
            let len_text = char_len.map(|c| self.declarator_length(c));
            let s = self.sym_mut(id);
            if !s.declared || s.typing != Typing::Declared {
                s.span = sp;
            }
            s.declared = true;
            if ty.base != BaseType::None {
                s.ty = ty.clone();
                s.typing = Typing::Declared;
            }
            if let Some(len) = len_text {
                s.ty.len = Some(len);
            }
            if let Some(d) = dims {
                s.dims = d;
            }
            merge_attrs(&mut s.attrs, &attrs);
            if intent.is_some() {
                s.intent = intent;
            }
            if let Some(e) = init_expr {
                s.init = Some(e);
                if !s.attrs.parameter {
                    s.attrs.initialized = true;
                }
            }
            if s.attrs.external && s.storage == Storage::Local {
                s.storage = Storage::Procedure;
            }
        }
    }

    fn variable_modification(&mut self, n: FNode<'a>) {
        let mut attrs = Attrs::default();
        let mut intent = None;
        let mut dims_attr = None;
        let kids = named_children(n);
        for q in kids.iter().filter(|k| k.kind() == "type_qualifier") {
            self.qualifier(*q, &mut attrs, &mut intent, &mut dims_attr);
        }
        let deferred = attrs.allocatable || attrs.pointer;
        let dims_from_attr = dims_attr.map(|d| self.dims(d, deferred));
        for d in kids.into_iter().filter(|k| k.kind() != "type_qualifier") {
            let Some(id) = self.declarator_symbol(d) else {
                continue;
            };
            let s = self.sym_mut(id);
            merge_attrs(&mut s.attrs, &attrs);
            if intent.is_some() {
                s.intent = intent;
            }
            if let Some(dims) = &dims_from_attr {
                s.dims = dims.clone();
            }
            if deferred {
                for dim in &mut s.dims {
                    if dim.kind == DimKind::AssumedShape {
                        dim.kind = DimKind::Deferred;
                    }
                }
            }
            if attrs.external || attrs.intrinsic {
                s.storage = Storage::Procedure;
                s.declared = true;
            }
        }
    }

    fn qualifier(
        &mut self,
        q: FNode<'a>,
        attrs: &mut Attrs,
        intent: &mut Option<Intent>,
        dims: &mut Option<FNode<'a>>,
    ) {
        let t = self.text(q).to_ascii_lowercase();
        let word: String = t
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == '_')
            .collect();
        match word.as_str() {
            "intent" => {
                let inner: String = t.chars().filter(|c| c.is_ascii_alphabetic()).collect();
                *intent = Some(if inner.ends_with("inout") {
                    Intent::InOut
                } else if inner.ends_with("out") {
                    Intent::Out
                } else {
                    Intent::In
                });
            }
            "parameter" => attrs.parameter = true,
            "save" => attrs.save = true,
            "allocatable" => attrs.allocatable = true,
            "pointer" => attrs.pointer = true,
            "target" => attrs.target = true,
            "optional" => attrs.optional = true,
            "external" => attrs.external = true,
            "intrinsic" => attrs.intrinsic = true,
            "dimension" => {
                *dims = named_children(q)
                    .into_iter()
                    .find(|c| matches!(c.kind(), "argument_list" | "size"));
            }
            _ => {}
        }
    }

    /// Array bounds from a `size` / `argument_list` node.
    pub(crate) fn dims(&mut self, size: FNode<'a>, deferred: bool) -> Vec<Dim> {
        let mut out = Vec::new();
        for d in named_children(size) {
            match d.kind() {
                "assumed_size" => out.push(Dim {
                    kind: DimKind::AssumedSize,
                    lower: None,
                    upper: None,
                }),
                "extent_specifier" => {
                    let mut lower = None;
                    let mut upper = None;
                    let mut after_colon = false;
                    let mut assumed_size = false;
                    for c in children(d) {
                        if !c.is_named() {
                            if self.text(c) == ":" {
                                after_colon = true;
                            }
                            continue;
                        }
                        if c.kind() == "assumed_size" {
                            assumed_size = true;
                        } else if c.kind() == "comment" {
                        } else if after_colon {
                            upper = Some(self.expr(c));
                        } else {
                            lower = Some(self.expr(c));
                        }
                    }
                    let kind = if assumed_size {
                        DimKind::AssumedSize
                    } else if upper.is_some() {
                        DimKind::Explicit
                    } else if deferred {
                        DimKind::Deferred
                    } else {
                        DimKind::AssumedShape
                    };
                    out.push(Dim {
                        kind,
                        lower: lower.map(Box::new),
                        upper: upper.map(Box::new),
                    });
                }
                "comment" => {}
                _ => {
                    let e = self.expr(d);
                    out.push(Dim {
                        kind: DimKind::Explicit,
                        lower: None,
                        upper: Some(Box::new(e)),
                    });
                }
            }
        }
        out
    }

    /// `real(8)`, `double precision`, `real*8`, `real(kind=dp)`,
    /// `character*10`, `character(len=*)`, `type(point)`.
    pub(crate) fn lower_type(&mut self, tn: FNode<'a>) -> Type {
        if matches!(tn.kind(), "derived_type") {
            let name = field(tn, "name").map(|n| self.lname(n)).unwrap_or_default();
            let mut t = Type::new(BaseType::Derived, None);
            t.derived = Some(name);
            return t;
        }
        let mut words = String::new();
        for c in children(tn) {
            if !c.is_named() {
                let w = self.text(c).to_ascii_lowercase();
                if w.chars().all(|ch| ch.is_ascii_alphabetic()) {
                    words.push_str(&w);
                }
            }
        }
        let (base, default_kind) = match words.as_str() {
            "integer" => (BaseType::Integer, Some(4)),
            "real" => (BaseType::Real, Some(4)),
            "doubleprecision" => (BaseType::Real, Some(8)),
            "complex" => (BaseType::Complex, Some(4)),
            "doublecomplex" => (BaseType::Complex, Some(8)),
            "logical" => (BaseType::Logical, Some(4)),
            "character" => (BaseType::Character, None),
            "byte" => (BaseType::Integer, Some(1)),
            _ => (BaseType::None, None),
        };
        let mut ty = Type::new(base, default_kind);
        if let Some(k) = field(tn, "kind") {
            let star = children(k)
                .iter()
                .any(|c| !c.is_named() && self.text(*c) == "*");
            let mut kids = named_children(k);
            // `character*(len)`: the grammar reads the star before the
            // parenthesis as a node of its own (`assumed_size`), not the
            // length.
            if kids.len() >= 2 && kids[0].kind() == "assumed_size" {
                kids.remove(0);
            }
            for (i, c) in kids.iter().enumerate() {
                let (key, value) = if c.kind() == "keyword_argument" {
                    let key = field(*c, "name").map(|n| self.lname(n)).unwrap_or_default();
                    (key, field(*c, "value"))
                } else if base == BaseType::Character {
                    // character(10) / character*10: the length;
                    // character(10, 1): length then kind.
                    (if i == 0 { "len".into() } else { "kind".into() }, Some(*c))
                } else {
                    ("kind".into(), Some(*c))
                };
                let Some(value) = value else { continue };
                let vtext = self.text(value).trim().to_ascii_lowercase();
                if key == "len" {
                    ty.len = Some(vtext);
                    continue;
                }
                let e = self.expr(value);
                match self.const_int(&e) {
                    Some(v) if v > 0 => {
                        // complex*16 means two 8-byte reals.
                        ty.kind = Some(if star && base == BaseType::Complex {
                            (v / 2) as u32
                        } else {
                            v as u32
                        });
                    }
                    _ => {
                        ty.kind = well_known_kind(&vtext);
                        ty.kind_text = Some(vtext);
                    }
                }
            }
        }
        ty
    }

    /// Integer value of a constant expression, as far as the unit knows it
    /// (literals, named constants declared so far, + - * /, and the kind
    /// inquiry functions).
    pub(crate) fn const_int(&self, e: &Expr) -> Option<i64> {
        const_int_in(&self.unit, e, 0)
    }
}

pub(crate) fn const_int_in(unit: &Unit, e: &Expr, depth: u32) -> Option<i64> {
    if depth > 16 {
        return None;
    }
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Var(id) => {
            let s = unit.symbols.get(*id)?;
            if s.attrs.parameter {
                const_int_in(unit, s.init.as_ref()?, depth + 1)
            } else {
                well_known_kind(&s.name).map(i64::from)
            }
        }
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => const_int_in(unit, operand, depth + 1).map(|v| -v),
        ExprKind::Binary { op, lhs, rhs } => {
            let a = const_int_in(unit, lhs, depth + 1)?;
            let b = const_int_in(unit, rhs, depth + 1)?;
            crate::dp::integer_op(*op, a, b)
        }
        ExprKind::Intrinsic { name, args } | ExprKind::Apply { name, args } => {
            let first = args.first().map(|a| &a.value);
            match name.as_str() {
                "selected_real_kind" => {
                    let p = first
                        .and_then(|f| const_int_in(unit, f, depth + 1))
                        .unwrap_or(6);
                    Some(if p <= 6 {
                        4
                    } else if p <= 15 {
                        8
                    } else {
                        16
                    })
                }
                "selected_int_kind" => {
                    let r = first
                        .and_then(|f| const_int_in(unit, f, depth + 1))
                        .unwrap_or(9);
                    Some(if r <= 2 {
                        1
                    } else if r <= 4 {
                        2
                    } else if r <= 9 {
                        4
                    } else {
                        8
                    })
                }
                "kind" => match first.map(|f| &f.kind) {
                    Some(ExprKind::Real { kind, .. }) => Some(i64::from(*kind)),
                    Some(ExprKind::Int(_)) => Some(4),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

pub(crate) use crate::intrinsic_modules::well_known_kind;

fn merge_attrs(into: &mut Attrs, from: &Attrs) {
    into.parameter |= from.parameter;
    into.save |= from.save;
    into.external |= from.external;
    into.intrinsic |= from.intrinsic;
    into.allocatable |= from.allocatable;
    into.pointer |= from.pointer;
    into.target |= from.target;
    into.optional |= from.optional;
    into.initialized |= from.initialized;
}

impl UnitLowerer<'_, '_> {
    /// The length a declarator's `*8`, `*(*)` or `*(expr)` gives, as the
    /// `len=` of a type: `8`, `*`, `expr` (lower case). An expression was
    /// blanked to `*(*)` for the grammar
    /// ([`dfort_syntax::char_length`]): it is read from the original text.
    fn declarator_length(&self, c: FNode) -> String {
        let written = self.text(c).trim().trim_start_matches('*').trim();
        let inner = written
            .strip_prefix('(')
            .and_then(|w| w.strip_suffix(')'))
            .map_or(written, str::trim);
        if inner == "*" {
            let at = self.span(c).range.start as usize;
            if let Some(len) = dfort_syntax::char_length::written_length(&self.fx.parsed.text, at) {
                return len.to_ascii_lowercase();
            }
        }
        inner.to_ascii_lowercase()
    }

    /// The text of `n` with the character literals that were Hollerith
    /// constants in the original fixed-form source (`4HABCD`, read as
    /// `'ABCD'`) written as Holleriths again: a DATA statement copied into
    /// a derivative keeps giving its integer variables their bytes.
    fn with_holleriths(&self, n: FNode) -> String {
        let text = self.text(n);
        // Only fixed form is rewritten (`normalized` holds what was parsed).
        if self.fx.parsed.normalized.is_none() {
            return text.to_string();
        }
        let original = &self.fx.parsed.text;
        let mut literals = Vec::new();
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            if x.kind() == "string_literal" {
                literals.push(x);
            } else {
                stack.extend(x.children());
            }
        }
        literals.sort_by_key(|l| l.start_byte());
        let base = n.start_byte();
        let mut out = String::with_capacity(text.len());
        let mut cur = 0;
        for l in literals {
            let (s, e) = (l.start_byte(), l.end_byte());
            let r = self.fx.parsed.to_original(s, e);
            // The rewrite keeps the length: blanks before the quote pad
            // a count of two digits or more.
            let before = text[..s - base].len() - text[..s - base].trim_end_matches(' ').len();
            let from = (r.start as usize).saturating_sub(before.min(3));
            let was = original
                .get(from..r.end as usize)
                .unwrap_or("")
                .trim_start();
            let digits = was.len() - was.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let hollerith = digits > 0 && was[digits..].starts_with(['h', 'H']);
            let (Some(body), true) = (text.get(s - base + 1..e - base - 1), hollerith) else {
                continue;
            };
            out.push_str(text.get(cur..s - base).unwrap_or(""));
            out.push_str(&format!("{}H{body}", body.chars().count()));
            cur = e - base;
        }
        out.push_str(text.get(cur..).unwrap_or(""));
        out
    }
}

/// The variable named by an EQUIVALENCE/DATA object (`a`, `a(1)`, `a(1:2)`).
fn base_identifier(n: FNode) -> Option<FNode> {
    match n.kind() {
        "identifier" => Some(n),
        "call_expression" => named_children(n)
            .into_iter()
            .next()
            .and_then(base_identifier),
        _ => None,
    }
}

/// Variables initialised by a DATA object (including implied-DO lists).
fn data_objects(n: FNode) -> Vec<FNode> {
    match n.kind() {
        "identifier" | "call_expression" => base_identifier(n).into_iter().collect(),
        "implied_do_loop_expression" => named_children(n)
            .into_iter()
            .filter(|c| c.kind() != "loop_control_expression")
            .flat_map(data_objects)
            .collect(),
        _ => Vec::new(),
    }
}

/// A label's value from a `statement_label` node text.
pub(crate) fn parse_label(text: &str) -> Option<u32> {
    label_value(text)
}

/// The rank of array bounds written `(a, b:c, :)`: top-level commas plus
/// one (0 for none).
fn rank_of_bounds(dims: &str) -> usize {
    if dims.is_empty() {
        return 0;
    }
    let mut depth = 0i32;
    let mut rank = 1;
    for c in dims.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 1 => rank += 1,
            _ => {}
        }
    }
    rank
}
