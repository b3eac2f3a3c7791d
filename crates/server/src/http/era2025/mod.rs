//! Answering the 2025 era's HTTP requests on `/mcp` (revisions 2025-03-26, 2025-06-18 and
//! 2025-11-25), over the era's state in [`crate::era2025`]:
//! - `post`: POST, GET and DELETE — the handshake, notifications, the client's answers to our
//!   requests, requests (bridged to the 2026 methods, results made era-pure), the session's GET
//!   stream and its end;
//! - `batch`: what a 2025-03-26 batch costs against its size limit and the rate limit;
//! - `admission`: the bounds of what a caller may store — client capabilities, sessions per
//!   principal or address, subscriptions per session;
//! - `call`: a call whose handler asks for input (MRTR `input_required`) becomes real
//!   server-to-client requests on the call's SSE stream ([`ChannelBody`]); the answers, POSTed
//!   to any replica, come back through the era's relay.

mod admission;
mod batch;
mod call;
mod post;

pub(crate) use call::ChannelBody;
