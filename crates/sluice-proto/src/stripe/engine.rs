//! The engine's part of striping: the client's join request on a secondary
//! connection; on the server, the join request handed to the runtime as
//! [`crate::Event::StripeJoinRequest`] once it called
//! `enable_stripe_join` (auth/server.rs; until then the method is refused
//! as any unknown one). Everything else travels through the engine's
//! generic paths (`global_request`, `channel_request`, `open_channel`,
//! channel data) with the data of [`super::codec`].

use super::token::Joiner;
use crate::core::{Connection, Role};
use crate::error::Error;

impl Connection {
    /// Client, on a secondary connection after its key exchange: sends the
    /// `stripe-join-v00@sluice.dev` request as `user` (the primary's user),
    /// proving membership with the next join number of `joiner`, which it
    /// returns. The answer comes as [`crate::Event::Authenticated`] or
    /// [`crate::Event::AuthFailure`] (then disconnect this connection).
    pub fn auth_stripe_join(&mut self, user: &str, joiner: &mut Joiner) -> Result<u32, Error> {
        if self.role != Role::Client {
            return Err(Error::InvalidState("only a client joins a session"));
        }
        let sid = self
            .session_id()
            .ok_or(Error::InvalidState("join before the key exchange"))?
            .to_vec();
        let req = joiner.join(&sid, user).ok_or(Error::InvalidState(
            "every join number of the grant is used",
        ))?;
        self.send_userauth(user, req.to_method());
        Ok(req.join_number)
    }
}
