//! `sluice-scp`. See `sluice::cli::scp_main`.
fn main() {
    // Arguments that are not UTF-8 are refused rather than mangled (names
    // of any bytes go through sftp's batch files and commands).
    let mut argv = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.into_string() {
            Ok(s) => argv.push(s),
            Err(a) => {
                sluice::errln!("sluice-scp: argument {a:?} is not UTF-8");
                std::process::exit(1);
            }
        }
    }
    std::process::exit(sluice::cli::scp_main::main(&argv));
}
