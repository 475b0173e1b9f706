//! The rust-protobuf v3 arm: dynamic messages built from the same descriptors, and the
//! checksum (see the crate docs) over them.

use crate::{content_hash, contrib};

/// A rust-protobuf v3 dynamic message type, built from the same descriptors.
pub struct RustProtobuf {
    desc: protobuf::reflect::MessageDescriptor,
}

impl RustProtobuf {
    /// The type `full_name` from `pool`'s files, or why rust-protobuf cannot build it.
    pub fn new(pool: &prost_reflect::DescriptorPool, full_name: &str) -> Result<RustProtobuf, String> {
        use protobuf::Message as _;
        let protos = pool
            .file_descriptor_protos()
            .map(|f| {
                protobuf::descriptor::FileDescriptorProto::parse_from_bytes(&prost::Message::encode_to_vec(f))
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, _>>()?;
        let files = protobuf::reflect::FileDescriptor::new_dynamic_fds(protos, &[]).map_err(|e| e.to_string())?;
        let dotted = format!(".{full_name}");
        files
            .iter()
            .find_map(|f| f.message_by_full_name(&dotted))
            .map(|desc| RustProtobuf { desc })
            .ok_or_else(|| format!("rust-protobuf has no message type {full_name}"))
    }

    /// Parses `bytes`.
    pub fn decode(&self, bytes: &[u8]) -> Result<Box<dyn protobuf::MessageDyn>, String> {
        self.desc.parse_from_bytes(bytes).map_err(|e| e.to_string())
    }
}

fn rp_scalar(v: &protobuf::reflect::ReflectValueRef<'_>) -> u64 {
    use protobuf::reflect::ReflectValueRef as R;
    match v {
        R::Bool(b) => *b as u64,
        R::I32(x) => *x as i64 as u64,
        R::I64(x) => *x as u64,
        R::U32(x) => *x as u64,
        R::U64(x) => *x,
        R::F32(x) => x.to_bits() as u64,
        R::F64(x) => x.to_bits(),
        R::String(s) => content_hash(s),
        R::Bytes(b) => content_hash(b),
        R::Enum(_, x) => *x as i64 as u64,
        R::Message(m) => rp_checksum(&**m),
    }
}

fn rp_is_default(v: &protobuf::reflect::ReflectValueRef<'_>) -> bool {
    use protobuf::reflect::ReflectValueRef as R;
    match v {
        R::Bool(b) => !*b,
        R::I32(x) => *x == 0,
        R::I64(x) => *x == 0,
        R::U32(x) => *x == 0,
        R::U64(x) => *x == 0,
        R::F32(x) => x.to_bits() == 0,
        R::F64(x) => x.to_bits() == 0,
        R::String(s) => s.is_empty(),
        R::Bytes(b) => b.is_empty(),
        R::Enum(_, x) => *x == 0,
        R::Message(_) => false,
    }
}

/// The checksum of a rust-protobuf dynamic message.
pub fn rp_checksum(m: &dyn protobuf::MessageDyn) -> u64 {
    use protobuf::descriptor::field_descriptor_proto::Type;
    use protobuf::reflect::ReflectFieldRef;
    let d = m.descriptor_dyn();
    let proto3 = d.file_descriptor_proto().syntax() == "proto3";
    let mut acc = 0u64;
    for f in d.fields() {
        let n = f.number() as u32;
        match f.get_reflect(m) {
            ReflectFieldRef::Optional(o) => {
                if let Some(v) = o.value() {
                    let p = f.proto();
                    let presence =
                        !proto3 || p.has_oneof_index() || matches!(p.type_(), Type::TYPE_MESSAGE | Type::TYPE_GROUP);
                    if presence || !rp_is_default(&v) {
                        acc = acc.wrapping_add(contrib(n, rp_scalar(&v)));
                    }
                }
            }
            ReflectFieldRef::Repeated(r) => {
                for v in &r {
                    acc = acc.wrapping_add(contrib(n, rp_scalar(&v)));
                }
            }
            ReflectFieldRef::Map(map) => {
                for (k, v) in &map {
                    let e = contrib(1, rp_scalar(&k)).wrapping_add(contrib(2, rp_scalar(&v)));
                    acc = acc.wrapping_add(contrib(n, e));
                }
            }
        }
    }
    acc
}
