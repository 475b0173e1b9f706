//! Parses one payload's proto3 JSON (or text format) back to binary many times: a target for `perf record` / `callgrind`, as `examples/profile` is for decoding.
//!
//! ```sh
//! cargo run --release --example parse_profile -- SCHEMA.proto TYPE PAYLOAD.bin [json|text] [ITERATIONS]
//! ```
//!
//! The payload is decoded and written as JSON (or text) once, then parsed `ITERATIONS`
//! times into one reused `Vec`; instructions per parse are `(Ir(3N) - Ir(N)) / 2N`.

use protojit::{json_to_binary, text_to_binary, JsonOptions, ParseOptions, Schema};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [proto, type_name, input, rest @ ..] = args.as_slice() else {
        return Err("usage: parse_profile SCHEMA.proto TYPE PAYLOAD [json|text] [ITERATIONS]".into());
    };
    let text = rest.first().map(String::as_str) == Some("text");
    let iterations: usize = rest.get(1).map_or(Ok(1000), |n| n.parse())?;
    let dir = std::path::Path::new(proto).parent().unwrap_or(std::path::Path::new("."));
    let schema = Schema::from_proto_files(&[proto], &[dir])?;
    let decoder = schema.decoder(type_name)?;
    let owned = decoder.decode_owned(std::fs::read(input)?)?;
    let rendered = match text {
        true => owned.message().to_text_format(),
        false => owned.message().to_json_string(&JsonOptions::default())?,
    };
    let layouts = schema.layouts();
    let root = layouts.index_of(type_name).ok_or("no layout for the type")?;
    let options = ParseOptions::default();
    let mut out = Vec::new();
    for _ in 0..iterations {
        out.clear();
        match text {
            true => text_to_binary(layouts, root, std::hint::black_box(rendered.as_bytes()), &options, &mut out)?,
            false => json_to_binary(layouts, root, std::hint::black_box(rendered.as_bytes()), &options, &mut out)?,
        }
    }
    println!("{} bytes of {} -> {} bytes", rendered.len(), if text { "text" } else { "JSON" }, out.len());
    Ok(())
}
