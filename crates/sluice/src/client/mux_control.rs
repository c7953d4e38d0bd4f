//! `sluice -O check|exit|stop|forward|cancel` toward a running master
//! (sluice's or ssh's), with ssh's messages and exit codes.

use super::forward_spec::{Forward, Kind};
use super::mux_error::MuxError;
use super::mux_wire::*;
use crate::log;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The `-O` commands ssh knows; Err is ssh's message for another word.
pub fn check_command(cmd: &str) -> Result<(), MuxError> {
    match cmd {
        "check" | "forward" | "cancel" | "exit" | "stop" | "proxy" => Ok(()),
        _ => Err(MuxError::InvalidCommand),
    }
}

/// Connects to the master at `path` and says hello; Err: what to print.
fn connect_master(path: &str) -> Result<UnixStream, MuxError> {
    let mut s = UnixStream::connect(path).map_err(|error| MuxError::Connect {
        path: path.to_owned(),
        error,
    })?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let hello = (|| -> std::io::Result<()> {
        s.write_all(&frame(&[HELLO, VERSION], None))?;
        let m = read_message(&mut s)?;
        if word(&m, 0) != Some(HELLO) || word(&m, 1) != Some(VERSION) {
            return Err(std::io::Error::other("bad hello from master"));
        }
        Ok(())
    })();
    hello.map_err(MuxError::Hello)?;
    Ok(s)
}

/// `sluice -O cmd` with ControlPath `path`: ssh's messages and exit codes.
/// `forwards` (the command line's and the configuration's) are what
/// `-O forward` asks for and `-O cancel` closes.
pub fn client_command(path: Option<&str>, cmd: &str, forwards: &[(Kind, Forward)]) -> i32 {
    let Some(path) = path else {
        log::print("No ControlPath specified for \"-O\" command");
        return 255;
    };
    let (request, what) = match cmd {
        "check" => (C_ALIVE_CHECK, "alive check"),
        "exit" => (C_TERMINATE, "termination"),
        "stop" => (C_STOP_LISTENING, "stop listening"),
        "forward" | "cancel" => {
            let mut s = match connect_master(path) {
                Ok(s) => s,
                Err(e) => {
                    log::print(&e.to_string());
                    return 255;
                }
            };
            let r = ask_master(&mut s, cmd == "cancel", forwards, Asker::Command);
            // As ssh: a refused forward is fatal, a refused cancel is not.
            return match r {
                Ok(()) => 0,
                Err(e) if cmd == "cancel" => {
                    log::print(&e.to_string());
                    log::print("muxclient: master cancel forward request failed");
                    0
                }
                Err(e) => {
                    log::print(&e.to_string());
                    log::print("muxclient: master forward request failed");
                    255
                }
            };
        }
        _ => {
            log::print(&format!(
                "sluice: -O {cmd}: not supported (a sluice master does not relay a proxy client's packets)"
            ));
            return 255;
        }
    };
    let mut s = match connect_master(path) {
        Ok(s) => s,
        Err(e) => {
            log::print(&e.to_string());
            return 255;
        }
    };
    if let Err(e) = s.write_all(&frame(&[request, 1], None)) {
        log::print(&format!(
            "mux_client_request_{cmd}: write to master failed: {e}"
        ));
        return 255;
    }
    let reply = match read_message(&mut s) {
        Ok(m) => m,
        // As ssh: a master that already went away did terminate.
        Err(_) if request == C_TERMINATE => frame(&[S_OK, 1], None).split_off(4),
        Err(e) => {
            log::print(&format!(
                "mux_client_request_{}: read from master failed: {e}",
                cmd
            ));
            return 255;
        }
    };
    match (word(&reply, 0), word(&reply, 1)) {
        (Some(S_ALIVE), Some(1)) if request == C_ALIVE_CHECK => {
            log::print(&format!(
                "Master running (pid={})",
                word(&reply, 2).unwrap_or(0)
            ));
            0
        }
        (Some(S_OK), Some(1)) if request == C_TERMINATE => {
            log::print("Exit request sent.");
            0
        }
        (Some(S_OK), Some(1)) => {
            log::print("Stop listening request sent.");
            0
        }
        (Some(S_PERMISSION_DENIED), _) => {
            log::print(&format!(
                "Master refused {what} request: {}",
                reason(&reply, 2)
            ));
            255
        }
        (Some(S_FAILURE), _) => {
            log::print(&format!("{what} request failed: {}", reason(&reply, 2)));
            255
        }
        _ => {
            log::print(&format!(
                "unexpected response from master to {what} request"
            ));
            255
        }
    }
}

/// Who asks the master for forwardings.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Asker {
    /// `sluice -O forward|cancel`: a port the master reports for a
    /// `-R 0:...` is printed on stdout (as ssh); the first refusal ends it.
    Command,
    /// A passenger before its session: the port is logged; a refusal is
    /// logged and the rest asked, unless ExitOnForwardFailure.
    Passenger { exit_on_failure: bool },
}

/// Asks the master over `s` (hello done) for each of `forwards`, or to
/// close it.
pub(super) fn ask_master(
    s: &mut UnixStream,
    close: bool,
    forwards: &[(Kind, Forward)],
    asker: Asker,
) -> Result<(), MuxError> {
    // A passenger's ids stay clear of its alive check and session request.
    let (first_id, keep_going) = match asker {
        Asker::Command => (1, false),
        Asker::Passenger { exit_on_failure } => (10, !exit_on_failure),
    };
    for (i, (kind, f)) in forwards.iter().enumerate() {
        let rid = first_id + i as u32;
        s.write_all(&fwd_request(close, rid, *kind, f))
            .map_err(MuxError::Write)?;
        let m = read_message(s).map_err(MuxError::Read)?;
        let what = if close { "cancel" } else { "forward" };
        let failed = match (word(&m, 0), word(&m, 1)) {
            (Some(S_OK), Some(r)) if r == rid => None,
            (Some(S_REMOTE_PORT), Some(r)) if r == rid => {
                let port = word(&m, 2).unwrap_or(0);
                if asker == Asker::Command {
                    crate::outln!("{port}");
                } else {
                    log!(
                        Info,
                        "Allocated port {port} for mux remote forward to {}",
                        target(f)
                    );
                }
                None
            }
            (Some(S_PERMISSION_DENIED), _) => Some(MuxError::Denied {
                what,
                reason: reason(&m, 2),
            }),
            (Some(S_FAILURE), _) => Some(MuxError::Failed {
                what,
                reason: reason(&m, 2),
            }),
            _ => return Err(MuxError::Unexpected { what }),
        };
        match failed {
            Some(e) if keep_going => log!(Error, "{e}"),
            Some(e) => return Err(e),
            None => {}
        }
    }
    Ok(())
}

fn target(f: &Forward) -> String {
    f.connect
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default()
}
