//! Round trips, truncations and trailing data for the user authentication
//! messages (RFC 4252, RFC 4256).

use super::{check, s, strict, v};
use crate::msg::*;

#[test]
fn userauth_messages() {
    let methods = [
        (AuthMethod::None, None),
        (
            AuthMethod::PublicKey {
                algorithm: s("ssh-ed25519"),
                key_blob: vec![1, 2],
                host_key: None,
                signature: None,
            },
            None,
        ),
        (
            AuthMethod::PublicKey {
                algorithm: s("ssh-ed25519"),
                key_blob: vec![1, 2],
                host_key: Some(vec![9, 8, 7]),
                signature: Some(vec![6]),
            },
            None,
        ),
        (
            AuthMethod::PublicKey {
                algorithm: s("rsa-sha2-256"),
                key_blob: vec![3],
                host_key: None,
                signature: Some(vec![4, 5]),
            },
            None,
        ),
        (
            AuthMethod::Password {
                password: s("pässword"),
                new_password: None,
            },
            None,
        ),
        (
            AuthMethod::Password {
                password: s("old"),
                new_password: Some(s("new")),
            },
            None,
        ),
        (
            AuthMethod::KeyboardInteractive {
                language: s(""),
                submethods: s("pam"),
            },
            None,
        ),
        (
            AuthMethod::Other {
                name: s("hostbased"),
                data: vec![0, 0, 0, 1, b'x'],
            },
            Some(5),
        ),
        (
            AuthMethod::Other {
                name: s("gssapi-with-mic"),
                data: vec![],
            },
            Some(0),
        ),
    ];
    for (method, tail) in methods {
        let req = UserauthRequest {
            user: s("alice"),
            service: s("ssh-connection"),
            method,
        };
        check(req, tail);
    }
    let fail = UserauthFailure {
        methods: v(&["publickey", "password"]),
        partial_success: true,
    };
    strict(fail);
    strict(UserauthSuccess);
    strict(UserauthBanner {
        message: s("Welcome\r\n"),
        language: s(""),
    });
    strict(UserauthPkOk {
        algorithm: s("ssh-ed25519"),
        key_blob: vec![8; 51],
    });
    let info = UserauthInfoRequest {
        name: s("PAM"),
        instruction: s("Enter both"),
        language: s(""),
        prompts: vec![
            Prompt {
                prompt: s("Password: "),
                echo: false,
            },
            Prompt {
                prompt: s("Token: "),
                echo: true,
            },
        ],
    };
    strict(info);
    let resp = UserauthInfoResponse {
        responses: v(&["secret", "123456"]),
    };
    strict(resp);
    strict(UserauthInfoResponse { responses: vec![] });
    let change = UserauthPasswdChangereq {
        prompt: s("Password expired"),
        language: s(""),
    };
    strict(change);
}
