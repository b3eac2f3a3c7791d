//! The HTTP side: the endpoint service (request → response), the response bodies, the
//! DNS-rebinding guard, the accept loop (hyper, with HTTP/1.1 listen and GET streams taken out of
//! it: `h1`, written by `listen::direct`).

mod body;
mod call_body;
mod era2025;
mod guard;
mod h1;
mod request_body;
mod response;
mod rewind;
mod serve;
mod service;

pub use body::ResponseBody;
pub use serve::{serve_http, shutdown_signal};

pub(crate) use response::{
    accepts_sse, error_response, http_error, json as json_response, rate_limited, sse_response, status_only,
};

#[cfg(test)]
mod tests;
