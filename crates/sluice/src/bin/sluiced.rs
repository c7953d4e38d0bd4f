//! `sluiced`: the SSH server. See `sluice::cli::sshd_main`.
fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(sluice::cli::sshd_main::main(&argv));
}
