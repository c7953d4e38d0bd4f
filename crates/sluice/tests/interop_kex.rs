//! The key exchange methods Debian's OpenSSH 9.2 has besides the curves:
//! finite-field Diffie-Hellman (group1/14/16/18), group exchange (RFC 4419)
//! and the sntrup761x25519 hybrid, each forced with `-o KexAlgorithms=X`
//! both ways (ssh -> sluiced, sluice -> sshd) and sluice -> sluiced, with
//! data checked by SHA-256 in each direction. And sluiced's default list,
//! OpenSSH 10 sshd's: the NIST curves in, finite-field DH out.

mod common;
use common::*;

/// Every method besides the curves, the legacy SHA-1 ones included.
const METHODS: &[&str] = &[
    "sntrup761x25519-sha512",
    "sntrup761x25519-sha512@openssh.com",
    "diffie-hellman-group-exchange-sha256",
    "diffie-hellman-group16-sha512",
    "diffie-hellman-group18-sha512",
    "diffie-hellman-group14-sha256",
    "diffie-hellman-group14-sha1",
    "diffie-hellman-group-exchange-sha1",
    "diffie-hellman-group1-sha1",
];

/// (client is OpenSSH, server is OpenSSH, label).
const PAIRS: &[(bool, bool, &str)] = &[
    (true, false, "ssh->sluiced"),
    (false, true, "sluice->sshd"),
    (false, false, "sluice->sluiced"),
];

/// Neither sshd nor sluiced offers all of them by default: both are told to.
fn enable_all() -> String {
    format!("KexAlgorithms {}", METHODS.join(","))
}

/// Uploads `data` with `cat >` and downloads it with `cat`, checking hashes.
fn round_trip(s: &Setup, server: &Server, oc: bool, opts: &[&str], data: &[u8], label: &str) {
    let hash = sha256(data);
    let dst = s.dir.path(&format!("dst-{}.bin", server.port));
    let _ = std::fs::remove_file(&dst);
    let mut c = s.client(oc, server, opts);
    c.arg(format!("cat > {}", dst.display()));
    let out = run(c, data, 60);
    assert!(
        out.status.success(),
        "{label} {opts:?} upload: {}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    assert_eq!(sha256_file(&dst), hash, "{label} {opts:?} upload");
    let mut c = s.client(oc, server, opts);
    c.arg(format!("cat {}", dst.display()));
    let out = run(c, b"", 60);
    assert!(
        out.status.success(),
        "{label} {opts:?} download: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sha256(&out.stdout), hash, "{label} {opts:?} download");
}

#[test]
fn every_method_both_ways_with_hashes() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("kexall");
    let data = random_data(1 << 20, 16);
    for &(oc, os, label) in PAIRS {
        let server = s.start(os, &enable_all());
        for k in METHODS {
            let kex = format!("KexAlgorithms={k}");
            round_trip(&s, &server, oc, &["-o", &kex], &data, label);
        }
    }
}

/// Group exchange with AES-128-GCM asks for a 3072-bit group (ssh's
/// `dh_estimate`); sluiced picks it from ModuliFile. A missing ModuliFile
/// falls back to the RFC 3526 groups, logged as sshd does.
#[test]
fn group_exchange_reads_moduli_file() {
    if missing("/usr/sbin/sshd") || missing("/etc/ssh/moduli") {
        return;
    }
    let s = Setup::new("kexgex");
    let data = random_data(256 << 10, 17);
    let only_3072: String = std::fs::read_to_string("/etc/ssh/moduli")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('#') || l.split_whitespace().nth(4) == Some("3071"))
        .map(|l| format!("{l}\n"))
        .collect();
    let moduli = s.dir.path("moduli");
    std::fs::write(&moduli, only_3072).unwrap();
    let opts = [
        "-o",
        "KexAlgorithms=diffie-hellman-group-exchange-sha256",
        "-c",
        "aes128-gcm@openssh.com",
    ];
    let server = s.start(
        false,
        &format!("{}\nModuliFile {}", enable_all(), moduli.display()),
    );
    for oc in [true, false] {
        round_trip(&s, &server, oc, &opts, &data, "moduli 3072");
    }
    // 8192 bits wanted with aes256: nothing in the file fits, the RFC 3526
    // 8192-bit group is used.
    let big = [
        "-o",
        "KexAlgorithms=diffie-hellman-group-exchange-sha256",
        "-c",
        "aes256-ctr",
    ];
    round_trip(&s, &server, true, &big, &data, "moduli fallback");
    let missing_file = s.dir.path("no-such-moduli");
    let server = s.start(
        false,
        &format!("{}\nModuliFile {}", enable_all(), missing_file.display()),
    );
    round_trip(&s, &server, true, &opts, &data, "no moduli file");
    let log = server.log_text();
    assert!(
        log.contains("could not open") && log.contains("no-such-moduli"),
        "{log}"
    );
}

/// sshd_config(5) of OpenSSH 10.x: the default KexAlgorithms.
const SSHD_10_KEX: &str = "mlkem768x25519-sha256,sntrup761x25519-sha512,\
sntrup761x25519-sha512@openssh.com,curve25519-sha256,curve25519-sha256@libssh.org,\
ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521";

/// `sluiced -T`'s kexalgorithms line for a config with `extra`.
fn dumped_kex(s: &Setup, extra: &str) -> String {
    let cfg = s.config(22, extra);
    let out = std::process::Command::new(SLUICED)
        .arg("-T")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    ok(&out, "sluiced -T");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("kexalgorithms ").map(str::to_owned))
        .unwrap_or_default()
}

/// A client that speaks only NIST-curve ECDH (FIPS-mode and appliance
/// clients) logs in to sluiced as configured by default; finite-field
/// DH is refused until the configuration names it, as by sshd 10.
#[test]
fn default_kex_is_sshd_10s() {
    if missing("ssh") {
        return;
    }
    let s = Setup::new("kexdefault");
    assert_eq!(dumped_kex(&s, ""), SSHD_10_KEX);
    // The client's default, ssh_config(5)'s, keeps the DH methods.
    let out = std::process::Command::new(SLUICE)
        .args(["-F", "/dev/null", "-G", "h"])
        .output()
        .unwrap();
    let g = String::from_utf8_lossy(&out.stdout);
    assert!(
        g.lines().any(|l| l
            == format!(
                "kexalgorithms {SSHD_10_KEX},diffie-hellman-group-exchange-sha256,\
diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,diffie-hellman-group14-sha256"
            )),
        "{g}"
    );
    let server = s.start(false, "");
    for curve in [
        "ecdh-sha2-nistp256",
        "ecdh-sha2-nistp384",
        "ecdh-sha2-nistp521",
    ] {
        let kex = format!("KexAlgorithms={curve}");
        let mut c = s.client_at(true, &server, "DEBUG", &["-o", &kex]);
        c.arg("echo in");
        let out = run(c, b"", 60);
        ok(&out, &format!("{curve}\n{}", server.log_text()));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "in\n", "{curve}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("kex: algorithm: {curve}")), "{err}");
    }
    let dh = "diffie-hellman-group14-sha256";
    // ssh says why at INFO.
    let mut c = s.client_at(
        true,
        &server,
        "INFO",
        &["-o", &format!("KexAlgorithms={dh}")],
    );
    c.arg("true");
    let out = run(c, b"", 60);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no matching key exchange method found"),
        "{err}"
    );
    drop(server);

    // Named, it is offered after the defaults.
    let extra = format!("KexAlgorithms +{dh}");
    assert_eq!(dumped_kex(&s, &extra), format!("{SSHD_10_KEX},{dh}"));
    let server = s.start(false, &extra);
    let mut c = s.client(true, &server, &["-o", &format!("KexAlgorithms={dh}")]);
    c.arg("echo in");
    let out = run(c, b"", 60);
    ok(&out, &format!("{dh}\n{}", server.log_text()));
}
