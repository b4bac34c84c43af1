//! Framing around the protocol library. In front of its reader, a guard
//! re-frames each incoming message and replaces one whose body is not
//! JSON (or whose header is broken) by a `$/dfort/malformed`
//! notification, which the server logs: without it a single malformed
//! frame ends the library's read loop, and with it the server. Behind its
//! writer, a merger passes the library's messages on whole and puts the
//! server's own between them ([`Outbox`]): the diagnostics of a large file
//! are written straight from their types, where the library builds a
//! JSON tree of every diagnostic first (a quarter of an edit's CPU in a
//! 20,000-line file with 816 diagnostics).

use serde::Serialize;
use serde_json::json;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
    DuplexStream,
};
use tokio::sync::mpsc;

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
            let Some(len) = read_header(&mut r).await else {
                return;
            };
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
                    // Checked without building it: a document's text can be large.
                    let object = body
                        .iter()
                        .find(|b| !b.is_ascii_whitespace())
                        .is_some_and(|&b| b == b'{');
                    match serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
                        Ok(_) if object => frame(&body),
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

/// Reads a message's header lines up to the blank line after them: the
/// Content-Length (`None` inside when there is none), or `None` at the
/// end of the stream.
async fn read_header<R: AsyncBufRead + Unpin>(r: &mut R) -> Option<Option<Result<usize, String>>> {
    let mut len: Option<Result<usize, String>> = None;
    let mut any = false;
    loop {
        let mut line = Vec::new();
        match r.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let t = text.trim();
        if t.is_empty() {
            if any {
                return Some(len);
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
}

/// Where the server sends messages of its own: framed, each reaches the
/// client whole, in the order sent, between the library's messages.
#[derive(Clone)]
pub struct Outbox(mpsc::UnboundedSender<Vec<u8>>);

impl Outbox {
    /// Sends notification `method` with `params`, serialised straight to
    /// bytes. False when the connection is gone.
    pub fn notify<P: Serialize>(&self, method: &str, params: &P) -> bool {
        #[derive(Serialize)]
        struct Notification<'a, P> {
            jsonrpc: &'static str,
            method: &'a str,
            params: &'a P,
        }
        let message = Notification {
            jsonrpc: "2.0",
            method,
            params,
        };
        match serde_json::to_vec(&message) {
            Ok(body) => self.0.send(frame(&body)).is_ok(),
            Err(_) => false,
        }
    }
}

/// The stream the library should write instead of `output`, the outbox
/// for the server's own messages, and the task writing both to `output`
/// (it ends when the library's stream closes, after what was sent
/// before).
pub fn merge<W>(mut output: W) -> (DuplexStream, Outbox, tokio::task::JoinHandle<()>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (library, from_library) = tokio::io::duplex(1 << 16);
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    // The library's messages, whole, into the same queue; an empty frame
    // says its stream closed.
    let forward = tx.clone();
    tokio::spawn(async move {
        let mut r = BufReader::new(from_library);
        while let Some(Some(Ok(n))) = read_header(&mut r).await {
            let mut body = vec![0; n];
            if r.read_exact(&mut body).await.is_err() || forward.send(frame(&body)).is_err() {
                break;
            }
        }
        let _ = forward.send(Vec::new());
    });
    let writer = tokio::spawn(async move {
        while let Some(bytes) = rx.recv().await {
            if bytes.is_empty() {
                // The library is done: what was queued before still goes.
                while let Ok(bytes) = rx.try_recv() {
                    if output.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                break;
            }
            if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
        let _ = output.flush().await;
    });
    (library, Outbox(tx), writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames of `bytes`, each a body.
    fn bodies(mut bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let text = String::from_utf8_lossy(bytes).to_string();
            let (head, _) = text.split_once("\r\n\r\n").expect("a header");
            let n: usize = head
                .trim_start_matches("Content-Length: ")
                .parse()
                .expect("a length");
            let start = head.len() + 4;
            out.push(String::from_utf8_lossy(&bytes[start..start + n]).to_string());
            bytes = &bytes[start + n..];
        }
        out
    }

    #[tokio::test]
    async fn the_library_and_the_outbox_write_whole_messages_in_order() {
        let (output, mut client) = tokio::io::duplex(1 << 16);
        let (mut library, outbox, writer) = merge(output);
        let first = frame(br#"{"id":1}"#);
        // The library's first message in two writes, the server's own
        // sent between them: it goes after the whole first message.
        library.write_all(&first[..7]).await.expect("write");
        tokio::task::yield_now().await;
        assert!(outbox.notify("own/one", &json!({"n": 1})));
        library.write_all(&first[7..]).await.expect("write");
        library
            .write_all(&frame(br#"{"id":2}"#))
            .await
            .expect("write");
        drop(library);
        writer
            .await
            .expect("the writer ends with the library's stream");
        drop(outbox);
        let mut bytes = Vec::new();
        client.read_to_end(&mut bytes).await.expect("read");
        let got = bodies(&bytes);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got.iter().filter(|b| b.starts_with("{\"id\"")).count(), 2);
        assert!(
            got.iter().position(|b| b == r#"{"id":1}"#)
                < got.iter().position(|b| b == r#"{"id":2}"#)
        );
        assert!(
            got.contains(&r#"{"jsonrpc":"2.0","method":"own/one","params":{"n":1}}"#.to_string())
        );
    }
}
