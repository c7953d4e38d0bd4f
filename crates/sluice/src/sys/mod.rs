//! The system calls that no safe crate offers, or offers with other
//! semantics, each behind one documented function; the runtime's
//! `unsafe` lives here.
//!
//! A function is safe where the call can be made so; where soundness rests
//! on the caller (closing descriptors by number, sys/fd.rs) it is an
//! `unsafe fn` whose `# Safety` section says what the caller vouches for.

pub mod creds;
pub mod crypt;
pub mod dl;
pub mod fd;
pub mod fdio;
pub mod fs;
pub mod glob;
pub mod ifaddrs;
pub mod inherit;
pub mod netdb;
pub mod pam;
pub mod process;
pub mod seccomp;
pub mod signal;
pub mod sockopt;
pub mod syslog;
pub mod tcp;
pub mod tempdir;
pub mod time;
pub mod tty;
pub mod users;
pub mod utmp;
