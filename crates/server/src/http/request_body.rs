//! Reading a request's body within its limit: one data frame is kept as it came (no copy),
//! several are joined, and the limit is checked across frames; a body over it, or one whose
//! read fails, is answered before anything is parsed.

use bytes::{Bytes, BytesMut};
use http::{Response, StatusCode, header};
use http_body::Body;
use http_body_util::BodyExt;
use mcp_fleet_protocol::RpcError;

use super::body::ResponseBody;
use super::response::{error_response, http_error};

pub(super) async fn read_body<B>(
    body: B,
    limit: usize,
    headers: &http::HeaderMap,
) -> Result<Bytes, Box<Response<ResponseBody>>>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let too_large = || {
        let err = RpcError::invalid_request(format!("Request body exceeds the limit of {limit} bytes"))
            .with_status(StatusCode::PAYLOAD_TOO_LARGE);
        Box::new(error_response(None, &err))
    };
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| super::h1::content_length(v.as_bytes()));
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    match collect_limited(body, limit).await {
        Ok(bytes) => Ok(bytes),
        Err(BodyReadError::TooLarge) => Err(too_large()),
        Err(BodyReadError::Failed(e)) => {
            Err(Box::new(http_error(StatusCode::BAD_REQUEST, &format!("Could not read the request body: {e}"))))
        }
    }
}

/// Why a request body could not be read whole.
#[derive(Debug)]
enum BodyReadError {
    /// It has more bytes than the limit.
    TooLarge,
    /// The connection failed or the body's framing was broken.
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// A body's bytes, at most `limit` of them. A body that arrives as one data frame (what hyper
/// makes of a small request with a `Content-Length`, nearly every JSON-RPC message) is that
/// frame as it came: no list of frames and no copy, which `BodyExt::collect` makes for every
/// body. Several frames are joined; trailers are ignored.
async fn collect_limited<B>(body: B, limit: usize) -> Result<Bytes, BodyReadError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut body = std::pin::pin!(body);
    let mut first = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyReadError::Failed(e.into()))?;
        let Ok(data) = frame.into_data() else { continue };
        if data.is_empty() {
            continue;
        }
        len += data.len();
        if len > limit {
            return Err(BodyReadError::TooLarge);
        }
        match &mut joined {
            Some(all) => all.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            None => {
                let mut all = BytesMut::with_capacity(len);
                all.extend_from_slice(&first);
                all.extend_from_slice(&data);
                joined = Some(all);
            }
        }
    }
    Ok(joined.map_or(first, BytesMut::freeze))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of `frames` (`Err` for a failed read), through [`collect_limited`].
    fn collect(
        frames: Vec<Result<http_body::Frame<Bytes>, std::io::Error>>,
        limit: usize,
    ) -> Result<Bytes, BodyReadError> {
        let body = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
        futures_util::FutureExt::now_or_never(collect_limited(body, limit)).expect("a ready body")
    }

    fn data(text: &'static str) -> Result<http_body::Frame<Bytes>, std::io::Error> {
        Ok(http_body::Frame::data(Bytes::from_static(text.as_bytes())))
    }

    #[test]
    fn a_body_of_one_frame_is_that_frame_and_more_frames_are_joined() {
        let frame = Bytes::from_static(b"{\"jsonrpc\":\"2.0\"}");
        let one = collect(vec![Ok(http_body::Frame::data(frame.clone()))], 100).expect("read");
        assert_eq!(one.as_ptr(), frame.as_ptr(), "the frame itself, not a copy");
        let trailers = http_body::Frame::trailers(http::HeaderMap::new());
        let three = collect(vec![data("ab"), data(""), data("cd"), Ok(trailers), data("e")], 100).expect("read");
        assert_eq!(&three[..], b"abcde");
        assert_eq!(&collect(vec![], 100).expect("read")[..], b"");
    }

    #[test]
    fn a_body_over_the_limit_is_refused_whether_in_one_frame_or_across_several() {
        assert!(matches!(collect(vec![data("abcdef")], 5), Err(BodyReadError::TooLarge)));
        assert!(matches!(collect(vec![data("abc"), data("def")], 5), Err(BodyReadError::TooLarge)));
        assert_eq!(&collect(vec![data("abc"), data("de")], 5).expect("exactly the limit")[..], b"abcde");
    }

    #[test]
    fn a_failed_read_is_reported_as_such() {
        let failed = collect(vec![data("ab"), Err(std::io::Error::other("connection reset"))], 100);
        match failed {
            Err(BodyReadError::Failed(e)) => assert!(e.to_string().contains("connection reset")),
            other => panic!("expected a failed read, got {other:?}"),
        }
    }
}
