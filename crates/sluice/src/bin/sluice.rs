//! `sluice`: the SSH client. See `sluice::cli::ssh_main`.
fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(sluice::cli::ssh_main::main(&argv));
}
