//! `sluiced`: the SSH server. See `sluice::server::daemon`.
fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(sluice::server::daemon::main(&argv));
}
