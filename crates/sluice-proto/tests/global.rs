//! Global requests: sluice's sockbuf request (RemoteRcvBuf) answered by the
//! runtime, replies kept in request order, a stock-style decline.

mod common;
use common::*;
use sluice_proto::Event;

fn established() -> Pair {
    let mut p = Pair::default_algs();
    p.establish();
    p.client_events.clear();
    p.server_events.clear();
    p
}

fn sockbuf_requests(p: &Pair) -> Vec<(u64, u64)> {
    p.server_events
        .iter()
        .filter_map(|e| match e {
            Event::SockBufRequest { rcvbuf, sndbuf } => Some((*rcvbuf, *sndbuf)),
            _ => None,
        })
        .collect()
}

fn replies(p: &Pair) -> Vec<String> {
    p.client_events
        .iter()
        .filter_map(|e| match e {
            Event::SockBufReply(r) => Some(format!("sockbuf {r:?}")),
            Event::GlobalReply { success, data, .. } => Some(format!("global {success} {data:?}")),
            _ => None,
        })
        .collect()
}

#[test]
fn the_runtime_answers_and_replies_keep_request_order() {
    let mut p = established();
    p.client.request_sockbuf(64 << 20, 0).unwrap();
    p.client
        .global_request("keepalive@openssh.com", true, &[])
        .unwrap();
    p.client.request_sockbuf(0, 8 << 20).unwrap();
    p.drive().unwrap();
    assert_eq!(sockbuf_requests(&p), vec![(64 << 20, 0), (0, 8 << 20)]);
    // The other request reaches the runtime, which answers it first; still
    // nothing may go out before the first sockbuf request is answered.
    assert!(p.server_events.iter().any(|e| matches!(e,
        Event::GlobalRequest { name, want_reply: true, .. } if name == "keepalive@openssh.com")));
    p.server.answer_global(true, &[0, 0, 0, 7]);
    p.drive().unwrap();
    assert!(replies(&p).is_empty(), "{:?}", replies(&p));
    p.server.answer_sockbuf(Some((32 << 20, 4 << 20)));
    p.drive().unwrap();
    assert_eq!(
        replies(&p),
        vec![
            format!("sockbuf {:?}", Some((32u64 << 20, 4u64 << 20))),
            "global true [0, 0, 0, 7]".to_owned(),
        ]
    );
    p.server.answer_sockbuf(None);
    p.drive().unwrap();
    assert_eq!(replies(&p)[2], "sockbuf None");
    // A stray answer with nothing owed changes nothing.
    p.server.answer_sockbuf(Some((1, 1)));
    p.drive().unwrap();
    assert_eq!(replies(&p).len(), 3);
    // The session still carries data.
    let up = pattern(1 << 20, 9);
    p.upload(&up);
    assert!(p.server_data == up);
}

#[test]
fn not_before_authentication() {
    let mut p = Pair::default_algs();
    assert!(p.client.request_sockbuf(1 << 20, 0).is_err());
    assert!(p.client.global_request("x@y", true, &[]).is_err());
}

#[test]
fn path_info_reaches_the_runtime_and_its_reply_is_decoded() {
    use sluice_proto::msg::{PathFigures, PATH_INFO_REQUEST};
    let mut p = established();
    assert!(Pair::default_algs().client.request_path_info().is_err());
    p.client.request_path_info().unwrap();
    p.client.request_path_info().unwrap();
    p.drive().unwrap();
    let asked: Vec<_> = p
        .server_events
        .iter()
        .filter(|e| {
            matches!(e, Event::GlobalRequest { name, want_reply: true, data }
            if name == PATH_INFO_REQUEST && data.is_empty())
        })
        .collect();
    assert_eq!(asked.len(), 2);
    let mut f = PathFigures::default();
    f.push("rtt-us", 100_000);
    p.server.answer_global(true, &f.encode());
    p.server.answer_global(false, &[]);
    p.drive().unwrap();
    let got: Vec<_> = p
        .client_events
        .iter()
        .filter_map(|e| match e {
            Event::PathInfoReply(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(got, vec![Some(f), None]);
    // A malformed reply is the server's protocol error.
    p.client.request_path_info().unwrap();
    p.drive().unwrap();
    p.server.answer_global(true, &[0, 0, 0, 1, b'a']);
    assert!(p.drive().is_err());
}

/// Each reply names the request it answers, so that the runtime gives it to
/// that request's owner (a keepalive's FAILURE is never a forward's answer).
#[test]
fn replies_name_their_requests() {
    let mut p = established();
    p.client
        .global_request("keepalive@openssh.com", true, &[])
        .unwrap();
    p.client
        .global_request("tcpip-forward", true, &[0; 8])
        .unwrap();
    p.client
        .global_request("no-more-sessions@openssh.com", false, &[])
        .unwrap();
    p.drive().unwrap();
    p.server.answer_global(false, &[]);
    p.server.answer_global(true, &[0, 0, 0x9c, 0x40]);
    p.drive().unwrap();
    let named: Vec<(String, bool)> = p
        .client_events
        .iter()
        .filter_map(|e| match e {
            Event::GlobalReply {
                request, success, ..
            } => Some((request.clone(), *success)),
            _ => None,
        })
        .collect();
    assert_eq!(
        named,
        vec![
            ("keepalive@openssh.com".to_owned(), false),
            ("tcpip-forward".to_owned(), true),
        ]
    );
}
