//! Compressed inputs as users name them: gzip, zstd, bzip2 and xz told by a file's extension or its first bytes, and read through a decompressing `io::Read`.

use std::io::{BufReader, Read};
use std::path::Path;

/// A compression format of input files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (`.gz`; several members are read one after the other, as `zcat` does).
    Gzip,
    /// Zstandard (`.zst`, `.zstd`; several frames in a row too).
    Zstd,
    /// bzip2 (`.bz2`).
    Bzip2,
    /// xz (`.xz`).
    Xz,
}

/// Why a compression name is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown compression `{0}`: use none, gzip, zstd, bzip2 or xz (or auto, by extension and magic bytes)")]
pub struct UnknownCompression(pub String);

impl Compression {
    /// Every compressed format, in the order their magic bytes are tried.
    pub const COMPRESSED: [Compression; 4] =
        [Compression::Gzip, Compression::Zstd, Compression::Bzip2, Compression::Xz];

    /// The format a file's name says (`events.bin.gz` → gzip); `None` for other names.
    pub fn from_extension(path: &Path) -> Option<Compression> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "gz" | "gzip" => Compression::Gzip,
            "zst" | "zstd" => Compression::Zstd,
            "bz2" => Compression::Bzip2,
            "xz" => Compression::Xz,
            _ => return None,
        })
    }

    /// The format whose magic bytes `first` starts with, if any: gzip's three bytes
    /// (deflate), zstd's four, bzip2's `BZh` and a block size digit, xz's six. A
    /// varint-delimited stream or a message can start with two of these bytes, rarely with
    /// three or more.
    pub fn from_magic(first: &[u8]) -> Option<Compression> {
        Compression::COMPRESSED.into_iter().find(|c| {
            first.starts_with(c.magic())
                && match c {
                    Compression::Gzip => first.get(2) == Some(&8),
                    Compression::Bzip2 => first.get(3).is_some_and(|d| (b'1'..=b'9').contains(d)),
                    _ => true,
                }
        })
    }

    /// Parses a name: `none` (or `uncompressed`), `gzip` (`gz`), `zstd` (`zst`), `bzip2`
    /// (`bz2`), `xz`; case-insensitive.
    pub fn from_name(name: &str) -> Result<Compression, UnknownCompression> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => Compression::None,
            "gzip" | "gz" => Compression::Gzip,
            "zstd" | "zst" => Compression::Zstd,
            "bzip2" | "bz2" => Compression::Bzip2,
            "xz" => Compression::Xz,
            _ => return Err(UnknownCompression(name.to_owned())),
        })
    }

    /// The format's usual name (`gzip`, `zstd`, ...; `none`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
        }
    }

    /// The bytes a file of this format starts with (empty for `None`).
    pub fn magic(self) -> &'static [u8] {
        match self {
            Compression::None => b"",
            Compression::Gzip => b"\x1f\x8b",
            Compression::Zstd => b"\x28\xb5\x2f\xfd",
            Compression::Bzip2 => b"BZh",
            Compression::Xz => b"\xfd7zXZ\x00",
        }
    }

    /// `r` decompressed as this format (`None`: `r` itself).
    pub fn reader<'a>(self, r: impl Read + Send + 'a) -> std::io::Result<Box<dyn Read + Send + 'a>> {
        let r = BufReader::new(r);
        Ok(match self {
            Compression::None => Box::new(r),
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(r)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(r)?),
            Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(r)),
            Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(r)),
        })
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Opens `r` decompressed: as `compression` says, or (`None`) as its name says
/// ([`Compression::from_extension`], when `name` is given) and else as its first bytes
/// show ([`Compression::from_magic`]). Returns the reader and the format it reads.
pub fn decompressed<'a>(
    mut r: impl Read + Send + 'a,
    name: Option<&Path>,
    compression: Option<Compression>,
) -> std::io::Result<(Box<dyn Read + Send + 'a>, Compression)> {
    if let Some(format) = compression.or_else(|| name.and_then(Compression::from_extension)) {
        return Ok((format.reader(r)?, format));
    }
    // Enough bytes for the longest magic (across short reads), put back in front.
    let mut first = Vec::with_capacity(6);
    while first.len() < 6 {
        let mut byte = [0u8; 6];
        let want = 6 - first.len();
        match r.read(&mut byte[..want]) {
            Ok(0) => break,
            Ok(n) => first.extend_from_slice(&byte[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let format = Compression::from_magic(&first).unwrap_or(Compression::None);
    let rest = std::io::Cursor::new(first).chain(r);
    Ok((format.reader(rest)?, format))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn read_all(r: &mut dyn Read) -> Vec<u8> {
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn names_extensions_and_magic() {
        assert_eq!(Compression::from_extension(Path::new("a/b.bin.GZ")), Some(Compression::Gzip));
        assert_eq!(Compression::from_extension(Path::new("x.zst")), Some(Compression::Zstd));
        assert_eq!(Compression::from_extension(Path::new("x.bin")), None);
        assert_eq!(Compression::from_name("ZSTD"), Ok(Compression::Zstd));
        assert!(Compression::from_name("lz4").unwrap_err().to_string().contains("gzip"));
        for (c, first) in [
            (Compression::Gzip, &b"\x1f\x8b\x08\x00"[..]),
            (Compression::Zstd, b"\x28\xb5\x2f\xfd\x00"),
            (Compression::Bzip2, b"BZh9"),
            (Compression::Xz, b"\xfd7zXZ\x00\x00"),
        ] {
            assert_eq!(Compression::from_magic(first), Some(c));
        }
        assert_eq!(Compression::from_magic(b"\x1f\x8b\x01"), None);
        assert_eq!(Compression::from_magic(b"BZhx"), None);
        assert_eq!(Compression::from_magic(b"\x0a\x02"), None);
    }

    #[test]
    fn gzip_members_and_zstd_frames_are_read_by_magic() {
        let data = b"\x02hi\x03you".repeat(50);
        let mut gz = Vec::new();
        for _ in 0..2 {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&data).unwrap();
            gz.extend(e.finish().unwrap());
        }
        let (mut r, c) = decompressed(&gz[..], None, None).unwrap();
        assert_eq!(c, Compression::Gzip);
        assert_eq!(read_all(&mut r), [data.clone(), data.clone()].concat());

        let zst = zstd::encode_all(&data[..], 1).unwrap();
        let (mut r, c) = decompressed(&zst[..], Some(Path::new("plain.bin")), None).unwrap();
        assert_eq!(c, Compression::Zstd);
        assert_eq!(read_all(&mut r), data);

        let (mut r, c) = decompressed(&data[..], None, None).unwrap();
        assert_eq!(c, Compression::None);
        assert_eq!(read_all(&mut r), data);
        // Input shorter than the longest magic.
        let (mut r, c) = decompressed(&b"\x01"[..], None, None).unwrap();
        assert_eq!(c, Compression::None);
        assert_eq!(read_all(&mut r), b"\x01");
    }
}
