//! Errors of page compression.

use barracuda_page::PageId;

/// What went wrong compressing or reading back a page-compressed image. Every variant names
/// the page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PageCompressionError {
    /// The stored bytes do not match the envelope's checksum: a torn or damaged image.
    #[error("page-compressed image of page {page}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// The page.
        page: PageId,
        /// The checksum in the envelope.
        stored: u32,
        /// The checksum of the stored bytes.
        computed: u32,
    },
    /// The envelope's header is not one this version writes, or belongs to another page.
    #[error("page-compressed image of page {page}: {what}")]
    Envelope {
        /// The page.
        page: PageId,
        /// What was expected and what was found.
        what: String,
    },
    /// The payload does not decompress to a page body (it passed the checksum, so it was
    /// written so: a bug, or a crafted file).
    #[error("page-compressed image of page {page}: the payload does not decompress: {what}")]
    Payload {
        /// The page.
        page: PageId,
        /// The codec's complaint, or the length found.
        what: String,
    },
    /// The page handed to the compressor is not a sealed page of the expected size.
    #[error("page {page} cannot be compressed: {what}")]
    Input {
        /// The page (as its header says, when readable).
        page: PageId,
        /// What is wrong with it.
        what: String,
    },
    /// The codec failed while compressing.
    #[error("page {page}: the compressor failed: {what}")]
    Codec {
        /// The page.
        page: PageId,
        /// The codec's error.
        what: String,
    },
}
