//! Connection sharing (ControlMaster, ControlPath, ControlPersist) as ssh
//! has it: passengers, sluice's and Debian's ssh, run their sessions over
//! a sluice master and over ssh's (their own port is one nothing listens
//! on, so a session that did not ride the master fails); data is checked
//! by hash and exit statuses come back. ControlPersist puts a new master in
//! the background and ends it when it has been idle that long.

mod common;

use common::*;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Kills a background master left by a failed test.
struct Master(i32);

impl Drop for Master {
    fn drop(&mut self) {
        // SAFETY: kill on the pid the master reported.
        unsafe { libc::kill(self.0, libc::SIGTERM) };
    }
}

/// `-O cmd` to the master at `ctl`.
fn control(ctl: &std::path::Path, cmd: &str) -> Output {
    let mut c = Command::new(SLUICE);
    c.args(["-F", "/dev/null", "-S"])
        .arg(ctl)
        .args(["-O", cmd, "h"]);
    run(c, b"", 30)
}

/// The master's pid from `-O check`, None when none answers.
fn master_pid(ctl: &std::path::Path) -> Option<i32> {
    let out = control(ctl, "check");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    err.strip_prefix("Master running (pid=")?
        .strip_suffix(")\n")?
        .parse()
        .ok()
}

/// Runs a client that goes to the background: its stdout and stderr are
/// not pipes, which the background process would hold open.
fn detached(mut c: Command, what: &str) -> std::process::ExitStatus {
    let st = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "{what}: {st:?}");
    st
}

/// A passenger (`openssh`: Debian's ssh) toward a dead port with `ctl`.
fn passenger(s: &Setup, openssh: bool, ctl: &std::path::Path, extra: &[&str]) -> Command {
    let mut c = s.client_to(
        openssh,
        free_port(),
        "ERROR",
        &["-S", &ctl.display().to_string()],
    );
    c.args(extra);
    c
}

/// Sessions of both clients through the master at `ctl`: data both ways,
/// exit statuses, a subsystem-less command with a pty.
fn ride_both(s: &Setup, ctl: &std::path::Path, label: &str) {
    let data = random_data(3 << 20, 7);
    for openssh in [false, true] {
        let who = format!("{} through {label}", if openssh { "ssh" } else { "sluice" });
        let c = passenger(s, openssh, ctl, &["cat; exit 3"]);
        let out = run(c, &data, 60);
        assert_eq!(out.status.code(), Some(3), "{who}: {out:?}");
        assert_eq!(sha256(&out.stdout), sha256(&data), "{who}: data");
        let c = passenger(s, openssh, ctl, &["echo err >&2; exit 0"]);
        let out = run(c, b"", 30);
        ok(&out, &who);
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "err\n",
            "{who}: stderr"
        );
        let c = passenger(s, openssh, ctl, &["-tt", "tty; exit 5"]);
        let out = run(c, b"", 30);
        assert_eq!(out.status.code(), Some(5), "{who}: -tt {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with("/dev/pts/"), "{who}: -tt printed {text:?}");
    }
}

#[test]
fn passengers_ride_sluice_and_openssh_masters() {
    let s = Setup::new("muxride");
    let srv = s.start(false, "");
    let masters: &[bool] = if missing("ssh") {
        &[false]
    } else {
        &[false, true]
    };
    for &openssh in masters {
        let label = if openssh {
            "ssh's master"
        } else {
            "sluice's master"
        };
        let ctl = s.dir.path(if openssh { "ctl-ssh" } else { "ctl-sluice" });
        let ctl_arg = ctl.display().to_string();
        let c = s.client(openssh, &srv, &["-M", "-N", "-f", "-S", &ctl_arg]);
        detached(c, label);
        let pid = master_pid(&ctl).unwrap_or_else(|| panic!("{label}: no master"));
        let _kill = Master(pid);
        ride_both(&s, &ctl, label);
        ok(&control(&ctl, "exit"), "-O exit");
    }
}

#[test]
fn control_persist_backgrounds_the_master_and_ends_it_when_idle() {
    let s = Setup::new("muxpersist");
    let srv = s.start(false, "");
    let ctl = s.dir.path("ctl");
    let ctl_arg = ctl.display().to_string();
    let opts = [
        "-o",
        "ControlMaster=auto",
        "-o",
        "ControlPersist=3",
        "-S",
        &ctl_arg,
    ];
    // The first run makes the master, which stays in the background; the
    // foreground run ends with its command and its status.
    let mut c = s.client(false, &srv, &opts);
    c.arg("echo first; exit 4");
    let st = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let child = st.spawn().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "first\n");
    let pid = master_pid(&ctl).expect("ControlPersist: no master in the background");
    let _kill = Master(pid);
    // The next one rides it (its own port has nobody).
    ride_both(&s, &ctl, "a persisting master");
    // Idle for ControlPersist's 3 s: the master ends and its socket goes.
    let deadline = Instant::now() + Duration::from_secs(20);
    // SAFETY: kill with signal 0 only checks the pid.
    while ctl.exists() || unsafe { libc::kill(pid, 0) } == 0 {
        assert!(Instant::now() < deadline, "the idle master did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
}
