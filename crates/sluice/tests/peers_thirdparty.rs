//! Third-party SSH implementations as peers, each moving 4 MiB both ways
//! with SHA-256 checked. Into sluiced: Dropbear's dbclient, PuTTY's plink,
//! pscp and psftp, and a Go program on golang.org/x/crypto/ssh and
//! github.com/pkg/sftp (tests/peers/go). From sluice, sluice-sftp and
//! sluice-scp: Dropbear's server and the same Go program as a server.
//!
//! All come from Debian's packages (.ci/run installs them). With
//! SLUICE_REQUIRE_PEERS=1 (CI) a missing peer fails, naming its package;
//! otherwise it is skipped with a message. Every case runs even after one
//! fails, so a failure lists them all.

mod common;
mod sftp_util;

use common::*;
use sftp_util::*;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SFTP: &str = env!("CARGO_BIN_EXE_sluice-sftp");
const SCP: &str = env!("CARGO_BIN_EXE_sluice-scp");
const GOPATH: &str = "/usr/share/gocode";
const SIZE: usize = 4 << 20;

/// Whether every program or file in `need` (name, Debian package) is here.
/// A missing one fails the test under SLUICE_REQUIRE_PEERS=1, else skips it.
fn have(need: &[(&str, &str)]) -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = |name: &str| {
        (name.starts_with('/') && Path::new(name).exists())
            || path
                .split(':')
                .chain(["/usr/sbin", "/usr/bin"])
                .any(|d| Path::new(d).join(name).is_file())
    };
    let missing: Vec<String> = need
        .iter()
        .filter(|(name, _)| !found(name))
        .map(|(name, pkg)| format!("{name} (Debian package {pkg})"))
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("SLUICE_REQUIRE_PEERS").as_deref() != Ok("1"),
        "SLUICE_REQUIRE_PEERS=1 and a peer is missing: {}",
        missing.join(", ")
    );
    eprintln!("skipped: not installed: {}", missing.join(", "));
    false
}

const GO_PEER: &[(&str, &str)] = &[
    ("go", "golang-go"),
    (
        "/usr/share/gocode/src/golang.org/x/crypto/ssh",
        "golang-golang-x-crypto-dev",
    ),
    (
        "/usr/share/gocode/src/github.com/pkg/sftp",
        "golang-github-pkg-sftp-dev",
    ),
];
const DROPBEAR: &[(&str, &str)] = &[
    ("dbclient", "dropbear-bin"),
    ("dropbear", "dropbear-bin"),
    ("dropbearconvert", "dropbear-bin"),
];
const PUTTY: &[(&str, &str)] = &[
    ("plink", "putty-tools"),
    ("pscp", "putty-tools"),
    ("psftp", "putty-tools"),
    ("puttygen", "putty-tools"),
];

/// tests/peers/go built once per test process, with Debian's Go sources
/// (GOPATH mode: the module proxy is not used) and a build cache kept in
/// the target directory.
fn go_peer() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/peers/go");
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gopeer");
            let bin = out.join("sftppeer");
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            let start = Instant::now();
            let built = Command::new("go")
                .args(["build", "-o"])
                .arg(&bin)
                .arg(".")
                .current_dir(src)
                .env("GO111MODULE", "off")
                .env("GOPATH", GOPATH)
                .env("GOFLAGS", "")
                .env("GOCACHE", out.join("cache"))
                .output()
                .map_err(|e| format!("go: {e}"))?;
            if !built.status.success() {
                return Err(format!(
                    "go build in {src}: {}",
                    String::from_utf8_lossy(&built.stderr)
                ));
            }
            eprintln!("built {} in {:?}", bin.display(), start.elapsed());
            Ok(bin)
        })
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The cases' outcomes: each is printed as it ends; `finish` fails the
/// test listing every failed one.
#[derive(Default)]
struct Cases(Vec<String>);

impl Cases {
    fn check(&mut self, name: &str, result: Result<(), String>) {
        match result {
            Ok(()) => eprintln!("{name}: ok"),
            Err(e) => {
                eprintln!("{name}: FAILED: {e}");
                self.0.push(format!("{name}: {e}"));
            }
        }
    }
    fn finish(self) {
        assert!(
            self.0.is_empty(),
            "{} peer case(s) failed:\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

fn succeeded(out: &Output, what: &str) -> Result<(), String> {
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what}: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

fn same_file(p: &Path, want: &str, what: &str) -> Result<(), String> {
    let got = std::fs::read(p).map_err(|e| format!("{what}: {}: {e}", p.display()))?;
    if sha256(&got) == want {
        return Ok(());
    }
    Err(format!(
        "{what}: {} has {} bytes, not the ones sent",
        p.display(),
        got.len()
    ))
}

/// `cat > remote` with the data on stdin, then `cat remote` back, through
/// an exec client `client(command)`; the server shares this filesystem.
fn exec_both_ways(
    client: &dyn Fn(&str) -> Command,
    data: &[u8],
    remote: &Path,
) -> Result<(), String> {
    let want = sha256(data);
    let out = run(client(&format!("cat > {}", remote.display())), data, 60);
    succeeded(&out, "upload")?;
    same_file(remote, &want, "upload")?;
    let out = run(client(&format!("cat {}", remote.display())), b"", 60);
    succeeded(&out, "download")?;
    if sha256(&out.stdout) != want {
        return Err(format!(
            "download: {} bytes, not the ones sent",
            out.stdout.len()
        ));
    }
    Ok(())
}

/// A peer server process, killed on drop.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tool(cmd: &str, args: &[&str], paths: &[&Path]) {
    let out = Command::new(cmd).args(args).args(paths).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {args:?} {paths:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The SHA256 fingerprints of the Setup's host keys, for PuTTY's -hostkey.
fn fingerprints(s: &Setup) -> Vec<String> {
    ["ed25519", "ecdsa", "rsa"]
        .iter()
        .map(|t| {
            let out = Command::new("ssh-keygen")
                .arg("-lf")
                .arg(s.dir.path(&format!("host_{t}.pub")))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            text.split_whitespace().nth(1).unwrap().to_owned()
        })
        .collect()
}

#[test]
fn third_party_clients_into_sluiced() {
    let (dropbear, putty, go) = (have(DROPBEAR), have(PUTTY), have(GO_PEER));
    if !(dropbear || putty || go) {
        return;
    }
    let s = Setup::new("peers-in");
    let server = start_sftp(&s, "internal-sftp", "");
    let port = server.port.to_string();
    let me = user();
    let data = random_data(SIZE, 43);
    let want = sha256(&data);
    let up = s.dir.path("up");
    std::fs::write(&up, &data).unwrap();
    let mut cases = Cases::default();

    if dropbear {
        let key = s.dir.path("id_ed25519.db");
        tool(
            "dropbearconvert",
            &["openssh", "dropbear"],
            &[&s.user_key, &key],
        );
        // dbclient reads $HOME/.ssh/known_hosts (hosts by name alone, no
        // port): sluiced's keys are put there, so an unknown or other key
        // fails instead of being asked about.
        let home = s.dir.path("dbclient-home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let known: String = ["ed25519", "ecdsa", "rsa"]
            .iter()
            .map(|t| {
                let line = std::fs::read_to_string(s.dir.path(&format!("host_{t}.pub"))).unwrap();
                let key: Vec<&str> = line.split_whitespace().take(2).collect();
                format!("127.0.0.1 {}\n", key.join(" "))
            })
            .collect();
        std::fs::write(home.join(".ssh/known_hosts"), known).unwrap();
        let client = |cmd: &str| {
            let mut c = Command::new("dbclient");
            c.env("HOME", &home)
                .args(["-p", &port, "-l", &me, "-i"])
                .arg(&key)
                .args(["127.0.0.1", cmd]);
            c
        };
        let r = exec_both_ways(&client, &data, &s.dir.path("dbclient_up"));
        cases.check("dbclient -> sluiced (exec)", r);
    }

    if putty {
        let ppk = s.dir.path("id_ed25519.ppk");
        // PuTTY's tools keep a random seed and host keys under $HOME/.putty.
        let home = s.dir.path("putty-home");
        std::fs::create_dir_all(&home).unwrap();
        let out = Command::new("puttygen")
            .env("HOME", &home)
            .args(["-O", "private", "-o"])
            .arg(&ppk)
            .arg(&s.user_key)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "puttygen: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut common = vec![
            "-batch".to_owned(),
            "-noagent".into(),
            "-P".into(),
            port.clone(),
        ];
        common.extend([
            "-l".into(),
            me.clone(),
            "-i".into(),
            ppk.display().to_string(),
        ]);
        for fp in fingerprints(&s) {
            common.extend(["-hostkey".into(), fp]);
        }
        let putty = |program: &str| {
            let mut c = Command::new(program);
            c.env("HOME", &home).args(&common);
            c
        };
        let plink = |cmd: &str| {
            let mut c = putty("plink");
            c.args(["-ssh", "127.0.0.1", cmd]);
            c
        };
        cases.check(
            "plink -> sluiced (exec)",
            exec_both_ways(&plink, &data, &s.dir.path("plink_up")),
        );
        for proto in ["-sftp", "-scp"] {
            let remote = s.dir.path(&format!("pscp{proto}_up"));
            let back = s.dir.path(&format!("pscp{proto}_down"));
            let r = (|| {
                let mut c = putty("pscp");
                c.arg(proto)
                    .arg(&up)
                    .arg(format!("127.0.0.1:{}", remote.display()));
                succeeded(&run(c, b"", 60), "upload")?;
                same_file(&remote, &want, "upload")?;
                let mut c = putty("pscp");
                c.arg(proto)
                    .arg(format!("127.0.0.1:{}", remote.display()))
                    .arg(&back);
                succeeded(&run(c, b"", 60), "download")?;
                same_file(&back, &want, "download")
            })();
            cases.check(&format!("pscp {proto} -> sluiced"), r);
        }
        let remote = s.dir.path("psftp_up");
        let back = s.dir.path("psftp_down");
        let batch = s.dir.path("psftp_batch");
        std::fs::write(
            &batch,
            format!(
                "put {} {}\nget {} {}\n",
                up.display(),
                remote.display(),
                remote.display(),
                back.display()
            ),
        )
        .unwrap();
        let mut c = putty("psftp");
        c.arg("-b").arg(&batch).arg("127.0.0.1");
        let out = run(c, b"", 60);
        let r = succeeded(&out, "psftp -b")
            .and_then(|()| same_file(&remote, &want, "upload"))
            .and_then(|()| same_file(&back, &want, "download"));
        cases.check("psftp -> sluiced (put, get)", r);
    }

    if go {
        let mut c = Command::new(go_peer());
        c.arg("client")
            .arg(format!("127.0.0.1:{port}"))
            .arg(&me)
            .arg(&s.user_key)
            .arg(s.dir.path("host_ed25519.pub"))
            .arg(&up)
            .arg(s.dir.path("go_up"));
        let out = run(c, b"", 60);
        let r = succeeded(&out, "sftppeer client")
            .and_then(|()| same_file(&s.dir.path("go_up"), &want, "upload"))
            .and_then(|()| same_file(&s.dir.path("go_up.w"), &want, "upload by Write"));
        cases.check("Go x/crypto/ssh exec + pkg/sftp put/get -> sluiced", r);
    }
    if !cases.0.is_empty() {
        eprintln!("sluiced's log:\n{}", server.log_text());
    }
    cases.finish();
}

/// A user for Dropbear's logins (it reads ~/.ssh/authorized_keys and has no
/// option for another file), home in the test's directory; removed on drop.
struct TempUser(String);

impl TempUser {
    fn create(home: &Path, key: &Path) -> TempUser {
        let name = format!("slp{}", std::process::id() % 1_000_000);
        let _ = Command::new("userdel")
            .args(["-r", &name])
            .stderr(Stdio::null())
            .status();
        let st = Command::new("useradd")
            .args(["-m", "-s", "/bin/sh", "-p", "*", "-d"])
            .arg(home)
            .arg(&name)
            .status()
            .expect("useradd (passwd)");
        assert!(st.success(), "useradd {name}");
        let user = TempUser(name);
        let ssh = home.join(".ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        chmod(&ssh, 0o700);
        std::fs::copy(key, ssh.join("authorized_keys")).unwrap();
        tool("chown", &["-R", &user.0], &[home]);
        user
    }
}

impl Drop for TempUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel")
            .args(["-r", &self.0])
            .stderr(Stdio::null())
            .status();
    }
}

/// `sluice-sftp -b` (put, get) and `sluice-scp` (up, down) as `login` on
/// `port`, into `remote_dir` (this filesystem); `tag` names local files.
fn sftp_and_scp(
    s: &Setup,
    cases: &mut Cases,
    (peer, tag): (&str, &str),
    port: u16,
    login: &str,
    remote_dir: &Path,
) {
    let data = random_data(SIZE, 44);
    let want = sha256(&data);
    let up = s.dir.path(&format!("{tag}_local"));
    std::fs::write(&up, &data).unwrap();
    let opts = |program: &str| {
        let mut c = Command::new(program);
        c.args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=no"])
            .args(["-o", "BatchMode=yes", "-o", "LogLevel=ERROR"])
            .arg("-o")
            .arg(format!(
                "UserKnownHostsFile={}",
                s.dir.path("known_hosts").display()
            ))
            .arg("-i")
            .arg(&s.user_key)
            .args(["-P", &port.to_string()]);
        c
    };
    let remote = remote_dir.join("sftp_up");
    let back = s.dir.path(&format!("{tag}_sftp_down"));
    let batch = s.dir.path(&format!("{tag}_batch"));
    std::fs::write(
        &batch,
        format!(
            "put {} {}\nget {} {}\n",
            up.display(),
            remote.display(),
            remote.display(),
            back.display()
        ),
    )
    .unwrap();
    let mut c = opts(SFTP);
    c.arg("-b").arg(&batch).arg(format!("{login}@127.0.0.1"));
    let r = succeeded(&run(c, b"", 60), "sluice-sftp -b")
        .and_then(|()| same_file(&remote, &want, "upload"))
        .and_then(|()| same_file(&back, &want, "download"));
    cases.check(&format!("sluice-sftp -> {peer} (put, get)"), r);

    let remote = remote_dir.join("scp_up");
    let back = s.dir.path(&format!("{tag}_scp_down"));
    let r = (|| {
        let mut c = opts(SCP);
        c.arg(&up)
            .arg(format!("{login}@127.0.0.1:{}", remote.display()));
        succeeded(&run(c, b"", 60), "upload")?;
        same_file(&remote, &want, "upload")?;
        let mut c = opts(SCP);
        c.arg(format!("{login}@127.0.0.1:{}", remote.display()))
            .arg(&back);
        succeeded(&run(c, b"", 60), "download")?;
        same_file(&back, &want, "download")
    })();
    cases.check(&format!("sluice-scp -> {peer}"), r);
}

#[test]
fn sluice_into_third_party_servers() {
    let (dropbear, go) = (have(DROPBEAR), have(GO_PEER));
    if !(dropbear || go) {
        return;
    }
    let s = Setup::new("peers-out");
    let data = random_data(SIZE, 45);
    let mut cases = Cases::default();

    if dropbear {
        let home = s.dir.path("dropbear-home");
        let u = TempUser::create(&home, &s.dir.path("id_ed25519.pub"));
        let hostkey = s.dir.path("host_ed25519.db");
        tool(
            "dropbearconvert",
            &["openssh", "dropbear"],
            &[&s.dir.path("host_ed25519"), &hostkey],
        );
        let port = free_port();
        let log = std::fs::File::create(s.dir.path("dropbear.log")).unwrap();
        // -F -E: foreground, log to stderr; -s: keys only.
        let _dropbear = Peer(
            Command::new("dropbear")
                .args(["-F", "-E", "-s", "-p", &format!("127.0.0.1:{port}"), "-r"])
                .arg(&hostkey)
                .arg("-P")
                .arg(s.dir.path("dropbear.pid"))
                .stdin(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
        wait_for_port(port, "dropbear");
        let client = |cmd: &str| {
            let mut c = s.client_to(false, port, "ERROR", &["-l", &u.0]);
            c.arg(cmd);
            c
        };
        cases.check(
            "sluice -> dropbear (exec)",
            exec_both_ways(&client, &data, &home.join("exec_up")),
        );
        sftp_and_scp(&s, &mut cases, ("dropbear", "dropbear"), port, &u.0, &home);
        if !cases.0.is_empty() {
            eprintln!(
                "dropbear's log:\n{}",
                std::fs::read_to_string(s.dir.path("dropbear.log")).unwrap_or_default()
            );
        }
    }

    if go {
        let port = free_port();
        let mut child = Command::new(go_peer())
            .arg("server")
            .arg(port.to_string())
            .arg(s.dir.path("host_ed25519"))
            .arg(s.dir.path("authorized_keys"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let _go = Peer(child);
        assert_eq!(line.trim(), "ready", "the Go server did not start");
        let client = |cmd: &str| {
            let mut c = s.client_to(false, port, "ERROR", &[]);
            c.arg(cmd);
            c
        };
        cases.check(
            "sluice -> Go x/crypto/ssh server (exec)",
            exec_both_ways(&client, &data, &s.dir.path("go_exec_up")),
        );
        let dir = s.dir.path("go-remote");
        std::fs::create_dir_all(&dir).unwrap();
        sftp_and_scp(
            &s,
            &mut cases,
            ("Go pkg/sftp server", "go"),
            port,
            &user(),
            &dir,
        );
    }
    cases.finish();
}
