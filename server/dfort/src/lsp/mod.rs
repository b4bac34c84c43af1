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
pub mod convert;
mod index;
pub mod settings;

pub use backend::{Backend, Options};

use tower_lsp_server::{LspService, Server};

/// Serves LSP on the given streams until the client sends `exit` or the
/// input ends.
pub async fn serve<I, O>(input: I, output: O, options: Options)
where
    I: tokio::io::AsyncRead + Unpin,
    O: tokio::io::AsyncWrite,
{
    let (service, socket) = LspService::new(|client| Backend::new(client, options));
    Server::new(input, output, socket).serve(service).await;
}

/// `dfort lsp`: serves on stdin/stdout.
pub fn run_stdio(options: Options) -> std::process::ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
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
    std::process::ExitCode::SUCCESS
}
