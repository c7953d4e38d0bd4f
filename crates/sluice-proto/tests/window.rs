//! Channel windows through whole connections: bulk windows grow while the
//! sender uses all of them, up to the cap, never overrun (the engine would
//! fail the connection); they follow the socket's receive buffer; pty
//! channels stay small; stock OpenSSH peers start at 2 MiB and get at most
//! the configured cap.

mod common;
use common::*;
use sluice_proto::msg::ChannelRequestKind;
use std::time::Duration;

const MIB: u32 = 1 << 20;

fn pair(window: u32, window_max: u32, client_version: Option<&str>) -> Pair {
    pair_capped(window, window_max, client_version, None)
}

fn pair_capped(
    window: u32,
    window_max: u32,
    client_version: Option<&str>,
    openssh_cap: Option<u32>,
) -> Pair {
    let mut p = Pair::tweaked(
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-gcm@openssh.com",
        "hmac-sha2-256",
        |c, is_server| {
            c.window = window;
            c.window_max = window_max;
            if let Some(cap) = openssh_cap {
                c.stock_openssh_window_max = cap;
            }
            if let (false, Some(v)) = (is_server, client_version) {
                c.version = v.to_owned();
            }
        },
    );
    p.establish();
    p
}

/// The client asks for a pty on its session channel.
fn request_pty(p: &mut Pair) {
    let ch = p.client_channel.unwrap();
    let pty = ChannelRequestKind::PtyReq {
        term: "xterm".into(),
        cols: 80,
        rows: 24,
        width_px: 0,
        height_px: 0,
        modes: vec![0],
    };
    p.client.channel_request(ch, pty, false).unwrap();
}

fn server_window(p: &Pair) -> u32 {
    p.server
        .channel_info(p.server_channel.unwrap())
        .unwrap()
        .recv_window
}

fn client_window(p: &Pair) -> u32 {
    p.client
        .channel_info(p.client_channel.unwrap())
        .unwrap()
        .recv_window
}

#[test]
fn bulk_windows_grow_to_the_cap_both_ways_and_data_stays_intact() {
    let mut p = pair(MIB, 8 * MIB, None);
    // In memory, whole windows go by in no time: far under two round trips.
    p.client.set_path_rtt(Duration::from_millis(50));
    p.server.set_path_rtt(Duration::from_millis(50));
    assert_eq!(server_window(&p), MIB);
    let up = pattern(40 << 20, 1);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), 8 * MIB);
    let down = pattern(40 << 20, 2);
    p.download(&down);
    assert!(p.client_data == down);
    assert_eq!(client_window(&p), 8 * MIB);
}

#[test]
fn windows_keep_their_size_when_the_path_is_unknown() {
    let mut p = pair(MIB, 8 * MIB, None);
    let up = pattern(20 << 20, 7);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), MIB);
}

#[test]
fn a_consumer_that_does_not_keep_up_keeps_the_window() {
    let mut p = pair(MIB, 64 * MIB, None);
    p.consume = false;
    let ch = p.client_channel.unwrap();
    let data = pattern(4 << 20, 3);
    let sent = p.client.send_data(p.now, ch, None, &data, &mut p.c2s);
    p.drive().unwrap();
    assert_eq!(sent, MIB as usize, "the sender stops at the window");
    assert_eq!(server_window(&p), MIB);
}

#[test]
fn pty_channels_stay_at_two_mib() {
    let mut p = pair(16 * MIB, 64 * MIB, None);
    request_pty(&mut p);
    p.client.set_path_rtt(Duration::from_millis(50));
    p.server.set_path_rtt(Duration::from_millis(50));
    p.drive().unwrap();
    let up = pattern(40 << 20, 4);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), 2 * MIB);
    let down = pattern(40 << 20, 5);
    p.download(&down);
    assert!(p.client_data == down);
    assert_eq!(client_window(&p), 2 * MIB);
}

#[test]
fn a_cap_toward_stock_openssh_applies_only_to_stock_openssh() {
    const V92: &str = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u7";
    // Stock OpenSSH starts at its own 2 MiB and grows like anyone's...
    let mut p = pair(16 * MIB, 64 * MIB, Some(V92));
    assert_eq!(server_window(&p), 2 * MIB);
    p.server.set_path_rtt(Duration::from_millis(50));
    let up = pattern(128 << 20, 8);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), 64 * MIB);

    // With HPN-SSH's 15 MiB cap set, stock OpenSSH stays under it...
    let mut p = pair_capped(16 * MIB, 64 * MIB, Some(V92), Some(15 * MIB));
    p.server.set_path_rtt(Duration::from_millis(50));
    assert_eq!(server_window(&p), 2 * MIB);
    let up = pattern(64 << 20, 6);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), 15 * MIB);

    // ...and HPN-SSH, which handles large windows, does not.
    let p = pair_capped(
        16 * MIB,
        64 * MIB,
        Some("SSH-2.0-OpenSSH_9.2p1-hpn17v14"),
        Some(15 * MIB),
    );
    assert_eq!(server_window(&p), 16 * MIB);
}

#[test]
fn bulk_windows_follow_the_receive_buffer_up_to_the_cap() {
    // No RTT, so only the kernel's receive buffer can grow the window.
    let mut p = pair(MIB, 32 * MIB, None);
    p.server.set_path_recv_buffer(12 << 20);
    let up = pattern(8 << 20, 9);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), 12 * MIB);
    p.server.set_path_recv_buffer(1 << 30);
    let more = pattern(40 << 20, 10);
    p.upload(&more);
    assert!(p.server_data[up.len()..] == more[..]);
    assert_eq!(server_window(&p), 32 * MIB);
}

#[test]
fn pty_channels_do_not_follow_the_receive_buffer() {
    let mut p = pair(16 * MIB, 64 * MIB, None);
    request_pty(&mut p);
    p.server.set_path_recv_buffer(64 << 20);
    p.drive().unwrap();
    let up = pattern(40 << 20, 11);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), 2 * MIB);
}

/// Many channels share the connection's window budget: new ones start
/// within what is left (one packet's worth when it is spent) and none grows
/// past it, so a peer cannot make us buffer a window per channel.
#[test]
fn channels_share_the_connection_budget() {
    let mut p = Pair::tweaked(
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-gcm@openssh.com",
        "hmac-sha2-256",
        |c, _| {
            c.window = 16 * MIB;
            c.window_max = 32 * MIB;
            c.windows_max = 40 << 20;
        },
    );
    p.establish();
    let first = p.server_channel.unwrap();
    for _ in 0..4 {
        p.client.open_session().unwrap();
    }
    p.drive().unwrap();
    let windows: Vec<u32> = (0..5)
        .map(|i| {
            p.server
                .channel_info(sluice_proto::ChannelId(i))
                .unwrap()
                .recv_window
        })
        .collect();
    assert_eq!(
        windows,
        [16 * MIB, 16 * MIB, 8 * MIB, MIB / 4, MIB / 4],
        "windows of five channels under a 40 MiB budget"
    );
    // The first channel's bulk upload would grow it to 32 MiB; the budget
    // is spent, so it keeps its 16 MiB and the data arrives intact.
    p.server_channel = Some(first);
    p.client.set_path_rtt(Duration::from_millis(50));
    p.server.set_path_rtt(Duration::from_millis(50));
    p.server.set_path_recv_buffer(64 << 20);
    let up = pattern(48 << 20, 12);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), 16 * MIB);
}

/// Memory the runtime holds elsewhere (sluiced: socket buffers granted to
/// RemoteRcvBuf) comes out of the same budget.
#[test]
fn buffers_held_elsewhere_count_in_the_budget() {
    let mut p = Pair::tweaked(
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-gcm@openssh.com",
        "hmac-sha2-256",
        |c, _| {
            c.window = MIB;
            c.window_max = 32 * MIB;
            c.windows_max = 40 << 20;
        },
    );
    p.establish();
    p.server.set_buffered_elsewhere(32 << 20);
    p.server.set_path_recv_buffer(64 << 20);
    let up = pattern(24 << 20, 13);
    p.upload(&up);
    assert!(p.server_data == up);
    assert_eq!(server_window(&p), 8 * MIB);
}
