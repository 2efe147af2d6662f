//! Sans-IO framing: 4-byte big-endian size-prefixed Kafka frames.
//!
//! Every Kafka request and response travels as `int32 size` followed by `size` bytes. The
//! decoder never touches a socket: the caller appends whatever it read to a `BytesMut` and asks
//! for complete frames, so the same code serves the daemon, the client and the tests.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Bytes taken by the size prefix.
pub const SIZE_PREFIX_LEN: usize = 4;

/// Most the decoder reserves ahead for an announced frame. A bigger frame grows the buffer as
/// its bytes arrive, so a 4-byte prefix alone cannot make us allocate `max_frame_size`.
const MAX_RESERVE_AHEAD: usize = 1 << 20;

/// Why a size prefix is unacceptable. Either way the stream cannot be resynchronised, so the
/// connection has to be closed (Kafka's `InvalidReceiveException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("invalid frame size {size}: negative")]
    NegativeSize { size: i32 },
    #[error("invalid frame size {size}: larger than the maximum of {max} bytes")]
    TooLarge { size: usize, max: usize },
    #[error("frame of {size} bytes does not fit a 4-byte size prefix")]
    Unencodable { size: usize },
}

/// Splits a byte stream into frames no larger than `max_frame_size` (the payload, without the
/// 4-byte prefix; Kafka's `socket.request.max.bytes`).
#[derive(Debug, Clone, Copy)]
pub struct FrameDecoder {
    max_frame_size: usize,
}

impl FrameDecoder {
    pub fn new(max_frame_size: usize) -> Self {
        FrameDecoder { max_frame_size }
    }

    pub fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }

    /// Takes the next complete frame (payload only) off the front of `buf`.
    ///
    /// `Ok(None)` means more bytes are needed; the buffer is then left untouched apart from
    /// reserving room for (up to 1 MiB of) the announced frame, so the next read can land in
    /// one piece. The size
    /// is validated as soon as the prefix is complete, before the payload arrives, so a hostile
    /// prefix never makes us buffer more than `max_frame_size`.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        let Some(prefix) = buf.get(..SIZE_PREFIX_LEN) else {
            return Ok(None);
        };
        let size = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        let size = usize::try_from(size).map_err(|_| FrameError::NegativeSize { size })?;
        if size > self.max_frame_size {
            return Err(FrameError::TooLarge {
                size,
                max: self.max_frame_size,
            });
        }
        let total = SIZE_PREFIX_LEN + size;
        if buf.len() < total {
            buf.reserve((total - buf.len()).min(MAX_RESERVE_AHEAD));
            return Ok(None);
        }
        buf.advance(SIZE_PREFIX_LEN);
        Ok(Some(buf.split_to(size).freeze()))
    }
}

/// Appends a frame to `out`: writes a placeholder prefix, lets `body` append the payload, then
/// patches the prefix. Encoding in place avoids computing sizes twice and copying the payload.
/// On error `out` is restored to its previous length.
pub fn write_frame<E>(
    out: &mut BytesMut,
    body: impl FnOnce(&mut BytesMut) -> Result<(), E>,
) -> Result<(), WriteFrameError<E>> {
    let start = out.len();
    out.put_i32(0);
    if let Err(e) = body(out) {
        out.truncate(start);
        return Err(WriteFrameError::Body(e));
    }
    let size = out.len() - start - SIZE_PREFIX_LEN;
    let Ok(prefix) = i32::try_from(size) else {
        out.truncate(start);
        return Err(WriteFrameError::Frame(FrameError::Unencodable { size }));
    };
    out[start..start + SIZE_PREFIX_LEN].copy_from_slice(&prefix.to_be_bytes());
    Ok(())
}

/// Failure of [`write_frame`]: either the body encoder failed or the result was too big.
#[derive(Debug, thiserror::Error)]
pub enum WriteFrameError<E> {
    #[error("encoding the frame body failed: {0}")]
    Body(E),
    #[error(transparent)]
    Frame(FrameError),
}

/// A frame to send: one buffer, or several pieces written in order with one vectored write.
#[derive(Debug, Clone)]
pub enum OutFrame {
    One(Bytes),
    Parts(Vec<Bytes>),
}

impl OutFrame {
    pub fn len(&self) -> usize {
        self.parts().iter().map(Bytes::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn parts(&self) -> &[Bytes] {
        match self {
            OutFrame::One(b) => std::slice::from_ref(b),
            OutFrame::Parts(parts) => parts,
        }
    }

    /// The frame as one buffer (copies when it is in pieces).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            OutFrame::One(b) => b.clone(),
            OutFrame::Parts(parts) => {
                let mut out = BytesMut::with_capacity(self.len());
                for p in parts {
                    out.extend_from_slice(p);
                }
                out.freeze()
            }
        }
    }
}

/// Smaller shared pieces are copied: a piece costs an iovec and a refcount.
const MIN_SHARED: usize = 512;

/// Encodes a frame without copying the byte strings it was told to [`share`](Self::share):
/// when the encoder writes exactly such a string, the frame takes a reference to it instead of
/// its bytes (Kafka's zero-copy `MultiRecordsSend`, for Fetch responses' stored batches).
/// Everything else is encoded into a buffer as usual.
#[derive(Debug, Default)]
pub struct SharedFrame {
    current: BytesMut,
    parts: Vec<Bytes>,
    shared: std::collections::HashMap<(usize, usize), Bytes>,
    len: usize,
}

impl SharedFrame {
    pub fn new() -> SharedFrame {
        SharedFrame::default()
    }

    /// Lets `b` go out by reference when the encoder writes its bytes.
    pub fn share(&mut self, b: &Bytes) {
        if b.len() >= MIN_SHARED {
            self.shared
                .insert((b.as_ptr() as usize, b.len()), b.clone());
        }
    }

    /// The bytes encoded so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The frame: a size prefix, then the pieces.
    pub fn finish(mut self) -> Result<OutFrame, FrameError> {
        let size = self.len;
        let prefix = i32::try_from(size).map_err(|_| FrameError::Unencodable { size })?;
        let mut parts = Vec::with_capacity(self.parts.len() + 2);
        parts.push(Bytes::copy_from_slice(&prefix.to_be_bytes()));
        parts.append(&mut self.parts);
        if !self.current.is_empty() {
            parts.push(self.current.freeze());
        }
        Ok(OutFrame::Parts(parts))
    }
}

// SAFETY: every method delegates to the `BytesMut` being filled; `advance_mut` is passed the
// caller's promise unchanged and only adds to a byte count.
unsafe impl BufMut for SharedFrame {
    fn remaining_mut(&self) -> usize {
        self.current.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller initialised `cnt` bytes of `chunk_mut()`, which is `current`'s.
        unsafe { self.current.advance_mut(cnt) };
        self.len += cnt;
    }

    fn chunk_mut(&mut self) -> &mut bytes::buf::UninitSlice {
        self.current.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        if let Some(b) = self.shared.get(&(src.as_ptr() as usize, src.len())) {
            if !self.current.is_empty() {
                self.parts.push(self.current.split().freeze());
            }
            self.parts.push(b.clone());
        } else {
            self.current.extend_from_slice(src);
        }
        self.len += src.len();
    }
}

/// The generated encoders only append; positions are supported within the piece being filled.
impl kafka_protocol::protocol::buf::ByteBufMut for SharedFrame {
    fn offset(&self) -> usize {
        self.len
    }

    fn seek(&mut self, offset: usize) {
        let start = self.len - self.current.len();
        if offset >= self.len {
            self.put_bytes(0, offset - self.len);
        } else if offset >= start {
            self.current.truncate(offset - start);
            self.len = offset;
        }
    }

    fn range(&mut self, r: std::ops::Range<usize>) -> &mut [u8] {
        let start = self.len - self.current.len();
        match (r.start.checked_sub(start), r.end.checked_sub(start)) {
            (Some(a), Some(b)) if a <= b && b <= self.current.len() => &mut self.current[a..b],
            _ => &mut [],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as i32).to_be_bytes().to_vec();
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn needs_a_complete_prefix() {
        let d = FrameDecoder::new(100);
        let mut buf = BytesMut::from(&[0u8, 0, 0][..]);
        assert_eq!(d.decode(&mut buf), Ok(None));
        assert_eq!(buf.len(), 3);
    }

    #[test]
    fn needs_a_complete_payload_and_reserves_for_it() {
        let d = FrameDecoder::new(1000);
        let mut buf = BytesMut::from(&framed(&[7u8; 500])[..300]);
        assert_eq!(d.decode(&mut buf), Ok(None));
        assert_eq!(buf.len(), 300);
        assert!(buf.capacity() >= 504);
    }

    #[test]
    fn reserves_at_most_a_mebibyte_ahead() {
        let d = FrameDecoder::new(usize::MAX);
        let mut buf = BytesMut::from(&(100_000_000i32).to_be_bytes()[..]);
        assert_eq!(d.decode(&mut buf), Ok(None));
        assert!(buf.capacity() < 4 << 20, "{}", buf.capacity());
    }

    #[test]
    fn returns_frames_in_order_and_keeps_the_rest() {
        let d = FrameDecoder::new(100);
        let mut bytes = framed(b"abc");
        bytes.extend(framed(b""));
        bytes.extend(framed(b"hello"));
        bytes.extend_from_slice(&[0, 0]);
        let mut buf = BytesMut::from(&bytes[..]);
        assert_eq!(
            d.decode(&mut buf).unwrap().unwrap(),
            Bytes::from_static(b"abc")
        );
        assert_eq!(d.decode(&mut buf).unwrap().unwrap(), Bytes::new());
        assert_eq!(
            d.decode(&mut buf).unwrap().unwrap(),
            Bytes::from_static(b"hello")
        );
        assert_eq!(d.decode(&mut buf), Ok(None));
        assert_eq!(&buf[..], &[0, 0]);
    }

    #[test]
    fn accepts_exactly_the_maximum() {
        let d = FrameDecoder::new(5);
        let mut buf = BytesMut::from(&framed(b"12345")[..]);
        assert_eq!(d.decode(&mut buf).unwrap().unwrap().len(), 5);
    }

    #[test]
    fn rejects_a_size_above_the_maximum_before_the_payload_arrives() {
        let d = FrameDecoder::new(5);
        let mut buf = BytesMut::from(&6i32.to_be_bytes()[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(FrameError::TooLarge { size: 6, max: 5 })
        );
        let mut buf = BytesMut::from(&i32::MAX.to_be_bytes()[..]);
        assert!(matches!(
            d.decode(&mut buf),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn rejects_a_negative_size() {
        let d = FrameDecoder::new(100);
        let mut buf = BytesMut::from(&(-1i32).to_be_bytes()[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(FrameError::NegativeSize { size: -1 })
        );
        let mut buf = BytesMut::from(&i32::MIN.to_be_bytes()[..]);
        assert_eq!(
            d.decode(&mut buf),
            Err(FrameError::NegativeSize { size: i32::MIN })
        );
    }

    #[test]
    fn write_frame_patches_the_prefix_and_round_trips() {
        let mut out = BytesMut::new();
        write_frame::<()>(&mut out, |b| {
            b.put_slice(b"xyz");
            Ok(())
        })
        .unwrap();
        write_frame::<()>(&mut out, |_| Ok(())).unwrap();
        assert_eq!(&out[..], &[0, 0, 0, 3, b'x', b'y', b'z', 0, 0, 0, 0]);
        let d = FrameDecoder::new(10);
        assert_eq!(
            d.decode(&mut out).unwrap().unwrap(),
            Bytes::from_static(b"xyz")
        );
        assert_eq!(d.decode(&mut out).unwrap().unwrap(), Bytes::new());
    }

    #[test]
    fn shared_frames_reference_shared_bytes_and_copy_the_rest() {
        let big = Bytes::from(vec![7u8; 1000]);
        let small = Bytes::from(vec![8u8; 10]);
        let mut f = SharedFrame::new();
        f.share(&big);
        f.share(&small);
        f.put_i16(1);
        f.put_slice(&big);
        f.put_slice(&small);
        f.put_slice(&big[..999]);
        let frame = f.finish().unwrap();
        let parts = frame.parts();
        assert_eq!(parts.len(), 4, "prefix, header, shared piece, the rest");
        assert_eq!(parts[2].as_ptr(), big.as_ptr(), "not copied");
        let bytes = frame.to_bytes();
        assert_eq!(&bytes[..4], &(2 + 1000 + 10 + 999i32).to_be_bytes());
        assert_eq!(bytes.len(), 4 + 2 + 1000 + 10 + 999);
        assert_eq!(&bytes[4..6], &[0, 1]);
    }

    #[test]
    fn write_frame_rolls_back_on_body_error() {
        let mut out = BytesMut::from(&b"keep"[..]);
        let r = write_frame(&mut out, |b| {
            b.put_slice(b"partial");
            Err("boom")
        });
        assert!(matches!(r, Err(WriteFrameError::Body("boom"))));
        assert_eq!(&out[..], b"keep");
    }
}
