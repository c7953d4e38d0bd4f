//! `sluice`: the SSH client. STUB.
fn main() {
    eprintln!("sluice: not yet implemented");
    std::process::exit(255);
}
