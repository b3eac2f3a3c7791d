//! The HTTP side: the endpoint service (request → response), the response bodies, the
//! DNS-rebinding guard, and the hyper accept loop.

mod body;
mod call_body;
mod guard;
mod serve;
mod service;

pub use body::ResponseBody;
pub use serve::{serve_http, shutdown_signal};

#[cfg(test)]
mod tests;
