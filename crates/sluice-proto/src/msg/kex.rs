//! Key exchange messages: KEXINIT and NEWKEYS (RFC 4253 sections 7.1 and
//! 7.3) and the ECDH pair of RFC 5656 section 4, whose numbers 30/31 also
//! carry curve25519-sha256 (RFC 8731), the ML-KEM/sntrup hybrids and
//! KEXDH_INIT/REPLY of RFC 4253 8 (an `mpint` is a `string` on the wire; the
//! public values are opaque to this layer). Group exchange (RFC 4419) has
//! four of its own, 31-34; 31 is decoded by the negotiated method.

use super::{blob, names, reader};
use crate::wire::{MsgNum, WireError, Writer};

/// SSH_MSG_KEXINIT (RFC 4253 7.1). Every list is a name-list in order of
/// preference. No trailing data is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KexInit {
    /// 16 random bytes.
    pub cookie: [u8; 16],
    /// Key exchange methods (and pseudo-algorithms such as `ext-info-c`).
    pub kex_algorithms: Vec<String>,
    /// Host key (signature) algorithms.
    pub server_host_key_algorithms: Vec<String>,
    /// Ciphers, client to server.
    pub encryption_client_to_server: Vec<String>,
    /// Ciphers, server to client.
    pub encryption_server_to_client: Vec<String>,
    /// MACs, client to server.
    pub mac_client_to_server: Vec<String>,
    /// MACs, server to client.
    pub mac_server_to_client: Vec<String>,
    /// Compression, client to server.
    pub compression_client_to_server: Vec<String>,
    /// Compression, server to client.
    pub compression_server_to_client: Vec<String>,
    /// Languages, client to server (usually empty).
    pub languages_client_to_server: Vec<String>,
    /// Languages, server to client (usually empty).
    pub languages_server_to_client: Vec<String>,
    /// A guessed key exchange packet follows.
    pub first_kex_packet_follows: bool,
    /// Reserved for future extension; sent as 0.
    pub reserved: u32,
}

impl KexInit {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::KEXINIT)?;
        let m = KexInit {
            cookie: r.array()?,
            kex_algorithms: names(&mut r)?,
            server_host_key_algorithms: names(&mut r)?,
            encryption_client_to_server: names(&mut r)?,
            encryption_server_to_client: names(&mut r)?,
            mac_client_to_server: names(&mut r)?,
            mac_server_to_client: names(&mut r)?,
            compression_client_to_server: names(&mut r)?,
            compression_server_to_client: names(&mut r)?,
            languages_client_to_server: names(&mut r)?,
            languages_server_to_client: names(&mut r)?,
            first_kex_packet_follows: r.bool()?,
            reserved: r.u32()?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::KEXINIT.0)
            .bytes(&self.cookie)
            .name_list(&self.kex_algorithms)
            .name_list(&self.server_host_key_algorithms)
            .name_list(&self.encryption_client_to_server)
            .name_list(&self.encryption_server_to_client)
            .name_list(&self.mac_client_to_server)
            .name_list(&self.mac_server_to_client)
            .name_list(&self.compression_client_to_server)
            .name_list(&self.compression_server_to_client)
            .name_list(&self.languages_client_to_server)
            .name_list(&self.languages_server_to_client)
            .bool(self.first_kex_packet_follows)
            .u32(self.reserved);
    }
}

/// SSH_MSG_NEWKEYS (RFC 4253 7.3): no fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NewKeys;

impl NewKeys {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        reader(payload, MsgNum::NEWKEYS)?.finish()?;
        Ok(NewKeys)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(MsgNum::NEWKEYS.0);
    }
}

/// SSH_MSG_KEX_ECDH_INIT (RFC 5656 4): the client's ephemeral public value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KexEcdhInit {
    /// Q_C: client ephemeral public key (or hybrid KEM public value).
    pub q_c: Vec<u8>,
}

impl KexEcdhInit {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::KEX_ECDH_INIT)?;
        let m = KexEcdhInit { q_c: blob(&mut r)? };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::KEX_ECDH_INIT.0)
            .string(&self.q_c);
    }
}

/// SSH_MSG_KEX_ECDH_REPLY (RFC 5656 4): host key, the server's ephemeral
/// public value and the signature over the exchange hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KexEcdhReply {
    /// K_S: server public host key blob.
    pub host_key: Vec<u8>,
    /// Q_S: server ephemeral public key (or hybrid KEM ciphertext).
    pub q_s: Vec<u8>,
    /// Signature blob over the exchange hash H.
    pub signature: Vec<u8>,
}

impl KexEcdhReply {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::KEX_ECDH_REPLY)?;
        let m = KexEcdhReply {
            host_key: blob(&mut r)?,
            q_s: blob(&mut r)?,
            signature: blob(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::KEX_ECDH_REPLY.0)
            .string(&self.host_key)
            .string(&self.q_s)
            .string(&self.signature);
    }
}

/// SSH_MSG_KEX_DH_GEX_REQUEST (RFC 4419 3): the group sizes the client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KexDhGexRequest {
    /// Smallest acceptable size in bits.
    pub min: u32,
    /// Preferred size.
    pub n: u32,
    /// Largest acceptable size.
    pub max: u32,
}

impl KexDhGexRequest {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::KEX_DH_GEX_REQUEST)?;
        let m = KexDhGexRequest {
            min: r.u32()?,
            n: r.u32()?,
            max: r.u32()?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::KEX_DH_GEX_REQUEST.0)
            .u32(self.min)
            .u32(self.n)
            .u32(self.max);
    }
}

/// SSH_MSG_KEX_DH_GEX_GROUP (RFC 4419 3): the server's p and g, as unsigned
/// magnitudes (leading zeros stripped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KexDhGexGroup {
    /// The safe prime p.
    pub p: Vec<u8>,
    /// The generator g.
    pub g: Vec<u8>,
}

impl KexDhGexGroup {
    /// Decodes a whole payload; negative mpints are refused.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::KEX_DH_GEX_GROUP)?;
        let m = KexDhGexGroup {
            p: r.mpint_unsigned()?.to_vec(),
            g: r.mpint_unsigned()?.to_vec(),
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::KEX_DH_GEX_GROUP.0)
            .mpint_unsigned(&self.p)
            .mpint_unsigned(&self.g);
    }
}

/// SSH_MSG_KEX_DH_GEX_INIT (RFC 4419 3): the client's e, as the mpint's
/// body (checked by the DH code, which refuses a non-minimal encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KexDhGexInit {
    /// e = g^x mod p.
    pub e: Vec<u8>,
}

impl KexDhGexInit {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::KEX_DH_GEX_INIT)?;
        let m = KexDhGexInit {
            e: r.mpint()?.to_vec(),
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::KEX_DH_GEX_INIT.0)
            .string(&self.e);
    }
}

/// SSH_MSG_KEX_DH_GEX_REPLY (RFC 4419 3): host key, f and the signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KexDhGexReply {
    /// K_S: server public host key blob.
    pub host_key: Vec<u8>,
    /// f = g^y mod p, the mpint's body.
    pub f: Vec<u8>,
    /// Signature blob over the exchange hash H.
    pub signature: Vec<u8>,
}

impl KexDhGexReply {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::KEX_DH_GEX_REPLY)?;
        let m = KexDhGexReply {
            host_key: blob(&mut r)?,
            f: r.mpint()?.to_vec(),
            signature: blob(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::KEX_DH_GEX_REPLY.0)
            .string(&self.host_key)
            .string(&self.f)
            .string(&self.signature);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The KEXINIT an OpenSSH 9.2p1 (Debian 12) client sent to a listening
    /// socket with `ssh -F /dev/null`, payload only (packet framing removed).
    const OPENSSH_9_2_CLIENT: &[u8] = include_bytes!("testdata/openssh-9.2p1-client-kexinit.bin");

    #[test]
    fn openssh_9_2_client_kexinit_decodes() {
        let k = KexInit::decode(OPENSSH_9_2_CLIENT).unwrap();
        assert_eq!(
            k.kex_algorithms.first().map(String::as_str),
            Some("sntrup761x25519-sha512")
        );
        assert!(k.kex_algorithms.iter().any(|n| n == "curve25519-sha256"));
        assert_eq!(k.kex_algorithms.len(), 13);
        assert_eq!(
            k.kex_algorithms[11..],
            ["ext-info-c", "kex-strict-c-v00@openssh.com"]
        );
        assert_eq!(k.server_host_key_algorithms.len(), 16);
        assert_eq!(
            k.server_host_key_algorithms.last().map(String::as_str),
            Some("rsa-sha2-256")
        );
        assert_eq!(k.encryption_client_to_server, k.encryption_server_to_client);
        assert_eq!(
            k.encryption_client_to_server[0],
            "chacha20-poly1305@openssh.com"
        );
        assert_eq!(k.encryption_client_to_server.len(), 6);
        assert_eq!(k.mac_client_to_server[0], "umac-64-etm@openssh.com");
        assert_eq!(k.mac_server_to_client.len(), 10);
        assert_eq!(
            k.compression_client_to_server,
            ["none", "zlib@openssh.com", "zlib"]
        );
        assert!(k.languages_client_to_server.is_empty() && k.languages_server_to_client.is_empty());
        assert!(!k.first_kex_packet_follows);
        assert_eq!(k.reserved, 0);
        let mut again = Vec::new();
        k.encode(&mut again);
        assert_eq!(again, OPENSSH_9_2_CLIENT, "re-encoding is byte-exact");
    }

    #[test]
    fn kexinit_rejects_bad_name_lists() {
        let mut k = KexInit::decode(OPENSSH_9_2_CLIENT).unwrap();
        k.kex_algorithms = vec!["a".into(), String::new()];
        let mut v = Vec::new();
        k.encode(&mut v);
        assert_eq!(KexInit::decode(&v), Err(WireError::BadNameList));
    }
}
