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
        let one = |s: String| vec![s];
        let list = |v: &Vec<String>| {
            if v.is_empty() {
                "any".to_owned()
            } else {
                v.join(" ")
            }
        };
        match kw {
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
            "usepam" => one(yn(self.use_pam)),
            "pamservicename" => one(self.pam_service()),
            "logingracetime" => one(self.login_grace_time.to_string()),
            "maxauthtries" => one(self.max_auth_tries.to_string()),
            "maxsessions" => one(self.max_sessions.to_string()),
            "clientaliveinterval" => one(self.client_alive_interval.to_string()),
            "clientalivecountmax" => one(self.client_alive_count_max.to_string()),
            "unusedconnectiontimeout" => one(match self.unused_connection_timeout {
                0 => "none".to_owned(),
                s => s.to_string(),
            }),
            // Left out when none, as sshd does.
            "channeltimeout" if self.channel_timeout.is_empty() => Vec::new(),
            "channeltimeout" => one(self.channel_timeout.join(" ")),
            "permitrootlogin" => one(self.permit_root_login.name().to_owned()),
            "pubkeyauthentication" => one(yn(self.pubkey_authentication)),
            "passwordauthentication" => one(yn(self.password_authentication)),
            "kbdinteractiveauthentication" => one(yn(self.kbd_interactive_authentication)),
            "printmotd" => one(yn(self.print_motd)),
            "printlastlog" => one(yn(self.print_last_log)),
            "x11forwarding" => one(yn(self.x11_forwarding)),
            "permittty" => one(yn(self.permit_tty)),
            "strictmodes" => one(yn(self.strict_modes)),
            "permitemptypasswords" => one(yn(self.permit_empty_passwords)),
            "compression" => one(self.compression.clone()),
            "enablehwcompression" => one(yn(self.enable_hw_compression)),
            "hwcompressionlibrary" => one(or_none(
                self.hw_compression_library.as_ref().map(|p| p.display()),
            )),
            "gatewayports" => one(self.gateway_ports.clone()),
            "allowtcpforwarding" => one(self.allow_tcp_forwarding.clone()),
            "allowagentforwarding" => one(yn(self.allow_agent_forwarding)),
            "disableforwarding" => one(yn(self.disable_forwarding)),
            "allowstreamlocalforwarding" => one(self.allow_stream_local_forwarding.clone()),
            "streamlocalbindunlink" => one(yn(self.stream_local_bind_unlink)),
            "pidfile" => one(or_none(self.pid_file.as_ref().map(|p| p.display()))),
            "ciphers" => one(self.ciphers.join(",")),
            "macs" => one(self.macs.join(",")),
            "banner" => one(or_none(self.banner.as_ref().map(|p| p.display()))),
            "forcecommand" => one(or_none(self.force_command.as_ref())),
            "chrootdirectory" => one(or_none(self.chroot_directory.as_ref())),
            "authorizedkeyscommand" => one(or_none(self.authorized_keys_command.as_ref())),
            "authorizedkeyscommanduser" => one(or_none(self.authorized_keys_command_user.as_ref())),
            "authorizedprincipalscommand" => {
                one(or_none(self.authorized_principals_command.as_ref()))
            }
            "authorizedprincipalscommanduser" => {
                one(or_none(self.authorized_principals_command_user.as_ref()))
            }
            "kexalgorithms" => one(self.kex.join(",")),
            "hostkeyalgorithms" => one(self.host_key_algorithms.join(",")),
            "pubkeyacceptedalgorithms" => one(self.pubkey_algorithms.join(",")),
            "loglevel" => one(match self.log_level {
                crate::log::Level::Debug1 => "DEBUG".to_owned(),
                l => l.name().to_owned(),
            }),
            "syslogfacility" => one(self.syslog_facility.clone()),
            "authorizedkeysfile" => one(self.authorized_keys_file.join(" ")),
            "hostkey" => self
                .host_keys
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
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
            "maxstartups" => {
                let (s, r, f) = self.max_startups;
                one(format!("{s}:{r}:{f}"))
            }
            "rekeylimit" => one(format!("{} {}", self.rekey_limit.0, self.rekey_limit.1)),
            "persourcemaxstartups" => one(or_none(self.per_source_max_startups)),
            "persourcenetblocksize" => {
                let (v4, v6) = self.per_source_net_block_size;
                one(format!("{v4}:{v6}"))
            }
            "persourcepenalties" => one(self.per_source_penalties.dump()),
            "persourcepenaltyexemptlist" => one(or_none(self.per_source_penalty_exempt.as_ref())),
            "permitopen" => one(list(&self.permit_open)),
            "permitlisten" => one(list(&self.permit_listen)),
            "permituserenvironment" => one(yn(self.permit_user_environment)),
            "exposeauthinfo" => one(yn(self.expose_auth_info)),
            "cryptothreads" => one(self.crypto_threads.to_string()),
            "tcprcvbuf" => one(self.tcp_rcvbuf.to_string()),
            "tcpsndbuf" => one(self.tcp_sndbuf.to_string()),
            "remotebufmax" => one(self.remote_buf_max.to_string()),
            "channelwindow" => one(self.channel_window.to_string()),
            "channelwindowmax" => one(self.channel_window_max.to_string()),
            "maxforwardchannels" => one(self.max_forward_channels.to_string()),
            "maxstreams" => one(self.max_streams.to_string()),
            "noneenabled" => one(yn(self.none_enabled)),
            "addressfamily" => one(self.address_family.clone()),
            "requiredrsasize" => one(self.required_rsa_size.to_string()),
            "streamlocalbindmask" => one(format!("{:04o}", self.stream_local_bind_mask)),
            "tcpkeepalive" => one(yn(self.tcp_keep_alive)),
            "revokedkeys" => one(or_none(self.revoked_keys.as_ref().map(|p| p.display()))),
            "trustedusercakeys" => one(or_none(
                self.trusted_user_ca_keys.as_ref().map(|p| p.display()),
            )),
            "authorizedprincipalsfile" => one(or_none(self.authorized_principals_file.as_ref())),
            "casignaturealgorithms" => one(self.ca_signature_algorithms.join(",")),
            "pubkeyauthoptions" => {
                let o = self.pubkey_auth_options;
                let words: Vec<&str> = [
                    (o.touch_required, "touch-required"),
                    (o.verify_required, "verify-required"),
                ]
                .into_iter()
                .filter_map(|(on, w)| on.then_some(w))
                .collect();
                one(if words.is_empty() {
                    "none".to_owned()
                } else {
                    words.join(" ")
                })
            }
            "hostcertificate" => self
                .host_keys
                .certificates
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            "authenticationmethods" => one(if self.authentication_methods.is_empty() {
                "any".to_owned()
            } else {
                self.authentication_methods.join(" ")
            }),
            "nonemacenabled" => one(yn(self.none_mac_enabled)),
            "hostkeyagent" => one(or_none(self.host_keys.agent.as_ref())),
            "securitykeyprovider" => one(self
                .host_keys
                .sk_provider
                .clone()
                .unwrap_or_else(|| "internal".to_owned())),
            k => {
                let default = OTHER.iter().find(|(o, _)| *o == k).and_then(|(_, d)| *d);
                self.other
                    .get(k)
                    .cloned()
                    .or(default.map(str::to_owned))
                    .into_iter()
                    .collect()
            }
        }
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
