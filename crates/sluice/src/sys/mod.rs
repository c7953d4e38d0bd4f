//! The system calls that no safe crate offers (rustix keeps signal
//! dispositions unsafe), each behind one documented function; the
//! runtime's `unsafe` is meant to live here.
//!
//! A function is safe where the call can be made so; where soundness rests
//! on the caller (closing descriptors by number, sys/fd.rs) it is an
//! `unsafe fn` whose `# Safety` section says what the caller vouches for.

pub mod fd;
pub mod ifaddrs;
pub mod signal;
pub mod tty;
