//! Diffie-Hellman group exchange (RFC 4419): the extra round before the
//! DH exchange proper, for `diffie-hellman-group-exchange-sha256/-sha1`.
//!
//! Client: KEX_DH_GEX_REQUEST (min, n, max) -> server: KEX_DH_GEX_GROUP
//! (p, g) -> client: KEX_DH_GEX_INIT (e) -> server: KEX_DH_GEX_REPLY (K_S,
//! f, signature). The exchange hash adds min || n || max || p || g before
//! e || f (RFC 4419 3), which [`Connection::exchange_hash`] takes from
//! [`GexState`]. Numbers 31-34 mean these messages only when the
//! negotiated method is a group exchange; 31 is KEX_ECDH_REPLY otherwise.

use crate::core::{Connection, Role};
use crate::crypto::kex::{self as kexalg, gex, DhClient, DhGroup};
use crate::error::{Error, Phase, Violation};
use crate::msg::{KexDhGexGroup, KexDhGexInit, KexDhGexReply, KexDhGexRequest, KexEcdhReply};
use crate::negotiate::Algorithms;
use crate::wire::{MsgNum, Writer};

/// One group exchange in progress: what the client asked and, once sent or
/// received, the group.
pub(crate) struct GexState {
    min: u32,
    n: u32,
    max: u32,
    group: Option<DhGroup>,
}

impl GexState {
    /// The exchange hash's group part: uint32 min, n, max, mpint p, g.
    pub(super) fn hash_prefix(&self, w: &mut Writer<'_>) {
        w.u32(self.min).u32(self.n).u32(self.max);
        if let Some(g) = &self.group {
            w.mpint_unsigned(&g.p_bytes()).mpint_unsigned(&g.g_bytes());
        }
    }
}

impl Connection {
    /// The negotiated method is a group exchange.
    pub(super) fn negotiated_gex(&self) -> bool {
        self.kex
            .algs
            .as_ref()
            .and_then(|a| self.config.provider.kex_method(&a.kex))
            .is_some_and(|m| m.group_exchange())
    }

    /// Client: asks for a group sized for the negotiated ciphers and MACs,
    /// as ssh does: min 2048, n from the security they need, max 8192.
    pub(super) fn gex_request(&mut self, algs: &Algorithms) {
        let provider = &self.config.provider;
        let mut need = 0usize;
        for (c, m) in [
            (&algs.cipher_c2s, &algs.mac_c2s),
            (&algs.cipher_s2c, &algs.mac_s2c),
        ] {
            if let Some(info) = provider.cipher(c).map(|s| s.info()) {
                need = need.max(info.key_len).max(info.block_size).max(info.iv_len);
                if !info.aead {
                    need = need.max(provider.mac_info(m).map_or(0, |m| m.key_len));
                }
            }
        }
        let n = gex::preferred_bits((need * 8).try_into().unwrap_or(u32::MAX))
            .clamp(gex::GEX_MIN, gex::GEX_MAX);
        let req = KexDhGexRequest {
            min: gex::GEX_MIN,
            n,
            max: gex::GEX_MAX,
        };
        self.kex.gex = Some(GexState {
            min: req.min,
            n: req.n,
            max: req.max,
            group: None,
        });
        self.queue_with(|p| req.encode(p));
    }

    /// Group exchange messages, routed here by [`Connection::handle_kex`].
    pub(super) fn handle_gex(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e| Error::Protocol(Violation::Malformed(num, e));
        match (num, self.role) {
            (MsgNum::KEX_DH_GEX_REQUEST, Role::Server) => {
                let m = KexDhGexRequest::decode(payload).map_err(bad)?;
                self.on_gex_request(m)
            }
            (MsgNum::KEX_DH_GEX_GROUP, Role::Client) => {
                let m = KexDhGexGroup::decode(payload).map_err(bad)?;
                self.on_gex_group(m)
            }
            (MsgNum::KEX_DH_GEX_INIT, Role::Server) => {
                let m = KexDhGexInit::decode(payload).map_err(bad)?;
                self.on_gex_init(&m.e)
            }
            (MsgNum::KEX_DH_GEX_REPLY, Role::Client) => {
                let m = KexDhGexReply::decode(payload).map_err(bad)?;
                if self.kex.gex.as_ref().is_none_or(|g| g.group.is_none()) {
                    return Err(Violation::UnexpectedMessage {
                        num,
                        state: Phase::BeforeGroup,
                    }
                    .into());
                }
                self.on_ecdh_reply(KexEcdhReply {
                    host_key: m.host_key,
                    q_s: m.f,
                    signature: m.signature,
                })
            }
            _ => Err(Violation::UnexpectedMessage {
                num,
                state: Phase::GroupExchange,
            }
            .into()),
        }
    }

    /// Server: picks a group as sshd does and sends it.
    fn on_gex_request(&mut self, m: KexDhGexRequest) -> Result<(), Error> {
        if self.kex.gex.is_some() {
            return Err(Violation::RepeatedKexMessage(MsgNum::KEX_DH_GEX_REQUEST).into());
        }
        if !gex::request_ok(m.min, m.n, m.max) {
            return Err(Violation::BadKexValue.into());
        }
        let moduli = self.config.dh_moduli.clone();
        let group = gex::choose(&moduli, m.min, m.n, m.max, self.rng.as_mut())
            .map_err(|_| Error::InvalidState("no Diffie-Hellman group to offer"))?;
        let msg = KexDhGexGroup {
            p: group.p_bytes(),
            g: group.g_bytes(),
        };
        self.kex.gex = Some(GexState {
            min: m.min,
            n: m.n,
            max: m.max,
            group: Some(group),
        });
        self.queue_with(|p| msg.encode(p));
        Ok(())
    }

    /// Client: checks the server's group against what we asked, sends e.
    fn on_gex_group(&mut self, m: KexDhGexGroup) -> Result<(), Error> {
        let hash = self
            .kex
            .algs
            .as_ref()
            .and_then(|a| kexalg::kex_hash(&a.kex))
            .ok_or(Violation::BadKexValue)?;
        let state = self.kex.gex.as_mut().filter(|g| g.group.is_none()).ok_or(
            Violation::UnexpectedMessage {
                num: MsgNum::KEX_DH_GEX_GROUP,
                state: Phase::GroupExchange,
            },
        )?;
        // ssh refuses a group outside what it asked ("DH_GEX group out of range").
        // m.p has no leading zero byte (decoded as an unsigned magnitude).
        let bits = m.p.first().map_or(0, |top| {
            u32::try_from(m.p.len() * 8)
                .unwrap_or(u32::MAX)
                .saturating_sub(top.leading_zeros())
        });
        if bits < state.min || bits > state.max {
            return Err(Violation::DhGroupOutOfRange {
                bits,
                min: state.min,
                max: state.max,
            }
            .into());
        }
        let group = DhGroup::new(&m.p, &m.g).map_err(|_| Violation::BadKexValue)?;
        state.group = Some(group.clone());
        let client = DhClient::start(group, hash, self.rng.as_mut());
        let e = kexalg::KexClient::client_public(&client).to_vec();
        self.kex.client = Some(Box::new(client));
        self.queue_with(|p| KexDhGexInit { e }.encode(p));
        Ok(())
    }

    /// Server: f and K for the client's e in the group we sent.
    fn on_gex_init(&mut self, e: &[u8]) -> Result<(), Error> {
        let group = self.kex.gex.as_ref().and_then(|g| g.group.clone()).ok_or(
            Violation::UnexpectedMessage {
                num: MsgNum::KEX_DH_GEX_INIT,
                state: Phase::BeforeGroup,
            },
        )?;
        self.server_exchange(e, |hash, rng| {
            kexalg::dh_respond(&group, hash, e, rng).map_err(|_| Violation::BadKexValue.into())
        })
    }
}
