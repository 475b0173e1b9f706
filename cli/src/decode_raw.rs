//! `protojit decode-raw`: bytes without a schema, printed exactly as `protoc --decode_raw`.

use protojit_reflect::decode_raw_to_text;

use crate::args::DecodeRawArgs;
use crate::common::{self, input_name, Failure, Out};
use crate::stream::RecordReader;

pub fn run(args: &DecodeRawArgs) -> Result<(), Failure> {
    let name = input_name(&args.input).to_owned();
    let mut out = Out::new();
    if !args.delimited {
        let bytes = common::read_input(&args.input, args.compression.format())?;
        let text =
            decode_raw_to_text(&bytes).map_err(|e| Failure::input(format!("{name}: not a protobuf message: {e}")))?;
        out.write(text.as_bytes())?;
        return out.flush();
    }
    let (input, _) = common::open_input(&args.input, args.compression.format())?;
    let mut reader = RecordReader::new(input, &name, "raw messages");
    let mut buf = Vec::new();
    while let Some(info) = reader.next_into(&mut buf)? {
        let text = decode_raw_to_text(&buf).map_err(|e| {
            Failure::input(format!(
                "{name}: record {}: not a protobuf message: {} at byte offset {} ({} bytes into the record, which starts at byte offset {})",
                info.number,
                e.kind.describe(),
                info.data_offset + e.offset as u64,
                e.offset,
                info.data_offset
            ))
        });
        let text = match text {
            Ok(t) => t,
            Err(f) => {
                out.flush()?;
                return Err(f);
            }
        };
        out.write(format!("# record {}\n", info.number).as_bytes())?;
        out.write(text.as_bytes())?;
        buf.clear();
    }
    out.flush()
}
