//! What the command line asks of one run beyond ssh_config: shared by
//! the front ends (cli/) and the client's setup (app.rs, forward_args.rs).

/// What a run asks for beyond ssh_config: the command line's parts that
/// are not `-o` options (those are folded into the configuration).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionRequest {
    /// Remote command words (joined with spaces, as ssh); empty: none.
    pub command: Vec<String>,
    /// `-s`: the command names a subsystem.
    pub subsystem: bool,
    /// `-T`/`-t` count (-1 for -T).
    pub tty: i8,
    /// `-N`: no command.
    pub no_command: bool,
    /// `-f`: background after authentication.
    pub fork: bool,
    /// `-n`: stdin from /dev/null.
    pub null_stdin: bool,
    /// `-4`/`-6` (overrides AddressFamily).
    pub family: Option<u8>,
    /// `-i` files, offered before IdentityFile's.
    pub identities: Vec<String>,
    /// `-L` specs.
    pub local_forwards: Vec<String>,
    /// `-R` specs.
    pub remote_forwards: Vec<String>,
    /// `-D` specs.
    pub dynamic_forwards: Vec<String>,
    /// `-W host:port`.
    pub stdio_forward: Option<String>,
    /// `-F`, passed on to the ProxyJump hop.
    pub config_file: Option<String>,
    /// `-v` count, passed on to the ProxyJump hop.
    pub verbose: u8,
}
