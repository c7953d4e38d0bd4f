//! Configuration files in OpenSSH's syntax: `sshd_config` for `sluiced`,
//! `ssh_config` for `sluice`, `-o Key=Value` overrides, and the algorithm
//! list syntax (`+`, `-`, `^`) they share. Errors name file and line in
//! OpenSSH's words.

pub mod algorithms;
pub mod cipher_order;
#[cfg(test)]
mod defaults_tests;
pub mod error;
pub mod moduli;
pub mod ssh;
pub mod sshd;

use error::{UnmatchedQuote, ValueError};

/// One configuration line split into a lower-case keyword and arguments:
/// `Key value`, `Key=value`, the arguments as [`argv_split`] splits them.
pub fn split_line(line: &str) -> Result<Option<(String, Vec<String>)>, UnmatchedQuote> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (kw, rest) = match line.find(|c: char| c.is_whitespace() || c == '=') {
        Some(i) => (
            &line[..i],
            line[i..].trim_start().trim_start_matches('=').trim_start(),
        ),
        None => (line, ""),
    };
    Ok(Some((kw.to_ascii_lowercase(), argv_split(rest, true)?)))
}

/// Words as OpenSSH splits configuration arguments and the commands it runs
/// without a shell (KnownHostsCommand): white space separates; single or
/// double quotes group (the other kind is literal inside); a backslash
/// makes a following quote, backslash or (outside quotes) space literal and
/// is kept before anything else; with `comments`, `#` at the start of a
/// word ends the line.
pub fn argv_split(s: &str, comments: bool) -> Result<Vec<String>, UnmatchedQuote> {
    let mut words = Vec::new();
    let mut it = s.chars().peekable();
    loop {
        while it.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
        match it.peek() {
            None => return Ok(words),
            Some('#') if comments => return Ok(words),
            Some(_) => {}
        }
        let mut word = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = it.next() {
            match c {
                '\\' => match it.peek() {
                    Some(&n)
                        if n == '\'' || n == '"' || n == '\\' || (quote.is_none() && n == ' ') =>
                    {
                        word.push(n);
                        it.next();
                    }
                    _ => word.push(c),
                },
                ' ' | '\t' if quote.is_none() => break,
                '"' | '\'' if quote.is_none() => quote = Some(c),
                c if quote == Some(c) => quote = None,
                c => word.push(c),
            }
        }
        if quote.is_some() {
            return Err(UnmatchedQuote);
        }
        words.push(word);
    }
}

/// `yes`/`no` as OpenSSH accepts them.
pub fn yes_no(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "yes" | "true" => Some(true),
        "no" | "false" => Some(false),
        _ => None,
    }
}

/// A size with an optional K/M/G suffix (RekeyLimit, TcpRcvBuf).
pub fn parse_size(v: &str) -> Option<u64> {
    let (num, mul) = match v.chars().last()?.to_ascii_uppercase() {
        'K' => (&v[..v.len() - 1], 1u64 << 10),
        'M' => (&v[..v.len() - 1], 1 << 20),
        'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// A time such as `90`, `1h30m`, `2d` (sshd_config TIME FORMATS), in seconds.
pub fn parse_time(v: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut num = String::new();
    for c in v.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let n: u64 = num.parse().ok()?;
        num.clear();
        let unit = match c.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            'w' => 604_800,
            _ => return None,
        };
        // Too large is invalid, never wrapped (found by the ssh_config fuzz target).
        total = total.checked_add(n.checked_mul(unit)?)?;
    }
    if !num.is_empty() {
        total = total.checked_add(num.parse::<u64>().ok()?)?;
    }
    Some(total)
}

/// `RekeyLimit size [time]`: bytes (0 = default) and seconds (0 = none).
pub fn parse_rekey_limit(args: &[String]) -> Option<(u64, u64)> {
    let bytes = match args.first()?.as_str() {
        "default" => 0,
        "none" => 0,
        s => {
            // 0 is the default, as sshd reads it (and `sshd -T` prints
            // `rekeylimit 0 0`); only 1-15 bytes are too small.
            let b = parse_size(s)?;
            if b != 0 && b < 16 {
                return None;
            }
            b
        }
    };
    let secs = match args.get(1).map(String::as_str) {
        None | Some("none") | Some("default") => 0,
        Some(t) => parse_time(t)?,
    };
    Some((bytes, secs))
}

/// ChannelWindow (the receive window a channel starts with, default 16M)
/// and ChannelWindowMax (the most a bulk channel's window grows to, default
/// 128M): sizes from 64K to 1G.
pub fn window_size(v: Option<&str>, name: &str, default: u32) -> Result<u32, ValueError> {
    let Some(v) = v else {
        return Ok(default);
    };
    parse_size(v)
        .filter(|n| (64 << 10..=1 << 30).contains(n))
        .map(|n| n as u32)
        .ok_or_else(|| ValueError::WindowSize {
            keyword: name.to_owned(),
            value: v.to_owned(),
        })
}

/// The window cap toward stock OpenSSH peers: none, unless
/// `SLUICE_OPENSSH_WINDOW_MAX` (a size; HPN-SSH uses 15M) sets one.
pub fn stock_openssh_window_max() -> u32 {
    std::env::var("SLUICE_OPENSSH_WINDOW_MAX")
        .ok()
        .and_then(|v| parse_size(&v))
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(sluice_proto::Config::default().stock_openssh_window_max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_sizes_times() {
        assert_eq!(
            split_line("Port=2222").unwrap(),
            Some(("port".into(), vec!["2222".into()]))
        );
        assert_eq!(
            split_line("  Subsystem sftp \"/a b/c\" -l  # x")
                .unwrap()
                .unwrap()
                .1,
            vec!["sftp", "/a b/c", "-l"]
        );
        assert_eq!(split_line("# c").unwrap(), None);
        assert!(split_line("Banner \"x").is_err());
        // OpenSSH's argv_split: both quotes, backslash escapes, `#` words.
        assert_eq!(
            argv_split(r#"a 'b c' "d'e" f\ g h\"i \x '' x#y #z"#, true).unwrap(),
            vec!["a", "b c", "d'e", "f g", "h\"i", "\\x", "", "x#y"]
        );
        assert_eq!(argv_split("a #b", false).unwrap(), vec!["a", "#b"]);
        assert_eq!(argv_split("'a", false), Err(UnmatchedQuote));
        assert!(matches!(
            window_size(Some("1K"), "ChannelWindow", 1),
            Err(ValueError::WindowSize { .. })
        ));
        assert_eq!(
            window_size(Some("1K"), "ChannelWindow", 1)
                .unwrap_err()
                .to_string(),
            "Bad ChannelWindow '1K': use a size from 64K to 1G"
        );
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_time("1h30m"), Some(5400));
        assert_eq!(parse_time("9065560984895444309h"), None);
        assert_eq!(parse_time("18446744073709551615s1"), None);
        assert_eq!(
            parse_rekey_limit(&["1M".into(), "1h".into()]),
            Some((1 << 20, 3600))
        );
        assert_eq!(parse_rekey_limit(&["8".into()]), None);
        // What `sshd -T` prints for the default reads back.
        assert_eq!(parse_rekey_limit(&["0".into(), "0".into()]), Some((0, 0)));
    }
}
