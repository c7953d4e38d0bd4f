//! `sluiced`: the SSH server. STUB.
fn main() {
    eprintln!("sluiced: not yet implemented");
    std::process::exit(255);
}
