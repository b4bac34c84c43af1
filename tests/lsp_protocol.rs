//! The language server driven in process with JSON-RPC messages: hover,
//! inlay hints, code actions, the files "Generate adjoint" writes and
//! diagnostics for the paper fixtures (Bratu, fixed form; Figure 1, free
//! form) compared against snapshots (regenerate with
//! `INSTA_UPDATE=always`), live edits, both position encodings, and
//! requests that must not bring the server down.

use crate::support::fixtures;
use dfort::lsp::client::ls_types::PublishDiagnosticsParams;
use dfort::lsp::client::Connection;
use dfort::lsp::{spawn_in_process, Options};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A fresh directory holding copies of the given paper fixtures.
fn workspace(name: &str, files: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dfort-lsp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in files {
        std::fs::copy(fixtures().join("papers").join(f), dir.join(f)).unwrap();
    }
    dir
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// VS Code's capabilities that matter here: CreateFile in workspace edits,
/// lazily resolved code-action edits, progress; UTF-16 positions.
fn vscode_caps() -> Value {
    json!({
        "workspace": {"workspaceEdit": {"documentChanges": true,
                                        "resourceOperations": ["create", "rename", "delete"]}},
        "textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}},
        "window": {"workDoneProgress": true}
    })
}

/// [`vscode_caps`] with `window/showDocument`, as VS Code sends them.
fn vscode_caps_showing() -> Value {
    let mut caps = vscode_caps();
    caps["window"]["showDocument"] = json!({"support": true});
    caps
}

/// Neovim 0.7's: plain `changes`, no resolve, and (here) UTF-8 offered.
fn neovim_caps() -> Value {
    json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}})
}

fn start(root: &Path, caps: Value, options: Options) -> Connection {
    let mut c = spawn_in_process(options).expect("server starts");
    let init = c
        .initialize(Some(&uri(root)), caps, json!({}))
        .expect("initialize answered");
    assert!(
        init["result"]["capabilities"]["hoverProvider"] == json!(true),
        "{init}"
    );
    c
}

fn open(c: &mut Connection, path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(path), "languageId": "fortran", "version": 1, "text": text}}),
    )
    .unwrap();
    text
}

/// The diagnostics published for `path` at `version` or later (skipping
/// those of other files and older versions).
fn diagnostics_at(c: &mut Connection, path: &Path, version: i64) -> Value {
    loop {
        let d = c
            .wait_notification("textDocument/publishDiagnostics")
            .unwrap();
        if d["uri"] == json!(uri(path)) && d["version"].as_i64().unwrap_or(0) >= version {
            return d["diagnostics"].clone();
        }
    }
}

fn diagnostics_of(c: &mut Connection, path: &Path) -> Value {
    diagnostics_at(c, path, 1)
}

/// (line, character) of the `nth` occurrence of `needle` on the line
/// holding `line_has`, in UTF-16 units (ASCII fixtures: also bytes).
fn pos(text: &str, line_has: &str, needle: &str) -> Value {
    let (l, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(line_has))
        .unwrap_or_else(|| panic!("no line with {line_has:?}"));
    let col = line.find(needle).unwrap_or_else(|| panic!("no {needle:?}"));
    json!({"line": l, "character": col})
}

fn hover_text(c: &mut Connection, path: &Path, at: Value) -> String {
    let r = c
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(path)}, "position": at}),
        )
        .unwrap();
    r["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no hover: {r}"))
        .to_string()
}

/// Replaces the temporary root by `ROOT` and the runtime's text by its size.
fn scrub(v: &Value, root: &Path) -> String {
    let runtime = dfort_codegen::adjoint::RUNTIME;
    let s = serde_json::to_string_pretty(v).unwrap();
    let s = s.replace(
        &serde_json::to_string(runtime).unwrap(),
        "\"<dfort_stack.f90>\"",
    );
    s.replace(&root.display().to_string(), "ROOT")
}

fn hints(c: &mut Connection, path: &Path) -> Value {
    let r = c
        .request(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri(path)},
                   "range": {"start": {"line": 0, "character": 0}, "end": {"line": 999, "character": 0}}}),
        )
        .unwrap();
    r["result"].clone()
}

fn code_actions(c: &mut Connection, path: &Path, at: Value) -> Value {
    let r = c
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri(path)}, "range": {"start": at, "end": at},
                   "context": {"diagnostics": []}}),
        )
        .unwrap();
    r["result"].clone()
}

#[test]
fn bratu_in_a_vscode_like_session() {
    let root = workspace("bratu", &["p000_bratu.f"]);
    let bratu = root.join("p000_bratu.f");
    let mut c = start(&root, vscode_caps_showing(), Options::default());
    let text = open(&mut c, &bratu);
    let diags = diagnostics_of(&mut c, &bratu);
    insta::assert_snapshot!("bratu_diagnostics", scrub(&diags, &root));

    // x read in the loop body: active, and why.
    let at_x = pos(&text, "F(i) = F(i)-2*x(i)", "x(i)");
    let hx = hover_text(&mut c, &bratu, at_x.clone());
    assert!(hx.contains("**active** before this statement"), "{hx}");
    insta::assert_snapshot!("bratu_hover_x", hx);
    // F(i) overwritten: active after, and TBR does not record it (paper
    // 000 App. A: none of F(i-1), F(i), F(i+1) is pushed).
    let hf = hover_text(&mut c, &bratu, pos(&text, "F(i) = F(i)-2*x(i)", "F(i)"));
    assert!(hf.contains("Not recorded"), "{hf}");
    insta::assert_snapshot!("bratu_hover_f", hf);

    let h = hints(&mut c, &bratu);
    insta::assert_snapshot!("bratu_inlay_hints", scrub(&h, &root));

    let actions = code_actions(&mut c, &bratu, at_x);
    insta::assert_snapshot!("bratu_code_actions", scrub(&actions, &root));
    let adjoint = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Generate adjoint of bratu")
        .expect("a Generate adjoint action")
        .clone();
    // The action runs the server's command, which writes the files itself
    // (no workspace edit for a client to leave unsaved), opens the
    // adjoint and says what it wrote.
    assert!(adjoint.get("edit").is_none(), "{adjoint}");
    assert_eq!(adjoint["command"]["command"], "dfort.generateAdjoint");
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": adjoint["command"]["command"], "arguments": adjoint["command"]["arguments"]}),
        )
        .unwrap();
    assert_eq!(r["result"]["written"], true, "{r}");
    assert_eq!(r["result"]["shown"], true, "{r}");
    let body = std::fs::read_to_string(root.join("p000_bratu_b.f90")).expect("the adjoint on disk");
    assert!(body.contains("subroutine bratu_b(dim, parmax, x, xb, prm, prmb, f, fb)"));
    assert!(body.contains("generated by dfort"), "{body}");
    assert!(root.join("dfort_stack.f90").is_file());
    assert!(c.applied_edits.is_empty(), "{:?}", c.applied_edits);
    // The same adjoint as `dfort adjoint --root bratu`: one request of the
    // analyses, one generator (only the comments differ: the header's
    // first lines, and the blocks' origins, which name the primal file
    // from where each derivative is written).
    let cli = root.join("cli");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dfort"))
        .arg("adjoint")
        .arg(&bratu)
        .args(["--root", "bratu", "--output-dir"])
        .arg(&cli)
        .output()
        .expect("dfort adjoint runs");
    assert!(out.status.success(), "{out:?}");
    let code = |text: &str| -> String {
        text.lines()
            .filter(|l| !l.trim_start().starts_with('!'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let by_cli = std::fs::read_to_string(cli.join("p000_bratu_b.f90")).unwrap();
    assert_eq!(code(&body), code(&by_cli));
    let origins = |text: &str, file: &str| {
        text.lines()
            .filter(|l| l.trim_start().starts_with(&format!("! {file}:")))
            .count()
    };
    assert!(origins(&body, "p000_bratu.f") > 5, "{body}");
    assert_eq!(
        origins(&body, "p000_bratu.f"),
        origins(&by_cli, "../p000_bratu.f"),
        "{by_cli}"
    );
    let shown: Vec<&Value> = c
        .server_requests
        .iter()
        .filter(|m| m["method"] == "window/showDocument")
        .collect();
    assert_eq!(shown.len(), 1, "{:?}", c.server_requests);
    assert_eq!(
        shown[0]["params"]["uri"],
        uri(&root.join("p000_bratu_b.f90"))
    );
    assert_eq!(shown[0]["params"]["takeFocus"], true);
    let said = c
        .notifications
        .iter()
        .filter(|m| m["method"] == "window/showMessage")
        .map(|m| {
            m["params"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect::<Vec<_>>();
    assert!(
        said.iter()
            .any(|m| m.contains("wrote p000_bratu_b.f90, dfort_stack.f90")),
        "{said:?}"
    );
    c.shutdown().unwrap();
}

#[test]
fn figure_1_in_a_neovim_like_session() {
    let root = workspace("fig1", &["p000_fig1.f90"]);
    let fig1 = root.join("p000_fig1.f90");
    let mut c = start(&root, neovim_caps(), Options::default());
    let init_encoding = {
        // UTF-8 was offered, so it is used.
        let r = c
            .request(
                "textDocument/hover",
                json!({"textDocument": {"uri": uri(&fig1)},
            "position": {"line": 0, "character": 0}}),
            )
            .unwrap();
        r["result"].clone()
    };
    assert_eq!(init_encoding, Value::Null, "file not open yet: no hover");
    let text = open(&mut c, &fig1);
    let diags = diagnostics_of(&mut c, &fig1);
    insta::assert_snapshot!("fig1_diagnostics", scrub(&diags, &root));
    let at = pos(&text, "x(i) = j + sin(x(i))", "x(i)");
    let hx = hover_text(&mut c, &fig1, at.clone());
    assert!(hx.contains("Recorded for the adjoint (TBR)"), "{hx}");
    insta::assert_snapshot!("fig1_hover_x", hx);
    let hi = hover_text(&mut c, &fig1, pos(&text, "i = i + 1", "i = "));
    assert!(hi.contains("integer"), "{hi}");
    let h = hints(&mut c, &fig1);
    let labels: Vec<&str> = h
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["label"].as_str())
        .collect();
    assert!(labels.contains(&"push(x)"), "{labels:?}");
    assert!(labels.contains(&"push(trips)"), "{labels:?}");
    assert!(labels.contains(&"push(branch)"), "{labels:?}");
    insta::assert_snapshot!("fig1_inlay_hints", scrub(&h, &root));
    let actions = code_actions(&mut c, &fig1, at);
    let adjoint = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Generate adjoint of tbr_fig1")
        .expect("a Generate adjoint action");
    // Every client gets the same command: the server writes the files.
    assert!(adjoint.get("edit").is_none(), "{adjoint}");
    assert_eq!(adjoint["command"]["command"], "dfort.generateAdjoint");
    assert_eq!(adjoint["command"]["arguments"][1], "tbr_fig1");
    insta::assert_snapshot!("fig1_code_actions", scrub(&actions, &root));
    c.shutdown().unwrap();
}

/// Edits are applied incrementally and the diagnostics follow them.
#[test]
fn diagnostics_follow_live_edits() {
    let root = workspace("edits", &["p000_fig1.f90"]);
    let fig1 = root.join("p000_fig1.f90");
    let mut c = start(&root, json!({}), Options::default());
    let text = open(&mut c, &fig1);
    assert_eq!(diagnostics_of(&mut c, &fig1), json!([]));
    let change = |c: &mut Connection, version: i32, at: Value, len: usize, new: &str| {
        let l = at["line"].as_u64().unwrap();
        let ch = at["character"].as_u64().unwrap();
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&fig1), "version": version},
                   "contentChanges": [{"range": {"start": at, "end": {"line": l, "character": ch + len as u64}},
                                       "text": new}]}),
        )
        .unwrap();
    };
    // sin -> abs: a kink on an active value.
    let at = pos(&text, "x(i) = j + sin(x(i))", "sin");
    change(&mut c, 2, at.clone(), 3, "abs");
    let d = diagnostics_at(&mut c, &fig1, 2);
    assert_eq!(d[0]["code"], "non-differentiable", "{d}");
    assert_eq!(d[0]["severity"], 2);
    assert!(d[0]["message"]
        .as_str()
        .unwrap()
        .contains("`abs` of the active value `x`"));
    // Deleting `end do` breaks the unit; restoring it heals it.
    let end_do = pos(&text, "end do", "end do");
    change(&mut c, 3, end_do.clone(), 6, "");
    let d = diagnostics_at(&mut c, &fig1, 3);
    assert!(
        d.as_array().unwrap().iter().any(|x| x["severity"] == 1),
        "{d}"
    );
    // An edit that changes nothing, read as a typed client reads it (the
    // benchmark's client): the same diagnostics as the JSON tree gave.
    change(&mut c, 4, end_do.clone(), 0, "");
    let typed = loop {
        let p: PublishDiagnosticsParams = c
            .wait_notification_as("textDocument/publishDiagnostics")
            .unwrap();
        if p.version.unwrap_or(0) >= 4 {
            break p;
        }
    };
    assert_eq!(typed.uri.as_str(), uri(&fig1));
    assert_eq!(serde_json::to_value(&typed.diagnostics).unwrap(), d);
    change(&mut c, 5, end_do, 0, "end do");
    change(&mut c, 6, at, 3, "sin");
    // The last change's diagnostics: clean again.
    let last = diagnostics_at(&mut c, &fig1, 6);
    assert_eq!(last, json!([]));
}

/// UTF-16 and UTF-8 positions after non-ASCII text, on a CRLF file.
#[test]
fn positions_in_both_encodings_on_a_crlf_file() {
    let root = workspace("enc", &[]);
    let f = root.join("enc.f90");
    let line = "  y = x*len('é𝄞') + x";
    let src = format!("subroutine s(x, y)\r\n  ! é𝄞 coefficients\r\n  real(8) :: x, y\r\n  !$ad independent(x)\r\n  !$ad dependent(y)\r\n{line}\r\nend subroutine s\r\n");
    std::fs::write(&f, src).unwrap();
    let last_x = line.rfind('x').unwrap();
    let utf16 = line[..last_x].encode_utf16().count() as u64;
    let utf8 = last_x as u64;
    assert_ne!(utf16, utf8);
    for (caps, col) in [
        (json!({}), utf16),
        (json!({"general": {"positionEncodings": ["utf-8"]}}), utf8),
    ] {
        let mut c = start(&root, caps, Options::default());
        open(&mut c, &f);
        assert_eq!(diagnostics_of(&mut c, &f), json!([]));
        let r = c
            .request(
                "textDocument/hover",
                json!({"textDocument": {"uri": uri(&f)}, "position": {"line": 5, "character": col}}),
            )
            .unwrap();
        let v = r["result"]["contents"]["value"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(v.starts_with("**x**") && v.contains("**active**"), "{r}");
        assert_eq!(
            r["result"]["range"]["start"]["character"],
            json!(col),
            "{r}"
        );
        assert_eq!(
            r["result"]["range"]["end"]["character"],
            json!(col + 1),
            "{r}"
        );
        c.shutdown().unwrap();
    }
}

/// Bad input gets errors or empty answers, and the server keeps serving.
#[test]
fn malformed_requests_and_faults_do_not_stop_the_server() {
    let root = workspace("robust", &["p000_fig1.f90"]);
    let fig1 = root.join("p000_fig1.f90");
    let options = Options {
        inject_panic: Some("document symbols"),
        ..Options::default()
    };
    let mut c = start(&root, json!({}), options);
    let text = open(&mut c, &fig1);
    // Not JSON at all, then JSON that is no request.
    c.send_raw(b"Content-Length: 9\r\n\r\n{garbage}").unwrap();
    c.send(&json!({"jsonrpc": "2.0", "id": 900})).unwrap();
    let unknown = c.request("dfort/noSuchMethod", json!({})).unwrap();
    assert!(unknown.get("error").is_some(), "{unknown}");
    let bad = c
        .request("textDocument/hover", json!({"textDocument": 3}))
        .unwrap();
    assert!(bad.get("error").is_some(), "{bad}");
    for at in [
        json!({"line": 9999, "character": 0}),
        json!({"line": 3, "character": 9999}),
        json!({"line": 0, "character": 4294967295u64}),
    ] {
        for method in [
            "textDocument/hover",
            "textDocument/references",
            "textDocument/documentHighlight",
            "textDocument/completion",
            "textDocument/signatureHelp",
        ] {
            let mut params = json!({"textDocument": {"uri": uri(&fig1)}, "position": at});
            if method.ends_with("references") {
                params["context"] = json!({"includeDeclaration": true});
            }
            let r = c.request(method, params).unwrap();
            assert!(r.get("error").is_none(), "{method}: {r}");
        }
        // Nothing to rename there: an error that says so.
        let r = c
            .request(
                "textDocument/prepareRename",
                json!({"textDocument": {"uri": uri(&fig1)}, "position": at}),
            )
            .unwrap();
        assert!(r["error"]["message"].as_str().is_some(), "{r}");
    }
    let r = c
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": "file:///no/such/file.f90"}, "position": {"line": 0, "character": 0}}),
        )
        .unwrap();
    assert_eq!(r["result"], Value::Null);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": "file:///no/such/file.f90", "version": 2},
               "contentChanges": [{"range": {"start": {"line": 5, "character": 0}, "end": {"line": 1, "character": 0}}, "text": "x"}]}),
    )
    .unwrap();
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "dfort.generateAdjoint", "arguments": [42]}),
        )
        .unwrap();
    assert!(r.get("error").is_some(), "{r}");
    // A panic inside one request is answered with an error...
    let r = c
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri(&fig1)}}),
        )
        .unwrap();
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("internal error in document symbols"),
        "{r}"
    );
    // ...and the server still answers.
    let h = hover_text(&mut c, &fig1, pos(&text, "x(i) = j + sin(x(i))", "x(i)"));
    assert!(h.starts_with("**x**"), "{h}");
    c.shutdown().unwrap();
}

/// `workspace/executeCommand dfort.generateTangent` writes the tangent
/// next to the file; navigation finds units across files.
#[test]
fn generate_command_and_navigation() {
    let root = workspace("cmd", &["p000_fig1.f90", "p000_bratu.f"]);
    let fig1 = root.join("p000_fig1.f90");
    let mut c = start(&root, vscode_caps(), Options::default());
    let text = open(&mut c, &fig1);
    let at = pos(&text, "x(i) = j + sin(x(i))", "x(i)");
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "dfort.generateTangent", "arguments": [uri(&fig1), at]}),
        )
        .unwrap();
    assert_eq!(r["result"]["written"], true, "{r}");
    assert!(r["result"]["files"][0]
        .as_str()
        .unwrap()
        .ends_with("/p000_fig1_d.f90"));
    assert!(root.join("p000_fig1_d.f90").is_file());
    // VS Code's capabilities here do not offer showDocument: nothing is
    // asked of the client.
    assert_eq!(r["result"]["shown"], false, "{r}");
    // `check` is defined below in the same file; `bratu` in another file
    // (indexed at start-up) is a workspace symbol.
    let d = c
        .request(
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&fig1)}, "position": pos(&text, "do while (check(j))", "check")}),
        )
        .unwrap();
    let target = pos(&text, "logical function check(j)", "check");
    assert_eq!(d["result"][0]["range"]["start"], target, "{d}");
    let s = c
        .request("workspace/symbol", json!({"query": "brat"}))
        .unwrap();
    assert_eq!(s["result"][0]["name"], "bratu", "{s}");
    assert!(s["result"][0]["location"]["uri"]
        .as_str()
        .unwrap()
        .ends_with("p000_bratu.f"));
    let syms = c
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri(&fig1)}}),
        )
        .unwrap();
    let names: Vec<&str> = syms["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["tbr_fig1", "check"]);
    c.shutdown().unwrap();
}

/// Go to Implementation on a primal statement lists its blocks in the
/// adjoint and the tangent written beside it (each headed by a comment
/// naming the statement); Go to Definition on such a comment comes back.
#[test]
fn implementation_and_definition_link_a_statement_and_its_blocks() {
    let root = workspace("origins", &["p000_bratu.f"]);
    let bratu = root.join("p000_bratu.f");
    let mut c = start(&root, vscode_caps(), Options::default());
    let text = open(&mut c, &bratu);
    let at = pos(&text, "F(i) = F(i)-2*x(i)", "x(i)");
    for cmd in ["dfort.generateAdjoint", "dfort.generateTangent"] {
        let r = c
            .request(
                "workspace/executeCommand",
                json!({"command": cmd, "arguments": [uri(&bratu), at]}),
            )
            .unwrap();
        assert_eq!(r["result"]["written"], true, "{r}");
    }
    let statement = at["line"].as_u64().unwrap();
    let blocks = |c: &mut Connection, at: Value| -> Vec<(String, u64)> {
        let r = c
            .request(
                "textDocument/implementation",
                json!({"textDocument": {"uri": uri(&bratu)}, "position": at}),
            )
            .unwrap();
        r["result"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|l| {
                        (
                            l["uri"].as_str().unwrap().to_string(),
                            l["range"]["start"]["line"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let found = blocks(&mut c, at.clone());
    // One block in the adjoint (the statement is in a replayed loop), one
    // in the tangent.
    let files: Vec<&str> = found
        .iter()
        .map(|(u, _)| u.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(files, ["p000_bratu_b.f90", "p000_bratu_d.f90"], "{found:?}");
    let heading = format!("! p000_bratu.f:{}: F(i) = F(i)-2*x(i)", statement + 1);
    for (u, line) in &found {
        let path = PathBuf::from(u.strip_prefix("file://").unwrap());
        let derivative = std::fs::read_to_string(&path).unwrap();
        let l = derivative.lines().nth(*line as usize).unwrap();
        assert!(l.trim_start().starts_with(&heading), "{u}:{line}: {l}");
    }
    // The cursor in the statement's indentation: the same blocks (not
    // the enclosing loop's).
    let indented = json!({"line": statement, "character": 0});
    assert_eq!(blocks(&mut c, indented), found);
    // The statement's continuation line belongs to it.
    let first = pos(&text, "F(i-1) = F(i-1)+x(i)", "F(i-1)");
    let continued = json!({"line": first["line"].as_u64().unwrap() + 1, "character": 8});
    let from_first = blocks(&mut c, first);
    assert_eq!(from_first.len(), 2, "{from_first:?}");
    assert_eq!(blocks(&mut c, continued), from_first);
    // A comment line of the primal has no block.
    assert!(blocks(&mut c, pos(&text, "C independent variables", "independent")).is_empty());
    // Back: Go to Definition on the adjoint's comment.
    let adjoint = root.join("p000_bratu_b.f90");
    open(&mut c, &adjoint);
    let (_, line) = &found[0];
    let d = c
        .request(
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&adjoint)}, "position": {"line": line, "character": 6}}),
        )
        .unwrap();
    assert_eq!(d["result"][0]["uri"], json!(uri(&bratu)), "{d}");
    assert_eq!(d["result"][0]["range"]["start"]["line"], statement, "{d}");
    c.shutdown().unwrap();
}

/// "Verify derivatives" runs `dfort verify`, reports `$/progress` while it
/// runs to a client that shows progress, and says the result
/// (`window/showMessage`).
#[test]
fn verify_reports_progress_and_its_result() {
    let root = workspace("verify", &["p000_fig1.f90"]);
    let fig1 = root.join("p000_fig1.f90");
    let options = Options {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_dfort")),
        ..Options::default()
    };
    let mut c = start(&root, vscode_caps(), options);
    open(&mut c, &fig1);
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "dfort.verify", "arguments": [uri(&fig1), "tbr_fig1"]}),
        )
        .unwrap();
    assert_eq!(r["result"]["ok"], true, "{r}");
    assert!(
        c.server_requests
            .iter()
            .any(|m| m["method"] == "window/workDoneProgress/create"),
        "{:?}",
        c.server_requests
    );
    let kinds: Vec<&str> = c
        .notifications
        .iter()
        .filter(|m| m["method"] == "$/progress")
        .filter(|m| m["params"]["token"] == "dfort-verify-tbr_fig1")
        .filter_map(|m| m["params"]["value"]["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["begin", "end"], "{:?}", c.notifications);
    let said: Vec<&str> = c
        .notifications
        .iter()
        .filter(|m| m["method"] == "window/showMessage")
        .filter_map(|m| m["params"]["message"].as_str())
        .collect();
    assert!(
        said.iter()
            .any(|m| m.contains("tbr_fig1: adjoint relative error")),
        "{said:?}"
    );
    c.shutdown().unwrap();
}

/// "Verify derivatives" on the shipped Bratu example, whose integer
/// arguments have no values yet: a client that does not ask the user is
/// told the `dfort.toml` table that gives them; one that asks gets the
/// list; the values it then sends are saved in `dfort.toml` and used.
#[test]
fn verify_asks_for_missing_values_and_saves_them_in_dfort_toml() {
    let root = workspace("verify-values", &["p000_bratu.f"]);
    let bratu = root.join("p000_bratu.f");
    let options = Options {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_dfort")),
        ..Options::default()
    };
    let mut c = start(&root, vscode_caps(), options);
    open(&mut c, &bratu);
    let verify = |c: &mut Connection, extra: Option<Value>| {
        let mut arguments = vec![json!(uri(&bratu)), json!("bratu")];
        arguments.extend(extra);
        c.request(
            "workspace/executeCommand",
            json!({"command": "dfort.verify", "arguments": arguments}),
        )
        .unwrap()
    };
    let said = |c: &Connection| -> Vec<String> {
        c.notifications
            .iter()
            .filter(|m| m["method"] == "window/showMessage")
            .filter_map(|m| m["params"]["message"].as_str().map(String::from))
            .collect()
    };
    // No command-line advice: the dfort.toml table.
    let r = verify(&mut c, None);
    assert_eq!(r["result"]["ok"], false, "{r}");
    let told = said(&c);
    let last = told.last().expect("a message");
    assert!(!last.contains("--int"), "{last}");
    assert!(
        last.contains("the integer argument `dim`, the integer argument `parmax`"),
        "{last}"
    );
    assert!(
        last.contains(&root.join("dfort.toml").display().to_string()),
        "{last}"
    );
    assert!(
        last.contains("[[root]]\n  name = \"bratu\"\n  int = { dim = VALUE, parmax = VALUE }"),
        "{last}"
    );
    // A client that asks: the list, and no message.
    let r = verify(&mut c, Some(json!({"ask": true})));
    let missing: Vec<(&str, &str, &str)> = r["result"]["missing"]
        .as_array()
        .expect("missing values")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap(),
                m["key"].as_str().unwrap(),
                m["what"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        missing,
        [
            ("dim", "int", "the integer argument `dim`"),
            ("parmax", "int", "the integer argument `parmax`")
        ]
    );
    assert_eq!(said(&c).len(), told.len(), "{:?}", said(&c));
    assert!(!root.join("dfort.toml").exists());
    // What the user typed: saved, then used.
    let r = verify(
        &mut c,
        Some(json!({"ask": true, "values": {"int": {"dim": 12, "parmax": 2}}})),
    );
    assert_eq!(r["result"]["ok"], true, "{r}");
    let toml = std::fs::read_to_string(root.join("dfort.toml")).unwrap();
    assert_eq!(
        toml,
        "[[root]]\nname = \"bratu\"\nint = { dim = 12, parmax = 2 }\n"
    );
    assert!(
        said(&c)
            .iter()
            .any(|m| m.contains("bratu: adjoint relative error")),
        "{:?}",
        said(&c)
    );
    // Values that do not fit the table are refused by name.
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "dfort.verify", "arguments": [uri(&bratu), "bratu", {"values": {"ints": {}}}]}),
        )
        .unwrap();
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("ints"),
        "{r}"
    );
    c.shutdown().unwrap();
}

/// Whether `workspace/symbol` finds a symbol named `name`.
fn has_workspace_symbol(c: &mut Connection, name: &str) -> bool {
    let r = c
        .request("workspace/symbol", json!({"query": name}))
        .unwrap();
    r["result"]
        .as_array()
        .map(|a| a.iter().any(|s| s["name"] == name))
        .unwrap_or(false)
}

/// Waits (up to 5 s) for the workspace's indexing to find `name`.
fn wait_for_workspace_symbol(c: &mut Connection, name: &str) {
    for _ in 0..100 {
        if has_workspace_symbol(c, name) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A workspace whose `dfort.toml` lists its files (as `dfort import`
/// writes it from a build) is indexed from that list, not by scanning the
/// folder: a file in `build/` (which the scan skips) is read, one not
/// listed is not.
#[test]
fn the_files_dfort_toml_lists_are_the_workspace() {
    let root = workspace("listed", &["p000_fig1.f90"]);
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::copy(
        fixtures().join("papers").join("p000_bratu.f"),
        root.join("build").join("p000_bratu.f"),
    )
    .unwrap();
    std::fs::write(
        root.join("dfort.toml"),
        "files = [\"build/p000_bratu.f\"]\n",
    )
    .unwrap();
    let mut c = start(&root, vscode_caps(), Options::default());
    let find = has_workspace_symbol;
    wait_for_workspace_symbol(&mut c, "bratu");
    assert!(find(&mut c, "bratu"));
    assert!(!find(&mut c, "tbr_fig1"));
    c.shutdown().unwrap();
}

/// With a client that lets servers register file watchers, files changed
/// on disk outside the editor (created, changed, deleted) are re-read.
#[test]
fn files_changed_on_disk_are_reread() {
    let root = workspace("watch", &["p000_fig1.f90"]);
    let mut caps = vscode_caps();
    caps["workspace"]["didChangeWatchedFiles"] = json!({"dynamicRegistration": true});
    let mut c = start(&root, caps, Options::default());
    let find = has_workspace_symbol;
    // Indexing runs after the watchers are registered: wait for it.
    wait_for_workspace_symbol(&mut c, "tbr_fig1");
    assert!(find(&mut c, "tbr_fig1"));
    let reg = c
        .server_requests
        .iter()
        .find(|r| r["method"] == "client/registerCapability")
        .expect("watchers registered");
    let globs = reg["params"]["registrations"][0]["registerOptions"]["watchers"].to_string();
    assert!(
        globs.contains("**/*.f90") && globs.contains("**/*.f") && globs.contains("dfort.toml"),
        "{globs}"
    );
    let extra = root.join("extra.f90");
    let notify = |c: &mut Connection, typ: u32| {
        c.notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [{"uri": uri(&extra), "type": typ}]}),
        )
        .unwrap();
    };
    std::fs::write(
        &extra,
        "subroutine added_later(x)\n  real :: x\n  x = 2*x\nend\n",
    )
    .unwrap();
    notify(&mut c, 1);
    assert!(find(&mut c, "added_later"));
    std::fs::write(&extra, "subroutine renamed_on_disk(x)\n  real :: x\nend\n").unwrap();
    notify(&mut c, 2);
    assert!(find(&mut c, "renamed_on_disk") && !find(&mut c, "added_later"));
    std::fs::remove_file(&extra).unwrap();
    notify(&mut c, 3);
    assert!(!find(&mut c, "renamed_on_disk"));
    assert!(find(&mut c, "tbr_fig1"));
    c.shutdown().unwrap();
}

/// Address recovery (paper 003) in the editor, on ICCG (Figure 14 (a)):
/// the integer division `ii = ii/2` makes `ii` stored each iteration — an
/// inlay hint, the hover and an information diagnostic say so, next to
/// the indices recovered by inversion and recomputation; replacing the
/// division by a subtraction makes `ii` inverted, live; the
/// `inlayHints.address` setting switches the hints off.
#[test]
fn address_recovery_in_hints_hover_and_diagnostics() {
    let root = workspace("iccg", &["p003_fig14a_iccg.f90"]);
    let iccg = root.join("p003_fig14a_iccg.f90");
    let mut c = start(&root, vscode_caps(), Options::default());
    let text = open(&mut c, &iccg);
    let address_diags = |d: &Value| -> Vec<Value> {
        d.as_array()
            .unwrap()
            .iter()
            .filter(|x| x["code"] == "address-stored")
            .cloned()
            .collect()
    };
    let d = diagnostics_of(&mut c, &iccg);
    let stored = address_diags(&d);
    assert_eq!(stored.len(), 1, "{d}");
    assert_eq!(
        stored[0]["message"],
        "index ii cannot be recovered by inversion: integer division at line 20; it is stored each iteration"
    );
    assert_eq!(stored[0]["severity"], 3, "information");
    let div = pos(&text, "ii = ii/2", "ii/2");
    assert_eq!(stored[0]["range"]["start"], div);
    insta::assert_snapshot!("iccg_diagnostics", scrub(&d, &root));

    let labels_at = |h: &Value| -> Vec<(u64, String)> {
        h.as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["position"]["line"].as_u64().unwrap(),
                    x["label"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    // The line that is `needle` (trimmed) or else holds it.
    let line_of = |needle: &str| {
        let lines: Vec<&str> = text.lines().collect();
        lines
            .iter()
            .position(|l| l.trim() == needle)
            .or_else(|| lines.iter().position(|l| l.contains(needle)))
            .unwrap_or_else(|| panic!("no line {needle:?}")) as u64
    };
    let h = hints(&mut c, &iccg);
    let labels = labels_at(&h);
    for (line, label) in [
        // Hints after the same text end with `;` but the last.
        (line_of("do"), "saves ii, ipntp;"),
        (line_of("do"), "ipntp ← ipntp - ii"),
        (line_of("ipnt = ipntp"), "ipnt ← ipntp recomputed"),
        (line_of("ii = ii/2"), "ii stored: integer division"),
        (line_of("do k = ipnt+1"), "i ← i - 1"),
    ] {
        assert!(
            labels.contains(&(line, label.to_string())),
            "no {label:?} on line {line}: {labels:?}"
        );
    }
    // After the statement, before nothing: at the end of `ii = ii/2`.
    let ii_hint = h
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["label"] == "ii stored: integer division")
        .unwrap();
    let end = text
        .lines()
        .nth(line_of("ii = ii/2") as usize)
        .unwrap()
        .len();
    assert_eq!(ii_hint["position"]["character"], end, "{ii_hint}");
    assert_eq!(ii_hint["paddingLeft"], true);
    insta::assert_snapshot!("iccg_inlay_hints", scrub(&h, &root));

    let at_ii = pos(&text, "ii = ii/2", "ii");
    let hover = hover_text(&mut c, &iccg, at_ii.clone());
    assert!(
        hover.contains("**Address recovery** (loop at line 17)")
            && hover.contains("stored each iteration: integer division at line 20"),
        "{hover}"
    );
    insta::assert_snapshot!("iccg_hover_ii", hover);

    // ii = ii/2 → ii = ii - 1: invertible now.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&iccg), "version": 2},
               "contentChanges": [{"range": {"start": div, "end": {"line": div["line"], "character": div["character"].as_u64().unwrap() + 4}},
                                   "text": "ii - 1"}]}),
    )
    .unwrap();
    let d = diagnostics_at(&mut c, &iccg, 2);
    assert!(address_diags(&d).is_empty(), "{d}");
    let labels = labels_at(&hints(&mut c, &iccg));
    assert!(
        labels.contains(&(line_of("do"), "ii ← ii + 1;".to_string())),
        "{labels:?}"
    );
    assert!(
        !labels.iter().any(|(_, l)| l.contains("stored")),
        "{labels:?}"
    );
    let hover = hover_text(&mut c, &iccg, at_ii);
    assert!(
        hover.contains("inverted — ii ← ii + 1 (inverting line 20)"),
        "{hover}"
    );

    // The setting switches the address hints off (and only them).
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"dfort": {"inlayHints": {"address": false}}}}),
    )
    .unwrap();
    let labels = labels_at(&hints(&mut c, &iccg));
    assert!(
        !labels
            .iter()
            .any(|(_, l)| l.contains('←') || l.starts_with("saves")),
        "{labels:?}"
    );
    assert!(labels.iter().any(|(_, l)| l == "push(x)"), "{labels:?}");
    c.shutdown().unwrap();
}

/// The first diagnostics published on `main` and on the header it
/// includes.
fn diagnostics_of_file_and_header(
    c: &mut Connection,
    main: &Path,
    header_uri: &str,
) -> (Value, Value) {
    let (mut mine, mut theirs) = (None, None);
    while mine.is_none() || theirs.is_none() {
        let d = c
            .wait_notification("textDocument/publishDiagnostics")
            .unwrap();
        if d["uri"] == json!(uri(main)) {
            mine = Some(d["diagnostics"].clone());
        } else if d["uri"] == json!(header_uri) {
            theirs = Some(d["diagnostics"].clone());
        }
    }
    (mine.unwrap(), theirs.unwrap())
}

/// A `.F` file through the C preprocessor in the editor: `-I`/`-D` from
/// the settings, a problem in an included header published on the header,
/// the file's own positions (after a header and a macro) for diagnostics
/// and hover.
#[test]
fn preprocessed_files_report_header_problems_on_the_header() {
    let root = workspace("cpp", &[]);
    std::fs::create_dir_all(root.join("inc")).unwrap();
    let header = root.join("inc").join("decls.h");
    std::fs::write(
        &header,
        "      REAL*8 a, b\n      COMMON /ab/ a, b\n      REAL*8 c = = 1\n",
    )
    .unwrap();
    let main = root.join("main.F");
    std::fs::write(
        &main,
        "#define TWICE(x) (2 _d 0*(x))\n      SUBROUTINE s(y)\n#include \"decls.h\"\n      REAL*8 y\n      y = TWICE(a) + b\n      y = y 2\n      END\n",
    )
    .unwrap();
    let mut c = spawn_in_process(Options::default()).expect("server starts");
    c.initialize(
        Some(&uri(&root)),
        vscode_caps(),
        json!({"preprocessor": {"include": ["inc"], "define": {"_d": "D"}}}),
    )
    .expect("initialize answered");
    let text = open(&mut c, &main);
    let header_uri = uri(&std::fs::canonicalize(&header).unwrap());
    let (mine, theirs) = diagnostics_of_file_and_header(&mut c, &main, &header_uri);
    // main.F: only `y = y 2` (line 5), at its column.
    let mine = mine.as_array().unwrap();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(
        mine[0]["range"]["start"],
        json!({"line": 5, "character": 12})
    );
    // The header: its third line.
    let theirs = theirs.as_array().unwrap();
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0]["range"]["start"]["line"], 2, "{theirs:?}");
    assert_eq!(theirs[0]["code"], "syntax-error");
    // Hover on `b`, after the header and the macro use.
    let line = text.lines().nth(4).unwrap();
    assert!(line.ends_with("TWICE(a) + b"), "{line}");
    let at = json!({"line": 4, "character": line.len() - 1});
    let h = hover_text(&mut c, &main, at);
    assert!(h.contains("**b**") && h.contains("COMMON /ab/"), "{h}");
    // Hover on the macro use: its expansion there and where it is defined.
    let at = json!({"line": 4, "character": line.find("TWICE").unwrap() + 2});
    let h = hover_text(&mut c, &main, at);
    assert!(
        h.contains("**TWICE**") && h.contains("(2 D 0*(a))") && h.contains("main.F:1"),
        "{h}"
    );
}

/// Issue 18: what an `#if` leaves out is published as faded hints (tag
/// `unnecessary`), in the document and in its headers; go to definition
/// on an `#include` line opens the header, on a macro its `#define`.
#[test]
fn inactive_regions_and_definitions_of_includes_and_macros() {
    let root = workspace("cpp_nav", &[]);
    std::fs::create_dir_all(root.join("inc")).unwrap();
    let header = root.join("inc").join("OPTS.h");
    std::fs::write(
        &header,
        "#define _RL Real*8\n#ifdef ALLOW_TIDES\n      INTEGER ntides\n#endif\n",
    )
    .unwrap();
    let main = root.join("flux.F");
    std::fs::write(
        &main,
        "#include \"OPTS.h\"\n      SUBROUTINE flux(x, y)\n      _RL x, y\n#ifdef ALLOW_TIDES\n      y = x*ntides\n#else\n      y = 2*x\n#endif\n      END\n",
    )
    .unwrap();
    let mut c = spawn_in_process(Options::default()).expect("server starts");
    c.initialize(
        Some(&uri(&root)),
        vscode_caps(),
        json!({"preprocessor": {"include": ["inc"]}}),
    )
    .expect("initialize answered");
    open(&mut c, &main);
    let header_uri = uri(&std::fs::canonicalize(&header).unwrap());
    let (mine, theirs) = diagnostics_of_file_and_header(&mut c, &main, &header_uri);
    let mine = mine.as_array().unwrap();
    assert_eq!(mine.len(), 1, "only the inactive region: {mine:?}");
    assert_eq!(mine[0]["severity"], 4, "a hint");
    assert_eq!(mine[0]["tags"], json!([1]), "unnecessary: drawn faded");
    assert_eq!(mine[0]["code"], "inactive-region");
    assert_eq!(
        mine[0]["range"],
        json!({"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 18}})
    );
    assert!(
        mine[0]["message"]
            .as_str()
            .unwrap()
            .contains("after `#ifdef ALLOW_TIDES`"),
        "{mine:?}"
    );
    assert_eq!(theirs.as_array().unwrap().len(), 1, "{theirs}");
    assert_eq!(theirs[0]["range"]["start"]["line"], 2, "{theirs}");
    // Definition on the #include line: the header.
    let d = c
        .request(
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&main)}, "position": {"line": 0, "character": 12}}),
        )
        .unwrap();
    assert_eq!(d["result"][0]["uri"], json!(header_uri), "{d}");
    // Definition on the macro `_RL`: its #define line in the header.
    let d = c
        .request(
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&main)}, "position": {"line": 2, "character": 7}}),
        )
        .unwrap();
    assert_eq!(d["result"][0]["uri"], json!(header_uri), "{d}");
    assert_eq!(
        d["result"][0]["range"],
        json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 18}}),
        "{d}"
    );
    // The tangent the editor writes says, as `dfort tangent` does, that it
    // holds the preprocessed code and with which settings.
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "dfort.generateTangent", "arguments": [uri(&main), "flux"]}),
        )
        .unwrap();
    assert_eq!(r["result"]["written"], true, "{r}");
    let tangent = std::fs::read_to_string(root.join("flux_d.f90")).expect("the tangent on disk");
    let said = format!(
        "C preprocessor and INCLUDE lines read with -I{} in flux.F",
        root.join("inc").display()
    );
    assert!(tangent.contains(&said), "{tangent}");
    // The header changes on disk: the document that includes it is
    // preprocessed again (now the #else branch is the inactive one).
    std::fs::write(
        &header,
        "#define _RL Real*8\n#define ALLOW_TIDES\n#ifdef ALLOW_TIDES\n      INTEGER ntides\n#endif\n",
    )
    .unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": header_uri, "type": 2}]}),
    )
    .unwrap();
    // Publications made before the change may still be on their way.
    let mut mine = Value::Null;
    for _ in 0..20 {
        let d = c
            .wait_notification("textDocument/publishDiagnostics")
            .unwrap();
        if d["uri"] == json!(uri(&main)) {
            mine = d["diagnostics"].clone();
            if mine[0]["range"]["start"]["line"] != 4 {
                break;
            }
        }
    }
    let mine = mine.as_array().unwrap();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["code"], "inactive-region");
    assert_eq!(mine[0]["range"]["start"]["line"], 6, "{mine:?}");
    assert!(
        mine[0]["message"]
            .as_str()
            .unwrap()
            .contains("after `#else`"),
        "{mine:?}"
    );
}

/// Issue 42: a hover on a macro an `#ifdef`/`#if` tests says whether it
/// is defined there and what the directive decided; one on a line an
/// `#if` leaves out says dfort does not read it (not what the name is
/// elsewhere in the unit). Both source forms.
#[test]
fn hover_on_preprocessor_conditions_and_left_out_lines_in_both_forms() {
    let root = workspace("cpp_hover", &[]);
    std::fs::create_dir_all(root.join("inc")).unwrap();
    std::fs::write(root.join("inc").join("OPTS.h"), "#define ALLOW_KPP 1\n").unwrap();
    let fixed = root.join("flux.F");
    std::fs::write(
        &fixed,
        "#include \"OPTS.h\"\n      SUBROUTINE flux(x, y)\n      REAL*8 x, y\n#ifdef ALLOW_TIDES\n      y = x*x\n#else\n      y = 2*x\n#endif\n      END\n",
    )
    .unwrap();
    let free = root.join("mix.F90");
    std::fs::write(
        &free,
        "subroutine mix(x, y)\n  real(8), intent(in) :: x\n  real(8), intent(out) :: y\n#if defined(ALLOW_B) && ALLOW_KPP\n  y = sin(x)\n#else\n  y = cos(x)\n#endif\nend subroutine\n",
    )
    .unwrap();
    let mut c = spawn_in_process(Options::default()).expect("server starts");
    c.initialize(
        Some(&uri(&root)),
        vscode_caps(),
        json!({"preprocessor": {"include": ["inc"], "define": {"ALLOW_B": "1", "ALLOW_KPP": "1"}}}),
    )
    .expect("initialize answered");
    open(&mut c, &fixed);
    open(&mut c, &free);
    // Fixed form: `ALLOW_TIDES` is defined nowhere.
    let h = hover_text(&mut c, &fixed, json!({"line": 3, "character": 10}));
    assert!(
        h.contains("**ALLOW_TIDES**") && h.contains("**not defined**"),
        "{h}"
    );
    assert!(h.contains("`#ifdef` is false"), "{h}");
    // The line it leaves out: not read, so nothing there is active.
    let h = hover_text(&mut c, &fixed, json!({"line": 4, "character": 10}));
    assert!(h.contains("Left out by the C preprocessor"), "{h}");
    assert!(h.contains("after `#ifdef ALLOW_TIDES` (line 4)"), "{h}");
    assert!(!h.contains("active somewhere"), "{h}");
    // The #else branch is read: its `x` has the ordinary hover.
    let h = hover_text(&mut c, &fixed, json!({"line": 6, "character": 12}));
    assert!(!h.contains("Left out"), "{h}");
    // Free form: both macros defined (from the settings), the condition
    // true, the #else branch left out.
    let h = hover_text(&mut c, &free, json!({"line": 3, "character": 14}));
    assert!(
        h.contains("**ALLOW_B**") && h.contains("defined on the command line"),
        "{h}"
    );
    assert!(h.contains("as `1`") && h.contains("`#if` is true"), "{h}");
    assert!(
        !h.contains("ALLOW_KPP"),
        "only the macro under the cursor: {h}"
    );
    // Away from the names: every macro the condition tests.
    let h = hover_text(&mut c, &free, json!({"line": 3, "character": 1}));
    assert!(
        h.contains("**ALLOW_B**") && h.contains("**ALLOW_KPP**"),
        "{h}"
    );
    let h = hover_text(&mut c, &free, json!({"line": 6, "character": 7}));
    assert!(
        h.contains("Left out by the C preprocessor") && h.contains("after `#else` (line 6)"),
        "{h}"
    );
}

/// `(start, end, kind)` of each folding range of `path`, 1-based lines.
fn folding(c: &mut Connection, path: &Path) -> Vec<(u64, u64, String)> {
    let r = c
        .request(
            "textDocument/foldingRange",
            json!({"textDocument": {"uri": uri(path)}}),
        )
        .unwrap();
    r["result"]
        .as_array()
        .unwrap_or_else(|| panic!("no folding ranges: {r}"))
        .iter()
        .map(|f| {
            (
                f["startLine"].as_u64().unwrap() + 1,
                f["endLine"].as_u64().unwrap() + 1,
                f["kind"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Folding ranges come from the server in both source forms: units,
/// loops (a labelled DO ending on its CONTINUE), IF arms, comment blocks;
/// a construct's closing line stays visible. They follow an edit, and an
/// unknown file gets none.
#[test]
fn folding_ranges_in_both_forms() {
    let root = workspace("fold", &["p000_fig1.f90", "p000_bratu.f"]);
    let (fig1, bratu) = (root.join("p000_fig1.f90"), root.join("p000_bratu.f"));
    let mut c = start(&root, vscode_caps(), Options::default());
    open(&mut c, &bratu);
    let text = open(&mut c, &fig1);
    let s = |v: &[(u64, u64, &str)]| -> Vec<(u64, u64, String)> {
        v.iter().map(|(a, b, k)| (*a, *b, k.to_string())).collect()
    };
    assert_eq!(
        folding(&mut c, &bratu),
        s(&[
            (1, 6, "comment"),
            (7, 32, ""),
            (21, 25, ""),
            (34, 35, "comment")
        ])
    );
    assert_eq!(
        folding(&mut c, &fig1),
        s(&[
            (1, 3, "comment"),
            (4, 21, ""),
            (10, 11, "comment"),
            (13, 20, ""),
            (14, 15, ""),
            (16, 17, ""),
            (24, 27, "")
        ])
    );
    // The ELSE arm removed: the IF folds to its END IF.
    let edited = text.replace(
        "    else\n      x(j) = j*cos(x(j)) + a  ! dfort-tbr: x\n",
        "",
    );
    assert_ne!(edited, text);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&fig1), "version": 2},
               "contentChanges": [{"text": edited}]}),
    )
    .unwrap();
    assert!(folding(&mut c, &fig1).contains(&(14, 15, String::new())));
    assert!(!folding(&mut c, &fig1).contains(&(16, 17, String::new())));
    let r = c
        .request(
            "textDocument/foldingRange",
            json!({"textDocument": {"uri": uri(&root.join("absent.f90"))}}),
        )
        .unwrap();
    assert_eq!(r["result"], Value::Null, "{r}");
    c.shutdown().unwrap();
}

/// A fresh directory holding `files` (name, text).
fn workspace_of(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = workspace(name, &[]);
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    dir
}

/// The labels of the hints on the line holding `line_has`, in order.
fn hint_labels_on(c: &mut Connection, path: &Path, text: &str, line_has: &str) -> Vec<String> {
    let line = pos(text, line_has, line_has)["line"].clone();
    hints(c, path)
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["position"]["line"] == line)
        .map(|h| h["label"].as_str().unwrap().to_string())
        .collect()
}

const DO_WHILE: &str = "\
subroutine dw(x, y, n)
  implicit none
  integer :: n, i, j
  real(8) :: x(n), y
  i = n
  j = 1
  do while (i > 1)
    y = y + x(i)*x(j)
    i = i - 1
    j = j + 1
  end do
end subroutine
";

/// Several hints after the same text (a DO WHILE's saved indices and how
/// each is recovered) are told apart: each but the last ends with `;`.
#[test]
fn hints_at_one_place_do_not_run_together() {
    let root = workspace_of("apart", &[("dw.f90", DO_WHILE)]);
    let path = root.join("dw.f90");
    let mut c = start(&root, vscode_caps(), Options::default());
    let text = open(&mut c, &path);
    let labels = hint_labels_on(&mut c, &path, &text, "do while (i > 1)");
    assert_eq!(
        labels,
        ["push(trips)", "saves i, j;", "i ← i + 1;", "j ← j - 1"],
        "{labels:?}"
    );
    c.shutdown().unwrap();
}

/// Small faults seen in the editors: a half-typed line is the error (not
/// the next line) and gets no hints; an intrinsic without its argument is
/// an error; the files "Generate adjoint" writes get no hints.
#[test]
fn half_typed_lines_intrinsics_without_arguments_and_generated_files() {
    let bratu = std::fs::read_to_string(fixtures().join("papers/p000_bratu.f")).unwrap();
    let half_fixed = bratu.replace(
        "      h = 2.0/(dim+1)\n",
        "      h\n      h = 2.0/(dim+1)\n",
    );
    let half_free = DO_WHILE.replace("    i = i - 1\n", "    y\n    i = i - 1\n");
    let no_argument = DO_WHILE.replace("y = y + x(i)*x(j)", "y = y + exp()*x(j)");
    let root = workspace_of(
        "faults",
        &[
            ("half.f", &half_fixed),
            ("half.f90", &half_free),
            ("noarg.f90", &no_argument),
        ],
    );
    std::fs::copy(
        fixtures().join("papers/p000_fig1.f90"),
        root.join("p000_fig1.f90"),
    )
    .unwrap();
    let mut c = start(&root, vscode_caps(), Options::default());
    for (name, line_has) in [("half.f", "      h\n"), ("half.f90", "    y\n")] {
        let path = root.join(name);
        let text = open(&mut c, &path);
        let d = diagnostics_of(&mut c, &path);
        // 0-based: the lines before the one typed.
        let line = text[..text.find(line_has).unwrap()].lines().count() as u64;
        let errors: Vec<(u64, &str)> = d
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == "syntax-error")
            .map(|d| {
                (
                    d["range"]["start"]["line"].as_u64().unwrap(),
                    d["message"].as_str().unwrap(),
                )
            })
            .collect();
        let name_typed = line_has.trim();
        assert_eq!(
            errors,
            [(
                line,
                format!("syntax error: `{name_typed}` is not a whole statement").as_str()
            )],
            "{name}: {d}"
        );
        // Neither the half-typed line nor the one the parser joined to it
        // is analysed: no `push(..)`/`active` hints there.
        let mut on = |l: u64| -> Vec<Value> {
            hints(&mut c, &path)
                .as_array()
                .unwrap()
                .iter()
                .filter(|h| h["position"]["line"] == json!(l))
                .cloned()
                .collect()
        };
        assert!(on(line).is_empty() && on(line + 1).is_empty(), "{name}");
    }
    let noarg = root.join("noarg.f90");
    open(&mut c, &noarg);
    let d = diagnostics_of(&mut c, &noarg);
    assert!(
        d.as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "intrinsic-arguments"
                && d["message"] == "`exp` is given 0 arguments but needs 1 argument"
                && d["range"]["start"]["line"] == 7),
        "{d}"
    );
    // The adjoint written next to the source: hints on the source, none
    // on what dfort wrote.
    let fig1 = root.join("p000_fig1.f90");
    let text = open(&mut c, &fig1);
    let at = pos(&text, "x(i) = j + sin(x(i))", "x(i)");
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "dfort.generateAdjoint", "arguments": [uri(&fig1), at]}),
        )
        .unwrap();
    assert_eq!(r["result"]["written"], true, "{r}");
    assert!(!hints(&mut c, &fig1).as_array().unwrap().is_empty());
    for generated in ["p000_fig1_b.f90", "dfort_stack.f90"] {
        let path = root.join(generated);
        open(&mut c, &path);
        assert_eq!(hints(&mut c, &path), json!([]), "{generated}");
    }
    c.shutdown().unwrap();
}

const REF_MODULE: &str = "\
module heat
  implicit none
  real(8) :: kappa
contains
  subroutine diffuse(t, n)
    integer, intent(in) :: n
    real(8), intent(inout) :: t(n)
    t(2:n) = t(2:n) + kappa*t(1:n-1)
  end subroutine diffuse
end module heat
";

const REF_USER: &str = "\
      SUBROUTINE RUN(T, N)
      USE HEAT, ONLY: KAPPA, DIFFUSE
      INTEGER N
      DOUBLE PRECISION T(N)
C     KAPPA in a comment
      KAPPA = 0.5D0
      CALL DIFFUSE(T, N)
      END
";

/// Completion (with resolution) and signature help in both source forms:
/// a module variable through USE, offered in the case being typed, its
/// documentation; the dummies of a module procedure called from fixed
/// form, with the one the cursor is at.
#[test]
fn completion_and_signature_help_in_both_forms() {
    let root = workspace_of("complete", &[("heat.f90", REF_MODULE), ("run.f", REF_USER)]);
    let (heat, run) = (root.join("heat.f90"), root.join("run.f"));
    let mut c = spawn_in_process(Options::default()).expect("server starts");
    let init = c
        .initialize(Some(&uri(&root)), vscode_caps(), json!({}))
        .expect("initialize answered");
    let caps = init["result"]["capabilities"].clone();
    assert_eq!(
        caps["completionProvider"]["resolveProvider"], true,
        "{caps}"
    );
    assert_eq!(
        caps["completionProvider"]["triggerCharacters"],
        json!(["%"])
    );
    assert_eq!(
        caps["signatureHelpProvider"]["triggerCharacters"],
        json!(["(", ","])
    );
    open(&mut c, &heat);
    open(&mut c, &run);
    let at = |text: &str, line_has: &str, needle: &str, path: &Path| json!({"textDocument": {"uri": uri(path)}, "position": pos(text, line_has, needle)});
    let labels = |r: &Value| -> Vec<String> {
        r["result"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|i| i["label"].as_str().unwrap().to_string())
            .collect()
    };
    // Free form: `ka|` in the module procedure.
    let r = c
        .request(
            "textDocument/completion",
            at(REF_MODULE, "+ kappa", "ppa", &heat),
        )
        .unwrap();
    assert_eq!(labels(&r).first().map(String::as_str), Some("kappa"), "{r}");
    // Fixed form in capitals: `KA|` of `KAPPA = 0.5D0`, a module variable.
    let r = c
        .request(
            "textDocument/completion",
            at(REF_USER, "KAPPA = 0.5", "PPA", &run),
        )
        .unwrap();
    let first = r["result"][0].clone();
    assert_eq!(first["label"], "KAPPA", "{r}");
    assert_eq!(first["kind"], 6, "a variable: {first}");
    assert_eq!(
        first["textEdit"]["range"]["start"],
        pos(REF_USER, "KAPPA = 0.5", "KAPPA")
    );
    assert!(
        first["detail"].as_str().unwrap().contains("module heat"),
        "{first}"
    );
    let resolved = c.request("completionItem/resolve", first).unwrap();
    let doc = resolved["result"]["documentation"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("{resolved}"));
    assert!(
        doc.contains("`real(8) :: kappa`") && doc.contains("variable of module `heat`"),
        "{doc}"
    );
    // After CALL: the subroutine, not functions or variables.
    let r = c
        .request(
            "textDocument/completion",
            at(REF_USER, "CALL DIFFUSE", "IFFUSE", &run),
        )
        .unwrap();
    assert_eq!(
        labels(&r).first().map(String::as_str),
        Some("DIFFUSE"),
        "{r}"
    );
    assert!(!labels(&r).contains(&"KAPPA".to_string()), "{r}");
    // Signature help at the second argument of the call.
    let r = c
        .request(
            "textDocument/signatureHelp",
            at(REF_USER, "CALL DIFFUSE", "N)", &run),
        )
        .unwrap();
    let sig = &r["result"]["signatures"][0];
    assert_eq!(sig["label"], "diffuse(t, n)", "{r}");
    assert_eq!(r["result"]["activeParameter"], 1, "{r}");
    assert_eq!(
        sig["parameters"][0]["documentation"], "real(8), intent(inout) :: t(n)",
        "{r}"
    );
    // Nothing in a comment.
    let r = c
        .request(
            "textDocument/completion",
            at(REF_USER, "in a comment", "APPA", &run),
        )
        .unwrap();
    assert_eq!(r["result"], Value::Null, "{r}");
    c.shutdown().unwrap();
}

/// Decodes semantic tokens: (line, column, length, type, modifiers).
fn decode_tokens(r: &Value) -> Vec<(u64, u64, u64, u64, u64)> {
    let data: Vec<u64> = r["result"]["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let (mut line, mut col) = (0, 0);
    data.chunks(5)
        .map(|c| {
            line += c[0];
            col = if c[0] == 0 { col + c[1] } else { c[1] };
            (line, col, c[2], c[3], c[4])
        })
        .collect()
}

/// Semantic tokens in both forms: active variables carry the `active`
/// modifier wherever they appear, the overwrites TBR records `recorded`,
/// dummies are parameters, the rest plain variables.
#[test]
fn semantic_tokens_mark_active_and_recorded_names_in_both_forms() {
    // (No `\` line continuation: it would eat the first line's columns.)
    const FIXED: &str = "      SUBROUTINE G(X, Y)\n!$ad independent(x)\n!$ad dependent(y)\n      REAL*8 X, Y\n      INTEGER K\n      K = 3\n      Y = X * X\n      X = SIN(Y) + K\n      Y = Y * X\n      END\n";
    let root = workspace("semantic", &["p000_fig1.f90"]);
    std::fs::write(root.join("g.f"), FIXED).unwrap();
    let fig1 = root.join("p000_fig1.f90");
    let mut c = spawn_in_process(Options::default()).expect("server starts");
    let init = c
        .initialize(Some(&uri(&root)), vscode_caps(), json!({}))
        .expect("initialize answered");
    let legend = &init["result"]["capabilities"]["semanticTokensProvider"]["legend"];
    assert_eq!(
        legend["tokenTypes"],
        json!(["variable", "parameter"]),
        "{init}"
    );
    assert_eq!(
        legend["tokenModifiers"],
        json!(["active", "recorded", "declaration"])
    );
    let text = open(&mut c, &fig1);
    let r = c
        .request(
            "textDocument/semanticTokens/full",
            json!({"textDocument": {"uri": uri(&fig1)}}),
        )
        .unwrap();
    let tokens = decode_tokens(&r);
    let at = |text: &str, line_has: &str, needle: &str| {
        let p = pos(text, line_has, needle);
        (
            p["line"].as_u64().unwrap(),
            p["character"].as_u64().unwrap(),
        )
    };
    let find = |tokens: &[(u64, u64, u64, u64, u64)], (l, col): (u64, u64)| {
        tokens
            .iter()
            .find(|t| t.0 == l && t.1 == col)
            .copied()
            .unwrap_or_else(|| panic!("no token at {l}:{col} in {tokens:?}"))
    };
    // `x(i) = j + sin(x(i))`: the target active and recorded (a
    // parameter), the read active, `i` a plain variable.
    let target = find(&tokens, at(&text, "x(i) = j + sin", "x(i)"));
    assert_eq!((target.2, target.3, target.4), (1, 1, 0b011), "{target:?}");
    let i = find(&tokens, at(&text, "i = i + 1", "i"));
    assert_eq!((i.3, i.4), (0, 0), "{i:?}");
    // Fixed form in capitals.
    let g = root.join("g.f");
    open(&mut c, &g);
    let r = c
        .request(
            "textDocument/semanticTokens/full",
            json!({"textDocument": {"uri": uri(&g)}}),
        )
        .unwrap();
    let tokens = decode_tokens(&r);
    let x = find(&tokens, at(FIXED, "X = SIN(Y)", "X"));
    assert_eq!(
        (x.3, x.4),
        (1, 0b011),
        "X = SIN(Y) overwrites a recorded X: {x:?}"
    );
    let k = find(&tokens, at(FIXED, "K = 3", "K"));
    assert_eq!((k.3, k.4), (0, 0), "{k:?}");
    let decl = find(&tokens, at(FIXED, "REAL*8 X", "X"));
    assert_eq!(decl.4, 0b101, "declared, active somewhere: {decl:?}");
    // A range request gives the tokens of those lines only.
    let r = c
        .request(
            "textDocument/semanticTokens/range",
            json!({"textDocument": {"uri": uri(&g)},
                   "range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 80}}}),
        )
        .unwrap();
    let lines: Vec<u64> = decode_tokens(&r).iter().map(|t| t.0).collect();
    assert_eq!(lines, [5], "{r}");
    c.shutdown().unwrap();
}

/// Code lenses above each procedure: adjoint, tangent and verify (the
/// commands the code actions run) and one line on what the adjoint does.
#[test]
fn code_lenses_offer_the_derivatives_and_say_what_the_adjoint_does() {
    let root = workspace("lens", &["p000_fig1.f90"]);
    let fig1 = root.join("p000_fig1.f90");
    let mut c = spawn_in_process(Options::default()).expect("server starts");
    let init = c
        .initialize(Some(&uri(&root)), vscode_caps(), json!({}))
        .expect("initialize answered");
    assert_eq!(
        init["result"]["capabilities"]["codeLensProvider"]["resolveProvider"], false,
        "{init}"
    );
    open(&mut c, &fig1);
    let r = c
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(&fig1)}}),
        )
        .unwrap();
    let lenses = r["result"].as_array().unwrap_or_else(|| panic!("{r}"));
    let titles: Vec<&str> = lenses
        .iter()
        .map(|l| l["command"]["title"].as_str().unwrap())
        .collect();
    // tbr_fig1 (its four, then one per local graph), then check (which
    // no root reaches with active values).
    assert_eq!(&titles[..3], ["adjoint", "tangent", "verify"], "{r}");
    assert_eq!(titles[3], "adjoint: active x · records 2 values", "{r}");
    assert_eq!(lenses[0]["command"]["command"], "dfort.generateAdjoint");
    assert_eq!(
        lenses[0]["command"]["arguments"],
        json!([uri(&fig1), "tbr_fig1"])
    );
    assert_eq!(lenses[3]["command"]["command"], "", "a label: {r}");
    assert_eq!(
        lenses[0]["range"]["start"]["line"], 3,
        "at the SUBROUTINE line"
    );
    // A local Jacobian lens where there is an elimination order to
    // choose: x(j) = j*cos(x(j)) + a is x → cos → * → x(j); x(i) = j +
    // sin(x(i)) has one intermediate and none.
    assert_eq!(
        titles[4], "local Jacobian 1×1 · |E| = 3 · forward 2, reverse 2, best 2 ×",
        "{r}"
    );
    assert_eq!(lenses[4]["range"]["start"]["line"], 16, "{r}");
    assert_eq!(lenses.len(), 9, "{r}");
    c.shutdown().unwrap();
}

/// References across files (a module variable, a procedure), document
/// highlight with read and write kinds, and rename with `prepareRename`:
/// edits in both files, a fixed-form line that would pass column 72 and a
/// comment refused with a message.
#[test]
fn references_highlight_and_rename_across_the_workspace() {
    let root = workspace_of("refs", &[("heat.f90", REF_MODULE), ("run.f", REF_USER)]);
    let (heat, run) = (root.join("heat.f90"), root.join("run.f"));
    let mut c = spawn_in_process(Options::default()).expect("server starts");
    let init = c
        .initialize(Some(&uri(&root)), vscode_caps(), json!({}))
        .expect("initialize answered");
    let caps = init["result"]["capabilities"].clone();
    assert_eq!(caps["referencesProvider"], true, "{caps}");
    assert_eq!(caps["documentHighlightProvider"], true, "{caps}");
    assert_eq!(caps["renameProvider"]["prepareProvider"], true, "{caps}");
    open(&mut c, &heat);
    open(&mut c, &run);
    let at = |text: &str, line_has: &str, needle: &str, path: &Path| json!({"textDocument": {"uri": uri(path)}, "position": pos(text, line_has, needle)});
    let mut params = at(REF_MODULE, "+ kappa", "kappa", &heat);
    params["context"] = json!({"includeDeclaration": true});
    let r = c
        .request("textDocument/references", params.clone())
        .unwrap();
    let places: Vec<(String, u64)> = r["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|l| {
            let file = l["uri"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string();
            (file, l["range"]["start"]["line"].as_u64().unwrap())
        })
        .collect();
    let expect = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(f, l)| (f.to_string(), *l)).collect()
    };
    assert_eq!(
        places,
        expect(&[("heat.f90", 2), ("heat.f90", 7), ("run.f", 1), ("run.f", 5)])
    );
    params["context"] = json!({"includeDeclaration": false});
    let r = c.request("textDocument/references", params).unwrap();
    assert_eq!(r["result"].as_array().unwrap().len(), 2, "{r}");
    // The procedure, from its call.
    let mut params = at(REF_USER, "CALL DIFFUSE", "DIFFUSE", &run);
    params["context"] = json!({"includeDeclaration": true});
    let r = c.request("textDocument/references", params).unwrap();
    // SUBROUTINE, END SUBROUTINE, USE, CALL.
    assert_eq!(r["result"].as_array().unwrap().len(), 4, "{r}");
    // Highlight: `t` read and written on one line.
    let r = c
        .request(
            "textDocument/documentHighlight",
            at(REF_MODULE, "t(2:n) =", "t(2:n)", &heat),
        )
        .unwrap();
    let kinds: Vec<(u64, u64)> = r["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["range"]["start"]["line"].as_u64().unwrap(),
                h["kind"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds, [(4, 1), (6, 1), (7, 3), (7, 2), (7, 2)], "{r}");
    // Rename: prepare, then edits in both files, spelt as typed.
    let r = c
        .request(
            "textDocument/prepareRename",
            at(REF_USER, "KAPPA = 0.5", "KAPPA", &run),
        )
        .unwrap();
    assert_eq!(
        r["result"]["start"],
        pos(REF_USER, "KAPPA = 0.5", "KAPPA"),
        "{r}"
    );
    let mut params = at(REF_USER, "KAPPA = 0.5", "KAPPA", &run);
    params["newName"] = json!("diffusivity");
    let r = c.request("textDocument/rename", params).unwrap();
    let changes = r["result"]["changes"]
        .as_object()
        .unwrap_or_else(|| panic!("{r}"));
    let count = |file: &str| {
        changes
            .iter()
            .find(|(u, _)| u.ends_with(file))
            .map_or(0, |(_, e)| e.as_array().unwrap().len())
    };
    assert_eq!((count("heat.f90"), count("run.f")), (2, 2), "{r}");
    assert!(changes
        .values()
        .flat_map(|e| e.as_array().unwrap())
        .all(|e| e["newText"] == "diffusivity"));
    // Fixed form: a name that would pass column 72; a comment.
    let mut params = at(REF_USER, "CALL DIFFUSE", "DIFFUSE", &run);
    params["newName"] = json!("d".repeat(60));
    let r = c.request("textDocument/rename", params).unwrap();
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("past column 72"),
        "{r}"
    );
    let r = c
        .request(
            "textDocument/prepareRename",
            at(REF_USER, "in a comment", "KAPPA", &run),
        )
        .unwrap();
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no variable or procedure name"),
        "{r}"
    );
    c.shutdown().unwrap();
}

/// The editor shows what the adjoint does with an edge loop's
/// intermediates: no `push(…)` hint on them, and a hover that says the
/// reverse sweep recomputes them (issue 44).
#[test]
fn recomputed_intermediates_have_no_push_hint_and_say_so_on_hover() {
    let text = std::fs::read_to_string(fixtures().join("kernels/edge_loop.f90")).unwrap();
    let root = workspace_of("recompute", &[("edge_loop.f90", &text)]);
    let file = root.join("edge_loop.f90");
    let mut c = start(&root, json!({}), Options::default());
    let text = open(&mut c, &file);
    for line in ["vx = coor(1, nuex)", "len2 = vx", "nuor = mod"] {
        let labels = hint_labels_on(&mut c, &file, &text, line);
        assert!(
            !labels.iter().any(|l| l.starts_with("push(")),
            "{line}: {labels:?}"
        );
    }
    let h = hover_text(&mut c, &file, pos(&text, "vx = coor(1, nuex)", "vx"));
    assert!(h.contains("Recomputed, not recorded"), "{h}");
    assert!(h.contains("loop at line 13"), "{h}");
    c.shutdown().unwrap();
}
