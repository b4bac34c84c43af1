//! `dfort lsp`: the language server. Only this module (with the rest of the
//! binary crate) knows the protocol: each handler converts positions, asks
//! the IDE layer (`dfort_ide`) on a blocking thread under `catch_unwind`,
//! and converts the answer back.
//!
//! State: one [`dfort_ide::host::Host`] behind a mutex. Text changes are
//! applied to it at once (in the order they arrive); the analysis that
//! follows runs on a blocking thread, and a newer change makes an older
//! pending analysis give up before it starts (its diagnostics would be
//! stale). A panic in a request is caught, logged and answered with an
//! internal error; the server keeps running.

mod backend;
pub mod client;
pub mod convert;
mod framing;
pub(crate) mod index;
pub mod settings;

pub use backend::{Backend, Options};

use tower_lsp_server::{LspService, Server};

/// Serves LSP on the given streams until the client sends `exit` or the
/// input ends.
pub async fn serve<I, O>(input: I, output: O, options: Options)
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (library_output, outbox, writer) = framing::merge(output);
    let (service, socket) = LspService::build(|client| Backend::new(client, outbox, options))
        .custom_method(framing::MALFORMED, Backend::malformed)
        .finish();
    Server::new(framing::guard(input), library_output, socket)
        .serve(service)
        .await;
    // The library's stream closes with the server: what was queued before
    // is written, then the writer ends.
    let _ = writer.await;
}

/// `dfort lsp`: serves on stdin/stdout.
pub fn run_stdio(options: Options) -> std::process::ExitCode {
    // Few blocking threads: analyses are serialised by the host's lock
    // anyway, and every thread keeps its own allocator pages.
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    rt.block_on(serve(tokio::io::stdin(), tokio::io::stdout(), options));
    // The stdin reader may still wait in a blocking thread for input that
    // never comes (the client keeps the pipe open after `exit`): do not
    // wait for it.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    std::process::ExitCode::SUCCESS
}

/// Starts a server on a thread of its own, talking through a socket
/// pair, and returns a client connected to it (the protocol tests use this).
pub fn spawn_in_process(options: Options) -> std::io::Result<client::Connection> {
    let (server_end, client_end) = std::os::unix::net::UnixStream::pair()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    server_end.set_nonblocking(true)?;
    let stream = {
        let _guard = rt.enter();
        tokio::net::UnixStream::from_std(server_end)?
    };
    std::thread::spawn(move || {
        rt.block_on(async move {
            let (input, output) = stream.into_split();
            serve(input, output, options).await
        })
    });
    let reader = client_end.try_clone()?;
    Ok(client::Connection::new(reader, client_end))
}
