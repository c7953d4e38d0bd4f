//! Key exchange and re-keying (RFC 4253 sections 7-9, RFC 5656 4, RFC 8731,
//! RFC 8308 EXT_INFO, OpenSSH strict KEX).
//!
//! Either side may start a re-key at any time by sending KEXINIT. From our
//! KEXINIT until our NEWKEYS only key exchange messages are sent; everything
//! else waits in [`Connection::held`]. New keys take effect per direction:
//! outgoing right after our NEWKEYS is sealed, incoming right after the
//! peer's NEWKEYS is opened.

mod gex;
mod guess;
pub(crate) mod handover;
mod none;
pub(crate) use none::NoneState;

use crate::core::{Connection, Role};
use crate::crypto::hostkey;
use crate::crypto::kex::{self as kexalg, HashAlg, KexClient, SharedSecret};
use crate::crypto::Rng;
use crate::error::{Error, Phase, Violation};
use crate::event::Event;
use crate::handover::KeyMaterial;
use crate::msg::{ExtInfo, KexDhGexReply, KexEcdhInit, KexEcdhReply, KexInit};
use crate::negotiate::{self, Algorithms, EXT_INFO_C, EXT_INFO_S, STRICT_C, STRICT_S};
use crate::transport::compress;
use crate::wire::{MsgNum, WireError, Writer};
use std::time::Instant;

/// The exchange's outcome, waiting for NEWKEYS in each direction.
struct Exchanged {
    hash: HashAlg,
    k: SharedSecret,
    h: Vec<u8>,
}

/// The first key exchange as an agent checks it before signing for a
/// session (see [`Connection::session_binding`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionBinding<'a> {
    /// The server's host key blob (K_S).
    pub host_key: &'a [u8],
    /// The session identifier (the first exchange hash).
    pub session_id: &'a [u8],
    /// The server's signature of the session identifier.
    pub signature: &'a [u8],
}

/// Key exchange state of one connection.
#[derive(Default)]
pub(crate) struct KexMachine {
    /// The first exchange hash (RFC 4253 7.2).
    pub(crate) session_id: Option<Vec<u8>>,
    /// We put the strict-KEX marker in our first KEXINIT.
    pub(crate) strict_offered: bool,
    /// Strict KEX was negotiated in the first exchange.
    strict: bool,
    /// Exchanges completed.
    completed: u32,
    our_kexinit: Option<Vec<u8>>,
    peer_kexinit: Option<Vec<u8>>,
    algs: Option<Algorithms>,
    client: Option<Box<dyn KexClient>>,
    /// The group exchange in progress (RFC 4419), for that method only.
    gex: Option<gex::GexState>,
    exchanged: Option<Exchanged>,
    /// Client: waiting for the runtime's verdict on the host key.
    awaiting_host_key: bool,
    newkeys_sent: bool,
    newkeys_received: bool,
    /// The peer guessed wrong in `first_kex_packet_follows`: drop its next KEX packet.
    ignore_guess: bool,
    /// Client: the method our first KEX packet guessed (sent with our KEXINIT).
    guessed: Option<String>,
    /// Client: whether the server took our guess (None: no guess was sent).
    guess_outcome: Option<bool>,
    /// The server's host key blob from the first exchange (both sides:
    /// the client checks re-keys against it, the server checks hostbound
    /// authentication requests).
    pub(crate) host_key: Option<Vec<u8>>,
    /// Client: the server's signature of the first exchange hash, which
    /// an agent checks when a session is bound to it (session-bind).
    host_sig: Option<Vec<u8>>,
    /// The keys in force per direction, kept (zeroized on drop) so the
    /// transport can be handed to another process (`crate::handover`).
    send_keys: Option<KeyMaterial>,
    recv_keys: Option<KeyMaterial>,
}

impl KexMachine {
    /// A key exchange is running.
    pub(crate) fn in_progress(&self) -> bool {
        self.our_kexinit.is_some() || self.peer_kexinit.is_some()
    }

    /// We sent KEXINIT and not yet NEWKEYS: only KEX messages may go out.
    pub(crate) fn sending_blocked(&self) -> bool {
        self.our_kexinit.is_some() && !self.newkeys_sent
    }

    /// In the first exchange with strict KEX: nothing but KEX messages is allowed.
    pub(crate) fn in_initial_strict_kex(&self) -> bool {
        self.strict && self.completed == 0 && !self.newkeys_received
    }

    /// Our NEWKEYS of the exchange in progress went out (test noise waits for it).
    #[cfg(any(feature = "test-hooks", fuzzing))]
    pub(crate) fn newkeys_out(&self) -> bool {
        self.newkeys_sent
    }

    /// The first key exchange has completed.
    pub(crate) fn initial_done(&self) -> bool {
        self.completed > 0
    }

    /// The peer's first KEXINIT has not arrived yet.
    pub(crate) fn first_kexinit_pending(&self) -> bool {
        self.completed == 0 && self.peer_kexinit.is_none()
    }

    /// The peer's KEXINIT of the exchange in progress has come: its
    /// algorithms are negotiated (`algorithms` tells them).
    pub(crate) fn negotiated(&self) -> bool {
        self.peer_kexinit.is_some()
    }

    /// The algorithms of the exchange in progress or last completed.
    pub(crate) fn algorithms(&self) -> Option<&Algorithms> {
        self.algs.as_ref()
    }
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

impl Connection {
    /// Queues our KEXINIT, starting a key exchange.
    pub(crate) fn send_kexinit(&mut self) {
        let first = self.kex.completed == 0;
        let mut kex_list = self.config.kex.clone();
        if first {
            let markers = match self.role {
                Role::Client => [EXT_INFO_C, STRICT_C],
                Role::Server => [EXT_INFO_S, STRICT_S],
            };
            kex_list.extend(owned(&markers));
            self.kex.strict_offered = true;
        }
        let host_key_algs = match (&self.role, &self.server) {
            (Role::Server, Some(s)) => {
                let ours: Vec<&'static str> =
                    s.host_keys.iter().flat_map(|k| k.sig_algs()).collect();
                self.config
                    .host_key_algs
                    .iter()
                    .filter(|a| ours.contains(&a.as_str()))
                    .cloned()
                    .collect()
            }
            _ => self.config.host_key_algs.clone(),
        };
        let mut cookie = [0u8; 16];
        self.rng.fill(&mut cookie);
        let (ciphers, macs) = self.kexinit_lists();
        self.none.offered = ciphers.iter().any(|c| c == "none");
        let engines = &self.config.compression_engines;
        let (send, recv) = if self.config.compression_auto {
            (
                compress::auto_names(engines, true),
                compress::auto_names(engines, false),
            )
        } else {
            let both = compress::offered_names(engines, self.config.prefer_compression);
            (both.clone(), both)
        };
        let (c2s, s2c) = match self.role {
            Role::Client => (send, recv),
            Role::Server => (recv, send),
        };
        let (c2s, s2c) = (with_long_stored(c2s), with_long_stored(s2c));
        let init = KexInit {
            cookie,
            kex_algorithms: kex_list,
            server_host_key_algorithms: host_key_algs,
            encryption_client_to_server: ciphers.clone(),
            encryption_server_to_client: ciphers,
            mac_client_to_server: macs.clone(),
            mac_server_to_client: macs,
            compression_client_to_server: c2s,
            compression_server_to_client: s2c,
            languages_client_to_server: Vec::new(),
            languages_server_to_client: Vec::new(),
            first_kex_packet_follows: false,
            reserved: 0,
        };
        // Client, first exchange: guess our preferred method and send its
        // first packet at once, saving a round trip when the server agrees.
        let guess = (first && self.role == Role::Client && self.config.kex_guess)
            .then(|| init.kex_algorithms.first().cloned())
            .flatten()
            .and_then(|name| {
                let method = self.config.provider.kex_method(&name)?;
                method.start(self.rng.as_mut()).ok().map(|c| (name, c))
            });
        let mut init = init;
        init.first_kex_packet_follows = guess.is_some();
        let mut p = Vec::new();
        init.encode(&mut p);
        self.kex.our_kexinit = Some(p.clone());
        self.kex.newkeys_sent = false;
        self.kex.newkeys_received = false;
        self.queue(p);
        if let Some((name, c)) = guess {
            let q_c = c.client_public().to_vec();
            self.kex.client = Some(c);
            self.kex.guessed = Some(name);
            self.queue_with(|p| KexEcdhInit { q_c }.encode(p));
        }
    }

    /// Handles messages 20-49.
    pub(crate) fn handle_kex(
        &mut self,
        now: Instant,
        num: MsgNum,
        payload: &[u8],
        seq: u32,
    ) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        match num {
            MsgNum::KEXINIT => self.on_kexinit(payload, seq),
            MsgNum::NEWKEYS => self.on_newkeys(now),
            // Method messages (30-49) belong to an exchange the peer's
            // KEXINIT opened: one arriving after NEWKEYS (or before any
            // KEXINIT) must not start key agreement or a signature.
            _ if self.kex.peer_kexinit.is_none() => Err(Violation::UnexpectedMessage {
                num,
                state: Phase::OutsideKex,
            }
            .into()),
            _ if self.kex.ignore_guess => {
                self.kex.ignore_guess = false;
                Ok(())
            }
            _ if self.negotiated_gex() => self.handle_gex(num, payload),
            MsgNum::KEX_ECDH_INIT if self.role == Role::Server => {
                let m = KexEcdhInit::decode(payload).map_err(bad)?;
                self.on_ecdh_init(&m.q_c)
            }
            MsgNum::KEX_ECDH_REPLY if self.role == Role::Client => {
                let m = KexEcdhReply::decode(payload).map_err(bad)?;
                self.on_ecdh_reply(m)
            }
            _ => Err(Violation::UnexpectedMessage {
                num,
                state: Phase::KeyExchange,
            }
            .into()),
        }
    }

    fn on_kexinit(&mut self, payload: &[u8], seq: u32) -> Result<(), Error> {
        if self.kex.peer_kexinit.is_some() {
            return Err(Violation::RepeatedKexMessage(MsgNum::KEXINIT).into());
        }
        let peer =
            KexInit::decode(payload).map_err(|e| Violation::Malformed(MsgNum::KEXINIT, e))?;
        self.kex.peer_kexinit = Some(payload.to_vec());
        if self.kex.our_kexinit.is_none() {
            self.send_kexinit();
        }
        let ours = self.kex.our_kexinit.as_deref().unwrap_or_default();
        let ours = KexInit::decode(ours).map_err(|e| Violation::Malformed(MsgNum::KEXINIT, e))?;
        let (client, server) = match self.role {
            Role::Client => (&ours, &peer),
            Role::Server => (&peer, &ours),
        };
        let first = self.kex.completed == 0;
        let algs = negotiate::negotiate(
            client,
            server,
            first,
            self.role == Role::Server,
            &self.config.provider,
        )?;
        if first {
            self.kex.strict = algs.strict;
            if algs.strict && seq != 0 {
                return Err(Violation::StrictKex(MsgNum::KEXINIT).into());
            }
        }
        self.kex.ignore_guess =
            peer.first_kex_packet_follows && negotiate::guess_was_wrong(client, server);
        // The transport starts the streams at NEWKEYS or authentication.
        let (send, recv) = match self.role {
            Role::Client => (&algs.comp_c2s, &algs.comp_s2c),
            Role::Server => (&algs.comp_s2c, &algs.comp_c2s),
        };
        let registry = &self.config.compression_engines;
        self.send.compression.negotiated(send, registry)?;
        self.recv.compression.negotiated(recv, registry)?;
        self.send
            .compression
            .set_peer_reads_long(algs.peer_reads_long_stored);
        if self.role == Role::Client && self.guess_stands(client, server, &algs)? {
            // The server takes the packet we sent with our KEXINIT.
        } else if self.role == Role::Client && self.method_is_gex(&algs.kex) {
            self.gex_request(&algs);
        } else if self.role == Role::Client {
            let c = self
                .config
                .provider
                .kex_method(&algs.kex)
                .ok_or(Violation::BadKexValue)?
                .start(self.rng.as_mut())
                .map_err(|_| Violation::BadKexValue)?;
            let q_c = c.client_public().to_vec();
            self.kex.client = Some(c);
            self.queue_with(|p| KexEcdhInit { q_c }.encode(p));
        }
        self.kex.algs = Some(algs);
        Ok(())
    }

    fn method_is_gex(&self, name: &str) -> bool {
        self.config
            .provider
            .kex_method(name)
            .is_some_and(|m| m.group_exchange())
    }

    /// H = HASH(V_C || V_S || I_C || I_S || K_S || Q_C || Q_S || K), RFC 5656 4
    /// (RFC 4253 8 with e and f as Q_C and Q_S); group exchange puts
    /// min || n || max || p || g before e (RFC 4419 3).
    fn exchange_hash(
        &self,
        hash: HashAlg,
        k_s: &[u8],
        q_c: &[u8],
        q_s: &[u8],
        k: &SharedSecret,
    ) -> Vec<u8> {
        hash.digest(&self.exchange_transcript(k_s, q_c, q_s, k))
    }

    /// What [`Connection::exchange_hash`] hashes (a host key kept in
    /// another process is sent this, see `Signer::sign_exchange`).
    fn exchange_transcript(
        &self,
        k_s: &[u8],
        q_c: &[u8],
        q_s: &[u8],
        k: &SharedSecret,
    ) -> zeroize::Zeroizing<Vec<u8>> {
        let ours = self.kex.our_kexinit.as_deref().unwrap_or_default();
        let peer = self.kex.peer_kexinit.as_deref().unwrap_or_default();
        let peer_v = self.peer_version.as_deref().unwrap_or_default();
        let (v_c, v_s, i_c, i_s) = match self.role {
            Role::Client => (self.our_version.as_str(), peer_v, ours, peer),
            Role::Server => (peer_v, self.our_version.as_str(), peer, ours),
        };
        let mut buf = Vec::with_capacity(4096);
        let mut w = Writer::new(&mut buf);
        w.utf8(v_c).utf8(v_s).string(i_c).string(i_s).string(k_s);
        if let Some(g) = &self.kex.gex {
            g.hash_prefix(&mut w);
        }
        w.string(q_c).string(q_s).bytes(k.encoded());
        zeroize::Zeroizing::new(buf)
    }

    fn on_ecdh_init(&mut self, q_c: &[u8]) -> Result<(), Error> {
        let provider = self.config.provider;
        let name = self.kex.algs.as_ref().map(|a| a.kex.clone());
        let method = name
            .and_then(|n| provider.kex_method(&n))
            .ok_or(Violation::BadKexValue)?;
        self.server_exchange(q_c, |_, rng| {
            method
                .respond(q_c, rng)
                .map_err(|_| Violation::BadKexValue.into())
        })
    }

    /// Server: the exchange's second half for the client's Q_C (or e):
    /// `respond` makes Q_S (or f) and K; then H, the signed reply, NEWKEYS.
    fn server_exchange(
        &mut self,
        q_c: &[u8],
        respond: impl FnOnce(HashAlg, &mut dyn Rng) -> Result<(Vec<u8>, SharedSecret), Error>,
    ) -> Result<(), Error> {
        let algs = self.kex.algs.clone().ok_or(Violation::UnexpectedMessage {
            num: MsgNum::KEX_ECDH_INIT,
            state: Phase::BeforeKexInit,
        })?;
        if self.kex.exchanged.is_some() {
            return Err(Violation::RepeatedKexMessage(MsgNum::KEX_ECDH_INIT).into());
        }
        let hash = self
            .config
            .provider
            .kex_method(&algs.kex)
            .ok_or(Violation::BadKexValue)?
            .hash();
        let (q_s, k) = respond(hash, self.rng.as_mut())?;
        let signer = self
            .server
            .as_ref()
            .and_then(|s| {
                s.host_keys
                    .iter()
                    .find(|k| k.sig_algs().contains(&algs.host_key.as_str()))
                    .cloned()
            })
            .ok_or(Error::InvalidState(
                "no host key for the negotiated algorithm",
            ))?;
        let k_s = signer.public_blob();
        if self.kex.host_key.is_none() {
            self.kex.host_key = Some(k_s.clone());
        }
        let transcript = self.exchange_transcript(&k_s, q_c, &q_s, &k);
        let h = hash.digest(&transcript);
        let signature = signer
            .sign_exchange(&algs.host_key, hash, &transcript)
            .map_err(|_| Error::InvalidState("host key signing failed"))?;
        if self.kex.gex.is_some() {
            self.queue_with(|p| {
                KexDhGexReply {
                    host_key: k_s,
                    f: q_s,
                    signature,
                }
                .encode(p)
            });
        } else {
            self.queue_with(|p| {
                KexEcdhReply {
                    host_key: k_s,
                    q_s,
                    signature,
                }
                .encode(p)
            });
        }
        self.kex.exchanged = Some(Exchanged { hash, k, h });
        self.set_session_id();
        self.queue_with(|p| p.push(MsgNum::NEWKEYS.0));
        if algs.peer_wants_ext_info {
            // Plain names only, as sshd: a certificate algorithm is listed
            // through the algorithm it signs with.
            let mut plain: Vec<&str> = Vec::new();
            for a in &self.config.pubkey_algs {
                let p = hostkey::cert::plain_sig_alg(a).unwrap_or(a);
                if !plain.contains(&p) {
                    plain.push(p);
                }
            }
            let sig_algs = plain.join(",");
            let mut p = Vec::new();
            // publickey-hostbound (OpenSSH PROTOCOL 2.5) lets a client's
            // agent check where a forwarded key is being used; sshd 8.9+
            // offers it in every EXT_INFO.
            ExtInfo {
                extensions: vec![
                    ("server-sig-algs".to_owned(), sig_algs.into_bytes()),
                    (crate::msg::HOSTBOUND_EXTENSION.to_owned(), b"0".to_vec()),
                ],
            }
            .encode(&mut p);
            // EXT_INFO must be the first message after our NEWKEYS (RFC 8308 2.4).
            self.held.push_front(p);
        }
        Ok(())
    }

    fn on_ecdh_reply(&mut self, m: KexEcdhReply) -> Result<(), Error> {
        let algs = self.kex.algs.clone().ok_or(Violation::UnexpectedMessage {
            num: MsgNum::KEX_ECDH_REPLY,
            state: Phase::BeforeKexInit,
        })?;
        // Taken by the first reply: a second one finds it gone.
        let client = self
            .kex
            .client
            .take()
            .ok_or(Violation::RepeatedKexMessage(MsgNum::KEX_ECDH_REPLY))?;
        let provider = self.config.provider;
        let hash = provider
            .kex_method(&algs.kex)
            .ok_or(Violation::BadKexValue)?
            .hash();
        let q_c = client.client_public().to_vec();
        let k = client.finish(&m.q_s).map_err(|_| Violation::BadKexValue)?;
        let h = self.exchange_hash(hash, &m.host_key, &q_c, &m.q_s, &k);
        (provider.verify)(&algs.host_key, &m.host_key, &m.signature, &h)
            .map_err(|_| Violation::BadHostSignature)?;
        self.kex.exchanged = Some(Exchanged { hash, k, h });
        self.set_session_id();
        match &self.kex.host_key {
            None => {
                self.kex.host_key = Some(m.host_key.clone());
                self.kex.host_sig = Some(m.signature.clone());
                self.kex.awaiting_host_key = true;
                self.events.push_back(Event::HostKey {
                    algorithm: algs.host_key,
                    key_blob: m.host_key,
                });
            }
            Some(known) if *known == m.host_key => self.queue_with(|p| p.push(MsgNum::NEWKEYS.0)),
            Some(_) => return Err(Violation::HostKeyChanged.into()),
        }
        Ok(())
    }

    /// Client: what binds this session to an agent (OpenSSH's
    /// PROTOCOL.agent `session-bind@openssh.com`): the server's host key
    /// and its signature of the session id, both from the first exchange,
    /// and the session id. None before the first exchange completed.
    pub fn session_binding(&self) -> Option<SessionBinding<'_>> {
        Some(SessionBinding {
            host_key: self.kex.host_key.as_deref()?,
            session_id: self.kex.session_id.as_deref()?,
            signature: self.kex.host_sig.as_deref()?,
        })
    }

    fn set_session_id(&mut self) {
        if self.kex.session_id.is_none() {
            self.kex.session_id = self.kex.exchanged.as_ref().map(|e| e.h.clone());
        }
    }

    /// Client: the runtime trusts the host key; the exchange completes.
    pub fn accept_host_key(&mut self) {
        if std::mem::take(&mut self.kex.awaiting_host_key) {
            self.queue_with(|p| p.push(MsgNum::NEWKEYS.0));
            self.request_userauth_service();
        }
    }

    /// Client: the runtime does not trust the host key; the connection ends.
    pub fn reject_host_key(&mut self) {
        self.kex.awaiting_host_key = false;
        self.disconnect(
            crate::msg::DisconnectReason::HOST_KEY_NOT_VERIFIABLE,
            "Host key verification failed.",
        );
    }

    /// Keys for one direction from the exchange; `c2s` selects letters A/C/E or B/D/F.
    fn direction_keys(&self, c2s: bool) -> Result<KeyMaterial, Error> {
        let (Some(ex), Some(algs), Some(sid)) =
            (&self.kex.exchanged, &self.kex.algs, &self.kex.session_id)
        else {
            return Err(Error::InvalidState("keys derived before the exchange"));
        };
        let (cipher_name, mac_name, letters) = if c2s {
            (&algs.cipher_c2s, &algs.mac_c2s, [b'A', b'C', b'E'])
        } else {
            (&algs.cipher_s2c, &algs.mac_s2c, [b'B', b'D', b'F'])
        };
        let provider = &self.config.provider;
        let suite = provider
            .cipher(cipher_name)
            .ok_or(Error::InvalidState("negotiated an unknown cipher"))?;
        let ci = suite.info();
        let mac_len = provider.mac_info(mac_name).map_or(0, |m| m.key_len);
        let derive =
            |letter: u8, len: usize| kexalg::derive_key(ex.hash, &ex.k, &ex.h, letter, sid, len);
        Ok(KeyMaterial {
            cipher: cipher_name.clone(),
            mac: mac_name.clone(),
            iv: derive(letters[0], ci.iv_len),
            key: derive(letters[1], ci.key_len),
            mac_key: derive(letters[2], if ci.aead { 0 } else { mac_len }),
        })
    }

    /// Our NEWKEYS went out: switch outgoing keys, release held messages.
    pub(crate) fn newkeys_sent(&mut self) {
        let c2s = self.role == Role::Client;
        match self
            .direction_keys(c2s)
            .and_then(|m| Ok((m.sealer(&self.config.provider)?, m)))
        {
            Ok((sealer, m)) => {
                self.send.set_keys(sealer, self.kex.strict);
                self.kex.send_keys = Some(m);
            }
            Err(e) => {
                self.fail(e);
                return;
            }
        }
        self.kex.newkeys_sent = true;
        let held = std::mem::take(&mut self.held);
        self.outbox.extend(held);
        self.finish_kex();
    }

    fn on_newkeys(&mut self, now: Instant) -> Result<(), Error> {
        if self.kex.exchanged.is_none() || self.kex.newkeys_received {
            return Err(Violation::NewKeysTooEarly.into());
        }
        let c2s = self.role == Role::Server;
        let keys = self.direction_keys(c2s)?;
        self.recv
            .set_keys(keys.opener(&self.config.provider)?, self.kex.strict);
        self.kex.recv_keys = Some(keys);
        self.kex.newkeys_received = true;
        self.last_kex_at = Some(now);
        self.finish_kex();
        Ok(())
    }

    fn finish_kex(&mut self) {
        if !(self.kex.newkeys_sent && self.kex.newkeys_received) {
            return;
        }
        self.kex.completed += 1;
        self.kex.our_kexinit = None;
        self.kex.peer_kexinit = None;
        self.kex.exchanged = None;
        self.kex.gex = None;
        self.kex.newkeys_sent = false;
        self.kex.newkeys_received = false;
        let initial = self.kex.completed == 1;
        self.none.offered = false;
        if self.none.granted_interactive && self.none_active() {
            // kex/none.rs keeps this from happening; should it ever, the
            // interactive session must not go on in the clear.
            self.disconnect(
                crate::msg::DisconnectReason::PROTOCOL_ERROR,
                "NONE cipher negotiated while an interactive session is open",
            );
            return;
        }
        let algorithms = Box::new(self.kex.algs.clone().unwrap_or_default());
        self.events.push_back(Event::KexDone {
            initial,
            algorithms,
        });
    }

    /// User authentication succeeded (server: its USERAUTH_SUCCESS is
    /// framed; client: the server's was read): delayed compression starts.
    pub(crate) fn start_delayed_compression(&mut self) {
        self.send.compression.authenticated();
        self.recv.compression.authenticated();
    }

    /// The algorithms of the last key exchange.
    pub fn algorithms(&self) -> Option<&Algorithms> {
        self.kex.algorithms()
    }
}

/// A compression name-list with `zstd@sluice.dev` in it gets the pseudo-name
/// saying we read its long stored packets right after it (never chosen:
/// negotiation skips it, and the real name comes first in both lists).
fn with_long_stored(mut names: Vec<String>) -> Vec<String> {
    if let Some(i) = names.iter().position(|n| n == crate::transport::zstd::NAME) {
        names.insert(i + 1, crate::transport::zstd::LONG_STORED.to_owned());
    }
    names
}
