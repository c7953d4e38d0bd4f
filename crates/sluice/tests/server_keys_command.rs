//! AuthorizedKeysCommand and AuthorizedPrincipalsCommand against Debian's
//! sshd: stock ssh logs in with a key (or a certificate's principal) given
//! only by a script, which records its argv so the tokens can be compared;
//! a script that prints nothing, one that hangs (sluiced kills it, refuses
//! the key and keeps serving), a group-writable one (refused with sshd's
//! message), and the startup checks.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A directory sshd's checks accept for a command: root's, mode 0755, in
/// /run (the tests' temporary directories sit under /tmp, which is world
/// writable, so a program there is refused as unsafe).
struct SafeDir(PathBuf);

impl SafeDir {
    fn new(tag: &str) -> SafeDir {
        let p = PathBuf::from(format!("/run/sluice-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        SafeDir(p)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// A file `name` with `text` and `mode`.
    fn write(&self, name: &str, text: &str, mode: u32) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }
}

impl Drop for SafeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A script that appends its argv (one `[arg]` each) and who ran it to
/// `argv.log`, then prints `keys` (or sleeps when `hang` exists).
fn script(d: &SafeDir, name: &str, printed: &str) -> PathBuf {
    d.write("argv.log", "", 0o666);
    d.write(
        name,
        &format!(
            "#!/bin/sh\n{{ printf '[%s]' \"$@\"; echo \" as $(id -un)\"; }} >> {log}\n\
             if [ -e {hang} ]; then exec sleep 987; fi\ncat {printed}\n",
            log = d.path("argv.log").display(),
            hang = d.path("hang").display(),
            printed = d.path(printed).display()
        ),
        0o755,
    )
}

fn login(s: &Setup, server: &Server, extra: &[&str]) -> (bool, String) {
    let mut c = s.client(true, server, extra);
    c.arg("echo in");
    let out = run(c, b"", 90);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// The test user's uid and home, as the tokens give them.
fn me() -> (String, String) {
    let uid = String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout).unwrap();
    (
        uid.trim().to_owned(),
        std::env::var("HOME").unwrap_or_else(|_| "/root".into()),
    )
}

fn pub_b64(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    text.split_whitespace().nth(1).unwrap().to_owned()
}

fn fingerprint(p: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(p)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace().nth(1).unwrap().to_owned()
}

#[test]
fn keys_from_a_command_with_every_token() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("akc");
    std::fs::write(s.dir.path("authorized_keys"), "").unwrap();
    let d = SafeDir::new("akc");
    let key = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    d.write(
        "keys",
        &format!("# from the directory\nrestrict,command=\"echo forced\" {key}"),
        0o644,
    );
    let sh = script(&d, "akc.sh", "keys");
    // %C and %D (sshd 9.4's) only for sluiced: Debian's sshd 9.2 refuses them.
    let extra = |openssh: bool| {
        format!(
            "AuthorizedKeysCommand {} %u %U %h %t %f %k 100%%{}\nAuthorizedKeysCommandUser nobody",
            sh.display(),
            if openssh { "" } else { " %D %C" }
        )
    };
    let mut logs = Vec::new();
    for openssh in [true, false] {
        d.write("argv.log", "", 0o666);
        let server = s.start(openssh, &extra(openssh));
        let (ok, out) = login(&s, &server, &[]);
        assert!(ok, "openssh={openssh}: {out}\n{}", server.log_text());
        // The line's options apply: its forced command ran.
        assert_eq!(out.trim(), "forced", "openssh={openssh}");
        logs.push(std::fs::read_to_string(d.path("argv.log")).unwrap());
    }
    // The same seven arguments (%D and %C aside).
    let strip = |l: &str| -> Vec<String> {
        l.lines()
            .map(|x| x.split(']').take(7).collect::<Vec<_>>().join("]"))
            .collect()
    };
    assert_eq!(
        strip(&logs[1]),
        strip(&logs[0]),
        "sluiced (left) and sshd ran it differently"
    );
    let (uid, home) = me();
    let first = logs[1].lines().next().unwrap();
    let want = format!(
        "[{}][{uid}][{home}][ssh-ed25519][{}][{}][100%][][127.0.0.1 ",
        user(),
        fingerprint(&s.dir.path("id_ed25519.pub")),
        pub_b64(&s.dir.path("id_ed25519.pub"))
    );
    assert!(first.starts_with(&want), "{first}\nwant {want}");
    // %D empty; %C: client address and port, server address and port, one argument.
    let c = first.rsplit_once("][").unwrap().1;
    let c: Vec<&str> = c.trim_end_matches("] as nobody").split(' ').collect();
    assert!(
        c.len() == 4 && c[0] == "127.0.0.1" && c[2] == "127.0.0.1" && c[1].parse::<u16>().is_ok(),
        "{first}"
    );
}

#[test]
fn no_output_a_hang_and_an_unsafe_script_are_refused() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("akcbad");
    std::fs::write(s.dir.path("authorized_keys"), "").unwrap();
    let d = SafeDir::new("akcbad");
    let key = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    d.write("keys", &key, 0o644);
    d.write("nothing", "", 0o644);
    // Prints nothing: refused by both.
    let empty = script(&d, "empty.sh", "nothing");
    let extra = format!(
        "AuthorizedKeysCommand {} %u\nAuthorizedKeysCommandUser nobody",
        empty.display()
    );
    for openssh in [true, false] {
        let server = s.start(openssh, &extra);
        let (ok, out) = login(&s, &server, &[]);
        assert!(!ok, "openssh={openssh}: {out}");
    }
    // Group-writable: refused with sshd's message, by both. (The group is
    // nobody's: Debian's sshd lets a file be group-writable when its group
    // holds only the owner, which root's would; sluiced keeps upstream's rule.)
    let sh = script(&d, "gw.sh", "keys");
    let nogroup = String::from_utf8(
        Command::new("id")
            .args(["-g", "nobody"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::os::unix::fs::chown(&sh, Some(0), Some(nogroup.trim().parse().unwrap())).unwrap();
    std::fs::set_permissions(&sh, std::fs::Permissions::from_mode(0o775)).unwrap();
    let extra = format!(
        "AuthorizedKeysCommand {} %u\nAuthorizedKeysCommandUser nobody",
        sh.display()
    );
    let msg = format!(
        "Unsafe AuthorizedKeysCommand \"{p}\": bad ownership or modes for file {p}",
        p = sh.display()
    );
    for openssh in [true, false] {
        let server = s.start(openssh, &extra);
        let (ok, out) = login(&s, &server, &[]);
        assert!(!ok, "openssh={openssh}: {out}");
        assert!(
            server.log_text().contains(&msg),
            "openssh={openssh}: {}",
            server.log_text()
        );
    }
    // A hang: sluiced kills it (and what it started) after its timeout and
    // refuses the key; meanwhile other logins are served.
    let sh = script(&d, "hang.sh", "keys");
    let extra = format!(
        "AuthorizedKeysCommand {} %u\nAuthorizedKeysCommandUser nobody",
        sh.display()
    );
    let server = s.start(false, &extra);
    d.write("hang", "", 0o644);
    let t = Instant::now();
    let mut hung = s.client(true, &server, &[]);
    hung.arg("echo in");
    let hung = std::thread::spawn(move || run(hung, b"", 120));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(d.path("argv.log"))
        .unwrap()
        .contains("as nobody")
    {
        assert!(Instant::now() < deadline, "the command did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_file(d.path("hang")).unwrap();
    let (ok, out) = login(&s, &server, &[]);
    assert!(
        ok && out.trim() == "in",
        "a login during the hang: {out}\n{}",
        server.log_text()
    );
    let out = hung.join().unwrap();
    let took = t.elapsed();
    assert!(!out.status.success(), "the hung login got in");
    assert!((29..60).contains(&took.as_secs()), "took {took:?}");
    assert!(
        server
            .log_text()
            .contains("did not finish its output within 30 seconds; killed"),
        "{}",
        server.log_text()
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(!sleeping(), "the command's child survived");
}

/// Whether a `sleep 987` the hanging script started is still running.
fn sleeping() -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == b"sleep\0987\0"))
}

/// A certificate of the test key, principals `alpha,beta`, by `ca`.
fn certificate(s: &Setup) -> PathBuf {
    keygen(&s.dir.path("ca"), "ed25519");
    let src = s.dir.path("signme.pub");
    std::fs::copy(s.dir.path("id_ed25519.pub"), &src).unwrap();
    let st = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(s.dir.path("ca"))
        .args(["-I", "key-id-7", "-z", "42", "-n", "alpha,beta"])
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    s.dir.path("signme-cert.pub")
}

#[test]
fn principals_from_a_command() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("apc");
    std::fs::write(s.dir.path("authorized_keys"), "").unwrap();
    let cert = certificate(&s);
    let certfile = format!("CertificateFile={}", cert.display());
    let d = SafeDir::new("apc");
    d.write("beta", "# principals\nbeta\n", 0o644);
    d.write("gamma", "gamma\n", 0o644);
    let mut logs = Vec::new();
    for (printed, want) in [("beta", true), ("gamma", false)] {
        let sh = script(&d, &format!("apc-{printed}.sh"), printed);
        let extra = format!(
            "TrustedUserCAKeys {}\nAuthorizedPrincipalsCommand {} %u %i %s %T %F %K %t %f\n\
             AuthorizedPrincipalsCommandUser nobody",
            s.dir.path("ca.pub").display(),
            sh.display()
        );
        for openssh in [true, false] {
            d.write("argv.log", "", 0o666);
            let server = s.start(openssh, &extra);
            let (ok, out) = login(&s, &server, &["-o", &certfile]);
            assert_eq!(
                ok,
                want,
                "{printed} openssh={openssh}: {out}\n{}",
                server.log_text()
            );
            logs.push(std::fs::read_to_string(d.path("argv.log")).unwrap());
        }
    }
    assert_eq!(
        logs[1], logs[0],
        "sluiced (left) and sshd ran it differently"
    );
    assert_eq!(
        logs[3], logs[2],
        "sluiced (left) and sshd ran it differently"
    );
    let want = format!(
        "[{}][key-id-7][42][ssh-ed25519][{}][{}][ssh-ed25519-cert-v01@openssh.com][{}] as nobody",
        user(),
        fingerprint(&s.dir.path("ca.pub")),
        pub_b64(&s.dir.path("ca.pub")),
        fingerprint(&s.dir.path("id_ed25519.pub")),
    );
    assert_eq!(logs[1].lines().next().unwrap(), want);
}

#[test]
fn startup_checks_as_sshd() {
    let s = Setup::new("akct");
    let d = s.dir.0.display().to_string();
    let cases = [
        ("AuthorizedKeysCommand /bin/cat", false),
        (
            "AuthorizedKeysCommand /bin/cat\nAuthorizedKeysCommandUser nobody",
            true,
        ),
        (
            "AuthorizedKeysCommand cat %u\nAuthorizedKeysCommandUser nobody",
            false,
        ),
        ("AuthorizedPrincipalsCommand /bin/echo %i", false),
        (
            "AuthorizedPrincipalsCommand /bin/echo %i\nAuthorizedPrincipalsCommandUser nobody",
            true,
        ),
        ("AuthorizedKeysCommand none", true),
        ("Match User x\n  AuthorizedKeysCommand /bin/cat %u", true),
    ];
    for (text, loads) in cases {
        let cfg = s.dir.path("cfg");
        std::fs::write(&cfg, format!("HostKey {d}/host_ed25519\n{text}\n")).unwrap();
        let mut bins = vec![SLUICED];
        if !missing("/usr/sbin/sshd") {
            let _ = std::fs::create_dir_all("/run/sshd");
            bins.push("/usr/sbin/sshd");
        }
        for bin in bins {
            let mut c = Command::new(bin);
            c.arg("-t").arg("-f").arg(&cfg);
            let out = run(c, b"", 20);
            assert_eq!(
                out.status.success(),
                loads,
                "{bin}: {text}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // A token the keyword does not have: sluiced refuses it at startup
    // (sshd would fail every login instead).
    let cfg = s.dir.path("cfg");
    std::fs::write(
        &cfg,
        format!("HostKey {d}/host_ed25519\nAuthorizedKeysCommand /bin/cat %i\nAuthorizedKeysCommandUser nobody\n"),
    )
    .unwrap();
    let mut c = Command::new(SLUICED);
    c.arg("-t").arg("-f").arg(&cfg);
    let out = run(c, b"", 20);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("unknown token %i"),
        "{err}"
    );
}
