//! Measures a length-prefix pre-scan of varint-delimited files: what finding every record boundary (to split one large file over several partitions, or to know its row count) costs before a query reads the records.
//!
//! `prescan FILE...` walks each file's length prefixes twice, rotating the order per file:
//! `buffered` reads every byte through a 1 MiB buffer (what a remote object store would have
//! to do: fetch everything); `seeking` reads only the prefixes, seeking over each record's
//! body (local files: pages between prefixes are never read when records are larger than a
//! page). Prints records, bytes and GB/s per mode, summed over the files. Needs only std,
//! so it can also be built alone: `rustc -O sql/examples/prescan.rs`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::time::{Duration, Instant};

/// Reads one varint (at most 10 bytes); `None` at a clean end of file.
fn varint(r: &mut impl Read) -> std::io::Result<Option<u64>> {
    let mut value = 0u64;
    let mut byte = [0u8];
    for i in 0..10 {
        if r.read(&mut byte)? == 0 {
            return if i == 0 { Ok(None) } else { Err(std::io::ErrorKind::UnexpectedEof.into()) };
        }
        value |= u64::from(byte[0] & 0x7f) << (7 * i);
        if byte[0] < 0x80 {
            return Ok(Some(value));
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "length prefix longer than 10 bytes"))
}

/// Every byte through a buffer: the prefix is read, the body consumed from the buffer.
fn buffered(path: &str) -> std::io::Result<(u64, u64)> {
    let mut r = BufReader::with_capacity(1 << 20, File::open(path)?);
    let (mut records, mut bytes) = (0u64, 0u64);
    while let Some(len) = varint(&mut r)? {
        let mut left = len;
        while left > 0 {
            let available = r.fill_buf()?.len() as u64;
            if available == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("{path}: truncated record {records}"),
                ));
            }
            let take = available.min(left);
            r.consume(take as usize);
            left -= take;
        }
        records += 1;
        bytes += len;
    }
    Ok((records, bytes))
}

/// Only the prefixes: each record's body is skipped with a seek (a small buffer, so that a
/// skip past it costs a seek and no read).
fn seeking(path: &str) -> std::io::Result<(u64, u64)> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut r = BufReader::with_capacity(16, &mut file);
    let (mut records, mut bytes, mut at) = (0u64, 0u64, 0u64);
    while let Some(len) = varint(&mut r)? {
        at = r.stream_position()? + len;
        if at > size {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{path}: truncated record {records}"),
            ));
        }
        r.seek(SeekFrom::Start(at))?;
        records += 1;
        bytes += len;
    }
    debug_assert_eq!(at, size);
    Ok((records, bytes))
}

fn main() -> std::io::Result<()> {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: prescan FILE...");
        std::process::exit(2);
    }
    type Mode = fn(&str) -> std::io::Result<(u64, u64)>;
    let modes: [(&str, Mode); 2] = [("buffered", buffered), ("seeking", seeking)];
    let mut totals = [(Duration::ZERO, 0u64, 0u64); 2];
    for (i, path) in files.iter().enumerate() {
        for k in 0..2 {
            let m = (i + k) % 2;
            let start = Instant::now();
            let (records, bytes) = modes[m].1(path)?;
            totals[m].0 += start.elapsed();
            totals[m].1 += records;
            totals[m].2 += bytes;
        }
    }
    for (m, (name, _)) in modes.iter().enumerate() {
        let (time, records, bytes) = totals[m];
        println!(
            "{name}: {records} records, {bytes} bytes of records in {:.3} s ({:.2} GB/s)",
            time.as_secs_f64(),
            bytes as f64 / time.as_secs_f64() / 1e9
        );
    }
    Ok(())
}
