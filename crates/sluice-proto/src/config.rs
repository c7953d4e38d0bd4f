//! What the runtime tells the engine: algorithm preferences, limits, window
//! sizes, host keys, authentication methods. Plain data, but for the
//! compression engines, handed in as the RNG is.

use crate::crypto::hostkey::Signer;
use crate::crypto::{cipher, hostkey, kex, CryptoProvider};
use crate::transport::compress::{self, CompressionEngine};
use std::sync::Arc;
use std::time::Duration;

/// Settings shared by client and server.
#[derive(Clone)]
pub struct Config {
    /// Our identification line without CR LF (RFC 4253 4.2).
    pub version: String,
    /// Key exchange methods, preferred first.
    pub kex: Vec<String>,
    /// Host key signature algorithms, preferred first (client); the server
    /// offers those its keys can make, in this order.
    pub host_key_algs: Vec<String>,
    /// Ciphers, preferred first (both directions).
    pub ciphers: Vec<String>,
    /// MACs, preferred first (both directions).
    pub macs: Vec<String>,
    /// Compression engines by wire name, preferred first (both directions):
    /// the registry KEXINIT offers from, `none` always offered besides.
    pub compression_engines: Vec<Arc<dyn CompressionEngine>>,
    /// Offer the engines before `none` (ssh's `Compression yes`; the
    /// client's order decides); otherwise `none` comes first.
    pub prefer_compression: bool,
    /// `Compression auto` (client): compress what we send toward any peer,
    /// and what we receive only with an engine no stock peer has (a sluice
    /// peer, whose sender steers itself); overrides `prefer_compression`.
    /// See [`compress::auto_names`].
    pub compression_auto: bool,
    /// Re-key after this many bytes in either direction (RekeyLimit).
    pub rekey_bytes: u64,
    /// Re-key after this much time (RekeyLimit's second value).
    pub rekey_time: Option<Duration>,
    /// Initial receive window for session channels.
    pub window: u32,
    /// Largest size a bulk channel's receive window grows to (the most one
    /// channel buffers when its consumer stalls).
    pub window_max: u32,
    /// Budget the receive windows of all of a connection's channels share:
    /// a window grows only while the total stays under it, and a new
    /// channel starts within what is left (at least 256 KiB). Bounds what a
    /// peer can make us buffer with many channels.
    pub windows_max: u64,
    /// Cap on windows advertised to stock OpenSSH peers (HPN-SSH uses 15 MiB;
    /// default: none, see `connection::STOCK_OPENSSH_WINDOW_MAX`).
    pub stock_openssh_window_max: u32,
    /// Largest channel data payload we accept.
    pub max_packet: u32,
    /// Signature algorithms we accept for user authentication (server) or
    /// may use (client).
    pub pubkey_algs: Vec<String>,
    /// Client: send the first key exchange packet for our preferred method
    /// right after our KEXINIT (RFC 4253 7.1 `first_kex_packet_follows`).
    pub kex_guess: bool,
    /// Server: the safe primes group exchange may hand out (moduli(5), read
    /// by the runtime); empty: the RFC 3526 groups only.
    pub dh_moduli: Arc<[kex::DhModulus]>,
    /// Where every algorithm comes from; the lists above must name
    /// algorithms it implements (default: [`crate::crypto::aws_lc_provider`]).
    pub provider: CryptoProvider,
}

/// The default window budget of a connection (`Config::windows_max`) for
/// channel windows that grow to `window_max`: two such channels at full
/// size, and never under 256 MiB.
pub fn windows_budget(window_max: u32) -> u64 {
    (2 * u64::from(window_max)).max(256 << 20)
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

impl Default for Config {
    fn default() -> Self {
        Config {
            version: concat!("SSH-2.0-sluice_", env!("CARGO_PKG_VERSION")).to_owned(),
            kex: owned(kex::DEFAULT_KEX),
            host_key_algs: owned(hostkey::DEFAULT_SIG_ALGS),
            ciphers: owned(cipher::DEFAULT_CIPHERS),
            macs: owned(cipher::DEFAULT_MACS),
            // Safe for either role: nothing inflated before authentication.
            compression_engines: compress::after_auth_only(&compress::default_engines()),
            prefer_compression: false,
            compression_auto: false,
            rekey_bytes: 1 << 32,
            rekey_time: None,
            window: 16 * 1024 * 1024,
            window_max: 128 * 1024 * 1024,
            windows_max: windows_budget(128 * 1024 * 1024),
            stock_openssh_window_max: crate::connection::STOCK_OPENSSH_WINDOW_MAX,
            max_packet: 256 * 1024 - 1024,
            pubkey_algs: owned(hostkey::DEFAULT_SIG_ALGS),
            kex_guess: true,
            dh_moduli: Arc::from(Vec::new()),
            provider: crate::crypto::aws_lc_provider(),
        }
    }
}

/// Server-only settings.
#[derive(Clone, Default)]
pub struct ServerConfig {
    /// Common settings.
    pub common: Config,
    /// Host keys; at least one.
    pub host_keys: Vec<Arc<dyn Signer>>,
    /// Authentication methods offered (`publickey`, `password`, ...).
    pub auth_methods: Vec<String>,
    /// Failed attempts before disconnecting (MaxAuthTries).
    pub max_auth_tries: u32,
    /// Text sent as USERAUTH_BANNER before authentication.
    pub banner: Option<String>,
}

/// Client-only settings.
#[derive(Clone, Default)]
pub struct ClientConfig {
    /// Common settings.
    pub common: Config,
}
