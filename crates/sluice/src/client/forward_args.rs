//! The forwarding plan from `-L -R -D -W` and ssh_config (LocalForward,
//! RemoteForward, DynamicForward, ClearAllForwardings, ExitOnForwardFailure,
//! GatewayPorts), with ssh's precedence: command-line specs first, then the
//! config's; `-W` implies ExitOnForwardFailure and ClearAllForwardings
//! unless the configuration says otherwise.

use super::forward::ForwardPlan;
use super::forward_spec::{self, Endpoint, Kind};
use super::request::SessionRequest;
use super::setting_error::SettingError;
use crate::config::ssh::Resolved;

/// Builds the plan; Err is ssh's message for a bad spec.
pub fn plan(args: &SessionRequest, r: &Resolved) -> Result<ForwardPlan, SettingError> {
    let mut p = ForwardPlan::default();
    let stdio = args.stdio_forward.is_some();
    if let Some(w) = &args.stdio_forward {
        let bad = || SettingError::BadForward {
            kind: "stdio",
            spec: w.clone(),
        };
        let f = forward_spec::parse(w, Kind::Dynamic).map_err(|_| bad())?;
        match f.listen {
            Endpoint::Tcp {
                host: Some(h),
                port,
            } if port != 0 => p.stdio = Some((h, port)),
            _ => return Err(bad()),
        }
    }
    let yes_no = |kw: &'static str, default: bool| -> Result<bool, SettingError> {
        match r.get(kw) {
            None => Ok(default),
            Some(v) => {
                crate::config::yes_no(v).ok_or_else(|| SettingError::bad(kw, v, "yes or no"))
            }
        }
    };
    p.exit_on_failure = yes_no("exitonforwardfailure", stdio)?;
    p.gateway_ports = yes_no("gatewayports", false)?;
    p.unix_unlink = yes_no("streamlocalbindunlink", false)?;
    if let Some(v) = r.get("streamlocalbindmask") {
        p.unix_mask = Some(
            u32::from_str_radix(v, 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| {
                    SettingError::bad("StreamLocalBindMask", v, "an octal mask such as 0177")
                })?,
        );
    }
    if let Some(v) = r.get("permitremoteopen") {
        p.permit_remote_open = super::forward::remote_socks::PermitRemoteOpen::parse(v)?;
    }
    if yes_no("clearallforwardings", stdio)? {
        return Ok(p);
    }
    for (kind, cli, kw) in [
        (Kind::Local, &args.local_forwards, "localforward"),
        (Kind::Remote, &args.remote_forwards, "remoteforward"),
        (Kind::Dynamic, &args.dynamic_forwards, "dynamicforward"),
    ] {
        let mut list = Vec::new();
        for s in cli {
            list.push(forward_spec::parse(s, kind)?);
        }
        for v in r.all(kw) {
            list.push(forward_spec::from_config(v, kind)?);
        }
        // Unix socket paths take `${VAR}` and the tokens, as in ssh.
        let t = r.tokens();
        for f in &mut list {
            for e in std::iter::once(&mut f.listen).chain(f.connect.as_mut()) {
                if let Endpoint::Unix(p) = e {
                    *p = t
                        .expand_env(p, crate::config::ssh::tokens::FILE)
                        .map_err(|err| SettingError::Path {
                            keyword: kw,
                            path: p.clone(),
                            reason: err.to_string(),
                        })?;
                }
            }
        }
        match kind {
            Kind::Local => p.local = list,
            Kind::Remote => p.remote = list,
            Kind::Dynamic => p.dynamic = list,
        }
    }
    Ok(p)
}

/// `-n` and `-f`: stdin from /dev/null, as ssh does.
pub fn stdin_from_dev_null() -> Result<(), SettingError> {
    let f = std::fs::File::open("/dev/null").map_err(|error| SettingError::Io {
        what: "/dev/null",
        error,
    })?;
    rustix::stdio::dup2_stdin(&f).map_err(|e| SettingError::Io {
        what: "dup2",
        error: e.into(),
    })
}
