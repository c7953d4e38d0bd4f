//! One case per limit, with numbers of the kind each end measures.

use super::*;

const MIB: u64 = 1 << 20;

fn end(side: Side) -> EndNumbers {
    EndNumbers {
        side,
        thread_cpu: Some(0.2),
        process_cpu: Some(0.25),
        cores: 2,
        waits: Waits::default(),
        tcp_busy: Some(0.5),
        cwnd_bytes: Some(400 << 10),
        rwnd_limited: Some(0.0),
        sndbuf_limited: Some(0.0),
        rcvbuf: Some(Buffer {
            size: 4 * MIB,
            asked: 4 * MIB,
            core_max: Some(4 * MIB),
            autotune_max: Some(32 * MIB),
        }),
        sndbuf: Some(Buffer {
            size: 4 * MIB,
            asked: 4 * MIB,
            core_max: Some(4 * MIB),
            autotune_max: Some(4 * MIB),
        }),
    }
}

/// 64 MiB up in 4 s (16.8 MB/s) over 100 ms to sluiced, nobody waiting.
fn upload() -> Measured {
    Measured {
        direction: Direction::Upload,
        bytes: 64 * MIB,
        seconds: 4.0,
        rtt: Some(Duration::from_millis(100)),
        delivery_rate: Some(40e6),
        retransmits: Some(0),
        window: Some(128 * MIB),
        cipher: "aes128-gcm@openssh.com".into(),
        compression: None,
        streams: 1,
        client: end(Side::Client),
        server: Some(end(Side::Server)),
    }
}

fn download() -> Measured {
    Measured {
        direction: Direction::Download,
        ..upload()
    }
}

fn server(m: &mut Measured) -> &mut EndNumbers {
    m.server.as_mut().unwrap()
}

#[test]
fn too_little_data_says_so() {
    let mut m = upload();
    m.bytes = 1000;
    let v = classify(&m);
    assert_eq!(v.limit, Limit::TooLittle);
    assert!(v.line.contains("1000 bytes"), "{}", v.line);
}

#[test]
fn the_local_reader_and_writer() {
    let mut m = upload();
    m.client.waits.source = 0.8;
    // A full socket too: an empty stdin still comes first, as nothing
    // waited for the socket that stdin could have filled faster.
    m.client.waits.socket = 0.1;
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Reader(Side::Client));
    assert!(
        v.line.starts_with(
            "limited by the reader: standard input had nothing to send 80% of the time"
        ),
        "{}",
        v.line
    );

    let mut m = download();
    server(&mut m).waits.source = 0.7;
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Reader(Side::Server));
    assert!(v.line.contains("remote command's output"), "{}", v.line);

    let mut m = download();
    m.client.waits.sink = 0.9;
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Writer(Side::Client));
    assert!(
        v.line
            .starts_with("limited by the writer: standard output took no more 90%"),
        "{}",
        v.line
    );

    let mut m = upload();
    server(&mut m).waits.sink = 0.6;
    assert_eq!(classify(&m).limit, Limit::Writer(Side::Server));
}

/// 8 MiB up in 4 s over 100 ms: 210 KB in flight against the server's
/// 208 KiB buffer; the client's socket full, its kernel held by the window.
fn buffer_bound_upload(server_buf: Buffer) -> Measured {
    let mut m = upload();
    m.bytes = 8 * MIB;
    m.delivery_rate = Some(2.2e6);
    m.client.waits.socket = 0.9;
    m.client.rwnd_limited = Some(0.95);
    server(&mut m).rcvbuf = Some(server_buf);
    m
}

#[test]
fn the_receivers_buffer_capped_by_the_sysctl() {
    let m = buffer_bound_upload(Buffer {
        size: 212_992,
        asked: 212_992,
        core_max: Some(212_992),
        autotune_max: Some(6 * MIB),
    });
    let v = classify(&m);
    assert_eq!(v.limit, Limit::ReceiverBuffer(Side::Server));
    assert!(
        v.line.starts_with(
            "limited by the receiver's socket buffer: SO_RCVBUF 208 KiB, capped by net.core.rmem_max=212992 on the server; raise it with sysctl -w net.core.rmem_max=1048576"
        ),
        "{}",
        v.line
    );
    assert!(
        v.line.ends_with("in flight: 2.1 MB/s x 100.0 ms)"),
        "{}",
        v.line
    );
}

#[test]
fn a_send_buffer_that_took_everything_still_shows_the_receivers() {
    // 8 MiB into a 4 MiB send buffer: the loop hardly waited for the
    // socket, but TCP had data queued all along, held by the window.
    let mut m = buffer_bound_upload(Buffer {
        size: 256 << 10,
        asked: 256 << 10,
        core_max: Some(4 * MIB),
        autotune_max: Some(32 * MIB),
    });
    m.client.waits.socket = 0.3;
    m.client.tcp_busy = Some(0.97);
    assert_eq!(classify(&m).limit, Limit::ReceiverBuffer(Side::Server));
    // Busy but held by neither buffer (the congestion window at what was
    // in flight), at the rate the path delivered: the path.
    m.client.rwnd_limited = Some(0.05);
    m.client.cwnd_bytes = Some(220 << 10);
    assert_eq!(classify(&m).limit, Limit::Path);
}

#[test]
fn room_in_the_congestion_window_points_at_the_receivers_buffer() {
    // The kernel counted little as held by the window (it deferred sends
    // instead), but cwnd had room for twice what was in flight, and that
    // filled the server's buffer.
    let mut m = buffer_bound_upload(Buffer {
        size: 256 << 10,
        asked: 256 << 10,
        core_max: Some(4 * MIB),
        autotune_max: Some(32 * MIB),
    });
    m.client.waits.socket = 0.35;
    m.client.tcp_busy = Some(1.0);
    m.client.rwnd_limited = Some(0.2);
    m.client.cwnd_bytes = Some(700 << 10);
    assert_eq!(classify(&m).limit, Limit::ReceiverBuffer(Side::Server));
    // The congestion window at what was in flight: the path.
    m.client.cwnd_bytes = Some(220 << 10);
    assert_eq!(classify(&m).limit, Limit::Path);
    // On loopback a roomy cwnd says nothing: little is in flight.
    let mut m = upload();
    m.rtt = Some(Duration::from_micros(30));
    m.client.tcp_busy = Some(0.9);
    m.client.cwnd_bytes = Some(2 * MIB);
    m.client.thread_cpu = Some(0.95);
    assert_eq!(classify(&m).limit, Limit::Cpu(Side::Client));
}

#[test]
fn the_receivers_buffer_as_configured_or_autotuned() {
    // sluiced's TcpRcvBuf 256K, forced past nothing: the configuration.
    let m = buffer_bound_upload(Buffer {
        size: 256 << 10,
        asked: 256 << 10,
        core_max: Some(4 * MIB),
        autotune_max: Some(32 * MIB),
    });
    let v = classify(&m);
    assert_eq!(v.limit, Limit::ReceiverBuffer(Side::Server));
    assert!(
        v.line.contains("SO_RCVBUF 256 KiB on the server, as configured there; ask for more with -o RemoteRcvBuf=1048576"),
        "{}",
        v.line
    );
    // Left to autotuning, which stopped at tcp_rmem's maximum.
    let m = buffer_bound_upload(Buffer {
        size: 200 << 10,
        asked: 0,
        core_max: Some(212_992),
        autotune_max: Some(400 << 10),
    });
    let v = classify(&m);
    assert!(
        v.line.contains(
            "autotuned up to net.ipv4.tcp_rmem's maximum 409600; raise that third value to 1048576"
        ),
        "{}",
        v.line
    );
    // The client's own buffer on a download.
    let mut m = download();
    m.bytes = 8 * MIB;
    server(&mut m).waits.socket = 0.8;
    server(&mut m).rwnd_limited = Some(0.9);
    m.client.rcvbuf = Some(Buffer {
        size: 256 << 10,
        asked: 256 << 10,
        core_max: Some(4 * MIB),
        autotune_max: None,
    });
    let v = classify(&m);
    assert_eq!(v.limit, Limit::ReceiverBuffer(Side::Client));
    assert!(
        v.line
            .contains("SO_RCVBUF 256 KiB here, as configured; raise it with -o TcpRcvBuf="),
        "{}",
        v.line
    );
}

#[test]
fn a_stock_servers_buffer_is_named_without_figures() {
    let mut m = buffer_bound_upload(Buffer::default());
    m.server = None;
    let v = classify(&m);
    assert_eq!(v.limit, Limit::ReceiverBuffer(Side::Server));
    assert!(v.line.contains("not reported (not sluiced)"), "{}", v.line);
}

#[test]
fn a_full_buffer_the_path_did_not_need_is_a_busy_receiver() {
    // Loopback: nothing in flight to speak of, the server's loop at 97%.
    let mut m = buffer_bound_upload(Buffer {
        size: 4 * MIB,
        asked: 4 * MIB,
        core_max: Some(4 * MIB),
        autotune_max: Some(32 * MIB),
    });
    m.rtt = Some(Duration::from_micros(50));
    m.cipher = "chacha20-poly1305@openssh.com".into();
    server(&mut m).thread_cpu = Some(0.97);
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Cpu(Side::Server));
    assert_eq!(
        v.line,
        "limited by CPU on the server: cipher chacha20-poly1305@openssh.com at 97% of a core; try aes128-gcm@openssh.com (-c aes128-gcm@openssh.com)"
    );
}

#[test]
fn the_senders_buffer() {
    let mut m = upload();
    m.bytes = 8 * MIB;
    m.client.waits.socket = 0.9;
    m.client.sndbuf_limited = Some(0.8);
    m.client.sndbuf = Some(Buffer {
        size: 200 << 10,
        asked: 0,
        core_max: Some(4 * MIB),
        autotune_max: Some(200 << 10),
    });
    let v = classify(&m);
    assert_eq!(v.limit, Limit::SenderBuffer(Side::Client));
    assert!(
        v.line
            .contains("SO_SNDBUF 200 KiB here, autotuned up to net.ipv4.tcp_wmem's maximum"),
        "{}",
        v.line
    );
}

#[test]
fn a_full_socket_without_a_buffer_to_blame_is_the_path() {
    let mut m = upload();
    m.client.waits.socket = 0.7;
    m.retransmits = Some(120);
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Path);
    assert!(
        v.line.contains("congestion control") && v.line.contains("120 segments sent again"),
        "{}",
        v.line
    );
}

#[test]
fn the_peers_window() {
    // A stock sshd's 2 MiB window at 100 ms: 20 MB/s at most.
    let mut m = upload();
    m.server = None;
    m.bytes = 64 * MIB;
    m.seconds = 3.5;
    m.window = Some(2 * MIB);
    m.client.waits.window = 0.75;
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Window(Side::Server));
    assert!(v.line.starts_with("limited by the peer's window: the server's channel window (2.0 MiB), which held the sender 75% of the time; over 100.0 ms it allows 21.0 MB/s; a stock sshd's window"), "{}", v.line);
    // sluiced's window, capped by its ChannelWindowMax.
    let mut m = upload();
    m.window = Some(2 * MIB);
    m.seconds = 3.5;
    m.client.waits.window = 0.75;
    assert!(classify(&m)
        .line
        .contains("ChannelWindowMax in the server's"));
    // A download from a stock server that filled our own window: told
    // from this side alone.
    let mut m = download();
    m.server = None;
    m.seconds = 3.5;
    m.window = Some(2 * MIB);
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Window(Side::Client));
    assert!(v.line.contains("-o ChannelWindowMax"), "{}", v.line);
}

#[test]
fn a_shut_window_with_little_in_flight_is_a_slow_far_end_not_the_windows_size() {
    // Loopback: 16 MiB granted, 0.01 ms round trip: a few KiB in flight,
    // yet the sender waited for the window: the far end was slow to take.
    let mut m = upload();
    m.server = None;
    m.rtt = Some(Duration::from_micros(10));
    m.window = Some(16 * MIB);
    m.client.waits.window = 0.37;
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Writer(Side::Server), "{}", v.line);
    assert!(
        v.line.starts_with("limited by the server taking the data"),
        "{}",
        v.line
    );
    assert!(!v.line.contains("allows"), "{}", v.line);
}

#[test]
fn cpu_advice_follows_the_cipher_and_compression() {
    let mut m = upload();
    m.client.thread_cpu = Some(0.98);
    m.cipher = "chacha20-poly1305@openssh.com".into();
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Cpu(Side::Client));
    assert!(
        v.line
            .contains("at 98% of a core; try aes128-gcm@openssh.com"),
        "{}",
        v.line
    );
    m.compression = Some("zstd@sluice.dev level 3".into());
    assert!(classify(&m).line.ends_with("try -o Compression=no"));
    m.compression = None;
    m.cipher = "aes128-gcm@openssh.com".into();
    assert!(classify(&m).line.contains("-o Streams=4"));
    // Worker threads: the process over its cores counts as well.
    let mut m = upload();
    m.client.thread_cpu = Some(0.5);
    m.client.process_cpu = Some(1.9);
    assert_eq!(classify(&m).limit, Limit::Cpu(Side::Client));
}

#[test]
fn the_path_when_nothing_waited_and_the_rate_is_the_paths() {
    let mut m = upload();
    m.delivery_rate = Some(18e6);
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Path);
    assert!(
        v.line.contains("near what the path delivered"),
        "{}",
        v.line
    );
    // Far below the delivery rate and nothing waited: not the path.
    m.delivery_rate = Some(100e6);
    assert_eq!(classify(&m).limit, Limit::Unclear);
    // A stock server sent and nothing here stood out.
    let mut m = download();
    m.server = None;
    m.window = Some(128 * MIB);
    let v = classify(&m);
    assert_eq!(v.limit, Limit::Unclear);
    assert!(v.line.contains("not sluiced"), "{}", v.line);
}

#[test]
fn texts_and_suggestions() {
    assert_eq!(bytes_text(212_992), "208 KiB");
    assert_eq!(bytes_text(2 * MIB), "2.0 MiB");
    assert_eq!(bytes_text(900), "900 bytes");
    assert_eq!(rate_text(2.5e6), "2.5 MB/s");
    assert_eq!(suggested(Some(210_000.0), 212_992), MIB);
    assert_eq!(suggested(Some(3.5e6), 0), 7 * MIB);
    assert_eq!(suggested(None, 0), MIB);
}
