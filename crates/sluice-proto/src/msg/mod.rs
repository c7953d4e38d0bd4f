//! Typed SSH messages. STUB: being written.
