//! The client against an in-memory SFTP server on the channel end itself
//! (no connection): a server that answers READs and WRITEs in reverse
//! order, and one that answers READs short, still give the exact file.

use super::channel::{self, SftpChannel};
use super::options::Options;
use super::session::Sftp;
use super::transfer;
use crate::net::pump::{ChannelEndpoint, Ext, Produced};
use sluice_proto::sftp::{frame, reply, Attrs, Request, Status};
use std::collections::HashMap;

/// How the fake server misbehaves (within the protocol).
#[derive(Clone, Copy)]
struct Quirks {
    /// Answer each batch of requests last first.
    reverse: bool,
    /// Answer READs with at most this many bytes.
    short_reads: Option<usize>,
    /// STAT reports the file this many bytes shorter than it is (it grew
    /// after the STAT): the download must probe on past the size.
    understate: usize,
    /// The SSH identification the end is attached with (sluice's own
    /// servers get the first requests right behind INIT).
    peer: &'static str,
}

/// Serves one file (`/f`, `content`) and takes writes to `/up`; returns
/// what was written to `/up`.
fn serve(mut end: SftpChannel, content: Vec<u8>, q: Quirks) -> Vec<u8> {
    let mut inbuf = Vec::new();
    let mut upload = Vec::new();
    let mut handles: HashMap<Vec<u8>, &'static str> = HashMap::new();
    let mut held: Vec<Vec<u8>> = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    end.on_attach(q.peer);
    // Toward sluiced the client must not wait for VERSION before its next
    // requests: VERSION is held until the REALPATH is in.
    let mut hold_version = q.peer.starts_with("SSH-2.0-sluice");
    loop {
        match end.produce(Ext::Data, &mut buf) {
            Produced::Data(n) => {
                inbuf.extend_from_slice(&buf[..n]);
                continue;
            }
            Produced::Eof => return upload,
            Produced::WouldBlock => {}
        }
        while let Ok(Some(total)) = frame(&inbuf) {
            let body = inbuf[4..total].to_vec();
            inbuf.drain(..total);
            let (id, req) = Request::decode(&body).unwrap();
            let mut out = Vec::new();
            match req {
                Request::Init { .. } => reply::version(&mut out, 3, &[]),
                Request::Realpath { .. } => {
                    hold_version = false;
                    reply::name(&mut out, id, &[])
                }
                Request::Stat { .. } | Request::Lstat { .. } => {
                    let a = Attrs {
                        size: Some(content.len().saturating_sub(q.understate) as u64),
                        permissions: Some(0o100644),
                        ..Attrs::default()
                    };
                    reply::attrs(&mut out, id, &a)
                }
                Request::Open { path, .. } => {
                    let h = if path == b"/f" {
                        b"r".to_vec()
                    } else {
                        b"w".to_vec()
                    };
                    handles.insert(h.clone(), "");
                    reply::handle(&mut out, id, &h)
                }
                Request::Read { offset, len, .. } => {
                    let off = offset as usize;
                    if off >= content.len() {
                        reply::status(&mut out, id, Status::EOF, "");
                    } else {
                        let mut end = (off + len as usize).min(content.len());
                        if let Some(s) = q.short_reads {
                            end = end.min(off + s);
                        }
                        let at = reply::data_begin(&mut out, id);
                        out.extend_from_slice(&content[off..end]);
                        reply::data_end(&mut out, at);
                    }
                }
                Request::Write { offset, data, .. } => {
                    let end = offset as usize + data.len();
                    if upload.len() < end {
                        upload.resize(end, 0);
                    }
                    upload[offset as usize..end].copy_from_slice(data);
                    reply::status(&mut out, id, Status::OK, "");
                }
                _ => reply::status(&mut out, id, Status::OK, ""),
            }
            held.push(out);
        }
        if held.is_empty() || hold_version {
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        }
        if q.reverse {
            held.reverse();
        }
        for r in held.drain(..) {
            let mut off = 0;
            while off < r.len() {
                off += end.on_data(Ext::Data, &r[off..]);
            }
        }
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

fn round_trip(q: Quirks) {
    let content = pattern(3 * 1024 * 1024 + 123);
    let (end, link) = channel::pair().unwrap();
    let c = content.clone();
    let server = std::thread::spawn(move || serve(end, c, q));
    let mut s = Sftp::init(link).unwrap();
    let dir = std::env::temp_dir().join(format!(
        "sluice-sftpc-unit-{}-{:?}-{}-{}-{}",
        std::process::id(),
        q.short_reads,
        q.reverse,
        q.understate,
        q.peer.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let local = dir.join("got");
    let o = Options {
        requests: 16,
        ..Options::default()
    };
    transfer::download(&mut s, b"/f", &local, &o).unwrap();
    assert_eq!(std::fs::read(&local).unwrap(), content);
    transfer::upload(&mut s, &local, b"/up", &o).unwrap();
    s.finish();
    let uploaded = server.join().unwrap();
    assert_eq!(uploaded, content);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replies_out_of_order_land_at_their_offsets() {
    round_trip(Quirks {
        reverse: true,
        short_reads: None,
        understate: 0,
        peer: "SSH-2.0-OpenSSH_9.2p1",
    });
}

#[test]
fn short_reads_are_asked_for_again() {
    round_trip(Quirks {
        reverse: true,
        short_reads: Some(1000),
        understate: 0,
        peer: "SSH-2.0-OpenSSH_9.2p1",
    });
}

#[test]
fn first_requests_ride_behind_init_to_sluiced() {
    round_trip(Quirks {
        reverse: false,
        short_reads: None,
        understate: 0,
        peer: "SSH-2.0-sluice_0.1",
    });
}

#[test]
fn a_file_that_grew_since_its_stat_is_fetched_whole() {
    // The probe past the size goes with the last READs, and finds more.
    for (reverse, understate) in [(false, 1), (true, 700_000), (false, 3 * 1024 * 1024)] {
        round_trip(Quirks {
            reverse,
            short_reads: None,
            understate,
            // (A server that reverses replies must see VERSION asked alone.)
            peer: "SSH-2.0-OpenSSH_9.2p1",
        });
    }
}
