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

/// `-O cmd` with forwarding options, by sluice or Debian's ssh.
fn control_fwd(openssh: bool, ctl: &std::path::Path, cmd: &str, fwd: &[&str]) -> Output {
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args(["-F", "/dev/null", "-S"])
        .arg(ctl)
        .args(["-O", cmd])
        .args(fwd)
        .arg("h");
    run(c, b"", 30)
}

/// Whatever listens on `port` speaks SSH (the forwardings below lead to
/// the test's server).
fn ssh_banner_at(port: u16) -> Result<String, String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut b = [0u8; 8];
    s.read_exact(&mut b).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&b).into_owned())
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

/// Three passengers at once whose outputs are read one after the other:
/// a passenger's output nobody reads yet must not hold up the others.
fn ride_together(s: &Setup, ctl: &std::path::Path, label: &str) {
    use std::io::{Read, Write};
    let mut riders = Vec::new();
    for i in 0..3u64 {
        let data = random_data(2 << 20, 20 + i);
        let mut c = passenger(s, false, ctl, &["cat"]);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let want = sha256(&data);
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
        });
        riders.push((child, writer, want));
    }
    for (i, (mut child, writer, want)) in riders.into_iter().enumerate() {
        let mut got = Vec::new();
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let _ = stdout.read_to_end(&mut got);
            got
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while !reader.is_finished() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{label}: passenger {i} of three: no EOF on its stdout in 60 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let got = reader.join().unwrap();
        writer.join().unwrap();
        let st = child.wait().unwrap();
        assert!(st.success(), "{label}: passenger {i}: {st:?}");
        assert_eq!(sha256(&got), want, "{label}: passenger {i}: data");
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
        ride_together(&s, &ctl, label);
        // `-O stop`: a master with no session of its own (-N) ends once
        // nothing is open, as ssh's.
        ok(&control(&ctl, "stop"), "-O stop");
        let deadline = Instant::now() + Duration::from_secs(20);
        // SAFETY: kill with signal 0 only checks the pid.
        while unsafe { libc::kill(pid, 0) } == 0 {
            assert!(
                Instant::now() < deadline,
                "{label}: still running after -O stop"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `-O forward` and `-O cancel` of -L, -R (also a port the server picks)
/// and -D, by sluice and ssh toward each master.
#[test]
fn forwardings_added_and_cancelled_through_a_master() {
    let s = Setup::new("muxfwd");
    let srv = s.start(false, "");
    let have_ssh = !missing("ssh");
    let masters: &[bool] = if have_ssh { &[false, true] } else { &[false] };
    for &master_ssh in masters {
        let ctl = s.dir.path(if master_ssh {
            "fctl-ssh"
        } else {
            "fctl-sluice"
        });
        let ctl_arg = ctl.display().to_string();
        let c = s.client(master_ssh, &srv, &["-M", "-N", "-f", "-S", &ctl_arg]);
        detached(c, "master");
        let pid = master_pid(&ctl).expect("no master");
        let _kill = Master(pid);
        let askers: &[bool] = if have_ssh { &[false, true] } else { &[false] };
        for &asker_ssh in askers {
            let who = format!(
                "{} asking {}",
                if asker_ssh { "ssh" } else { "sluice" },
                if master_ssh {
                    "ssh's master"
                } else {
                    "sluice's master"
                }
            );
            let (l, r) = (free_port(), free_port());
            let lspec = format!("{l}:127.0.0.1:{}", srv.port);
            let rspec = format!("{r}:127.0.0.1:{}", srv.port);
            let out = control_fwd(asker_ssh, &ctl, "forward", &["-L", &lspec, "-R", &rspec]);
            ok(&out, &format!("{who}: -O forward"));
            assert_eq!(ssh_banner_at(l).as_deref(), Ok("SSH-2.0-"), "{who}: -L");
            assert_eq!(ssh_banner_at(r).as_deref(), Ok("SSH-2.0-"), "{who}: -R");
            // The same again is fine; cancel closes them.
            ok(
                &control_fwd(asker_ssh, &ctl, "forward", &["-L", &lspec]),
                &who,
            );
            let out = control_fwd(asker_ssh, &ctl, "cancel", &["-L", &lspec, "-R", &rspec]);
            ok(&out, &format!("{who}: -O cancel"));
            let deadline = Instant::now() + Duration::from_secs(10);
            while ssh_banner_at(l).is_ok() || ssh_banner_at(r).is_ok() {
                assert!(
                    Instant::now() < deadline,
                    "{who}: still forwarded after cancel"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            // Cancelling what is not there is an error ssh reports, and
            // (as ssh) still exits 0.
            let out = control_fwd(asker_ssh, &ctl, "cancel", &["-L", &lspec]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("cancel forward request failed"),
                "{who}: cancel twice {out:?}"
            );
            // A port the server picks is printed.
            let rspec0 = format!("0:127.0.0.1:{}", srv.port);
            let out = control_fwd(asker_ssh, &ctl, "forward", &["-R", &rspec0]);
            ok(&out, &format!("{who}: -R 0"));
            let text = String::from_utf8_lossy(&out.stdout);
            let port: u16 = text
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("{who}: -R 0 printed {text:?}"));
            assert_eq!(
                ssh_banner_at(port).as_deref(),
                Ok("SSH-2.0-"),
                "{who}: -R 0"
            );
            let d = free_port();
            let dspec = d.to_string();
            ok(
                &control_fwd(asker_ssh, &ctl, "forward", &["-D", &dspec]),
                &who,
            );
            assert!(
                std::net::TcpStream::connect(("127.0.0.1", d)).is_ok(),
                "{who}: -D"
            );
            ok(
                &control_fwd(asker_ssh, &ctl, "cancel", &["-D", &dspec]),
                &who,
            );
            // -W through the master (MUX_C_NEW_STDIO_FWD): the server's
            // banner comes back on stdout.
            let to = format!("127.0.0.1:{}", srv.port);
            let ctl_arg = ctl.display().to_string();
            let c = s.client_to(
                asker_ssh,
                free_port(),
                "ERROR",
                &["-S", &ctl_arg, "-W", &to],
            );
            let out = run(c, b"", 30);
            ok(&out, &format!("{who}: -W"));
            assert!(
                out.stdout.starts_with(b"SSH-2.0-"),
                "{who}: -W gave {out:?}"
            );
        }
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
