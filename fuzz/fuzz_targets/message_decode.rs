//! Fuzz target: arbitrary bytes into every typed message decoder of
//! `sluice_proto::msg` (RFC 4253, 4252, 4254, 4256, 4335, 4419, 5656, 8308
//! messages). Decoding must never panic; whatever decodes must survive
//! `decode(encode(m)) == m`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_proto::msg::*;

/// Decodes `data` as each listed type; on success checks the round trip.
macro_rules! decode_each {
    ($data:expr; $($t:ident),* $(,)?) => {$(
        if let Ok(m) = $t::decode($data) {
            let mut out = Vec::new();
            m.encode(&mut out);
            assert_eq!($t::decode(&out).as_ref(), Ok(&m), concat!(stringify!($t), " round trip"));
        }
    )*};
}

fuzz_target!(|data: &[u8]| {
    let _ = msg_num(data);
    decode_each!(data;
        Disconnect, Ignore, Unimplemented, Debug, ServiceRequest, ServiceAccept, ExtInfo,
        KexInit, NewKeys, KexEcdhInit, KexEcdhReply, KexDhGexRequest, KexDhGexGroup, KexDhGexInit,
        KexDhGexReply,
        UserauthRequest, UserauthFailure, UserauthSuccess, UserauthBanner, UserauthPkOk,
        UserauthInfoRequest, UserauthInfoResponse, UserauthPasswdChangereq,
        GlobalRequest, RequestSuccess, RequestFailure, ChannelOpen, ChannelOpenConfirmation,
        ChannelOpenFailure, ChannelWindowAdjust, ChannelEof, ChannelClose, ChannelRequest,
        ChannelSuccess, ChannelFailure, DirectTcpip, ForwardedTcpip,
    );
    // The same bytes behind each known message number, so every decoder
    // gets past its number check.
    for num in [
        1u8, 2, 3, 4, 5, 6, 7, 20, 21, 30, 31, 32, 33, 34, 50, 51, 52, 53, 60, 61, 80, 81, 82, 90,
        91, 92, 93, 96, 97, 98, 99, 100,
    ] {
        let mut p = Vec::with_capacity(data.len() + 1);
        p.push(num);
        p.extend_from_slice(data);
        decode_each!(&p;
            Disconnect, Ignore, Unimplemented, Debug, ServiceRequest, ServiceAccept, ExtInfo,
            KexInit, NewKeys, KexEcdhInit, KexEcdhReply, KexDhGexRequest, KexDhGexGroup,
            KexDhGexInit, KexDhGexReply,
            UserauthRequest, UserauthFailure, UserauthSuccess, UserauthBanner, UserauthPkOk,
            UserauthInfoRequest, UserauthInfoResponse, UserauthPasswdChangereq,
            GlobalRequest, RequestSuccess, RequestFailure, ChannelOpen, ChannelOpenConfirmation,
            ChannelOpenFailure, ChannelWindowAdjust, ChannelEof, ChannelClose, ChannelRequest,
            ChannelSuccess, ChannelFailure,
        );
    }
});
