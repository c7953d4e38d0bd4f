//! SSH message numbers (RFC 4250 section 4.1, RFC 8308, RFC 4256) as a newtype,
//! so unknown numbers travel as values instead of being lost.

/// An SSH message number, the first byte of every payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MsgNum(pub u8);

#[allow(missing_docs)]
impl MsgNum {
    pub const DISCONNECT: MsgNum = MsgNum(1);
    pub const IGNORE: MsgNum = MsgNum(2);
    pub const UNIMPLEMENTED: MsgNum = MsgNum(3);
    pub const DEBUG: MsgNum = MsgNum(4);
    pub const SERVICE_REQUEST: MsgNum = MsgNum(5);
    pub const SERVICE_ACCEPT: MsgNum = MsgNum(6);
    pub const EXT_INFO: MsgNum = MsgNum(7);
    pub const KEXINIT: MsgNum = MsgNum(20);
    pub const NEWKEYS: MsgNum = MsgNum(21);
    pub const KEX_ECDH_INIT: MsgNum = MsgNum(30);
    pub const KEX_ECDH_REPLY: MsgNum = MsgNum(31);
    // RFC 4419 group exchange: 31 is also KEX_ECDH_REPLY (decoded by method).
    pub const KEX_DH_GEX_GROUP: MsgNum = MsgNum(31);
    pub const KEX_DH_GEX_INIT: MsgNum = MsgNum(32);
    pub const KEX_DH_GEX_REPLY: MsgNum = MsgNum(33);
    pub const KEX_DH_GEX_REQUEST: MsgNum = MsgNum(34);
    pub const USERAUTH_REQUEST: MsgNum = MsgNum(50);
    pub const USERAUTH_FAILURE: MsgNum = MsgNum(51);
    pub const USERAUTH_SUCCESS: MsgNum = MsgNum(52);
    pub const USERAUTH_BANNER: MsgNum = MsgNum(53);
    /// Also USERAUTH_PASSWD_CHANGEREQ and USERAUTH_INFO_REQUEST: meaning depends on the method.
    pub const USERAUTH_PK_OK: MsgNum = MsgNum(60);
    pub const USERAUTH_INFO_RESPONSE: MsgNum = MsgNum(61);
    pub const GLOBAL_REQUEST: MsgNum = MsgNum(80);
    pub const REQUEST_SUCCESS: MsgNum = MsgNum(81);
    pub const REQUEST_FAILURE: MsgNum = MsgNum(82);
    pub const CHANNEL_OPEN: MsgNum = MsgNum(90);
    pub const CHANNEL_OPEN_CONFIRMATION: MsgNum = MsgNum(91);
    pub const CHANNEL_OPEN_FAILURE: MsgNum = MsgNum(92);
    pub const CHANNEL_WINDOW_ADJUST: MsgNum = MsgNum(93);
    pub const CHANNEL_DATA: MsgNum = MsgNum(94);
    pub const CHANNEL_EXTENDED_DATA: MsgNum = MsgNum(95);
    pub const CHANNEL_EOF: MsgNum = MsgNum(96);
    pub const CHANNEL_CLOSE: MsgNum = MsgNum(97);
    pub const CHANNEL_REQUEST: MsgNum = MsgNum(98);
    pub const CHANNEL_SUCCESS: MsgNum = MsgNum(99);
    pub const CHANNEL_FAILURE: MsgNum = MsgNum(100);

    /// Transport-layer generic messages (1-19), allowed at any time.
    pub fn is_transport_generic(self) -> bool {
        (1..=19).contains(&self.0)
    }

    /// Messages allowed while a key exchange is in progress (RFC 4253 7.1):
    /// transport generic ones, 20-29 and the method-specific 30-49.
    pub fn is_kex(self) -> bool {
        (20..=49).contains(&self.0)
    }
}
