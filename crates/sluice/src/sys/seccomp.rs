//! The seccomp filter's installation (seccomp(2) SECCOMP_SET_MODE_FILTER
//! with TSYNC), which rustix does not offer; the program itself is built
//! in server/sandbox/filter.rs.

use std::io;

/// Why [`install_filter_tsync`] did not install the filter.
#[derive(Debug)]
pub enum FilterRefused {
    /// seccomp(2) failed (ENOSYS or EINVAL where the kernel has no filter
    /// support).
    Os(io::Error),
    /// The thread with this id could not be synchronised (TSYNC).
    Thread(libc::c_long),
}

/// Installs the classic BPF `program` as a seccomp filter on every thread
/// of the process (SECCOMP_FILTER_FLAG_TSYNC). no_new_privs must be set
/// first (rustix::thread::set_no_new_privs), or the caller must have
/// CAP_SYS_ADMIN. A program longer than 65535 instructions is EINVAL.
pub fn install_filter_tsync(program: &[libc::sock_filter]) -> Result<(), FilterRefused> {
    let len = u16::try_from(program.len())
        .map_err(|_| FilterRefused::Os(io::Error::from_raw_os_error(libc::EINVAL)))?;
    let fprog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: fprog points at `program` (`len` instructions), alive for the
    // call; the kernel copies it and writes nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_TSYNC,
            &fprog as *const libc::sock_fprog,
        )
    };
    match rc {
        0 => Ok(()),
        r if r > 0 => Err(FilterRefused::Thread(r)),
        _ => Err(FilterRefused::Os(io::Error::last_os_error())),
    }
}
