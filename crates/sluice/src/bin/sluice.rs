//! `sluice`: the SSH client. See `sluice::client::app`.
fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(sluice::client::app::main(&argv));
}
