//! Derived types: the definitions a unit holds, the definition a local
//! type name refers to (by host or use association, renames included),
//! and the type of a data reference through its components.

use crate::ir::*;

/// A derived-type definition (`type [, attrs ::] name … end type`).
#[derive(Clone, Debug)]
pub struct TypeDef {
    /// Lower case.
    pub name: String,
    pub span: Span,
    pub components: Vec<ComponentDef>,
    /// What makes the type one dfort does not give a derivative type
    /// (`extends`, type parameters, type-bound procedures), as a phrase.
    pub unsupported: Option<String>,
    /// Whether it is a sequence type (`sequence`): its derivative types
    /// are too, so that the definitions of one type in several
    /// procedures stay the same type.
    pub sequence: bool,
}

/// One component of a derived type.
#[derive(Clone, Debug)]
pub struct ComponentDef {
    /// Lower case.
    pub name: String,
    pub ty: Type,
    /// The array bounds as written (`(3)`, `(0:nmax)`, `(:)`), empty for
    /// a scalar component.
    pub dims: String,
    pub rank: usize,
    pub allocatable: bool,
    pub pointer: bool,
    pub span: Span,
}

impl TypeDef {
    pub fn component(&self, name: &str) -> Option<&ComponentDef> {
        self.components.iter().find(|c| c.name == name)
    }
}

impl Program {
    /// The definition the type name `local` refers to in `unit`: the
    /// unit's own, a host's, or a module's through USE (renames and ONLY
    /// lists followed), with the unit that defines it.
    pub fn type_def<'a>(&'a self, unit: &Unit, local: &str) -> Option<(UnitId, &'a TypeDef)> {
        type_def_among(&self.units, unit, local, 0)
    }

    /// The definition of a derived type `ty` seen from `unit`.
    pub fn type_of<'a>(&'a self, unit: &Unit, ty: &Type) -> Option<(UnitId, &'a TypeDef)> {
        type_of_among(&self.units, unit, ty)
    }

    /// The rank of the component reference `e` itself (`p%y` of an array
    /// component `y(3)` is 1, `p%y(2)` 0), not counting its base's.
    pub fn component_rank(&self, unit: &Unit, e: &Expr) -> Option<usize> {
        component_rank_among(&self.units, unit, e)
    }

    /// The definition of the last component of a component reference
    /// (`y` of `ps(i)%c(2)%y`).
    pub fn component_def(&self, unit: &Unit, e: &Expr) -> Option<&ComponentDef> {
        component_def_among(&self.units, unit, e)
    }

    /// The type of a data reference (`x`, `a(i)`, `p%x`, `ps(i)%c(2)%y`)
    /// and the unit whose names its derived type is spelt in; `None` for
    /// anything else or a component dfort cannot resolve.
    pub fn reference_type<'a>(&'a self, unit: &'a Unit, e: &Expr) -> Option<(&'a Unit, Type)> {
        reference_type_among(&self.units, unit, e)
    }
}

/// Whether a derived type gets a derivative type, and why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DerivativeType {
    /// It has differentiable components, all of a kind dfort handles.
    Yes,
    /// No component can carry a derivative (integers, logicals, …).
    Passive,
    /// It has differentiable components dfort cannot give a derivative
    /// type yet; the phrase says which.
    Unsupported(String),
}

impl Program {
    /// Whether the type `def`, defined in `owner`, gets a derivative type
    /// (real and complex components, and components of types that do;
    /// defined in a module, so that every routine can name it).
    pub fn derivative_type(&self, owner: UnitId, def: &TypeDef) -> DerivativeType {
        self.derivative_type_in(owner, def, &mut Vec::new())
    }

    /// `visiting`: the types whose answer is being worked out (a type
    /// holding a pointer to its own kind, `type(node), pointer :: next`,
    /// is what its other components make it).
    fn derivative_type_in(
        &self,
        owner: UnitId,
        def: &TypeDef,
        visiting: &mut Vec<String>,
    ) -> DerivativeType {
        if visiting.len() > 16 {
            return DerivativeType::Unsupported(format!("`{}` nests too deeply", def.name));
        }
        visiting.push(def.name.clone());
        let answer = self.derivative_type_of_components(owner, def, visiting);
        visiting.pop();
        answer
    }

    fn derivative_type_of_components(
        &self,
        owner: UnitId,
        def: &TypeDef,
        visiting: &mut Vec<String>,
    ) -> DerivativeType {
        let unit = self.unit(owner);
        let mut any = false;
        for c in &def.components {
            let differentiable = match c.ty.base {
                BaseType::Real | BaseType::Complex => true,
                BaseType::Derived => match self.type_of(unit, &c.ty) {
                    Some((o, _)) if o != owner => {
                        return DerivativeType::Unsupported(format!(
                            "component `{}` of `{}` has a type defined in another module",
                            c.name, def.name
                        ))
                    }
                    Some((_, d)) if visiting.contains(&d.name) => false,
                    Some((o, d)) => match self.derivative_type_in(o, d, visiting) {
                        DerivativeType::Yes => true,
                        DerivativeType::Passive => false,
                        other => return other,
                    },
                    None => {
                        return DerivativeType::Unsupported(format!(
                        "the type of component `{}` of `{}` is not among the files given to dfort",
                        c.name, def.name
                    ))
                    }
                },
                _ => false,
            };
            if !differentiable {
                continue;
            }
            any = true;
            if c.allocatable {
                return DerivativeType::Unsupported(format!(
                    "component `{}` of `{}` is allocatable",
                    c.name, def.name
                ));
            }
            if c.ty.base != BaseType::Derived && !matches!(c.ty.kind, Some(4) | Some(8)) {
                return DerivativeType::Unsupported(format!(
                    "component `{}` of `{}` has a kind dfort does not know",
                    c.name, def.name
                ));
            }
        }
        if !any {
            return DerivativeType::Passive;
        }
        if let Some(what) = &def.unsupported {
            return DerivativeType::Unsupported(format!("`{}` has {what}", def.name));
        }
        if unit.kind != UnitKind::Module {
            return DerivativeType::Unsupported(format!(
                "`{}` is defined in `{}`, not in a module",
                def.name, unit.name
            ));
        }
        DerivativeType::Yes
    }

    /// [`Program::derivative_type`] of a symbol's type in `unit` (`None`
    /// for a type that is not derived or not found).
    pub fn derivative_type_of(&self, unit: &Unit, ty: &Type) -> Option<DerivativeType> {
        let (o, d) = self.type_of(unit, ty)?;
        Some(self.derivative_type(o, d))
    }
}

use crate::Units;

/// [`Program::type_def`] among `units` (also those of a program being
/// linked).
pub(crate) fn type_def_among<'a>(
    units: &'a Units,
    unit: &Unit,
    local: &str,
    depth: u32,
) -> Option<(UnitId, &'a TypeDef)> {
    if depth > 32 {
        return None;
    }
    // The program's copy of the unit: callers may hold a rewritten one.
    let own = units.get(unit.id)?;
    if let Some(t) = own.types.iter().find(|t| t.name == local) {
        return Some((unit.id, t));
    }
    for us in &unit.uses {
        let Some(m) = us.target else { continue };
        let Some(remote) = crate::link::remote_name(us, local) else {
            continue;
        };
        if let Some(found) = units
            .get(m)
            .and_then(|m| type_def_among(units, m, remote, depth + 1))
        {
            return Some(found);
        }
    }
    let host = units.get(unit.parent?)?;
    type_def_among(units, host, local, depth + 1)
}

/// [`Program::type_of`] over `units`.
pub(crate) fn type_of_among<'a>(
    units: &'a Units,
    unit: &Unit,
    ty: &Type,
) -> Option<(UnitId, &'a TypeDef)> {
    if ty.base != BaseType::Derived {
        return None;
    }
    type_def_among(units, unit, ty.derived.as_deref()?, 0)
}

/// [`Program::component_def`] over `units`.
pub(crate) fn component_def_among<'a>(
    units: &'a Units,
    unit: &Unit,
    e: &Expr,
) -> Option<&'a ComponentDef> {
    let ExprKind::Component { base, name, .. } = &e.kind else {
        return None;
    };
    let (scope, bt) = reference_type_among(units, unit, base)?;
    let (_, def) = type_of_among(units, scope, &bt)?;
    def.component(name)
}

/// [`Program::component_rank`] over `units`.
pub(crate) fn component_rank_among(units: &Units, unit: &Unit, e: &Expr) -> Option<usize> {
    let ExprKind::Component { subs, .. } = &e.kind else {
        return None;
    };
    match subs.is_empty() {
        true => component_def_among(units, unit, e).map(|c| c.rank),
        false => Some(
            subs.iter()
                .filter(|s| matches!(s, Subscript::Range { .. }))
                .count(),
        ),
    }
}

/// [`Program::reference_type`] among `units`.
pub(crate) fn reference_type_among<'a>(
    units: &'a Units,
    unit: &'a Unit,
    e: &Expr,
) -> Option<(&'a Unit, Type)> {
    match &e.kind {
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => {
            Some((unit, unit.symbol(*s).ty.clone()))
        }
        ExprKind::Component { base, name, .. } => {
            let (scope, bt) = reference_type_among(units, unit, base)?;
            let (owner, def) = type_of_among(units, scope, &bt)?;
            let c = def.component(name)?;
            Some((units.get(owner)?, c.ty.clone()))
        }
        _ => None,
    }
}
