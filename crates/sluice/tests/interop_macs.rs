//! The MACs besides the SHA-2 HMACs (umac-64/128@openssh.com and hmac-sha1,
//! offered by default as OpenSSH 10 does; hmac-md5 and the -96 forms, only
//! when named; and the -etm@openssh.com form of each), each forced with aes128-ctr against
//! Debian's OpenSSH both ways and between sluice and sluiced: a few MiB each
//! way, checked by SHA-256, across re-keys (so the MAC keys are replaced
//! mid-stream); and how `-Q mac`, `-G`, `sluiced -T` and the MACs keyword
//! treat them.

mod common;
use common::*;
use std::process::Command;

/// Every MAC past the SHA-2 HMACs (tested in interop_openssh.rs).
const LEGACY_MACS: &[&str] = &[
    "hmac-sha1",
    "hmac-sha1-96",
    "hmac-md5",
    "hmac-md5-96",
    "umac-64@openssh.com",
    "umac-128@openssh.com",
    "hmac-sha1-etm@openssh.com",
    "hmac-sha1-96-etm@openssh.com",
    "hmac-md5-etm@openssh.com",
    "hmac-md5-96-etm@openssh.com",
    "umac-64-etm@openssh.com",
    "umac-128-etm@openssh.com",
];

/// The MAC list OpenSSH 9.2's `ssh -Q mac` prints.
const OPENSSH_MACS: &str = "hmac-sha1,hmac-sha1-96,hmac-sha2-256,hmac-sha2-512,hmac-md5,\
hmac-md5-96,umac-64@openssh.com,umac-128@openssh.com,hmac-sha1-etm@openssh.com,\
hmac-sha1-96-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,\
hmac-md5-etm@openssh.com,hmac-md5-96-etm@openssh.com,umac-64-etm@openssh.com,\
umac-128-etm@openssh.com";

/// Uploads and downloads 3 MiB with each MAC forced on the client, with a
/// 1 MiB RekeyLimit on the client (uploads) and the server (downloads).
fn each_mac_carries_data(openssh_client: bool, openssh_server: bool, label: &str) {
    let s = Setup::new("macs");
    let data = random_data(3 << 20, 16);
    let hash = sha256(&data);
    let src = s.dir.path("src.bin");
    std::fs::write(&src, &data).unwrap();
    // Neither server offers the MD5 and -96 forms by default: allow all.
    let server = s.start(
        openssh_server,
        &format!("MACs {OPENSSH_MACS}\nRekeyLimit 1M"),
    );
    for m in LEGACY_MACS {
        let opts = ["-m", m, "-c", "aes128-ctr", "-o", "RekeyLimit=1M"];
        let mut c = s.client(openssh_client, &server, &opts);
        c.arg("sha256sum");
        let out = run(c, &data, 60);
        ok(&out, &format!("{label} {m} upload\n{}", server.log_text()));
        let sum = String::from_utf8_lossy(&out.stdout);
        assert!(sum.starts_with(&hash), "{label} {m} upload: {sum}");

        let mut c = s.client(openssh_client, &server, &opts);
        c.arg(format!("cat {}", src.display()));
        let out = run(c, b"", 60);
        ok(
            &out,
            &format!("{label} {m} download\n{}", server.log_text()),
        );
        assert_eq!(sha256(&out.stdout), hash, "{label} {m} download");
    }
}

#[test]
fn openssh_client_to_sluiced() {
    if missing("ssh") {
        return;
    }
    each_mac_carries_data(true, false, "ssh->sluiced");
}

#[test]
fn sluice_to_openssh_server() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    each_mac_carries_data(false, true, "sluice->sshd");
}

#[test]
fn sluice_to_sluiced() {
    each_mac_carries_data(false, false, "sluice->sluiced");
}

fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn g_macs(extra: &[&str]) -> String {
    let out = stdout(
        Command::new(SLUICE)
            .args(["-F", "/dev/null", "-G"])
            .args(extra)
            .arg("h"),
    );
    out.lines()
        .find_map(|l| l.strip_prefix("macs "))
        .unwrap_or_default()
        .to_owned()
}

/// OpenSSH 10's default MACs (ssh_config(5), sshd_config(5)).
const DEFAULT: &str = "umac-64-etm@openssh.com,umac-128-etm@openssh.com,\
hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha1-etm@openssh.com,\
umac-64@openssh.com,umac-128@openssh.com,hmac-sha2-256,hmac-sha2-512,hmac-sha1";

/// DEFAULT without `drop` (a comma-separated list).
fn default_without(drop: &str) -> String {
    let drop: Vec<&str> = drop.split(',').collect();
    DEFAULT
        .split(',')
        .filter(|m| !drop.contains(m))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn query_lists_every_mac_and_the_default_is_openssh_10s() {
    // -Q lists what is implemented, in ssh's order; the offer is OpenSSH 10's.
    let q = stdout(Command::new(SLUICE).args(["-Q", "mac"]));
    assert_eq!(q.trim_end().replace('\n', ","), OPENSSH_MACS);
    assert_eq!(g_macs(&[]), DEFAULT);
    // Named, with -m or MACs, in every form.
    assert_eq!(
        g_macs(&["-m", "umac-64@openssh.com,hmac-md5"]),
        "umac-64@openssh.com,hmac-md5"
    );
    assert_eq!(
        g_macs(&["-o", "MACs=+hmac-sha1-96-etm@openssh.com"]),
        format!("{DEFAULT},hmac-sha1-96-etm@openssh.com")
    );
    assert_eq!(
        g_macs(&["-o", "MACs=^umac-128-etm@openssh.com"]),
        format!(
            "umac-128-etm@openssh.com,{}",
            default_without("umac-128-etm@openssh.com")
        )
    );
    assert_eq!(
        g_macs(&["-o", "MACs=-*-etm@openssh.com"]),
        "umac-64@openssh.com,umac-128@openssh.com,hmac-sha2-256,hmac-sha2-512,hmac-sha1"
    );
    assert_eq!(
        g_macs(&["-m", "umac-*"]),
        "umac-64@openssh.com,umac-128@openssh.com,umac-64-etm@openssh.com,umac-128-etm@openssh.com"
    );
    // An unknown name is still refused.
    let out = Command::new(SLUICE)
        .args(["-F", "/dev/null", "-G", "-m", "hmac-sha3-256", "h"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Bad SSH2 Mac spec"));
}

#[test]
fn sluiced_accepts_and_prints_every_mac() {
    let s = Setup::new("macs-t");
    let d = s.dir.0.display().to_string();
    let cfg = s.dir.path("cfg");
    for (line, want) in [
        ("", DEFAULT.to_owned()),
        (&*format!("MACs {OPENSSH_MACS}"), OPENSSH_MACS.to_owned()),
        // Already in the default: nothing added.
        (
            "MACs +umac-64-etm@openssh.com,hmac-sha1",
            DEFAULT.to_owned(),
        ),
        ("MACs +hmac-md5,hmac-sha1", format!("{DEFAULT},hmac-md5")),
        ("MACs ^hmac-md5-96", format!("hmac-md5-96,{DEFAULT}")),
        (
            "MACs -hmac-sha2-512*",
            default_without("hmac-sha2-512-etm@openssh.com,hmac-sha2-512"),
        ),
    ] {
        std::fs::write(&cfg, format!("HostKey {d}/host_ed25519\n{line}\n")).unwrap();
        let out = stdout(Command::new(SLUICED).arg("-T").arg("-f").arg(&cfg));
        let macs = out
            .lines()
            .find_map(|l| l.strip_prefix("macs "))
            .unwrap_or_default();
        assert_eq!(macs, want, "{line}");
    }
    std::fs::write(
        &cfg,
        format!("HostKey {d}/host_ed25519\nMACs hmac-sha3-256\n"),
    )
    .unwrap();
    let out = Command::new(SLUICED)
        .arg("-t")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Bad SSH2 Mac spec"));
}
