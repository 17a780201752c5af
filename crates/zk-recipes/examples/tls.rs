//! Connect over TLS, checking the server's certificate against a CA, with a client
//! certificate for servers that ask for one (`ssl.clientAuth=need`).
//!
//! ```sh
//! cargo run -p zk-recipes --example tls -- 127.0.0.1:2281 ca.pem [client.pem client-key.pem]
//! ```
//!
//! The same settings fit in a connect string:
//! `zk+tls://127.0.0.1:2281?ca=ca.pem&cert=client.pem&key=client-key.pem`.

use std::process::ExitCode;

use zk_recipes::zk_proto::{Client, TlsOptions};

mod common;

#[tokio::main]
async fn main() -> ExitCode {
    // The connect string, then the CA and, optionally, the client's certificate and key.
    let files: Vec<String> = std::env::args().skip(2).collect();
    let Some((ca, identity)) = files.split_first() else {
        eprintln!("usage: tls <host:port> <ca.pem> [<client.pem> <client-key.pem>]");
        return ExitCode::from(2);
    };
    common::exit(run(&common::connect_string(), ca, identity).await)
}

async fn run(connect: &str, ca: &str, identity: &[String]) -> common::Result<()> {
    let mut tls = TlsOptions::new().ca_pem_file(ca);
    if let [cert, key] = identity {
        tls = tls.client_cert_pem_files(cert, key);
    }
    let client = common::connect_with(Client::builder().tls(tls), connect).await?;
    println!("connected over TLS: session {:#x}", client.session_id());
    let (_, stat) = client.get_data("/").await?;
    println!("read / (version {})", stat.version);
    client.close().await?;
    println!("closed");
    Ok(())
}
