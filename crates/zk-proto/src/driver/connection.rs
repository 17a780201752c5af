//! One open connection: its framed reader, its write buffer, and the read low-water mark
//! set on its stream.

use std::io;

use bytes::BytesMut;
use futures_util::FutureExt;
use jute::FrameCodec;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use crate::request_timing::SendStamps;
use crate::session::Session;
use crate::transport::{ReadHalf, WriteHalf};

/// The session hands out frames while the write buffer holds less than this (one frame may
/// go over it).
const WRITE_BUFFER_HIGH_WATER: usize = 64 * 1024;

/// The read buffer's first size. Most replies of an idle or lightly used session (pings, the
/// configuration, small reads) fit; a larger frame makes the codec reserve its whole length at
/// once, and the buffer keeps what it grew to. `tokio_util`'s default, 8 KiB, was a third of
/// an idle session's memory (docs/performance.md).
const READ_BUFFER_START: usize = 1024;

/// One open connection.
pub(super) struct Connection {
    pub(super) reader: FramedRead<ReadHalf, FrameCodec>,
    pub(super) writer: WriteHalf,
    /// Frames encoded and not yet taken by the stream.
    pub(super) out: BytesMut,
    /// Bytes were written since the last flush (a buffering transport needs one).
    pub(super) unflushed: bool,
    /// The read low-water mark set on the stream; `None` for a stream without one.
    pub(super) low_water: Option<usize>,
}

impl Connection {
    /// A connection just opened.
    pub(super) fn new(read: ReadHalf, write: WriteHalf, max_frame_len: usize) -> Connection {
        Connection {
            reader: FramedRead::with_capacity(
                read,
                FrameCodec::with_max_frame_len(max_frame_len),
                READ_BUFFER_START,
            ),
            writer: write,
            out: BytesMut::new(),
            unflushed: false,
            low_water: Some(1),
        }
    }

    /// Takes frames from the session while the write buffer has room, and writes what the
    /// stream takes right now without waiting. `Err` if the stream failed.
    pub(super) fn transmit(
        &mut self,
        session: &mut Session,
        stamps: &mut SendStamps,
    ) -> io::Result<()> {
        let now = Instant::now().into_std();
        loop {
            while self.out.len() < WRITE_BUFFER_HIGH_WATER {
                let before = self.out.len();
                let Some(id) = session.transmit_next(now, &mut self.out) else {
                    break;
                };
                stamps.encoded(id, self.out.len() - before);
            }
            if self.out.is_empty() {
                break;
            }
            match self.writer.write_buf(&mut self.out).now_or_never() {
                Some(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Some(Ok(n)) => {
                    stamps.wrote(n);
                    self.unflushed = true;
                }
                Some(Err(error)) => return Err(error),
                // The stream is full: the loop's write branch waits for room.
                None => return Ok(()),
            }
        }
        if self.unflushed {
            match self.writer.flush().now_or_never() {
                Some(Ok(())) => self.unflushed = false,
                Some(Err(error)) => return Err(error),
                None => {}
            }
        }
        Ok(())
    }

    /// Hands the session's read low-water mark to the stream (when it changed), or 1 while
    /// requests wait in the write buffer: the server owes no reply for what it has not
    /// received. `Err` if the stream refused it (the connection is then dropped rather than
    /// left waiting for bytes that may not come).
    pub(super) fn update_low_water(&mut self, session: &Session) -> io::Result<()> {
        let Some(set) = self.low_water else {
            return Ok(());
        };
        let wanted = if self.out.is_empty() {
            session.read_low_water()
        } else {
            1
        };
        if wanted != set {
            let supported = self.reader.get_mut().set_read_low_water(wanted)?;
            self.low_water = supported.then_some(wanted);
        }
        if self.low_water.is_some_and(|mark| mark > 1) {
            // Room for a gathered batch and what comes with it, so that one read takes it
            // (the buffer otherwise grows by its first size, 1 KiB, a read at a time).
            let buffer = self.reader.read_buffer_mut();
            if buffer.capacity() - buffer.len() < 2 * wanted {
                buffer.reserve(4 * wanted);
            }
        }
        Ok(())
    }

    /// Whether the loop must wait for the stream to take bytes (or a flush).
    pub(super) fn wants_write(&self) -> bool {
        !self.out.is_empty() || self.unflushed
    }

    /// Writes (or flushes) once the stream has room; `Err` if the stream failed or takes no
    /// more bytes.
    pub(super) async fn write_some(
        writer: &mut WriteHalf,
        out: &mut BytesMut,
        unflushed: &mut bool,
        stamps: &mut SendStamps,
    ) -> io::Result<()> {
        if out.is_empty() {
            writer.flush().await?;
            *unflushed = false;
            return Ok(());
        }
        match writer.write_buf(out).await? {
            0 => Err(io::ErrorKind::WriteZero.into()),
            n => {
                stamps.wrote(n);
                *unflushed = true;
                Ok(())
            }
        }
    }
}
