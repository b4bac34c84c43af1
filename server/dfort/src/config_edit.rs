//! Writes values of a root's arguments into the `[[root]]` of `dfort.toml`
//! that names it, keeping the file's comments and layout. The editor's
//! "Verify derivatives" saves there the values `dfort verify` asked for,
//! so that the next run (from the editor or the command line) has them.

use crate::config::{self, IntValue};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

/// Values of a root's arguments, under the keys of its `[[root]]` table.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RootValues {
    #[serde(default)]
    pub int: BTreeMap<String, IntValue>,
    #[serde(default)]
    pub size: BTreeMap<String, i64>,
    #[serde(default)]
    pub char: BTreeMap<String, String>,
    #[serde(default)]
    pub logical: BTreeMap<String, bool>,
}

impl RootValues {
    pub fn is_empty(&self) -> bool {
        self.int.is_empty()
            && self.size.is_empty()
            && self.char.is_empty()
            && self.logical.is_empty()
    }
}

/// Sets `values` in the `[[root]]` named `root` of the `dfort.toml` at
/// `path`, creating the file or the table where there is none. Nothing is
/// written unless the result still reads as a configuration.
pub fn save(path: &Path, root: &str, values: &RootValues) -> Result<(), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let text = with_values(&text, root, values).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str::<config::Config>(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `text` (a `dfort.toml`) with `values` set in the `[[root]]` named `root`.
pub fn with_values(text: &str, root: &str, values: &RootValues) -> Result<String, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    if !doc.contains_key("root") {
        doc.insert("root", Item::ArrayOfTables(ArrayOfTables::new()));
    }
    let roots = doc
        .get_mut("root")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or("`root` is not a list of [[root]] tables")?;
    let named = |t: &Table| {
        t.get("name")
            .and_then(Item::as_str)
            .is_some_and(|n| n.eq_ignore_ascii_case(root))
    };
    let found = roots.iter().position(named);
    let at = match found {
        Some(i) => i,
        None => {
            let mut t = Table::new();
            t.insert("name", toml_edit::value(root));
            roots.push(t);
            roots.len() - 1
        }
    };
    let table = roots.get_mut(at).ok_or("the [[root]] table went missing")?;
    let int = values.int.iter().map(|(k, v)| {
        let v = match v {
            IntValue::One(v) => Value::from(*v),
            IntValue::Many(vs) => Value::Array(vs.iter().copied().collect::<Array>()),
        };
        (k, v)
    });
    set(table, "int", int)?;
    set(
        table,
        "size",
        values.size.iter().map(|(k, v)| (k, Value::from(*v))),
    )?;
    set(
        table,
        "char",
        values
            .char
            .iter()
            .map(|(k, v)| (k, Value::from(v.as_str()))),
    )?;
    set(
        table,
        "logical",
        values.logical.iter().map(|(k, v)| (k, Value::from(*v))),
    )?;
    Ok(doc.to_string())
}

/// Sets each entry in the inline table `key` of `table` (made when absent).
fn set<'a>(
    table: &mut Table,
    key: &str,
    entries: impl Iterator<Item = (&'a String, Value)>,
) -> Result<(), String> {
    let mut entries = entries.peekable();
    if entries.peek().is_none() {
        return Ok(());
    }
    let item = table
        .entry(key)
        .or_insert_with(|| Item::Value(Value::InlineTable(InlineTable::new())));
    let t = item
        .as_table_like_mut()
        .ok_or_else(|| format!("`{key}` of the [[root]] is not a table"))?;
    for (k, v) in entries {
        t.insert(&k.to_ascii_lowercase(), Item::Value(v));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(int: &[(&str, IntValue)]) -> RootValues {
        RootValues {
            int: int
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn adds_a_root_table_to_an_empty_file() {
        let v = RootValues {
            char: [("trans".to_string(), "T".to_string())].into(),
            ..values(&[("dim", IntValue::One(12))])
        };
        let text = with_values("", "bratu", &v).unwrap();
        assert_eq!(
            text,
            "[[root]]\nname = \"bratu\"\nint = { dim = 12 }\nchar = { trans = \"T\" }\n"
        );
        let c: config::Config = toml::from_str(&text).unwrap();
        assert_eq!(c.root[0].int["dim"], IntValue::One(12));
    }

    #[test]
    fn keeps_comments_and_other_roots_and_adds_to_the_named_one() {
        let before = "# the workspace\nfiles = [\"a.f\"]\n\n[[root]]\nname = \"other\"\n\n[[root]]\nname = \"Bratu\" # the example\nint = { parmax = 2 }\n";
        let v = values(&[
            ("dim", IntValue::One(12)),
            ("ipiv", IntValue::Many(vec![2, 3])),
        ]);
        let text = with_values(before, "bratu", &v).unwrap();
        assert!(
            text.starts_with("# the workspace\nfiles = [\"a.f\"]\n"),
            "{text}"
        );
        assert!(text.contains("name = \"Bratu\" # the example\n"), "{text}");
        let c: config::Config = toml::from_str(&text).unwrap();
        assert_eq!(c.root.len(), 2);
        assert!(c.root[0].int.is_empty());
        let r = c.root_named("bratu").unwrap();
        assert_eq!(r.int["parmax"], IntValue::One(2));
        assert_eq!(r.int["dim"], IntValue::One(12));
        assert_eq!(r.int["ipiv"], IntValue::Many(vec![2, 3]));
    }

    #[test]
    fn refuses_a_file_that_is_not_toml_or_whose_root_is_not_a_table_list() {
        assert!(with_values("[[root]\n", "a", &values(&[])).is_err());
        assert!(with_values("root = 3\n", "a", &values(&[])).is_err());
        let e = with_values(
            "[[root]]\nname = \"a\"\nint = 3\n",
            "a",
            &values(&[("n", IntValue::One(1))]),
        );
        assert!(e.unwrap_err().contains("`int`"));
    }

    #[test]
    fn save_writes_only_a_configuration_that_reads_back() {
        let dir = std::env::temp_dir().join(format!("dfort-config-edit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dfort.toml");
        save(&path, "f", &values(&[("n", IntValue::One(4))])).unwrap();
        assert_eq!(
            config::read(&path).unwrap().root[0].int["n"],
            IntValue::One(4)
        );
        // An unknown key makes the result unreadable: the file is kept.
        std::fs::write(&path, "[[root]]\nname = \"f\"\nsizes = {}\n").unwrap();
        assert!(save(&path, "f", &values(&[("n", IntValue::One(5))])).is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "[[root]]\nname = \"f\"\nsizes = {}\n"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
