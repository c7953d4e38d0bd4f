//! User certificates (sshd(8) AUTHORIZED_KEYS `cert-authority`,
//! sshd_config(5) TrustedUserCAKeys and AuthorizedPrincipalsFile), in
//! sshd's order: a `cert-authority` line of the user's authorized_keys
//! first, then TrustedUserCAKeys. Either way the certificate must be a
//! user certificate, valid now, signed by that CA with an algorithm of
//! CASignatureAlgorithms, naming an accepted principal; its critical
//! options are enforced (force-command, source-address; any other refuses
//! it) and its extensions grant what the session may do.
//!
//! Runs where the decision is made: in a single-process server, and as
//! root in the privilege-separation monitor (server/privsep/mauth.rs).

use super::user_files::read_user_files;
use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::{self, KeyOptions};
use crate::keys::cert::{self, Cert, CertOptions};
use crate::keys::revoked;
use crate::log;
use crate::server::keys_command::{self, Which};
use crate::server::session::UserInfo;
use std::net::SocketAddr;

/// The options of the session if `c` may log in as `info` (None: refused,
/// the reason logged).
pub(super) fn allowed(
    cfg: &Sshd,
    (peer, local): (SocketAddr, SocketAddr),
    info: &UserInfo,
    (key_blob, c): (&[u8], &Cert),
    authorized_keys: &[(std::path::PathBuf, Vec<u8>)],
    now: u64,
) -> Option<KeyOptions> {
    let cert_opts = match c.user_options() {
        Ok(o) => o,
        Err(e) => {
            log!(Error, "{e}");
            return None;
        }
    };
    let ip = peer.ip();
    let ca_algs = &cfg.ca_signature_algorithms;
    let (line_opts, via) = if let Some((opts, loc)) = authorized_keys::find_cert_authority(
        authorized_keys,
        &c.ca,
        c.principals(),
        &info.name,
        ip,
        now,
    ) {
        // The line checked the principals (sshd requires none here).
        if let Err(e) = c.check(false, now, None, false, false, ca_algs) {
            log!(Error, "{e}");
            return None;
        }
        (opts, format!("found at {loc}"))
    } else {
        trusted_ca(cfg, (peer, local), info, (key_blob, c), now)?
    };
    let opts = merge(line_opts, &cert_opts)?;
    if let Some(list) = &cert_opts.source_address {
        if !cert::source_address_matches(ip, list) {
            log!(
                Info,
                "Authentication tried for {} with valid certificate but not from a permitted source address ({ip}).",
                info.name
            );
            return None;
        }
    }
    log!(
        Verbose,
        "Accepted certificate ID \"{}\" (serial {}) signed by {} CA {} {via}",
        c.key_id(),
        c.serial(),
        c.ca_type_name(),
        c.ca_fingerprint()
    );
    Some(opts)
}

/// TrustedUserCAKeys: the CA must be listed; the principals come from
/// AuthorizedPrincipalsFile, then AuthorizedPrincipalsCommand, when either
/// is set (the matching line's options apply), else the user name must be
/// a principal of the certificate.
fn trusted_ca(
    cfg: &Sshd,
    conn: (SocketAddr, SocketAddr),
    info: &UserInfo,
    (key_blob, c): (&[u8], &Cert),
    now: u64,
) -> Option<(KeyOptions, String)> {
    let ip = conn.0.ip();
    let file = cfg.trusted_user_ca_keys.as_ref()?;
    match revoked::contains(file, &c.ca) {
        Ok(true) => {}
        Ok(false) => {
            log!(
                Debug1,
                "CA {} {} is not listed in {}",
                c.ca_type_name(),
                c.ca_fingerprint(),
                file.display()
            );
            return None;
        }
        Err(e) => {
            log!(Error, "TrustedUserCAKeys {}: {e}", file.display());
            return None;
        }
    }
    let ca_algs = &cfg.ca_signature_algorithms;
    let principals_file = cfg.authorized_principals_path(&info.name, &info.home, info.uid);
    let use_principals = principals_file.is_some() || cfg.authorized_principals_command.is_some();
    let opts = if use_principals {
        let find = |files: &[(std::path::PathBuf, Vec<u8>)]| {
            authorized_keys::find_principal(files, c.principals(), &info.name, ip, now)
        };
        // sshd's order: the file, then the command.
        let found = principals_file
            .and_then(|p| find(&read_user_files(cfg, info, &[p], "authorized principals")))
            .or_else(|| {
                let out =
                    keys_command::output(cfg, Which::Principals, conn, info, key_blob, Some(c))?;
                find(&[out])
            });
        let Some((opts, loc)) = found else {
            log!(
                Error,
                "Certificate does not contain an authorized principal"
            );
            return None;
        };
        log!(Debug1, "principal found at {loc}");
        c.check(false, now, None, true, false, ca_algs)
            .map(|()| opts)
    } else {
        // No line to restrict it: the certificate's FIDO policy alone
        // holds (merge takes both's no-touch-required).
        c.check(false, now, Some(&info.name), true, false, ca_algs)
            .map(|()| KeyOptions {
                no_touch_required: true,
                ..KeyOptions::default()
            })
    };
    match opts {
        Ok(o) => Some((o, format!("via {}", file.display()))),
        Err(e) => {
            log!(Error, "{e}");
            None
        }
    }
}

/// sshd's sshauthopt_merge: the line's options restricted further by the
/// certificate's; two different forced commands refuse the key.
fn merge(mut o: KeyOptions, c: &CertOptions) -> Option<KeyOptions> {
    o.no_pty |= !c.permit_pty;
    o.no_port_forwarding |= !c.permit_port_forwarding;
    o.no_agent_forwarding |= !c.permit_agent_forwarding;
    o.no_x11_forwarding |= !c.permit_x11_forwarding;
    o.no_user_rc |= !c.permit_user_rc;
    // As sshd: touch may be skipped only where both allow it, and user
    // verification is required where either asks.
    o.no_touch_required &= c.no_touch_required;
    o.verify_required |= c.verify_required;
    match (&o.command, &c.force_command) {
        (Some(a), Some(b)) if a != b => {
            log!(Error, "forced command options do not match");
            return None;
        }
        (None, Some(b)) => o.command = Some(b.clone()),
        _ => {}
    }
    Some(o)
}
