//! The system calls that no safe crate offers (rustix keeps signal
//! dispositions unsafe), each behind one documented safe function; the
//! runtime's `unsafe` is meant to live here.

pub mod fd;
pub mod ifaddrs;
pub mod signal;
