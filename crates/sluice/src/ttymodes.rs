//! RFC 4254 section 8 terminal modes: the opcodes and the termios fields
//! they stand for, as OpenSSH's ttymodes.h lists them. The client encodes
//! its local terminal; the server applies them to the pty it allocates.

use rustix::termios::{ControlModes, InputModes, LocalModes, OutputModes, SpecialCodeIndex};

pub use rustix::termios::Termios;

/// A fresh pty's settings as the kernel starts them: a base to apply modes
/// onto where there is no terminal of one's own (a Termios has no empty
/// value). Opens and closes a pty.
pub fn pty_defaults() -> std::io::Result<Termios> {
    use rustix::pty::{ioctl_tiocgptpeer, openpt, unlockpt, OpenptFlags};
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let master = openpt(flags)?;
    unlockpt(&master)?;
    let slave = ioctl_tiocgptpeer(&master, flags)?;
    Ok(rustix::termios::tcgetattr(&slave)?)
}

/// Where an opcode's value lives in a termios.
#[derive(Clone, Copy)]
enum Field {
    /// A special character (`c_cc` index).
    Cc(SpecialCodeIndex),
    I(InputModes),
    L(LocalModes),
    O(OutputModes),
    C(ControlModes),
}
use Field::*;

const TABLE: &[(u8, Field)] = &[
    (1, Cc(SpecialCodeIndex::VINTR)),
    (2, Cc(SpecialCodeIndex::VQUIT)),
    (3, Cc(SpecialCodeIndex::VERASE)),
    (4, Cc(SpecialCodeIndex::VKILL)),
    (5, Cc(SpecialCodeIndex::VEOF)),
    (6, Cc(SpecialCodeIndex::VEOL)),
    (7, Cc(SpecialCodeIndex::VEOL2)),
    (8, Cc(SpecialCodeIndex::VSTART)),
    (9, Cc(SpecialCodeIndex::VSTOP)),
    (10, Cc(SpecialCodeIndex::VSUSP)),
    (12, Cc(SpecialCodeIndex::VREPRINT)),
    (13, Cc(SpecialCodeIndex::VWERASE)),
    (14, Cc(SpecialCodeIndex::VLNEXT)),
    (16, Cc(SpecialCodeIndex::VSWTC)),
    (18, Cc(SpecialCodeIndex::VDISCARD)),
    (30, I(InputModes::IGNPAR)),
    (31, I(InputModes::PARMRK)),
    (32, I(InputModes::INPCK)),
    (33, I(InputModes::ISTRIP)),
    (34, I(InputModes::INLCR)),
    (35, I(InputModes::IGNCR)),
    (36, I(InputModes::ICRNL)),
    (37, I(InputModes::IUCLC)),
    (38, I(InputModes::IXON)),
    (39, I(InputModes::IXANY)),
    (40, I(InputModes::IXOFF)),
    (41, I(InputModes::IMAXBEL)),
    (42, I(InputModes::IUTF8)),
    (50, L(LocalModes::ISIG)),
    (51, L(LocalModes::ICANON)),
    (52, L(LocalModes::XCASE)),
    (53, L(LocalModes::ECHO)),
    (54, L(LocalModes::ECHOE)),
    (55, L(LocalModes::ECHOK)),
    (56, L(LocalModes::ECHONL)),
    (57, L(LocalModes::NOFLSH)),
    (58, L(LocalModes::TOSTOP)),
    (59, L(LocalModes::IEXTEN)),
    (60, L(LocalModes::ECHOCTL)),
    (61, L(LocalModes::ECHOKE)),
    (62, L(LocalModes::PENDIN)),
    (70, O(OutputModes::OPOST)),
    (71, O(OutputModes::OLCUC)),
    (72, O(OutputModes::ONLCR)),
    (73, O(OutputModes::OCRNL)),
    (74, O(OutputModes::ONOCR)),
    (75, O(OutputModes::ONLRET)),
    (90, C(ControlModes::CS7)),
    (91, C(ControlModes::CS8)),
    (92, C(ControlModes::PARENB)),
    (93, C(ControlModes::PARODD)),
];

const TTY_OP_END: u8 = 0;
const TTY_OP_ISPEED: u8 = 128;
const TTY_OP_OSPEED: u8 = 129;
/// Longest mode string accepted: OpenSSH sends about 300 bytes.
pub const MAX_MODES_LEN: usize = 4096;

/// The speeds that travel (the B* constants up to B921600, in bauds);
/// any other is sent as 9600 and ignored when received.
const SPEEDS: &[u32] = &[
    0, 50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 38400, 57600,
    115200, 230400, 460800, 921600,
];

/// Whether flag bit(s) `f` are set in `t` (any of them: CS8 is two bits
/// and counts when either is, as `c_cflag & CS8 != 0` did).
fn get(t: &Termios, f: Field) -> bool {
    match f {
        I(b) => t.input_modes.intersects(b),
        L(b) => t.local_modes.intersects(b),
        O(b) => t.output_modes.intersects(b),
        C(b) => t.control_modes.intersects(b),
        Cc(_) => false,
    }
}

/// Sets or clears flag bit(s) `f` in `t`.
fn set(t: &mut Termios, f: Field, on: bool) {
    match f {
        I(b) => t.input_modes.set(b, on),
        L(b) => t.local_modes.set(b, on),
        O(b) => t.output_modes.set(b, on),
        C(b) => t.control_modes.set(b, on),
        Cc(_) => {}
    }
}

/// Encodes a terminal's settings (the client's pty-req modes).
pub fn encode(t: &Termios) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |op: u8, v: u32| {
        out.push(op);
        out.extend_from_slice(&v.to_be_bytes());
    };
    let baud = |s: u32| if SPEEDS.contains(&s) { s } else { 9600 };
    put(TTY_OP_ISPEED, baud(t.input_speed()));
    put(TTY_OP_OSPEED, baud(t.output_speed()));
    for &(op, f) in TABLE {
        let v = match f {
            Cc(i) => match t.special_codes[i] {
                // _POSIX_VDISABLE (0 on Linux) travels as 255, as OpenSSH sends it.
                0 => 255,
                c => u32::from(c),
            },
            I(_) | L(_) | O(_) | C(_) => u32::from(get(t, f)),
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
pub fn apply(t: &mut Termios, modes: &[(u8, u32)]) {
    for &(op, v) in modes {
        let known = SPEEDS.contains(&v);
        match op {
            // Both always succeed on Linux (any speed, BOTHER for the odd
            // ones); only the ones of SPEEDS are taken.
            TTY_OP_ISPEED if known => {
                let _ = t.set_input_speed(v);
            }
            TTY_OP_OSPEED if known => {
                let _ = t.set_output_speed(v);
            }
            TTY_OP_ISPEED | TTY_OP_OSPEED => {}
            _ => {
                let Some(&(_, f)) = TABLE.iter().find(|(o, _)| *o == op) else {
                    continue;
                };
                match f {
                    Cc(i) => t.special_codes[i] = if v == 255 { 0 } else { v as u8 },
                    I(_) | L(_) | O(_) | C(_) => set(t, f, v != 0),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Termios {
        pty_defaults().unwrap()
    }

    #[test]
    fn round_trip_and_bad_strings() {
        let mut t = fresh();
        t.local_modes = LocalModes::ECHO | LocalModes::ICANON;
        t.special_codes[SpecialCodeIndex::VINTR] = 3;
        t.special_codes[SpecialCodeIndex::VQUIT] = 0;
        t.control_modes.remove(ControlModes::CSIZE);
        t.control_modes.insert(ControlModes::CS8);
        t.set_speed(19200).unwrap();
        let enc = encode(&t);
        let modes = parse(&enc).unwrap();
        // The speeds first, then the table's order; VDISABLE as 255.
        assert_eq!(modes[0], (TTY_OP_ISPEED, 19200));
        assert_eq!(modes[1], (TTY_OP_OSPEED, 19200));
        assert!(modes.contains(&(2, 255)));
        // CS8 is two bits: CS7's opcode reads as set too, as it always did.
        assert!(modes.contains(&(90, 1)) && modes.contains(&(91, 1)));
        let mut u = fresh();
        u.local_modes = LocalModes::ISIG;
        apply(&mut u, &modes);
        assert_eq!(u.local_modes, LocalModes::ECHO | LocalModes::ICANON);
        assert_eq!(u.special_codes[SpecialCodeIndex::VINTR], 3);
        assert_eq!(u.special_codes[SpecialCodeIndex::VQUIT], 0);
        assert_eq!((u.input_speed(), u.output_speed()), (19200, 19200));
        // A speed that is not a B* constant goes as 9600 and is ignored
        // when it comes.
        t.set_speed(250000).unwrap();
        assert_eq!(parse(&encode(&t)).unwrap()[0], (TTY_OP_ISPEED, 9600));
        apply(&mut u, &[(TTY_OP_ISPEED, 250000), (TTY_OP_OSPEED, 250000)]);
        assert_eq!((u.input_speed(), u.output_speed()), (19200, 19200));
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
