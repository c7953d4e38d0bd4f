//! ChrootDirectory with `ForceCommand internal-sftp`, the customer-upload
//! setup: the user sees only the chroot; sshd's ownership rule refuses a
//! chroot path with a writable component, naming it; non-UTF-8 names and a
//! file past 4 GiB go through; a command other than internal-sftp runs
//! inside the chroot (and fails there, as with sshd). Needs root
//! (throwaway users, chroot(2)).

mod common;
mod privsep_util;
mod sftp_util;

use common::*;
use privsep_util::*;
use sftp_util::*;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

/// A jail with an `up` directory the user owns.
fn jail_for(tag: &str, u: &TestUser) -> Jail {
    let j = Jail::new(tag);
    let up = j.0.join("up");
    std::fs::create_dir(&up).unwrap();
    chown(&up, u.uid, u.gid);
    j
}

#[test]
fn the_user_sees_only_the_chroot() {
    if skip() || missing("sftp") {
        return;
    }
    let u = TestUser::named("slsc");
    let jail = jail_for("sftp-chroot", &u);
    let s = Setup::new("sftp-chroot");
    // Tokens: %u in the path; the Match block applies to this user only.
    let base = jail.0.parent().unwrap().display().to_string();
    let name = jail.0.file_name().unwrap().to_string_lossy().into_owned();
    let tpl = format!("{base}/{}", name.replace(&u.name, "%u"));
    let extra = format!(
        "Match User {}\n  ChrootDirectory {tpl}\n  ForceCommand internal-sftp -d /up -u 027\n",
        u.name
    );
    let server = start_sftp(&s, "internal-sftp", &extra);
    let local = s.dir.path("l");
    std::fs::create_dir_all(&local).unwrap();
    let data = random_data((2 << 20) + 1, 21);
    std::fs::write(local.join("in.bin"), &data).unwrap();
    // Non-UTF-8 names, as bytes in the batch file.
    let mut batch = format!("lcd {}\npwd\nput in.bin\n", local.display()).into_bytes();
    batch.extend_from_slice(b"put in.bin caf\xe9-\xff.bin\nls\nget caf\xe9-\xff.bin back.bin\n");
    batch.extend_from_slice(b"cd /\nls -la\n-get /etc/passwd pw\ncd ..\npwd\n");
    let out = sftp_batch(&s, &server, Some(&u.name), &batch);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    assert!(text.contains("Remote working directory: /up\n"), "{text}");
    assert!(
        text.contains("Remote working directory: /\n"),
        "cd .. stays at /: {text}"
    );
    let up = jail.0.join("up");
    assert_eq!(sha_of(&up.join("in.bin")), sha256(&data));
    let odd = up.join(std::ffi::OsStr::from_bytes(b"caf\xe9-\xff.bin"));
    assert_eq!(sha_of(&odd), sha256(&data), "non-UTF-8 name");
    assert_eq!(sha_of(&local.join("back.bin")), sha256(&data));
    assert!(
        !local.join("pw").exists(),
        "/etc/passwd is outside the chroot"
    );
    // Files are the user's, with -u 027 applied.
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(up.join("in.bin")).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o777), (u.uid, 0o640));
    // The chroot's root lists only what is in it.
    let listing: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("sftp> ls -la"))
        .skip(1)
        .take_while(|l| !l.starts_with("sftp>"))
        .collect();
    assert_eq!(listing.len(), 3, "{listing:?}");
    assert!(listing.iter().any(|l| l.ends_with(" up")));
    let log = server.log_text();
    assert!(
        log.contains(&format!(
            "Changed root directory to \"{}\"",
            jail.0.display()
        )),
        "{log}"
    );
}

#[test]
fn bad_ownership_is_refused_with_sshds_message() {
    if skip() || missing("sftp") {
        return;
    }
    let u = TestUser::named("slsb");
    let outer = Jail::new("sftp-chroot-bad");
    let inner = outer.0.join("in");
    std::fs::create_dir(&inner).unwrap();
    chmod(&inner, 0o755);
    let s = Setup::new("sftp-chroot-bad");
    let extra = format!(
        "Match User {}\n  ChrootDirectory {}\n  ForceCommand internal-sftp\n",
        u.name,
        inner.display()
    );
    let server = start_sftp(&s, "internal-sftp", &extra);
    // A group-writable component above the chroot.
    chmod(&outer.0, 0o775);
    let out = sftp_batch(&s, &server, Some(&u.name), b"pwd\n");
    assert!(!out.status.success());
    let want = format!(
        "bad ownership or modes for chroot directory component \"{}/\"",
        outer.0.display()
    );
    let log = server.log_text();
    assert!(log.contains(&want), "{want} in {log}");
    // The chroot itself owned by the user.
    chmod(&outer.0, 0o755);
    chown(&inner, u.uid, u.gid);
    let out = sftp_batch(&s, &server, Some(&u.name), b"pwd\n");
    assert!(!out.status.success());
    let want = format!(
        "bad ownership or modes for chroot directory \"{}\"",
        inner.display()
    );
    let log = server.log_text();
    assert!(log.contains(&want), "{want} in {log}");
    // The listener goes on; fixed ownership lets the user in.
    chown(&inner, 0, 0);
    let out = sftp_batch(&s, &server, Some(&u.name), b"pwd\n");
    ok(&out, "after fixing the ownership");
}

#[test]
fn sparse_file_past_4_gib_and_commands_inside_the_chroot() {
    if skip() {
        return;
    }
    let py = Command::new("python3")
        .args(["-c", "import paramiko"])
        .status()
        .is_ok_and(|s| s.success());
    if !py {
        assert!(
            std::env::var("CI").is_err(),
            "paramiko is required under CI"
        );
        return;
    }
    let u = TestUser::named("slsp");
    let other = TestUser::named("slsq");
    let jail = jail_for("sftp-chroot-sparse", &u);
    let s = Setup::new("sftp-chroot-sparse");
    let extra = format!(
        "Match User {u}\n  ChrootDirectory {j}\n  ForceCommand internal-sftp\n\
         Match User {o}\n  ChrootDirectory {j}\n",
        u = u.name,
        o = other.name,
        j = jail.0.display()
    );
    let server = start_sftp(&s, "internal-sftp", &extra);
    let mut c = Command::new("python3");
    c.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/peers/paramiko_sftp.py"
    ))
    .arg(server.port.to_string())
    .arg(&s.user_key)
    .arg(&u.name)
    .arg("sparse")
    .arg("/up/huge.bin");
    let out = run(c, b"", 120);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    let size = (5u64 << 30) + 4;
    assert!(text.contains(&format!("size {size}")), "{text}");
    assert!(text.contains("bytes tail"), "{text}");
    assert!(text.contains("hole 00000000"), "{text}");
    assert_eq!(
        std::fs::metadata(jail.0.join("up/huge.bin")).unwrap().len(),
        size
    );
    // Another user, chrooted without ForceCommand: the command runs inside
    // the chroot, where there is no shell, and fails, as with sshd.
    let mut c = s.client(true, &server, &["-l", &other.name]);
    c.arg("echo escaped");
    let out = run(c, b"", 30);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("escaped"));
    assert!(!out.status.success());
    // The test's own user is not chrooted.
    let mut c = s.client(true, &server, &[]);
    c.arg("echo free");
    let out = run(c, b"", 30);
    ok(&out, "unchrooted user");
}
