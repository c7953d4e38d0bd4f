//! ssh_config's `Streams` (sluice's own keyword): how many connections a
//! copy or a striped command may use. The client's options carry it; file
//! copies (sftp/parallel/, sftp/spread.rs) and striping (stripe.rs,
//! streams_auto.rs) act on it.

/// The most `Streams N` accepts.
pub const STREAMS_MAX: usize = 64;

/// ssh_config `Streams`: how many connections a copy may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// Add connections while each one helps.
    Auto,
    /// This many in all (1: no extra connection).
    Fixed(usize),
}

impl Streams {
    /// `auto` or 1-64.
    pub fn parse(v: &str) -> Option<Streams> {
        if v.eq_ignore_ascii_case("auto") {
            return Some(Streams::Auto);
        }
        match v.parse::<usize>() {
            Ok(n) if (1..=STREAMS_MAX).contains(&n) => Some(Streams::Fixed(n)),
            _ => None,
        }
    }
}

impl std::fmt::Display for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Streams::Auto => f.write_str("auto"),
            Streams::Fixed(n) => write!(f, "{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_values() {
        assert_eq!(Streams::parse("auto"), Some(Streams::Auto));
        assert_eq!(Streams::parse("AUTO"), Some(Streams::Auto));
        assert_eq!(Streams::parse("4"), Some(Streams::Fixed(4)));
        assert_eq!(Streams::parse("0"), None);
        assert_eq!(Streams::parse("65"), None);
        assert_eq!(Streams::parse("x"), None);
        assert_eq!(Streams::Fixed(8).to_string(), "8");
    }
}
