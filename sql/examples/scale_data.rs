//! Writes the record sets of `benches/sql_scale.sh`: `scale_data DIR FILES MIB [gzip]` writes
//! FILES files of about MIB MiB each of varint-delimited telemetry `Batch` records
//! (corpus/samples/telemetry.proto), 100,000 distinct generated records repeated in a
//! rotating order, as `DIR/part-NNN.pb` (or `.pb.gz`, gzip level 1).

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: scale_data DIR FILES MIB [gzip]");
        std::process::exit(2);
    }
    let dir = std::path::PathBuf::from(&args[0]);
    let files: usize = args[1].parse().expect("FILES");
    let mib: usize = args[2].parse().expect("MIB");
    let gzip = args.get(3).is_some_and(|a| a == "gzip");
    std::fs::create_dir_all(&dir).expect("create DIR");
    let set = protojit_bench_support::records::telemetry(100_000);
    let chunk = set.delimited();
    // Whole records only: a file ends at a record boundary.
    let mut starts = Vec::with_capacity(set.records.len());
    let mut at = 0;
    for r in &set.records {
        starts.push(at);
        at += protojit_arena::wire::varint_len(r.len() as u64) + r.len();
    }
    for f in 0..files {
        let name = dir.join(format!("part-{f:03}.pb{}", if gzip { ".gz" } else { "" }));
        let file = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&name).expect("create file"));
        let mut out: Box<dyn Write> = if gzip {
            Box::new(flate2::write::GzEncoder::new(file, flate2::Compression::fast()))
        } else {
            Box::new(file)
        };
        let mut written = 0;
        // Each file starts at another record, so files differ.
        let mut i = (f * 7919) % starts.len();
        while written < mib << 20 {
            let end = starts.get(i + 1).copied().unwrap_or(chunk.len());
            out.write_all(&chunk[starts[i]..end]).expect("write");
            written += end - starts[i];
            i = (i + 1) % starts.len();
        }
        out.flush().expect("flush");
        drop(out);
        println!("{} {written}", name.display());
    }
}
