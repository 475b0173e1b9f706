//! protojit-conformance: a testee for protobuf's conformance runner: binary, proto3 JSON or text format input, answered in binary, JSON or text format.
//!
//! Protocol (protobuf's `conformance/conformance.proto`): read, until stdin ends, a 4-byte
//! little-endian length and a serialized `conformance.ConformanceRequest`; answer each with
//! a 4-byte little-endian length and a serialized `conformance.ConformanceResponse`.
//!
//! The request and response types and the test messages
//! (`protobuf_test_messages.proto3.TestAllTypesProto3`,
//! `protobuf_test_messages.proto2.TestAllTypesProto2`) are loaded at run time from
//! `conformance.proto`, `test_messages_proto2.proto` and `test_messages_proto3.proto` in
//! `$PROTOJIT_CONFORMANCE_DIR`, or else in `shared/corpus/conformance/` beside the
//! repository the binary was built in (searched from the executable's directory upwards,
//! then from the source tree). Requests and responses are `prost_reflect::DynamicMessage`s:
//! no generated code. `$PROTOJIT_CONFORMANCE_DESCRIPTOR_SET`, when set, names a descriptor
//! set (`protoc --include_imports -o`) to load instead, through the editions loader: that is
//! how the editions test messages of newer runners load (`scripts/conformance_editions.sh`).
//!
//! Answers: JSON and text input are parsed into binary (`json_to_binary`, `text_to_binary`;
//! JSON's unknown fields ignored for `JSON_IGNORE_UNKNOWN_PARSING_TEST`), and binary is
//! decoded with the default engine; `PROTOBUF` output is the canonical re-encoding, `JSON`
//! output the proto3 JSON mapping (`serialize_error` when the message has no JSON form),
//! `TEXT_FORMAT` output the text format (unknown fields left out unless
//! `print_unknown_fields`); malformed input is a `parse_error`. JSPB, a JavaScript-only
//! format the C++ runner never sends, is `skipped`.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor, Value};
use protojit::{json_to_binary, text_to_binary, DecodeError, Decoder, JsonOptions, ParseOptions, Schema};

const FILES: [&str; 3] = ["conformance.proto", "test_messages_proto2.proto", "test_messages_proto3.proto"];

/// `conformance.WireFormat` numbers.
const PROTOBUF: i32 = 1;
const JSON: i32 = 2;
const TEXT_FORMAT: i32 = 4;
/// `conformance.TestCategory`: JSON input whose unknown fields are to be ignored.
const JSON_IGNORE_UNKNOWN_PARSING_TEST: i32 = 3;

fn has_schemas(dir: &Path) -> bool {
    FILES.iter().all(|f| dir.join(f).is_file())
}

/// Where the conformance schemas are (see the module docs).
fn schema_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("PROTOJIT_CONFORMANCE_DIR") {
        let dir = PathBuf::from(dir);
        return if has_schemas(&dir) {
            Ok(dir)
        } else {
            Err(format!("PROTOJIT_CONFORMANCE_DIR={} does not hold {}", dir.display(), FILES.join(", ")))
        };
    }
    let mut tried = Vec::new();
    let exe = std::env::current_exe().ok();
    let from_exe = exe.iter().flat_map(|e| e.ancestors().skip(1)).map(Path::to_path_buf);
    let from_source = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().map(Path::to_path_buf).collect::<Vec<_>>();
    for base in from_exe.chain(from_source) {
        for candidate in [base.join("../shared/corpus/conformance"), base.join("shared/corpus/conformance")] {
            if has_schemas(&candidate) {
                return Ok(candidate);
            }
            tried.push(candidate);
        }
    }
    Err(format!(
        "cannot find the conformance schemas ({}); set PROTOJIT_CONFORMANCE_DIR (looked in {} places, e.g. {})",
        FILES.join(", "),
        tried.len(),
        tried.first().map(|p| p.display().to_string()).unwrap_or_default()
    ))
}

struct Testee {
    schema: Schema,
    request: MessageDescriptor,
    response: MessageDescriptor,
    decoders: HashMap<String, Decoder>,
}

impl Testee {
    fn load() -> Result<Testee, String> {
        let schema = if let Some(set) = std::env::var_os("PROTOJIT_CONFORMANCE_DESCRIPTOR_SET") {
            Schema::from_descriptor_set_files(&[PathBuf::from(&set)])
                .map_err(|e| format!("PROTOJIT_CONFORMANCE_DESCRIPTOR_SET={}: {e}", Path::new(&set).display()))?
        } else {
            let dir = schema_dir()?;
            let files: Vec<PathBuf> = FILES.iter().map(|f| dir.join(f)).collect();
            Schema::from_proto_files(&files, &[&dir]).map_err(|e| e.to_string())?
        };
        let get =
            |name: &str| schema.pool().get_message_by_name(name).ok_or_else(|| format!("{name} not in the schemas"));
        let request = get("conformance.ConformanceRequest")?;
        let response = get("conformance.ConformanceResponse")?;
        Ok(Testee { request, response, decoders: HashMap::new(), schema })
    }

    /// Serves one request (its bytes), returning the response's bytes.
    fn serve(&mut self, request: &[u8]) -> Vec<u8> {
        let (field, value) = match DynamicMessage::decode(self.request.clone(), request) {
            Ok(req) => self.answer(&req),
            Err(e) => ("runtime_error", Value::String(format!("cannot decode the ConformanceRequest: {e}"))),
        };
        let mut response = DynamicMessage::new(self.response.clone());
        response.set_field_by_name(field, value);
        response.encode_to_vec()
    }

    /// The response's `result` member for a request.
    fn answer(&mut self, req: &DynamicMessage) -> (&'static str, Value) {
        let text = |s: &str| Value::String(s.to_owned());
        let field = |name: &str| req.has_field_by_name(name).then(|| req.get_field_by_name(name)).flatten();
        let type_name = field("message_type").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        if !self.decoders.contains_key(&type_name) {
            match self.schema.decoder(&type_name) {
                Ok(d) => {
                    self.decoders.insert(type_name.clone(), d);
                }
                Err(e) => return ("runtime_error", Value::String(e.to_string())),
            }
        }
        let decoder = &self.decoders[&type_name];
        let options = ParseOptions {
            ignore_unknown_fields: field("test_category").and_then(|v| v.as_enum_number())
                == Some(JSON_IGNORE_UNKNOWN_PARSING_TEST),
            ..ParseOptions::default()
        };
        let payload = if let Some(v) = field("protobuf_payload") {
            v.as_bytes().cloned().unwrap_or_default()
        } else if let Some(v) = field("json_payload") {
            let mut out = Vec::new();
            let json = v.as_str().unwrap_or_default().as_bytes();
            if let Err(e) =
                json_to_binary(decoder.engine().layouts(), decoder.engine().root(), json, &options, &mut out)
            {
                return ("parse_error", Value::String(e.to_string()));
            }
            out.into()
        } else if let Some(v) = field("text_payload") {
            let mut out = Vec::new();
            let input = v.as_str().unwrap_or_default().as_bytes();
            if let Err(e) =
                text_to_binary(decoder.engine().layouts(), decoder.engine().root(), input, &options, &mut out)
            {
                return ("parse_error", Value::String(e.to_string()));
            }
            out.into()
        } else if field("jspb_payload").is_some() {
            return ("skipped", text("JSPB is a JavaScript format; protojit does not read it"));
        } else {
            return ("runtime_error", text("the request has no payload"));
        };
        let format = field("requested_output_format").and_then(|v| v.as_enum_number()).unwrap_or(0);
        let print_unknown = field("print_unknown_fields").and_then(|v| v.as_bool()).unwrap_or(false);
        let payload = if format == TEXT_FORMAT && !print_unknown {
            match strip_unknown(decoder.descriptor(), &payload) {
                Ok(p) => p.into(),
                Err(e) => return ("parse_error", Value::String(e.to_string())),
            }
        } else {
            payload
        };
        let msg = match decoder.decode_owned(payload) {
            Ok(m) => m,
            Err(e) => return ("parse_error", Value::String(e.to_string())),
        };
        let msg = msg.message();
        match format {
            PROTOBUF => ("protobuf_payload", Value::Bytes(msg.encode_to_vec().into())),
            JSON => match msg.to_json_string(&JsonOptions::default()) {
                Ok(json) => ("json_payload", Value::String(json)),
                Err(e) => ("serialize_error", Value::String(e.to_string())),
            },
            TEXT_FORMAT => ("text_payload", Value::String(msg.to_text_format())),
            _ => ("skipped", Value::String(format!("protojit does not write output format {format} (JSPB)"))),
        }
    }
}

/// `bytes` (a message of type `desc`) without its unknown fields, at every level: the text
/// suite's `_Drop` tests ask for text output that leaves them out.
fn strip_unknown(desc: &MessageDescriptor, bytes: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(bytes.len());
    strip_into(desc, bytes, &mut out, 0)?;
    Ok(out)
}

fn strip_into(desc: &MessageDescriptor, bytes: &[u8], out: &mut Vec<u8>, depth: u32) -> Result<usize, DecodeError> {
    use protojit_arena::wire::{read_tag, read_varint, skip_value, write_varint, EGROUP, LEN, SGROUP};
    const MAX_DEPTH: u32 = 100;
    let mut pos = 0;
    while pos < bytes.len() {
        let (number, wire_type, next) = read_tag(bytes, pos)?;
        if wire_type == EGROUP {
            return Ok(next);
        }
        let field = desc.get_field(number);
        let extension = desc.get_extension(number);
        let known = field.is_some() || extension.is_some();
        let message = field.map(|f| f.kind()).or_else(|| extension.map(|e| e.kind()));
        match (message.as_ref().and_then(|k| k.as_message()), wire_type) {
            (Some(m), LEN) if depth < MAX_DEPTH => {
                // skip_value checks the length against the input.
                let end = skip_value(bytes, pos, next, bytes.len(), number, wire_type, depth, MAX_DEPTH)?;
                let (_, body) = read_varint(bytes, next)?;
                let mut inner = Vec::new();
                strip_into(m, &bytes[body..end], &mut inner, depth + 1)?;
                out.extend_from_slice(&bytes[pos..next]);
                write_varint(out, inner.len() as u64);
                out.extend_from_slice(&inner);
                pos = end;
            }
            (Some(m), SGROUP) if depth < MAX_DEPTH => {
                out.extend_from_slice(&bytes[pos..next]);
                let used = strip_into(m, &bytes[next..], out, depth + 1)?;
                write_varint(out, (u64::from(number) << 3) | u64::from(EGROUP));
                pos = next + used;
            }
            _ => {
                let end = skip_value(bytes, pos, next, bytes.len(), number, wire_type, depth, MAX_DEPTH)?;
                if known {
                    out.extend_from_slice(&bytes[pos..end]);
                }
                pos = end;
            }
        }
    }
    Ok(pos)
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean end of input before the first.
fn read_exact_or_eof(input: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "input ends inside a message")),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn run(testee: &mut Testee) -> io::Result<()> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut input = stdin.lock();
    let mut output = stdout.lock();
    loop {
        let mut len = [0u8; 4];
        if !read_exact_or_eof(&mut input, &mut len)? {
            return Ok(());
        }
        let mut request = vec![0u8; u32::from_le_bytes(len) as usize];
        if !request.is_empty() && !read_exact_or_eof(&mut input, &mut request)? {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "input ends inside a message"));
        }
        let response = testee.serve(&request);
        output.write_all(&(response.len() as u32).to_le_bytes())?;
        output.write_all(&response)?;
        output.flush()?;
    }
}

fn main() -> ExitCode {
    let mut testee = match Testee::load() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("protojit-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&mut testee) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("protojit-conformance: {e}");
            ExitCode::FAILURE
        }
    }
}
