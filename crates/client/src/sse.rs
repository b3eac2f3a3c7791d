//! [`SseReader`]: reads a streaming HTTP body as SSE events, using the protocol crate's
//! incremental decoder (which accepts any split of the bytes).
//!
//! Reading is cancel-safe: dropping a pending [`SseReader::next_event`] loses no bytes, so a
//! reader can sit in a `tokio::select!` next to timers and other work.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};

use crate::error::{BoxError, ClientError};

/// Decodes SSE events from a response body as its frames arrive.
#[derive(Debug)]
pub struct SseReader<B> {
    body: B,
    decoder: SseDecoder,
    queued: VecDeque<SseEvent>,
    scratch: Vec<SseEvent>,
    last_activity: Instant,
}

impl<B> SseReader<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// Read `body` as SSE.
    pub fn new(body: B) -> SseReader<B> {
        SseReader {
            body,
            decoder: SseDecoder::new(),
            queued: VecDeque::new(),
            scratch: Vec::new(),
            last_activity: Instant::now(),
        }
    }

    /// The next event (message or comment), or `None` at the end of the body.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use http_body_util::Full;
    /// use mcp_fleet_protocol::sse::SseEvent;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let body = Full::new(Bytes::from_static(b": keepalive\n\nevent: message\ndata: {}\n\n"));
    /// let mut reader = mcp_fleet_client::SseReader::new(body);
    /// assert_eq!(reader.next_event().await.unwrap(), Some(SseEvent::Comment("keepalive".into())));
    /// assert_eq!(reader.next_event().await.unwrap(), Some(SseEvent::Message("{}".into())));
    /// assert_eq!(reader.next_event().await.unwrap(), None);
    /// # });
    /// ```
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, ClientError> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Ok(Some(event));
            }
            let Some(frame) = self.body.frame().await else { return Ok(None) };
            let frame = frame.map_err(|e| ClientError::Body(e.into()))?;
            self.last_activity = Instant::now();
            if let Ok(data) = frame.into_data() {
                self.decoder.feed(&data, &mut self.scratch);
                self.queued.extend(self.scratch.drain(..));
            }
        }
    }

    /// The next message event's data, skipping comments (keep-alives); `None` at the end.
    pub async fn next_message(&mut self) -> Result<Option<String>, ClientError> {
        loop {
            match self.next_event().await? {
                Some(SseEvent::Message(data)) => return Ok(Some(data)),
                Some(SseEvent::Comment(_)) => continue,
                None => return Ok(None),
            }
        }
    }

    /// When bytes (an event or a keep-alive) last arrived.
    pub fn last_activity(&self) -> Instant {
        self.last_activity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;
    use http_body::Frame;
    use http_body_util::StreamBody;

    #[tokio::test]
    async fn events_split_across_frames_come_out_whole_and_in_order() {
        let wire = b"event: message\ndata: {\"a\":1}\n\n: keepalive\n\nevent: message\ndata: {\"b\":2}\n\n";
        for split in 0..wire.len() {
            let chunks = [Bytes::copy_from_slice(&wire[..split]), Bytes::copy_from_slice(&wire[split..])];
            let frames = stream::iter(chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Frame::data(c))));
            let mut reader = SseReader::new(StreamBody::new(frames));
            assert_eq!(reader.next_message().await.unwrap().as_deref(), Some("{\"a\":1}"), "split {split}");
            assert_eq!(reader.next_message().await.unwrap().as_deref(), Some("{\"b\":2}"), "split {split}");
            assert_eq!(reader.next_message().await.unwrap(), None);
        }
    }
}
