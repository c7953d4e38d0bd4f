//! An I/O error in OpenSSH's words: shared by the log (`-E` file errors),
//! the sockets and every layer that prints one, so it sits at the bottom.

/// An I/O error in the words OpenSSH uses ("Connection refused").
pub fn describe_io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "Connection refused".to_owned(),
        std::io::ErrorKind::TimedOut => "Connection timed out".to_owned(),
        _ => {
            let s = e.to_string();
            s.split(" (os error").next().unwrap_or(&s).to_owned()
        }
    }
}
