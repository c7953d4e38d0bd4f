//! `sluiced -T`: the effective configuration printed as `sshd -T` prints
//! it (OpenSSH 9.2): lower-case keywords in sshd's order, one value per
//! line for lists sshd repeats, sshd's spelling of values; keywords sluiced
//! accepts without acting on show what sshd would; sluiced's own come last.

use super::keyword_table::OTHER;
use super::ServerConfig;

/// sshd's order; a `*` suffix marks keywords printed once per value.
const ORDER: &[&str] = &[
    "port*",
    "addressfamily",
    "listenaddress*",
    "usepam",
    "pamservicename",
    "logingracetime",
    "x11displayoffset",
    "maxauthtries",
    "maxsessions",
    "clientaliveinterval",
    "clientalivecountmax",
    "requiredrsasize",
    "streamlocalbindmask",
    "unusedconnectiontimeout",
    "permitrootlogin",
    "ignorerhosts",
    "ignoreuserknownhosts",
    "hostbasedauthentication",
    "hostbasedusesnamefrompacketonly",
    "pubkeyauthentication",
    "kerberosauthentication",
    "kerberosorlocalpasswd",
    "kerberosticketcleanup",
    "gssapiauthentication",
    "gssapicleanupcredentials",
    "gssapikeyexchange",
    "gssapistrictacceptorcheck",
    "gssapistorecredentialsonrekey",
    "gssapikexalgorithms",
    "passwordauthentication",
    "kbdinteractiveauthentication",
    "printmotd",
    "printlastlog",
    "x11forwarding",
    "x11uselocalhost",
    "permittty",
    "permituserrc",
    "strictmodes",
    "tcpkeepalive",
    "permitemptypasswords",
    "compression",
    "gatewayports",
    "usedns",
    "allowtcpforwarding",
    "allowagentforwarding",
    "disableforwarding",
    "allowstreamlocalforwarding",
    "streamlocalbindunlink",
    "fingerprinthash",
    "exposeauthinfo",
    "pidfile",
    "modulifile",
    "xauthlocation",
    "ciphers",
    "macs",
    "banner",
    "forcecommand",
    "chrootdirectory",
    "trustedusercakeys",
    "revokedkeys",
    "securitykeyprovider",
    "authorizedprincipalsfile",
    "versionaddendum",
    "authorizedkeyscommand",
    "authorizedkeyscommanduser",
    "authorizedprincipalscommand",
    "authorizedprincipalscommanduser",
    "hostkeyagent",
    "kexalgorithms",
    "casignaturealgorithms",
    "hostbasedacceptedalgorithms",
    "hostkeyalgorithms",
    "pubkeyacceptedalgorithms",
    "persourcepenaltyexemptlist",
    "loglevel",
    "syslogfacility",
    "authorizedkeysfile",
    "hostkey*",
    "hostcertificate*",
    "allowusers*",
    "denyusers*",
    "allowgroups*",
    "denygroups*",
    "acceptenv*",
    "setenv*",
    "authenticationmethods",
    "logverbose",
    "subsystem*",
    "maxstartups",
    "persourcemaxstartups",
    "persourcenetblocksize",
    "permittunnel",
    "ipqos",
    "rekeylimit",
    "permitopen",
    "permitlisten",
    "permituserenvironment",
    "pubkeyauthoptions",
    "persourcepenalties",
    "channeltimeout",
    "rdomain",
    // sluiced's own keywords.
    "cryptothreads",
    "tcprcvbuf",
    "tcpsndbuf",
    "remotebufmax",
    "channelwindow",
    "channelwindowmax",
    "maxforwardchannels",
    "maxstreams",
    "noneenabled",
    "nonemacenabled",
    "enablehwcompression",
    "hwcompressionlibrary",
];

fn yn(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

fn or_none<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "none".to_owned(), |x| x.to_string())
}

impl ServerConfig {
    /// The values shown for one keyword (empty: the line is left out).
    fn shown(&self, kw: &str) -> Vec<String> {
        if let Some(b) = self.shown_flag(kw) {
            return vec![yn(b)];
        }
        if let Some(v) = self.shown_number(kw).or_else(|| self.shown_text(kw)) {
            return vec![v];
        }
        if let Some(v) = self.shown_repeated(kw) {
            return v;
        }
        // Accepted without acting on: as written, else sshd's default.
        let default = OTHER.iter().find(|(o, _)| *o == kw).and_then(|(_, d)| *d);
        self.other
            .get(kw)
            .cloned()
            .or(default.map(str::to_owned))
            .into_iter()
            .collect()
    }

    /// The yes/no keywords.
    fn shown_flag(&self, kw: &str) -> Option<bool> {
        Some(match kw {
            "usepam" => self.use_pam,
            "pubkeyauthentication" => self.pubkey_authentication,
            "passwordauthentication" => self.password_authentication,
            "kbdinteractiveauthentication" => self.kbd_interactive_authentication,
            "printmotd" => self.print_motd,
            "printlastlog" => self.print_last_log,
            "x11forwarding" => self.x11_forwarding,
            "permittty" => self.permit_tty,
            "strictmodes" => self.strict_modes,
            "permitemptypasswords" => self.permit_empty_passwords,
            "enablehwcompression" => self.enable_hw_compression,
            "allowagentforwarding" => self.allow_agent_forwarding,
            "disableforwarding" => self.disable_forwarding,
            "streamlocalbindunlink" => self.stream_local_bind_unlink,
            "permituserenvironment" => self.permit_user_environment,
            "exposeauthinfo" => self.expose_auth_info,
            "noneenabled" => self.none_enabled,
            "nonemacenabled" => self.none_mac_enabled,
            "tcpkeepalive" => self.tcp_keep_alive,
            _ => return None,
        })
    }

    /// Numbers, sizes, times and limits.
    fn shown_number(&self, kw: &str) -> Option<String> {
        Some(match kw {
            "logingracetime" => self.login_grace_time.to_string(),
            "maxauthtries" => self.max_auth_tries.to_string(),
            "maxsessions" => self.max_sessions.to_string(),
            "clientaliveinterval" => self.client_alive_interval.to_string(),
            "clientalivecountmax" => self.client_alive_count_max.to_string(),
            "unusedconnectiontimeout" => match self.unused_connection_timeout {
                0 => "none".to_owned(),
                s => s.to_string(),
            },
            "maxstartups" => {
                let (s, r, f) = self.max_startups;
                format!("{s}:{r}:{f}")
            }
            "rekeylimit" => format!("{} {}", self.rekey_limit.0, self.rekey_limit.1),
            "persourcemaxstartups" => or_none(self.per_source_max_startups),
            "persourcenetblocksize" => {
                let (v4, v6) = self.per_source_net_block_size;
                format!("{v4}:{v6}")
            }
            "persourcepenalties" => self.per_source_penalties.dump(),
            "cryptothreads" => self.crypto_threads.to_string(),
            "tcprcvbuf" => self.tcp_rcvbuf.to_string(),
            "tcpsndbuf" => self.tcp_sndbuf.to_string(),
            "remotebufmax" => self.remote_buf_max.to_string(),
            "channelwindow" => self.channel_window.to_string(),
            "channelwindowmax" => self.channel_window_max.to_string(),
            "maxforwardchannels" => self.max_forward_channels.to_string(),
            "maxstreams" => self.max_streams.to_string(),
            "requiredrsasize" => self.required_rsa_size.to_string(),
            "streamlocalbindmask" => format!("{:04o}", self.stream_local_bind_mask),
            _ => return None,
        })
    }

    /// Words, paths, commands and algorithm lists shown on one line.
    fn shown_text(&self, kw: &str) -> Option<String> {
        let list = |v: &Vec<String>| {
            if v.is_empty() {
                "any".to_owned()
            } else {
                v.join(" ")
            }
        };
        let path = |p: &Option<std::path::PathBuf>| or_none(p.as_ref().map(|p| p.display()));
        Some(match kw {
            "pamservicename" => self.pam_service(),
            "permitrootlogin" => self.permit_root_login.name().to_owned(),
            "compression" => self.compression.clone(),
            "hwcompressionlibrary" => path(&self.hw_compression_library),
            "gatewayports" => self.gateway_ports.clone(),
            "allowtcpforwarding" => self.allow_tcp_forwarding.clone(),
            "allowstreamlocalforwarding" => self.allow_stream_local_forwarding.clone(),
            "pidfile" => path(&self.pid_file),
            "ciphers" => self.ciphers.join(","),
            "macs" => self.macs.join(","),
            "banner" => path(&self.banner),
            "forcecommand" => or_none(self.force_command.as_ref()),
            "chrootdirectory" => or_none(self.chroot_directory.as_ref()),
            "authorizedkeyscommand" => or_none(self.authorized_keys_command.as_ref()),
            "authorizedkeyscommanduser" => or_none(self.authorized_keys_command_user.as_ref()),
            "authorizedprincipalscommand" => or_none(self.authorized_principals_command.as_ref()),
            "authorizedprincipalscommanduser" => {
                or_none(self.authorized_principals_command_user.as_ref())
            }
            "kexalgorithms" => self.kex.join(","),
            "hostkeyalgorithms" => self.host_key_algorithms.join(","),
            "pubkeyacceptedalgorithms" => self.pubkey_algorithms.join(","),
            "loglevel" => match self.log_level {
                crate::log::Level::Debug1 => "DEBUG".to_owned(),
                l => l.name().to_owned(),
            },
            "syslogfacility" => self.syslog_facility.clone(),
            "authorizedkeysfile" => self.authorized_keys_file.join(" "),
            "persourcepenaltyexemptlist" => or_none(self.per_source_penalty_exempt.as_ref()),
            "permitopen" => list(&self.permit_open),
            "permitlisten" => list(&self.permit_listen),
            "addressfamily" => self.address_family.clone(),
            "revokedkeys" => path(&self.revoked_keys),
            "trustedusercakeys" => path(&self.trusted_user_ca_keys),
            "authorizedprincipalsfile" => or_none(self.authorized_principals_file.as_ref()),
            "casignaturealgorithms" => self.ca_signature_algorithms.join(","),
            "pubkeyauthoptions" => self.pubkey_auth_options_shown(),
            "authenticationmethods" => list(&self.authentication_methods),
            "hostkeyagent" => or_none(self.host_keys.agent.as_ref()),
            "securitykeyprovider" => self
                .host_keys
                .sk_provider
                .clone()
                .unwrap_or_else(|| "internal".to_owned()),
            _ => return None,
        })
    }

    /// PubkeyAuthOptions' words, or `none`.
    fn pubkey_auth_options_shown(&self) -> String {
        let o = self.pubkey_auth_options;
        let words: Vec<&str> = [
            (o.touch_required, "touch-required"),
            (o.verify_required, "verify-required"),
        ]
        .into_iter()
        .filter_map(|(on, w)| on.then_some(w))
        .collect();
        if words.is_empty() {
            "none".to_owned()
        } else {
            words.join(" ")
        }
    }

    /// Keywords sshd prints once per value (ChannelTimeout: once, or left
    /// out when none, as sshd does).
    fn shown_repeated(&self, kw: &str) -> Option<Vec<String>> {
        let paths = |v: &[std::path::PathBuf]| -> Vec<String> {
            v.iter().map(|p| p.display().to_string()).collect()
        };
        Some(match kw {
            "port" => self.ports.iter().map(u16::to_string).collect(),
            "listenaddress" => {
                let mut v: Vec<String> = self
                    .listen_addrs()
                    .unwrap_or_default()
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                if self.listen.is_empty() {
                    v.reverse(); // sshd lists [::] before 0.0.0.0
                }
                v
            }
            "channeltimeout" if self.channel_timeout.is_empty() => Vec::new(),
            "channeltimeout" => vec![self.channel_timeout.join(" ")],
            "hostkey" => paths(&self.host_keys),
            "hostcertificate" => paths(&self.host_keys.certificates),
            "allowusers" => self.allow_users.clone(),
            "denyusers" => self.deny_users.clone(),
            "allowgroups" => self.allow_groups.clone(),
            "denygroups" => self.deny_groups.clone(),
            "acceptenv" => self.accept_env.clone(),
            "setenv" => self.set_env.clone(),
            "subsystem" => self
                .subsystems
                .iter()
                .map(|(s, c)| format!("{s} {c}"))
                .collect(),
            _ => return None,
        })
    }

    /// The effective configuration, like `sshd -T`.
    pub fn dump(&self) -> String {
        let mut o = String::new();
        for k in ORDER {
            let k = k.trim_end_matches('*');
            for v in self.shown(k) {
                o.push_str(k);
                o.push(' ');
                o.push_str(&v);
                o.push('\n');
            }
        }
        o
    }
}
