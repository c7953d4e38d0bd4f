//! RFC 4254 section 8 terminal modes: the opcodes and the termios fields
//! they stand for, as OpenSSH's ttymodes.h lists them. The client encodes
//! its local terminal; the server applies them to the pty it allocates.

use libc::termios;

/// Where an opcode's value lives in a termios.
#[derive(Clone, Copy)]
enum Field {
    /// A special character (`c_cc` index).
    Cc(usize),
    I(libc::tcflag_t),
    L(libc::tcflag_t),
    O(libc::tcflag_t),
    C(libc::tcflag_t),
}
use Field::*;

const TABLE: &[(u8, Field)] = &[
    (1, Cc(libc::VINTR)),
    (2, Cc(libc::VQUIT)),
    (3, Cc(libc::VERASE)),
    (4, Cc(libc::VKILL)),
    (5, Cc(libc::VEOF)),
    (6, Cc(libc::VEOL)),
    (7, Cc(libc::VEOL2)),
    (8, Cc(libc::VSTART)),
    (9, Cc(libc::VSTOP)),
    (10, Cc(libc::VSUSP)),
    (12, Cc(libc::VREPRINT)),
    (13, Cc(libc::VWERASE)),
    (14, Cc(libc::VLNEXT)),
    (16, Cc(libc::VSWTC)),
    (18, Cc(libc::VDISCARD)),
    (30, I(libc::IGNPAR)),
    (31, I(libc::PARMRK)),
    (32, I(libc::INPCK)),
    (33, I(libc::ISTRIP)),
    (34, I(libc::INLCR)),
    (35, I(libc::IGNCR)),
    (36, I(libc::ICRNL)),
    (37, I(libc::IUCLC)),
    (38, I(libc::IXON)),
    (39, I(libc::IXANY)),
    (40, I(libc::IXOFF)),
    (41, I(libc::IMAXBEL)),
    (42, I(libc::IUTF8)),
    (50, L(libc::ISIG)),
    (51, L(libc::ICANON)),
    (52, L(libc::XCASE)),
    (53, L(libc::ECHO)),
    (54, L(libc::ECHOE)),
    (55, L(libc::ECHOK)),
    (56, L(libc::ECHONL)),
    (57, L(libc::NOFLSH)),
    (58, L(libc::TOSTOP)),
    (59, L(libc::IEXTEN)),
    (60, L(libc::ECHOCTL)),
    (61, L(libc::ECHOKE)),
    (62, L(libc::PENDIN)),
    (70, O(libc::OPOST)),
    (71, O(libc::OLCUC)),
    (72, O(libc::ONLCR)),
    (73, O(libc::OCRNL)),
    (74, O(libc::ONOCR)),
    (75, O(libc::ONLRET)),
    (90, C(libc::CS7)),
    (91, C(libc::CS8)),
    (92, C(libc::PARENB)),
    (93, C(libc::PARODD)),
];

const TTY_OP_END: u8 = 0;
const TTY_OP_ISPEED: u8 = 128;
const TTY_OP_OSPEED: u8 = 129;
/// Longest mode string accepted: OpenSSH sends about 300 bytes.
pub const MAX_MODES_LEN: usize = 4096;

const SPEEDS: &[(libc::speed_t, u32)] = &[
    (libc::B0, 0),
    (libc::B50, 50),
    (libc::B75, 75),
    (libc::B110, 110),
    (libc::B134, 134),
    (libc::B150, 150),
    (libc::B200, 200),
    (libc::B300, 300),
    (libc::B600, 600),
    (libc::B1200, 1200),
    (libc::B1800, 1800),
    (libc::B2400, 2400),
    (libc::B4800, 4800),
    (libc::B9600, 9600),
    (libc::B19200, 19200),
    (libc::B38400, 38400),
    (libc::B57600, 57600),
    (libc::B115200, 115200),
    (libc::B230400, 230400),
    (libc::B460800, 460800),
    (libc::B921600, 921600),
];

fn flags(t: &mut termios, f: Field) -> Option<&mut libc::tcflag_t> {
    Some(match f {
        I(_) => &mut t.c_iflag,
        L(_) => &mut t.c_lflag,
        O(_) => &mut t.c_oflag,
        C(_) => &mut t.c_cflag,
        Cc(_) => return None,
    })
}

/// Encodes a terminal's settings (the client's pty-req modes).
pub fn encode(t: &termios) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |op: u8, v: u32| {
        out.push(op);
        out.extend_from_slice(&v.to_be_bytes());
    };
    // SAFETY: reads fields of a valid termios.
    let (is, os) = unsafe { (libc::cfgetispeed(t), libc::cfgetospeed(t)) };
    let baud = |s| SPEEDS.iter().find(|(k, _)| *k == s).map_or(9600, |x| x.1);
    put(TTY_OP_ISPEED, baud(is));
    put(TTY_OP_OSPEED, baud(os));
    let mut t = *t;
    for &(op, f) in TABLE {
        let v = match f {
            Cc(i) => match t.c_cc.get(i).copied() {
                // _POSIX_VDISABLE (0 on Linux) travels as 255, as OpenSSH sends it.
                Some(0) => 255,
                Some(c) => u32::from(c),
                None => continue,
            },
            I(bit) | L(bit) | O(bit) | C(bit) => {
                u32::from(flags(&mut t, f).is_some_and(|w| *w & bit != 0))
            }
        };
        put(op, v);
    }
    out.push(TTY_OP_END);
    out
}

/// A peer's terminal modes string that is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModesError {
    /// Longer than [`MAX_MODES_LEN`] (its length).
    TooLong(usize),
    /// Ends inside the argument of this opcode.
    Truncated(u8),
}

impl std::fmt::Display for ModesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModesError::TooLong(n) => write!(
                f,
                "terminal modes too long ({n} bytes, at most {MAX_MODES_LEN})"
            ),
            ModesError::Truncated(op) => write!(f, "terminal modes truncated at opcode {op}"),
        }
    }
}

impl std::error::Error for ModesError {}

/// Decodes a mode string: (opcode, value) pairs up to TTY_OP_END or the
/// first opcode of 160 and above (RFC 4254 8: parsing stops there).
/// Truncated or over-long strings are refused.
pub fn parse(b: &[u8]) -> Result<Vec<(u8, u32)>, ModesError> {
    if b.len() > MAX_MODES_LEN {
        return Err(ModesError::TooLong(b.len()));
    }
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&op) = b.get(i) {
        if op == TTY_OP_END || op >= 160 {
            break;
        }
        let arg = b.get(i + 1..i + 5).ok_or(ModesError::Truncated(op))?;
        out.push((op, u32::from_be_bytes([arg[0], arg[1], arg[2], arg[3]])));
        i += 5;
    }
    Ok(out)
}

/// Applies decoded modes; unknown opcodes are ignored.
pub fn apply(t: &mut termios, modes: &[(u8, u32)]) {
    for &(op, v) in modes {
        let speed = || SPEEDS.iter().find(|(_, b)| *b == v).map(|x| x.0);
        match op {
            TTY_OP_ISPEED => {
                if let Some(s) = speed() {
                    // SAFETY: sets a field of a valid termios.
                    unsafe { libc::cfsetispeed(t, s) };
                }
            }
            TTY_OP_OSPEED => {
                if let Some(s) = speed() {
                    // SAFETY: as above.
                    unsafe { libc::cfsetospeed(t, s) };
                }
            }
            _ => {
                let Some(&(_, f)) = TABLE.iter().find(|(o, _)| *o == op) else {
                    continue;
                };
                match f {
                    Cc(i) => {
                        if let Some(c) = t.c_cc.get_mut(i) {
                            *c = if v == 255 { 0 } else { v as u8 };
                        }
                    }
                    I(bit) | L(bit) | O(bit) | C(bit) => {
                        if let Some(w) = flags(t, f) {
                            if v != 0 {
                                *w |= bit;
                            } else {
                                *w &= !bit;
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bad_strings() {
        // SAFETY: zeroed termios is plain data.
        let mut t: termios = unsafe { std::mem::zeroed() };
        t.c_lflag = libc::ECHO | libc::ICANON;
        t.c_cc[libc::VINTR] = 3;
        let enc = encode(&t);
        let modes = parse(&enc).unwrap();
        // SAFETY: as above.
        let mut u: termios = unsafe { std::mem::zeroed() };
        u.c_lflag = libc::ISIG;
        apply(&mut u, &modes);
        assert_eq!(u.c_lflag, libc::ECHO | libc::ICANON);
        assert_eq!(u.c_cc[libc::VINTR], 3);
        // Unknown opcodes are kept (and ignored), parsing stops at 160+.
        assert_eq!(parse(&[20, 0, 0, 0, 1, 160, 1]).unwrap(), vec![(20, 1)]);
        assert_eq!(parse(&[53, 0, 0]), Err(ModesError::Truncated(53)));
        assert_eq!(
            parse(&vec![0u8; MAX_MODES_LEN + 1]),
            Err(ModesError::TooLong(MAX_MODES_LEN + 1))
        );
        assert_eq!(parse(&[]).unwrap(), vec![]);
    }
}
