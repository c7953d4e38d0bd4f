//! Algorithm negotiation (RFC 4253 section 7.1), with the pseudo-algorithms
//! riding in the KEX list: `ext-info-c`/`ext-info-s` (RFC 8308) and
//! `kex-strict-c-v00@openssh.com`/`kex-strict-s-v00@openssh.com` (OpenSSH
//! PROTOCOL, the Terrapin countermeasure).

use crate::crypto::CryptoProvider;
use crate::error::{AlgorithmKind, Violation};
use crate::msg::KexInit;

/// Client marker for RFC 8308 extension negotiation.
pub const EXT_INFO_C: &str = "ext-info-c";
/// Server marker for RFC 8308 extension negotiation.
pub const EXT_INFO_S: &str = "ext-info-s";
/// Client marker for strict KEX.
pub const STRICT_C: &str = "kex-strict-c-v00@openssh.com";
/// Server marker for strict KEX.
pub const STRICT_S: &str = "kex-strict-s-v00@openssh.com";

/// The algorithms chosen for one key exchange.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Algorithms {
    /// Key exchange method.
    pub kex: String,
    /// Server host key signature algorithm.
    pub host_key: String,
    /// Cipher client to server.
    pub cipher_c2s: String,
    /// Cipher server to client.
    pub cipher_s2c: String,
    /// MAC client to server (empty for AEAD ciphers).
    pub mac_c2s: String,
    /// MAC server to client (empty for AEAD ciphers).
    pub mac_s2c: String,
    /// Compression client to server.
    pub comp_c2s: String,
    /// Compression server to client.
    pub comp_s2c: String,
    /// Both sides asked for strict KEX (meaningful for the first exchange).
    pub strict: bool,
    /// The peer wants an EXT_INFO message (server side: client sent `ext-info-c`).
    pub peer_wants_ext_info: bool,
    /// The peer lists `zstd-long-stored-v00@sluice.dev`: it reads zstd
    /// stored packets longer than one zstd block.
    pub peer_reads_long_stored: bool,
}

fn is_pseudo(name: &str) -> bool {
    name == EXT_INFO_C
        || name == EXT_INFO_S
        || name.starts_with("kex-strict-")
        || name == crate::transport::zstd::LONG_STORED
}

fn choose(what: AlgorithmKind, client: &[String], server: &[String]) -> Result<String, Violation> {
    client
        .iter()
        .filter(|c| !is_pseudo(c))
        .find(|c| server.contains(c))
        .cloned()
        .ok_or_else(|| Violation::NoCommonAlgorithm {
            what,
            ours: client.join(","),
            theirs: server.join(","),
        })
}

fn choose_mac(
    aead: bool,
    cipher_name: &str,
    client: &[String],
    server: &[String],
) -> Result<String, Violation> {
    if aead {
        return Ok(String::new());
    }
    if cipher_name != "none" {
        // The NONE MAC only ever goes with the NONE cipher: an encrypted
        // but unauthenticated stream could be altered undetected.
        let authenticated =
            |l: &[String]| -> Vec<String> { l.iter().filter(|m| *m != "none").cloned().collect() };
        return choose(
            AlgorithmKind::Mac,
            &authenticated(client),
            &authenticated(server),
        );
    }
    choose(AlgorithmKind::Mac, client, server)
}

/// Negotiates from both KEXINITs. `first` is true for the connection's
/// first key exchange, the only one where the pseudo-algorithms count.
/// `provider` tells which ciphers are AEAD (and so take no MAC).
pub fn negotiate(
    client: &KexInit,
    server: &KexInit,
    first: bool,
    we_are_server: bool,
    provider: &CryptoProvider,
) -> Result<Algorithms, Violation> {
    let aead = |name: &str| provider.cipher_info(name).is_some_and(|c| c.aead);
    let kex = choose(
        AlgorithmKind::Kex,
        &client.kex_algorithms,
        &server.kex_algorithms,
    )?;
    let host_key = choose(
        AlgorithmKind::HostKey,
        &client.server_host_key_algorithms,
        &server.server_host_key_algorithms,
    )?;
    let cipher_c2s = choose(
        AlgorithmKind::Cipher,
        &client.encryption_client_to_server,
        &server.encryption_client_to_server,
    )?;
    let cipher_s2c = choose(
        AlgorithmKind::Cipher,
        &client.encryption_server_to_client,
        &server.encryption_server_to_client,
    )?;
    let mac_c2s = choose_mac(
        aead(&cipher_c2s),
        &cipher_c2s,
        &client.mac_client_to_server,
        &server.mac_client_to_server,
    )?;
    let mac_s2c = choose_mac(
        aead(&cipher_s2c),
        &cipher_s2c,
        &client.mac_server_to_client,
        &server.mac_server_to_client,
    )?;
    let comp_c2s = choose(
        AlgorithmKind::Compression,
        &client.compression_client_to_server,
        &server.compression_client_to_server,
    )?;
    let comp_s2c = choose(
        AlgorithmKind::Compression,
        &client.compression_server_to_client,
        &server.compression_server_to_client,
    )?;
    let has = |list: &[String], n: &str| list.iter().any(|x| x == n);
    let strict =
        first && has(&client.kex_algorithms, STRICT_C) && has(&server.kex_algorithms, STRICT_S);
    let peer_wants_ext_info = first && we_are_server && has(&client.kex_algorithms, EXT_INFO_C);
    let peer = if we_are_server { client } else { server };
    let peer_reads_long_stored = [
        &peer.compression_client_to_server,
        &peer.compression_server_to_client,
    ]
    .iter()
    .any(|l| has(l, crate::transport::zstd::LONG_STORED));
    Ok(Algorithms {
        kex,
        host_key,
        cipher_c2s,
        cipher_s2c,
        mac_c2s,
        mac_s2c,
        comp_c2s,
        comp_s2c,
        strict,
        peer_wants_ext_info,
        peer_reads_long_stored,
    })
}

/// True if the peer's first KEX packet guess (RFC 4253 7.1
/// `first_kex_packet_follows`) was wrong, so that packet must be ignored.
pub fn guess_was_wrong(client: &KexInit, server: &KexInit) -> bool {
    let first = |v: &[String]| v.iter().find(|n| !is_pseudo(n)).cloned();
    first(&client.kex_algorithms) != first(&server.kex_algorithms)
        || first(&client.server_host_key_algorithms) != first(&server.server_host_key_algorithms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init(kex: &[&str], ciphers: &[&str]) -> KexInit {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        KexInit {
            cookie: [0; 16],
            kex_algorithms: v(kex),
            server_host_key_algorithms: v(&["ssh-ed25519"]),
            encryption_client_to_server: v(ciphers),
            encryption_server_to_client: v(ciphers),
            mac_client_to_server: v(&["hmac-sha2-256"]),
            mac_server_to_client: v(&["hmac-sha2-256"]),
            compression_client_to_server: v(&["none"]),
            compression_server_to_client: v(&["none"]),
            languages_client_to_server: vec![],
            languages_server_to_client: vec![],
            first_kex_packet_follows: false,
            reserved: 0,
        }
    }

    #[test]
    fn client_preference_wins_and_markers_are_skipped() {
        let c = init(
            &["ext-info-c", "curve25519-sha256", STRICT_C],
            &["aes256-ctr", "aes128-ctr"],
        );
        let s = init(
            &[
                "ecdh-sha2-nistp256",
                "curve25519-sha256",
                STRICT_S,
                "ext-info-s",
            ],
            &["aes128-ctr", "aes256-ctr"],
        );
        let a = negotiate(&c, &s, true, true, &crate::crypto::aws_lc_provider()).unwrap();
        assert_eq!(a.kex, "curve25519-sha256");
        assert_eq!(a.cipher_c2s, "aes256-ctr");
        assert!(a.strict && a.peer_wants_ext_info);
        assert!(
            !negotiate(&c, &s, false, true, &crate::crypto::aws_lc_provider())
                .unwrap()
                .strict
        );
    }

    #[test]
    fn no_common_algorithm_names_both_lists() {
        let c = init(&["curve25519-sha256"], &["aes128-ctr"]);
        let s = init(&["curve25519-sha256"], &["aes256-ctr"]);
        let e = negotiate(&c, &s, true, false, &crate::crypto::aws_lc_provider()).unwrap_err();
        assert!(e.to_string().contains("aes256-ctr"));
    }

    #[test]
    fn the_long_stored_marker_is_the_peers_and_never_chosen() {
        use crate::transport::zstd::{LONG_STORED, NAME};
        let with = |names: &[&str]| {
            let mut i = init(&["curve25519-sha256"], &["aes128-ctr"]);
            i.compression_client_to_server = names.iter().map(|n| n.to_string()).collect();
            i
        };
        let p = crate::crypto::aws_lc_provider();
        // The server reads the client's marker; the client the server's.
        let c = with(&[NAME, LONG_STORED, "none"]);
        let s = with(&["none", NAME]);
        let a = negotiate(&c, &s, true, true, &p).unwrap();
        assert!(a.peer_reads_long_stored);
        assert_eq!(a.comp_c2s, NAME);
        assert!(
            !negotiate(&c, &s, true, false, &p)
                .unwrap()
                .peer_reads_long_stored
        );
        // Listed alone on both sides it is no method.
        let m = with(&[LONG_STORED]);
        assert!(negotiate(&m, &m, true, false, &p).is_err());
    }

    #[test]
    fn markers_alone_do_not_negotiate() {
        let c = init(&[EXT_INFO_C, STRICT_C], &["aes128-ctr"]);
        let s = init(&[EXT_INFO_C, STRICT_C], &["aes128-ctr"]);
        assert!(negotiate(&c, &s, true, false, &crate::crypto::aws_lc_provider()).is_err());
    }
}
