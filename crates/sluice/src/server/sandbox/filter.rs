//! The pre-auth seccomp-bpf filter (seccomp(2), the kernel's
//! Documentation/userspace-api/seccomp_filter.rst): a classic BPF program
//! over `struct seccomp_data` that checks the architecture, then allows
//! the system calls a pre-auth engine needs and answers the rest.
//!
//! Each call not allowed gets one of three answers, chosen as OpenSSH's
//! sandbox chooses them:
//! - EACCES for looking at files (open, stat, access, readlink) and for
//!   socket(): libc tries these in passing (locale and time zone files,
//!   syslog's socket) and copes with a refusal; killing the process for
//!   them would turn a harmless probe into a lost connection.
//! - EPERM for creating processes or threads (clone, fork) and for ioctl:
//!   the code that tried reports a clean error (RLIMIT_NPROC 0 would stop
//!   a fork anyway).
//! - Killing the whole process for everything else (execve, ptrace,
//!   connect, bind, kill, mount...): a pre-auth engine has no business
//!   there, so such a call means it was subverted.
//!
//! mmap and mprotect are allowed only without PROT_EXEC (no new code may
//! be mapped), madvise only with the advice values an allocator uses,
//! setsockopt only for TCP_QUICKACK (EPERM for any other option).

use crate::log;
use crate::sys::seccomp::FilterRefused;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE

/// x32 system calls are x86_64 numbers with this bit set: never allowed.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Offsets in `struct seccomp_data`: nr, arch, then args[6] after the
/// instruction pointer. Arguments are 64-bit; the low half is read (both
/// supported architectures are little-endian), which covers int-sized
/// prot and advice values.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const fn off_arg(i: u32) -> u32 {
    16 + 8 * i
}

/// What the filter does with one system call.
enum Rule {
    Allow(libc::c_long),
    Errno(libc::c_long, i32),
    /// Allowed unless argument `arg` has PROT_EXEC set (then EACCES).
    NoExec(libc::c_long, u32),
    /// Allowed when argument `arg` is one of the values (else EPERM).
    ArgIn(libc::c_long, u32, &'static [u32]),
    /// Allowed when every (argument, value) pair matches (else EPERM).
    ArgsEq(libc::c_long, &'static [(u32, u32)]),
}

/// setsockopt's level and option the loop uses pre-auth: TCP_QUICKACK on the
/// peer's socket, so a client with Nagle on is not held by our delayed ACKs.
const SETSOCKOPT_OK: &[(u32, u32)] = &[
    (1, libc::IPPROTO_TCP as u32),
    (2, libc::TCP_QUICKACK as u32),
];

/// madvise advice an allocator uses to give memory back.
const MADVISE_OK: &[u32] = &[
    libc::MADV_NORMAL as u32,
    libc::MADV_DONTNEED as u32,
    libc::MADV_FREE as u32,
    libc::MADV_DONTDUMP as u32,
];

/// fcntl commands the child may use: F_GETFD only, which std's debug builds
/// issue before closing a descriptor (a check that it is open); it reads
/// one flag of a descriptor the child already holds. Anything else, EPERM.
const FCNTL_OK: &[u32] = &[libc::F_GETFD as u32];

fn rules() -> Vec<Rule> {
    use libc::{EACCES, EPERM};
    use Rule::*;
    let mut r = vec![
        // The monitor socket and the peer's socket, both already open.
        Allow(libc::SYS_read),
        Allow(libc::SYS_write),
        Allow(libc::SYS_readv),
        Allow(libc::SYS_writev),
        Allow(libc::SYS_recvmsg),
        Allow(libc::SYS_sendmsg),
        Allow(libc::SYS_recvfrom),
        Allow(libc::SYS_sendto),
        Allow(libc::SYS_shutdown),
        Allow(libc::SYS_ppoll),
        Allow(libc::SYS_close),
        // Time and waiting (the vDSO covers most clock reads).
        Allow(libc::SYS_clock_gettime),
        Allow(libc::SYS_gettimeofday),
        Allow(libc::SYS_clock_nanosleep),
        Allow(libc::SYS_nanosleep),
        Allow(libc::SYS_futex),
        Allow(libc::SYS_sched_yield),
        // The allocator.
        Allow(libc::SYS_brk),
        Allow(libc::SYS_munmap),
        Allow(libc::SYS_mremap),
        NoExec(libc::SYS_mmap, 2),
        NoExec(libc::SYS_mprotect, 2),
        ArgIn(libc::SYS_madvise, 2, MADVISE_OK),
        ArgIn(libc::SYS_fcntl, 1, FCNTL_OK),
        // Entropy for the key exchange.
        Allow(libc::SYS_getrandom),
        // Signals and leaving.
        Allow(libc::SYS_rt_sigreturn),
        Allow(libc::SYS_rt_sigprocmask),
        Allow(libc::SYS_restart_syscall),
        Allow(libc::SYS_getpid),
        Allow(libc::SYS_gettid),
        Allow(libc::SYS_exit),
        Allow(libc::SYS_exit_group),
        // Probes libc makes in passing.
        Errno(libc::SYS_openat, EACCES),
        Errno(libc::SYS_openat2, EACCES),
        Errno(libc::SYS_newfstatat, EACCES),
        Errno(libc::SYS_fstat, EACCES),
        Errno(libc::SYS_statx, EACCES),
        Errno(libc::SYS_faccessat, EACCES),
        Errno(libc::SYS_faccessat2, EACCES),
        Errno(libc::SYS_readlinkat, EACCES),
        Errno(libc::SYS_socket, EACCES),
        // The loop reads TCP_INFO and SO_RCVBUF for window growth; refused,
        // it stops asking (pre-auth needs no large windows).
        Errno(libc::SYS_getsockopt, EACCES),
        ArgsEq(libc::SYS_setsockopt, SETSOCKOPT_OK),
        // std's available_parallelism asks when the loop sizes its crypto
        // pool; refused, it falls back to one thread.
        Errno(libc::SYS_sched_getaffinity, EPERM),
        // New processes and threads, terminal queries.
        Errno(libc::SYS_clone, EPERM),
        Errno(libc::SYS_clone3, EPERM),
        Errno(libc::SYS_ioctl, EPERM),
    ];
    #[cfg(target_arch = "x86_64")]
    r.extend([
        Allow(libc::SYS_poll),
        Errno(libc::SYS_open, EACCES),
        Errno(libc::SYS_stat, EACCES),
        Errno(libc::SYS_lstat, EACCES),
        Errno(libc::SYS_access, EACCES),
        Errno(libc::SYS_readlink, EACCES),
        Errno(libc::SYS_fork, EPERM),
        Errno(libc::SYS_vfork, EPERM),
    ]);
    r
}

const fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

const LD: u32 = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
const JEQ: u32 = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
const JSET: u32 = libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K;
const RET: u32 = libc::BPF_RET | libc::BPF_K;

fn ret_errno(e: i32) -> libc::sock_filter {
    stmt(
        RET,
        libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA),
    )
}

/// The BPF program. Every rule's instructions either return or fall
/// through with the system call number still loaded, so rules chain.
fn program() -> Vec<libc::sock_filter> {
    let kill = stmt(RET, libc::SECCOMP_RET_KILL_PROCESS);
    let allow = stmt(RET, libc::SECCOMP_RET_ALLOW);
    let mut p = vec![
        stmt(LD, OFF_ARCH),
        jump(JEQ, AUDIT_ARCH, 1, 0),
        kill,
        stmt(LD, OFF_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    p.extend([jump(JSET, X32_SYSCALL_BIT, 0, 1), kill]);
    for rule in rules() {
        match rule {
            Rule::Allow(nr) => p.extend([jump(JEQ, nr as u32, 0, 1), allow]),
            Rule::Errno(nr, e) => p.extend([jump(JEQ, nr as u32, 0, 1), ret_errno(e)]),
            Rule::NoExec(nr, arg) => p.extend([
                jump(JEQ, nr as u32, 0, 4),
                stmt(LD, off_arg(arg)),
                jump(JSET, libc::PROT_EXEC as u32, 0, 1),
                ret_errno(libc::EACCES),
                allow,
            ]),
            Rule::ArgIn(nr, arg, values) => {
                let n = values.len() as u8;
                p.extend([jump(JEQ, nr as u32, 0, n + 3), stmt(LD, off_arg(arg))]);
                for (i, v) in values.iter().enumerate() {
                    // Equal: skip the remaining tests and the refusal.
                    p.push(jump(JEQ, *v, n - i as u8, 0));
                }
                p.extend([ret_errno(libc::EPERM), allow]);
            }
            Rule::ArgsEq(nr, pairs) => {
                let n = pairs.len() as u8;
                p.push(jump(JEQ, nr as u32, 0, 2 * n + 2));
                for (i, (arg, v)) in pairs.iter().enumerate() {
                    // Different: skip the remaining tests and the allow.
                    let rest = 2 * (n - 1 - i as u8) + 1;
                    p.extend([stmt(LD, off_arg(*arg)), jump(JEQ, *v, 0, rest)]);
                }
                p.extend([allow, ret_errno(libc::EPERM)]);
            }
        }
    }
    p.push(kill);
    p
}

/// Sets no_new_privs and installs the filter on every thread (TSYNC).
/// Ok(false), logged, where the kernel has no seccomp filter support; Err
/// when the filter was refused otherwise (sandbox.rs's `Seccomp`).
pub(super) fn install() -> Result<bool, std::io::Error> {
    if let Err(e) = rustix::thread::set_no_new_privs(true) {
        let e = std::io::Error::from(e);
        log!(
            Error,
            "sandbox: PR_SET_NO_NEW_PRIVS failed ({e}): this kernel cannot sandbox; running without a system call filter"
        );
        return Ok(false);
    }
    let prog = program();
    match crate::sys::seccomp::install_filter_tsync(&prog) {
        Ok(()) => Ok(true),
        Err(FilterRefused::Os(e))
            if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) =>
        {
            log!(
                Error,
                "sandbox: this kernel has no seccomp filter support ({e}); the pre-auth process runs chrooted and unprivileged but without a system call filter"
            );
            Ok(false)
        }
        Err(FilterRefused::Os(e)) => Err(e),
        // The id of a thread that could not be synchronised.
        Err(FilterRefused::Thread(rc)) => Err(std::io::Error::other(format!(
            "thread {rc} could not take the filter"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_stay_inside_the_program() {
        let p = program();
        assert!(p.len() < 4096, "BPF_MAXINSNS");
        for (i, ins) in p.iter().enumerate() {
            if u32::from(ins.code) & 0x07 == libc::BPF_JMP {
                let far = i + 1 + usize::from(ins.jt.max(ins.jf));
                assert!(far < p.len(), "instruction {i} jumps past the end");
            }
        }
        assert_eq!(p.last().map(|i| i.k), Some(libc::SECCOMP_RET_KILL_PROCESS));
    }
}
