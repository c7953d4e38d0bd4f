//! sluiced's internal-sftp (`Subsystem sftp internal-sftp`) against stock
//! clients: OpenSSH's `sftp -b` with every common command, `scp` in SFTP
//! and legacy (`-O`) mode, paramiko's SFTPClient; read-only mode; raw,
//! malformed and excessive packets through `ssh -s`. Data checked by SHA-256.

mod common;
mod sftp_util;

use common::*;
use sftp_util::*;
use sluice_proto::sftp::{fxp, Extended, Request, Status};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

fn python_ok() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import paramiko"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "python3 with paramiko is required under CI"
        );
        eprintln!("skipping: paramiko not installed");
    }
    ok
}

const PEERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/peers");

#[test]
fn stock_sftp_batch_every_command() {
    if missing("sftp") {
        return;
    }
    let s = Setup::new("sftp-batch");
    let server = start_sftp(&s, "internal-sftp -l INFO", "");
    let (local, remote) = (s.dir.path("local"), s.dir.path("remote"));
    std::fs::create_dir_all(local.join("tree/sub")).unwrap();
    std::fs::create_dir_all(&remote).unwrap();
    // Not a multiple of any buffer size.
    let big = random_data((3 << 20) + 12345, 1);
    std::fs::write(local.join("big.bin"), &big).unwrap();
    std::fs::write(local.join("tree/a.bin"), random_data(70_000, 2)).unwrap();
    std::fs::write(local.join("tree/sub/b.bin"), random_data(1 << 20, 3)).unwrap();
    // Half-done transfers for reget and reput.
    std::fs::write(local.join("reget.bin"), &big[..1 << 20]).unwrap();
    std::fs::write(remote.join("reput.bin"), &big[..1 << 20]).unwrap();
    let batch = format!(
        "lcd {l}\ncd {r}\npwd\nput big.bin\nget big.bin got.bin\nreget big.bin reget.bin\n\
         reput big.bin reput.bin\nls -l\nmkdir newdir\nrmdir newdir\nput big.bin del.bin\nrm del.bin\n\
         rename big.bin moved.bin\nchmod 600 moved.bin\nln -s moved.bin link.bin\ndf\n\
         put -r tree\nget -r tree treeback\nls -l tree\n",
        l = local.display(),
        r = remote.display()
    );
    let out = sftp_batch(&s, &server, None, batch.as_bytes());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    let want = sha256(&big);
    assert_eq!(sha_of(&local.join("got.bin")), want, "get");
    assert_eq!(sha_of(&local.join("reget.bin")), want, "reget");
    assert_eq!(sha_of(&remote.join("reput.bin")), want, "reput");
    assert_eq!(sha_of(&remote.join("moved.bin")), want, "rename");
    assert!(!remote.join("big.bin").exists(), "rename left the old name");
    assert!(!remote.join("del.bin").exists(), "rm");
    assert!(!remote.join("newdir").exists(), "rmdir");
    let mode = std::fs::metadata(remote.join("moved.bin"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "chmod");
    let link = std::fs::symlink_metadata(remote.join("link.bin")).unwrap();
    assert!(link.file_type().is_symlink(), "ln -s");
    assert_eq!(sha_of(&remote.join("link.bin")), want, "the link's target");
    for (a, b) in [
        ("tree/a.bin", "tree/a.bin"),
        ("tree/sub/b.bin", "tree/sub/b.bin"),
        ("tree/a.bin", "treeback/a.bin"),
        ("tree/sub/b.bin", "treeback/sub/b.bin"),
    ] {
        let back = if b.starts_with("treeback") {
            local.join(b)
        } else {
            remote.join(b)
        };
        assert_eq!(sha_of(&local.join(a)), sha_of(&back), "{b}");
    }
    assert!(
        text.contains(&format!("Remote working directory: {}", remote.display())),
        "{text}"
    );
    assert!(text.contains("big.bin"), "ls -l: {text}");
    assert!(text.contains("%Capacity"), "df: {text}");
    let log = server.log_text();
    assert!(log.contains("sftp: open \""), "-l INFO logs opens: {log}");
}

#[test]
fn stock_scp_sftp_and_legacy_modes() {
    if missing("scp") {
        return;
    }
    let s = Setup::new("sftp-scp");
    let server = start_sftp(&s, "internal-sftp", "");
    let src = s.dir.path("src");
    std::fs::create_dir_all(src.join("deep")).unwrap();
    std::fs::write(src.join("one.bin"), random_data(5 << 20, 7)).unwrap();
    std::fs::write(src.join("deep/two.bin"), random_data(123_457, 8)).unwrap();
    // An old mtime that -p must carry.
    let st = Command::new("touch")
        .args(["-d", "2001-02-03 04:05:06"])
        .arg(src.join("one.bin"))
        .status()
        .unwrap();
    assert!(st.success());
    let old = std::fs::metadata(src.join("one.bin")).unwrap().mtime();
    for (i, legacy) in [false, true].into_iter().enumerate() {
        let up = s.dir.path(&format!("up{i}"));
        let down = s.dir.path(&format!("down{i}"));
        let scp = |from: String, to: String| {
            let mut c = Command::new("scp");
            if legacy {
                c.arg("-O");
            }
            c.args(["-r", "-p", "-q", "-F", "/dev/null"])
                .args(["-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes"])
                .arg("-o")
                .arg(format!(
                    "UserKnownHostsFile={}",
                    s.dir.path("known_hosts").display()
                ))
                .arg("-i")
                .arg(&s.user_key)
                .args(["-P", &server.port.to_string()])
                .arg(from)
                .arg(to);
            let out = run(c, b"", 120);
            ok(&out, &format!("scp legacy={legacy}"));
        };
        scp(
            src.display().to_string(),
            format!("127.0.0.1:{}", up.display()),
        );
        scp(
            format!("127.0.0.1:{}", up.display()),
            down.display().to_string(),
        );
        for f in ["one.bin", "deep/two.bin"] {
            let want = sha_of(&src.join(f));
            assert_eq!(sha_of(&up.join(f)), want, "upload {f} legacy={legacy}");
            assert_eq!(sha_of(&down.join(f)), want, "download {f} legacy={legacy}");
        }
        assert_eq!(
            std::fs::metadata(up.join("one.bin")).unwrap().mtime(),
            old,
            "-p up"
        );
        assert_eq!(
            std::fs::metadata(down.join("one.bin")).unwrap().mtime(),
            old,
            "-p down"
        );
    }
}

#[test]
fn paramiko_sftp_client() {
    if !python_ok() {
        return;
    }
    let s = Setup::new("sftp-paramiko");
    let server = start_sftp(&s, "internal-sftp", "");
    let d = s.dir.path("pm");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("keep.txt"), "kept").unwrap();
    let data = random_data((8 << 20) + 3, 11);
    let mut c = Command::new("python3");
    c.arg(format!("{PEERS}/paramiko_sftp.py"))
        .arg(server.port.to_string())
        .arg(&s.user_key)
        .arg(user())
        .arg("basic")
        .arg(&d);
    let out = run(c, &data, 120);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}\n{err}\n{}", server.log_text());
    assert!(
        text.contains(&format!("sha256 {}", sha256(&data))),
        "{text}"
    );
    assert!(text.contains(&format!("size {}", data.len())), "{text}");
    assert!(text.contains("listdir q.bin"), "{text}");
    assert!(text.contains("lstat_mode 0o100"), "{text}");
    assert!(text.contains("after keep.txt\n"), "{text}");
    // ENOENT: paramiko maps SSH_FX_NO_SUCH_FILE to errno 2.
    assert!(text.contains("missing 2"), "{text}");
}

#[test]
fn read_only_refuses_writes_with_permission_denied() {
    if !python_ok() {
        return;
    }
    let s = Setup::new("sftp-ro");
    let server = start_sftp(&s, "internal-sftp", "ForceCommand internal-sftp -R");
    let d = s.dir.path("ro");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("keep.bin"), "still here").unwrap();
    let mut c = Command::new("python3");
    c.arg(format!("{PEERS}/paramiko_sftp.py"))
        .arg(server.port.to_string())
        .arg(&s.user_key)
        .arg(user())
        .arg("readonly")
        .arg(&d);
    let out = run(c, b"", 60);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SSH_FX_PERMISSION_DENIED: errno 13 with the status's message.
    for op in ["put", "mkdir", "remove", "chmod"] {
        assert!(
            text.contains(&format!("{op} 13 Permission denied")),
            "{op}: {text}"
        );
    }
    assert!(text.contains("read still here"), "{text}");
    assert!(!d.join("new.bin").exists() && !d.join("newdir").exists());
    assert!(d.join("keep.bin").exists());
    assert_eq!(
        std::fs::metadata(d.join("keep.bin"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
}

/// INIT, as the first packet of every raw session.
fn init() -> Vec<u8> {
    let mut v = Vec::new();
    Request::Init {
        version: 3,
        extensions: vec![],
    }
    .encode(0, &mut v);
    v
}

/// Raw bytes through `ssh -s 127.0.0.1 sftp`: the server's output and
/// ssh's exit status.
fn raw_session(s: &Setup, server: &Server, input: &[u8]) -> (Vec<u8>, Option<i32>) {
    let mut c = s.client(true, server, &["-s"]);
    c.arg("sftp");
    let out = run(c, input, 120);
    (out.stdout, out.status.code())
}

fn still_serving(s: &Setup, server: &Server) {
    let out = sftp_batch(s, server, None, b"pwd\n");
    ok(&out, "sftp after the bad session");
}

#[test]
fn malformed_packets_get_status_or_a_clean_close() {
    let s = Setup::new("sftp-bad");
    let server = start_sftp(&s, "internal-sftp", "");
    // Well framed but wrong inside: answered, and the session goes on.
    let mut input = init();
    let mut bad_open = vec![0, 0, 0, 10, fxp::OPEN, 0, 0, 0, 1];
    bad_open.extend_from_slice(&[0, 0, 0, 0, b'x'][..5]);
    bad_open[3] = (bad_open.len() - 4) as u8;
    input.extend_from_slice(&bad_open);
    Request::Read {
        handle: b"zzzz",
        offset: 0,
        len: 10,
    }
    .encode(2, &mut input);
    Request::Unknown { kind: 99 }.encode(3, &mut input);
    Request::UnknownExtended {
        name: b"nope@example.com",
    }
    .encode(4, &mut input);
    Request::Extended(Extended::Limits).encode(5, &mut input);
    Request::Close {
        handle: b"\0\0\0\x07",
    }
    .encode(6, &mut input);
    let (out, code) = raw_session(&s, &server, &input);
    let r = replies(&out);
    assert_eq!(r.len(), 7, "{r:?}");
    assert_eq!(r[0].0, fxp::VERSION);
    let status = |i: usize| (r[i].0, r[i].1, status_code(&r[i].2));
    assert_eq!(status(1), (fxp::STATUS, 1, Status::BAD_MESSAGE.0));
    assert_eq!(status(2), (fxp::STATUS, 2, Status::FAILURE.0));
    assert_eq!(status(3), (fxp::STATUS, 3, Status::OP_UNSUPPORTED.0));
    assert_eq!(status(4), (fxp::STATUS, 4, Status::OP_UNSUPPORTED.0));
    assert_eq!((r[5].0, r[5].1), (fxp::EXTENDED_REPLY, 5));
    let limits: Vec<u64> = r[5]
        .2
        .chunks(8)
        .map(|c| u64::from_be_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(
        &limits[..3],
        &[262_144, 261_120, 261_120],
        "limits@openssh.com"
    );
    assert_eq!(status(6), (fxp::STATUS, 6, Status::FAILURE.0));
    assert_eq!(code, Some(0));

    // A length past 256 KiB, a request before INIT, a second INIT, a
    // packet too short for its id: the session ends (exit 255), cleanly.
    let mut long = init();
    long.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
    let mut early = Vec::new();
    Request::Realpath { path: b"." }.encode(1, &mut early);
    let mut twice = init();
    twice.extend_from_slice(&init());
    let mut short = init();
    short.extend_from_slice(&[0, 0, 0, 2, fxp::STAT, 0]);
    for (what, input, versions) in [
        ("oversized", long, 1),
        ("before INIT", early, 0),
        ("INIT twice", twice, 1),
        ("too short", short, 1),
    ] {
        let (out, code) = raw_session(&s, &server, &input);
        let r = replies(&out);
        assert_eq!(r.len(), versions, "{what}: {r:?}");
        assert_eq!(code, Some(255), "{what}");
        still_serving(&s, &server);
    }
    let log = server.log_text();
    assert!(log.contains("is longer than 262144"), "{log}");
    // Truncated mid-packet: the peer's EOF ends the session as any EOF.
    let mut cut = init();
    let mut w = Vec::new();
    Request::Write {
        handle: b"1",
        offset: 0,
        data: &[7u8; 1000],
    }
    .encode(1, &mut w);
    cut.extend_from_slice(&w[..500]);
    let (out, code) = raw_session(&s, &server, &cut);
    assert_eq!(replies(&out).len(), 1);
    assert_eq!(code, Some(0));
    still_serving(&s, &server);
}

#[test]
fn ten_thousand_open_handles_get_clean_errors() {
    let s = Setup::new("sftp-handles");
    let server = start_sftp(&s, "internal-sftp", "");
    let mut input = init();
    Request::Extended(Extended::Limits).encode(1, &mut input);
    for id in 0..10_000u32 {
        Request::Opendir { path: b"/" }.encode(10 + id, &mut input);
    }
    Request::Realpath { path: b"/" }.encode(99_999, &mut input);
    let (out, code) = raw_session(&s, &server, &input);
    assert_eq!(code, Some(0));
    let r = replies(&out);
    assert_eq!(r.len(), 1 + 1 + 10_000 + 1);
    let max = u64::from_be_bytes(r[1].2[24..32].try_into().unwrap()) as usize;
    assert!((16..10_000).contains(&max), "max-open-handles {max}");
    let handles = r.iter().filter(|x| x.0 == fxp::HANDLE).count();
    let failures = r
        .iter()
        .filter(|x| x.0 == fxp::STATUS && status_code(&x.2) == Status::FAILURE.0)
        .count();
    assert_eq!(handles, max);
    assert_eq!(failures, 10_000 - max);
    // Replies in request order, and the last request still answered.
    let ids: Vec<u32> = r.iter().skip(1).map(|x| x.1).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(r.last().unwrap().0, fxp::NAME);
    still_serving(&s, &server);
}

/// close-rename@sluice.dev (PROTOCOL.md): the file goes under its final
/// name only when every WRITE on the handle succeeded; the handle is closed
/// either way.
#[test]
fn close_rename_moves_only_files_whose_writes_all_landed() {
    let s = Setup::new("sftp-close-rename");
    let server = start_sftp(&s, "internal-sftp", "");
    let p = |n: &str| s.dir.path(n).to_str().unwrap().as_bytes().to_vec();
    let (tmp, done, bad_tmp, bad_done) = (p("up.tmp"), p("up"), p("bad.tmp"), p("bad"));
    std::fs::write(s.dir.path("bad.tmp"), b"old").unwrap();
    let mut input = init();
    let open = |path: &[u8], flags: u32, id: u32, out: &mut Vec<u8>| {
        Request::Open {
            path,
            pflags: flags,
            attrs: Default::default(),
        }
        .encode(id, out)
    };
    let write = |handle: &[u8], id: u32, out: &mut Vec<u8>| {
        Request::Write {
            handle,
            offset: 0,
            data: b"hello",
        }
        .encode(id, out)
    };
    use sluice_proto::sftp::pflags;
    // Handles are numbered from 1 in a session.
    let (h1, h2) = (&[0u8, 0, 0, 1][..], &[0u8, 0, 0, 2][..]);
    open(
        &tmp,
        pflags::WRITE | pflags::CREAT | pflags::TRUNC,
        1,
        &mut input,
    );
    write(h1, 2, &mut input);
    Request::Extended(Extended::CloseRename {
        handle: h1,
        to: &done,
    })
    .encode(3, &mut input);
    // Opened for reading only: its WRITE fails, so no rename.
    open(&bad_tmp, pflags::READ, 4, &mut input);
    write(h2, 5, &mut input);
    Request::Extended(Extended::CloseRename {
        handle: h2,
        to: &bad_done,
    })
    .encode(6, &mut input);
    Request::Close { handle: h2 }.encode(7, &mut input);
    let (out, code) = raw_session(&s, &server, &input);
    assert_eq!(code, Some(0));
    let r = replies(&out);
    let status = |i: usize| (r[i].1, status_code(&r[i].2));
    assert_eq!(r.len(), 8, "{r:?}");
    assert_eq!(status(2), (2, Status::OK.0));
    assert_eq!(status(3), (3, Status::OK.0));
    assert_eq!(std::fs::read(s.dir.path("up")).unwrap(), b"hello");
    assert!(!s.dir.path("up.tmp").exists());
    assert_eq!(status(5).0, 5);
    assert_ne!(status(5).1, Status::OK.0);
    assert_eq!(status(6), (6, Status::FAILURE.0));
    assert!(!s.dir.path("bad").exists(), "renamed after a failed WRITE");
    assert_eq!(std::fs::read(s.dir.path("bad.tmp")).unwrap(), b"old");
    // The handle was closed all the same.
    assert_eq!(status(7), (7, Status::FAILURE.0));
    still_serving(&s, &server);
}

/// Bytes after a request's last field, and attribute flags of later
/// versions, are ignored as OpenSSH's sftp-server ignores them: Go's
/// github.com/pkg/sftp (rclone) sends WRITEs with bytes past the data.
#[test]
fn trailing_bytes_and_later_attribute_flags_are_ignored_as_sftp_server_does() {
    use sluice_proto::sftp::pflags;
    let s = Setup::new("sftp-lenient");
    let server = start_sftp(&s, "internal-sftp", "");
    let path = s.dir.path("lenient");
    let path_b = path.to_str().unwrap().as_bytes();
    // Each packet framed again with `extra` bytes after its fields.
    let with = |mut pkt: Vec<u8>, extra: &[u8], out: &mut Vec<u8>| {
        pkt.extend_from_slice(extra);
        let len = (pkt.len() - 4) as u32;
        pkt[..4].copy_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&pkt);
    };
    let mut input = init();
    let mut p = Vec::new();
    Request::Open {
        path: path_b,
        pflags: pflags::WRITE | pflags::CREAT | pflags::TRUNC,
        attrs: Default::default(),
    }
    .encode(1, &mut p);
    // The attrs' flags (the last 4 bytes) with a bit of version 4+ set.
    let n = p.len();
    p[n - 4..].copy_from_slice(&0x0000_0100u32.to_be_bytes());
    with(p, b"", &mut input);
    let h = [0u8, 0, 0, 1];
    for (i, part) in [&b"hello "[..], b"world"].iter().enumerate() {
        let mut p = Vec::new();
        Request::Write {
            handle: &h,
            offset: 6 * i as u64,
            data: part,
        }
        .encode(2 + i as u32, &mut p);
        with(p, b"\0\0\0\0junk", &mut input);
    }
    let mut p = Vec::new();
    Request::Close { handle: &h }.encode(4, &mut p);
    with(p, b"\x01", &mut input);
    let (out, code) = raw_session(&s, &server, &input);
    assert_eq!(code, Some(0));
    let r = replies(&out);
    assert_eq!(r.len(), 5, "{r:?}");
    assert_eq!(r[1].0, fxp::HANDLE, "{r:?}");
    for i in 2..=4 {
        assert_eq!((r[i].1, status_code(&r[i].2)), (i as u32, Status::OK.0));
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"hello world");
    still_serving(&s, &server);
}

/// open-as@sluice.dev (PROTOCOL.md): requests on the handle the client
/// names go right behind the open; a handle outside the client's space or
/// in use is refused before anything is created, and WRITEs behind a
/// refused open reach no file.
#[test]
fn open_as_takes_writes_behind_it_and_refuses_foreign_handles() {
    use sluice_proto::sftp::pflags;
    let s = Setup::new("sftp-open-as");
    let server = start_sftp(&s, "internal-sftp", "");
    let p = |n: &str| s.dir.path(n).to_str().unwrap().as_bytes().to_vec();
    let (up, other, clash) = (p("up"), p("other"), p("clash"));
    let create = pflags::WRITE | pflags::CREAT | pflags::TRUNC;
    let open_as = |handle: &[u8], path: &[u8], id: u32, out: &mut Vec<u8>| {
        Request::Extended(Extended::OpenAs {
            handle,
            path,
            pflags: create,
            attrs: Default::default(),
        })
        .encode(id, out)
    };
    let write = |handle: &[u8], offset: u64, data: &[u8], id: u32, out: &mut Vec<u8>| {
        Request::Write {
            handle,
            offset,
            data,
        }
        .encode(id, out)
    };
    let named = [0x80u8, 0, 0, 7];
    let mut input = init();
    open_as(&named, &up, 1, &mut input);
    write(&named, 0, b"hello ", 2, &mut input);
    write(&named, 6, b"world", 3, &mut input);
    // In use: refused, "clash" not created; the first file untouched.
    open_as(&named, &clash, 4, &mut input);
    Request::Close { handle: &named }.encode(5, &mut input);
    // Not the client's space (a handle sluiced makes itself): refused.
    open_as(&[0, 0, 0, 1], &other, 6, &mut input);
    // A refused open (no such directory): its WRITE fails.
    let missing = p("no/such/dir");
    open_as(&[0x80, 0, 0, 8], &missing, 7, &mut input);
    write(&[0x80, 0, 0, 8], 0, b"lost", 8, &mut input);
    let (out, code) = raw_session(&s, &server, &input);
    assert_eq!(code, Some(0));
    let r = replies(&out);
    let status = |i: usize| (r[i].1, status_code(&r[i].2));
    assert_eq!(r.len(), 9, "{r:?}");
    for i in 1..=3 {
        assert_eq!(status(i), (i as u32, Status::OK.0));
    }
    assert_eq!(status(4), (4, Status::FAILURE.0));
    assert_eq!(status(5), (5, Status::OK.0));
    assert_eq!(status(6), (6, Status::BAD_MESSAGE.0));
    assert_eq!(status(7).0, 7);
    assert_ne!(status(7).1, Status::OK.0);
    assert_eq!(status(8), (8, Status::FAILURE.0));
    assert_eq!(std::fs::read(s.dir.path("up")).unwrap(), b"hello world");
    assert!(
        !s.dir.path("clash").exists(),
        "created for a refused handle"
    );
    assert!(!s.dir.path("other").exists());
    still_serving(&s, &server);
    // Read-only: an open-as that writes is refused like OPEN.
    let s2 = Setup::new("sftp-open-as-ro");
    let ro = start_sftp(&s2, "internal-sftp", "ForceCommand internal-sftp -R");
    let ro_path = s2.dir.path("ro").to_str().unwrap().as_bytes().to_vec();
    let mut input = init();
    open_as(&named, &ro_path, 1, &mut input);
    let (out, _) = raw_session(&s2, &ro, &input);
    let r = replies(&out);
    assert_eq!(status_code(&r[1].2), Status::PERMISSION_DENIED.0, "{r:?}");
    assert!(!s2.dir.path("ro").exists());
}
