//! IPQoS's value (ssh_config(5)): DSCP names (af11..af43, cs0..cs7, ef,
//! le, va), the old TOS names (lowdelay, throughput, reliability), a
//! number, or `none` (the system's default); one value for both kinds of
//! session, or the interactive one then the bulk one. net/qos.rs puts the
//! mark on the socket.

/// The sessions' marks as the TOS byte (DSCP shifted left by 2); None: leave
/// the system's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpQos {
    /// For a session with a terminal.
    pub interactive: Option<u8>,
    /// For everything else.
    pub bulk: Option<u8>,
}

/// sluice's default: AF21 for a terminal, as OpenSSH 9.2 to 10.0 (OpenSSH
/// 10.1 moved to EF, which many networks police to nothing); no mark for
/// bulk, as OpenSSH 10.1 (its old CS1, "lower effort", asks networks to
/// put the very transfers sluice exists for behind everything else).
pub const DEFAULT: IpQos = IpQos {
    interactive: Some(0x48),
    bulk: None,
};

/// One IPQoS word as a TOS byte; Ok(None) for `none`.
fn word(w: &str) -> Result<Option<u8>, BadIpQos> {
    let l = w.to_ascii_lowercase();
    let dscp = |d: u8| Ok(Some(d << 2));
    match l.as_str() {
        "none" => Ok(None),
        "lowdelay" => Ok(Some(0x10)),
        "throughput" => Ok(Some(0x08)),
        "reliability" => Ok(Some(0x04)),
        "ef" => dscp(46),
        "le" => dscp(1),
        "va" => dscp(44),
        _ => {
            if let Some(n) = l.strip_prefix("cs").and_then(|n| n.parse::<u8>().ok()) {
                if n <= 7 {
                    return dscp(n << 3);
                }
            }
            if let Some(ab) = l.strip_prefix("af") {
                let b = ab.as_bytes();
                if let [c @ b'1'..=b'4', d @ b'1'..=b'3'] = b {
                    return dscp(((c - b'0') << 3) | ((d - b'0') << 1));
                }
            }
            // A number, decimal or 0x hex, as ssh's strtol(.., 0).
            let n = match l.strip_prefix("0x") {
                Some(h) => u8::from_str_radix(h, 16),
                None => l.parse::<u8>(),
            };
            n.map(Some).map_err(|_| BadIpQos {
                value: w.to_owned(),
            })
        }
    }
}

/// A mark as `-G` prints it: its name, else hex (as ssh's iptos2str).
pub fn name(tos: Option<u8>) -> String {
    let Some(t) = tos else {
        return "none".into();
    };
    let names = [
        "lowdelay",
        "throughput",
        "reliability",
        "ef",
        "le",
        "va",
        "cs0",
        "cs1",
        "cs2",
        "cs3",
        "cs4",
        "cs5",
        "cs6",
        "cs7",
        "af11",
        "af12",
        "af13",
        "af21",
        "af22",
        "af23",
        "af31",
        "af32",
        "af33",
        "af41",
        "af42",
        "af43",
    ];
    names
        .iter()
        .find(|n| word(n).ok().flatten() == Some(t))
        .map_or_else(|| format!("0x{t:02x}"), |n| (*n).to_owned())
}

/// IPQoS's value: one word for both, or interactive then bulk.
pub fn parse(v: &str) -> Result<IpQos, BadIpQos> {
    let words: Vec<&str> = v.split_whitespace().collect();
    match words.as_slice() {
        [one] => {
            let q = word(one)?;
            Ok(IpQos {
                interactive: q,
                bulk: q,
            })
        }
        [i, b] => Ok(IpQos {
            interactive: word(i)?,
            bulk: word(b)?,
        }),
        _ => Err(BadIpQos {
            value: v.to_owned(),
        }),
    }
}

/// An IPQoS value ssh refuses: `Bad IPQoS value: V` (the bad word, or the
/// whole value when it has more than two).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadIpQos {
    /// The word or value.
    pub value: String,
}

impl std::fmt::Display for BadIpQos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bad IPQoS value: {}", self.value)
    }
}

impl std::error::Error for BadIpQos {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_ssh_reads_them() {
        assert_eq!(word("af21").unwrap(), Some(0x48));
        assert_eq!(word("AF11").unwrap(), Some(0x28));
        assert_eq!(word("af43").unwrap(), Some(0x98));
        assert_eq!(word("cs1").unwrap(), Some(0x20));
        assert_eq!(word("cs0").unwrap(), Some(0));
        assert_eq!(word("ef").unwrap(), Some(0xb8));
        assert_eq!(word("lowdelay").unwrap(), Some(0x10));
        assert_eq!(word("0x20").unwrap(), Some(0x20));
        assert_eq!(word("184").unwrap(), Some(184));
        assert_eq!(word("none").unwrap(), None);
        assert!(word("af51").is_err());
        assert_eq!(
            word("cs8"),
            Err(BadIpQos {
                value: "cs8".into()
            })
        );
        assert_eq!(
            parse("af21 cs1").unwrap(),
            IpQos {
                interactive: Some(0x48),
                bulk: Some(0x20)
            }
        );
        assert_eq!(parse("throughput").unwrap().bulk, Some(0x08));
        assert!(parse("a b c").is_err());
        assert_eq!(name(Some(0x20)), "cs1");
        assert_eq!(name(Some(0x10)), "lowdelay");
        assert_eq!(name(Some(0x49)), "0x49");
        assert_eq!(name(None), "none");
    }
}
