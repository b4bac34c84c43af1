//! A guard in front of the protocol library's reader: it re-frames each
//! incoming message and replaces one whose body is not JSON (or whose
//! header is broken) by a `$/dfort/malformed` notification, which the
//! server logs. Without it a single malformed frame ends the library's
//! read loop, and with it the server.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// Bodies larger than this are skipped, not buffered.
const MAX_BODY: usize = 256 << 20;

/// The method of the notification standing for a malformed message.
pub const MALFORMED: &str = "$/dfort/malformed";

fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    v.extend_from_slice(body);
    v
}

fn malformed(why: String) -> Vec<u8> {
    frame(
        json!({"jsonrpc": "2.0", "method": MALFORMED, "params": {"reason": why}})
            .to_string()
            .as_bytes(),
    )
}

/// The stream the server should read instead of `input`.
pub fn guard<R>(input: R) -> DuplexStream
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (mut tx, rx) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let mut r = BufReader::new(input);
        loop {
            // Header lines up to a blank line.
            let mut len: Option<Result<usize, String>> = None;
            let mut any = false;
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line);
                let t = text.trim();
                if t.is_empty() {
                    if any {
                        break;
                    }
                    continue;
                }
                any = true;
                if let Some((k, v)) = t.split_once(':') {
                    if k.trim().eq_ignore_ascii_case("content-length") {
                        len = Some(
                            v.trim()
                                .parse::<usize>()
                                .map_err(|e| format!("bad Content-Length `{}`: {e}", v.trim())),
                        );
                    }
                }
            }
            let out = match len {
                None => malformed("a message without Content-Length".into()),
                Some(Err(e)) => malformed(e),
                Some(Ok(n)) if n > MAX_BODY => {
                    let mut sink = (&mut r).take(n as u64);
                    if tokio::io::copy(&mut sink, &mut tokio::io::sink())
                        .await
                        .is_err()
                    {
                        return;
                    }
                    malformed(format!("a message of {n} bytes (over the limit)"))
                }
                Some(Ok(n)) => {
                    let mut body = vec![0; n];
                    if r.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    match serde_json::from_slice::<serde_json::Value>(&body) {
                        Ok(v) if v.is_object() => frame(&body),
                        Ok(_) => malformed("a message that is not a JSON object".into()),
                        Err(e) => malformed(format!("a body that is not JSON: {e}")),
                    }
                }
            };
            if tx.write_all(&out).await.is_err() {
                return;
            }
        }
    });
    rx
}
