//! A small blocking LSP client: Content-Length framing over any byte
//! streams, requests with timeouts, and the notifications seen meanwhile.
//! The protocol tests drive the server in process with it, and
//! `cargo xtask bench-lsp` drives a `dfort lsp` child process.
//!
//! Server-to-client requests are answered at once: `workspace/applyEdit`
//! with `applied: true` (the edit is kept in [`Connection::applied_edits`]),
//! `window/showDocument` with `success: true`, anything else with `null`;
//! all are kept in [`Connection::server_requests`].

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};
/// The protocol's types, for a typed client ([`Connection::wait_notification_as`]).
pub use tower_lsp_server::ls_types;

/// Writes one framed message.
pub fn write_message(w: &mut impl Write, v: &Value) -> std::io::Result<()> {
    let body = v.to_string();
    write!(w, "Content-Length: {}\r\n\r\n{}", body.len(), body)?;
    w.flush()
}

/// Reads one framed message; `Ok(None)` at the end of the stream.
pub fn read_message(r: &mut impl BufRead) -> std::io::Result<Option<Value>> {
    let Some(body) = read_body(r)? else {
        return Ok(None);
    };
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Reads one framed message's body, unparsed; `Ok(None)` at the end of
/// the stream.
fn read_body(r: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut len: Option<usize> = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok();
            }
        }
    }
    let Some(len) = len else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a message without Content-Length",
        ));
    };
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    Ok(Some(body))
}

/// What a waiting client reads of a message before parsing the rest:
/// its method (notifications and server requests have one) and whether
/// it has an id (requests and responses).
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    id: Option<serde::de::IgnoredAny>,
}

/// A notification's params, typed (`None` when it has none).
#[derive(serde::Deserialize)]
struct Params<T> {
    params: Option<T>,
}

pub struct Connection {
    writer: Box<dyn Write + Send>,
    /// Message bodies as read, parsed by the receiving side.
    incoming: Receiver<Vec<u8>>,
    next_id: i64,
    /// Notifications received and not yet taken, in order.
    pub notifications: Vec<Value>,
    /// Edits the server asked to apply (`workspace/applyEdit` params).
    pub applied_edits: Vec<Value>,
    /// Every request the server sent (method and params), in order.
    pub server_requests: Vec<Value>,
    pub timeout: Duration,
}

#[derive(Debug)]
pub struct Timeout(pub String);

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no answer from the server: {}", self.0)
    }
}

impl Connection {
    /// Talks to a server that reads `writer` and writes `reader`.
    pub fn new(reader: impl Read + Send + 'static, writer: impl Write + Send + 'static) -> Self {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(reader);
            while let Ok(Some(m)) = read_body(&mut r) {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        Connection {
            writer: Box::new(writer),
            incoming: rx,
            next_id: 0,
            notifications: Vec::new(),
            applied_edits: Vec::new(),
            server_requests: Vec::new(),
            timeout: Duration::from_secs(30),
        }
    }

    /// Sends raw bytes (for malformed-input tests).
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)?;
        self.writer.flush()
    }

    pub fn send(&mut self, v: &Value) -> std::io::Result<()> {
        write_message(&mut self.writer, v)
    }

    pub fn notify(&mut self, method: &str, params: Value) -> std::io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// One incoming message's body, unparsed; `None` on timeout or when
    /// the server is gone.
    fn next_body(&mut self, deadline: Instant) -> Option<Vec<u8>> {
        let left = deadline.checked_duration_since(Instant::now())?;
        self.incoming.recv_timeout(left).ok()
    }

    /// One incoming message, answering server requests; `None` on timeout
    /// or when the server is gone. A body that is not JSON is skipped.
    fn next(&mut self, deadline: Instant) -> Option<Value> {
        loop {
            let body = self.next_body(deadline)?;
            if let Some(m) = serde_json::from_slice(&body)
                .ok()
                .and_then(|m| self.answered(m))
            {
                return Some(m);
            }
        }
    }

    /// Answers a server request (and keeps it); any other message is
    /// given back.
    fn answered(&mut self, m: Value) -> Option<Value> {
        if m.get("method").is_none() || m.get("id").is_none() {
            return Some(m);
        }
        self.server_requests
            .push(json!({"method": m["method"], "params": m["params"]}));
        let result = if m["method"] == "workspace/applyEdit" {
            self.applied_edits.push(m["params"].clone());
            json!({"applied": true})
        } else if m["method"] == "window/showDocument" {
            json!({"success": true})
        } else {
            Value::Null
        };
        let _ = self.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
        None
    }

    /// Sends a request and waits for its response (the whole message,
    /// with `result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Timeout> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .map_err(|e| Timeout(format!("{method}: {e}")))?;
        self.response(id, method)
    }

    /// Waits for the response with this id.
    pub fn response(&mut self, id: i64, what: &str) -> Result<Value, Timeout> {
        let deadline = Instant::now() + self.timeout;
        while let Some(m) = self.next(deadline) {
            if m.get("method").is_none() && m.get("id") == Some(&json!(id)) {
                return Ok(m);
            }
            if m.get("method").is_some() {
                self.notifications.push(m);
            }
        }
        Err(Timeout(what.to_string()))
    }

    /// Waits for the next notification `method` (or takes one already
    /// received), returning its params (`null` when it has none).
    pub fn wait_notification(&mut self, method: &str) -> Result<Value, Timeout> {
        self.wait_notification_as(method)
    }

    /// Waits for the next notification `method` (or takes one already
    /// received), with its params deserialized straight into `T` as a
    /// typed client does (moved, not copied: a publication of
    /// diagnostics can be a quarter of a megabyte); the other messages
    /// meanwhile are parsed and kept as usual. A notification whose
    /// params are not a `T` is an error.
    pub fn wait_notification_as<T: serde::de::DeserializeOwned>(
        &mut self,
        method: &str,
    ) -> Result<T, Timeout> {
        let bad = |e: serde_json::Error| Timeout(format!("{method}: {e}"));
        if let Some(i) = self
            .notifications
            .iter()
            .position(|n| n["method"] == method)
        {
            let params = self.notifications.remove(i)["params"].take();
            return serde_json::from_value(params).map_err(bad);
        }
        let deadline = Instant::now() + self.timeout;
        while let Some(body) = self.next_body(deadline) {
            let Ok(head) = serde_json::from_slice::<Head>(&body) else {
                continue;
            };
            if head.id.is_none() && head.method.as_deref() == Some(method) {
                let params = serde_json::from_slice::<Params<T>>(&body).map_err(bad)?;
                return match params.params {
                    Some(p) => Ok(p),
                    None => serde_json::from_value(Value::Null).map_err(bad),
                };
            }
            let Some(m) = serde_json::from_slice(&body)
                .ok()
                .and_then(|m| self.answered(m))
            else {
                continue;
            };
            if m.get("method").is_some() {
                self.notifications.push(m);
            }
        }
        Err(Timeout(method.to_string()))
    }

    /// `initialize` + `initialized` with the given client capabilities.
    pub fn initialize(
        &mut self,
        root_uri: Option<&str>,
        capabilities: Value,
        options: Value,
    ) -> Result<Value, Timeout> {
        let r = self.request(
            "initialize",
            json!({"processId": null, "rootUri": root_uri, "capabilities": capabilities,
                   "initializationOptions": options}),
        )?;
        self.notify("initialized", json!({}))
            .map_err(|e| Timeout(e.to_string()))?;
        Ok(r)
    }

    /// `shutdown` + `exit`.
    pub fn shutdown(&mut self) -> Result<(), Timeout> {
        self.request("shutdown", Value::Null)?;
        let _ = self.notify("exit", Value::Null);
        Ok(())
    }
}
