//! OpenSSH's host key rotation, the server's half (OpenSSH PROTOCOL 2.5):
//! after authentication every plain host key is announced
//! (`hostkeys-00@openssh.com`, no reply wanted), and a client's
//! `hostkeys-prove-00@openssh.com` is answered with one signature per key,
//! in order, made by the monitor (privsep/signer.rs builds the signed data
//! itself). A key we do not hold fails the whole request, as in sshd.

use crate::log;
use crate::server::conn::ServerConn;
use sluice_proto::crypto::hostkey;
use sluice_proto::msg::{HostKeyList, HOSTKEYS, MAX_HOST_KEYS};
use sluice_proto::Connection;

impl ServerConn {
    /// Sends `hostkeys-00@openssh.com` with the plain host keys.
    pub(super) fn announce_host_keys(&mut self, conn: &mut Connection) {
        let mut items: Vec<Vec<u8>> = Vec::new();
        for k in &self.host_keys {
            let plain = hostkey::blob_key_type(k).is_some_and(|t| !hostkey::cert::is_cert_type(t));
            if plain && !items.contains(k) && items.len() < MAX_HOST_KEYS {
                items.push(k.clone());
            }
        }
        if items.is_empty() {
            return;
        }
        let n = items.len();
        match conn.global_request(HOSTKEYS, false, &HostKeyList { items }.encode()) {
            Ok(()) => log!(Debug1, "notify_hostkeys: sent {n} hostkeys"),
            Err(e) => log!(Error, "notify_hostkeys: {e}"),
        }
    }

    /// The reply data for a `hostkeys-prove-00@openssh.com` with `data`
    /// (the keys asked about), or None to refuse it.
    pub(super) fn prove_host_keys(&mut self, conn: &Connection, data: &[u8]) -> Option<Vec<u8>> {
        let list = match HostKeyList::decode(data) {
            Ok(l) => l,
            Err(e) => {
                log!(Error, "server_input_hostkeys_prove: bad request: {e}");
                return None;
            }
        };
        // RSA keys sign with the key exchange's RSA algorithm when it was
        // one (what ssh then checks), else rsa-sha2-512 (sshd would use
        // SHA-1 ssh-rsa, which sluice does not sign with; ssh accepts both).
        let kex_alg = conn
            .algorithms()
            .map(|a| a.host_key.clone())
            .unwrap_or_default();
        let kex_plain = hostkey::cert::plain_sig_alg(&kex_alg).unwrap_or(&kex_alg);
        let mut sigs = Vec::with_capacity(list.items.len());
        for blob in &list.items {
            let key_type = hostkey::blob_key_type(blob).unwrap_or("unknown");
            // Only the plain keys announced: a certificate is not proved.
            let announced = !hostkey::cert::is_cert_type(key_type);
            let found = self.host_keys.iter().position(|k| k == blob);
            let Some(index) = found.filter(|_| announced) else {
                log!(
                    Error,
                    "server_input_hostkeys_prove: unknown host {key_type} key"
                );
                return None;
            };
            let alg = if key_type == "ssh-rsa" && kex_plain.starts_with("rsa-sha2-") {
                kex_plain
            } else {
                hostkey::sig_algs_for_key_type(key_type).first()?
            };
            let monitor = self.monitor.as_mut()?;
            match monitor.prove_host_key(index as u32, alg) {
                Ok(sig) => sigs.push(sig),
                Err(e) => {
                    log!(
                        Error,
                        "server_input_hostkeys_prove: signing {key_type} key: {e}"
                    );
                    return None;
                }
            }
        }
        log!(
            Debug1,
            "server_input_hostkeys_prove: proved {} host keys",
            sigs.len()
        );
        Some(HostKeyList { items: sigs }.encode())
    }
}
