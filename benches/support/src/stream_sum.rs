//! The streaming benchmark's flat checksum (issue 29): one definition computed by protojit's streaming visitor, its tree visitor, prost's structs and the protozero consumer in `benches/peers/protozero_harness.cc`.
//!
//! # The checksum
//!
//! A wrapping `u64` sum over every value and every nested message of the payload, at
//! every depth, in any order (so a wire-order stream and a field-number-order tree agree):
//!
//! ```text
//! sum = Σ over every value v of a field numbered n:        n·K + val(v)
//!     + Σ over every nested message (not the root), field n: n·K
//! K   = 0x9E3779B97F4A7C15
//! val = integer, enum number → the value as u64 (signed: sign-extended; sint32/sint64:
//!                              zigzag-decoded first; packed arrays: each element)
//!       bool                 → 0 or 1
//!       float / double       → the IEEE bits (a float's 32 bits zero-extended)
//!       string / bytes       → length + (first byte, 0 if empty) · 2^32
//! ```
//!
//! Delta-coded OSM arrays are summed as the wire's (zigzag-decoded) deltas, not resolved.
//! Unlike [`crate::tree_checksum`] there is no per-value mixing and no hash of string
//! contents: the per-value work is an add and a multiply, so a timing compares decoders
//! rather than checksums. The field number in every term still makes a value counted
//! under the wrong field, a missing message or a skipped array show.

use std::ops::ControlFlow;

use protojit::{Descend, EnumType, EnumValue, FieldInfo, MessageRef, StreamVisitor, Visitor};

use crate::gen::{osmpbf, vector_tile};

/// The multiplier of a field number in every term.
pub const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// One term: field `n`'s value `v` (already mapped to u64 as the definition says).
#[inline(always)]
pub fn term(n: u32, v: u64) -> u64 {
    u64::from(n).wrapping_mul(K).wrapping_add(v)
}

/// `val` of a string or bytes value.
#[inline(always)]
pub fn bytes_val(b: &[u8]) -> u64 {
    (b.len() as u64).wrapping_add(u64::from(b.first().copied().unwrap_or(0)) << 32)
}

// ---------------------------------------------------------------------------------------
// protojit, streaming.

/// The checksum as a [`StreamVisitor`]: `Decoder::stream(bytes, &mut s)`, then `s.0`.
#[derive(Default)]
pub struct StreamSum(pub u64);

impl StreamSum {
    #[inline(always)]
    fn add(&mut self, f: FieldInfo<'_>, v: u64) -> ControlFlow<()> {
        self.0 = self.0.wrapping_add(term(f.number(), v));
        ControlFlow::Continue(())
    }
    /// A packed run: one loop, decoding as it sums.
    #[inline(always)]
    fn add_all<T>(&mut self, f: FieldInfo<'_>, v: impl Iterator<Item = T>, to: impl Fn(T) -> u64) -> ControlFlow<()> {
        let nk = u64::from(f.number()).wrapping_mul(K);
        let mut acc = self.0;
        for x in v {
            acc = acc.wrapping_add(nk.wrapping_add(to(x)));
        }
        self.0 = acc;
        ControlFlow::Continue(())
    }
}

impl<'a> StreamVisitor<'a> for StreamSum {
    #[inline]
    fn bool(&mut self, f: FieldInfo<'a>, v: bool) -> ControlFlow<()> {
        self.add(f, v as u64)
    }
    #[inline]
    fn i32(&mut self, f: FieldInfo<'a>, v: i32) -> ControlFlow<()> {
        self.add(f, v as i64 as u64)
    }
    #[inline]
    fn i64(&mut self, f: FieldInfo<'a>, v: i64) -> ControlFlow<()> {
        self.add(f, v as u64)
    }
    #[inline]
    fn u32(&mut self, f: FieldInfo<'a>, v: u32) -> ControlFlow<()> {
        self.add(f, v as u64)
    }
    #[inline]
    fn u64(&mut self, f: FieldInfo<'a>, v: u64) -> ControlFlow<()> {
        self.add(f, v)
    }
    #[inline]
    fn f32(&mut self, f: FieldInfo<'a>, v: f32) -> ControlFlow<()> {
        self.add(f, v.to_bits() as u64)
    }
    #[inline]
    fn f64(&mut self, f: FieldInfo<'a>, v: f64) -> ControlFlow<()> {
        self.add(f, v.to_bits())
    }
    #[inline]
    fn string(&mut self, f: FieldInfo<'a>, v: &'a str) -> ControlFlow<()> {
        self.add(f, bytes_val(v.as_bytes()))
    }
    #[inline]
    fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) -> ControlFlow<()> {
        self.add(f, bytes_val(v))
    }
    // Unchecked strings (proto2's) summed as bytes, without a UTF-8 check: the work the
    // C++ arm does (protozero reads a string as a `data_view`).
    #[inline]
    fn unchecked_string(&mut self, f: FieldInfo<'a>, v: &'a [u8]) -> ControlFlow<()> {
        self.add(f, bytes_val(v))
    }
    #[inline]
    fn enum_value(&mut self, f: FieldInfo<'a>, v: EnumValue<'a>) -> ControlFlow<()> {
        self.add(f, v.number as i64 as u64)
    }
    #[inline]
    fn message(&mut self, f: FieldInfo<'a>) -> ControlFlow<(), Descend> {
        self.add(f, 0)?;
        ControlFlow::Continue(Descend::Yes)
    }
    #[inline]
    fn bools<I: Iterator<Item = bool>>(&mut self, f: FieldInfo<'a>, v: I) -> ControlFlow<()> {
        self.add_all(f, v, |x| x as u64)
    }
    #[inline]
    fn i32s<I: Iterator<Item = i32>>(&mut self, f: FieldInfo<'a>, v: I) -> ControlFlow<()> {
        self.add_all(f, v, |x| x as i64 as u64)
    }
    #[inline]
    fn i64s<I: Iterator<Item = i64>>(&mut self, f: FieldInfo<'a>, v: I) -> ControlFlow<()> {
        self.add_all(f, v, |x| x as u64)
    }
    #[inline]
    fn u32s<I: Iterator<Item = u32>>(&mut self, f: FieldInfo<'a>, v: I) -> ControlFlow<()> {
        self.add_all(f, v, |x| x as u64)
    }
    #[inline]
    fn u64s<I: Iterator<Item = u64>>(&mut self, f: FieldInfo<'a>, v: I) -> ControlFlow<()> {
        self.add_all(f, v, |x| x)
    }
    #[inline]
    fn f32s<I: Iterator<Item = f32>>(&mut self, f: FieldInfo<'a>, v: I) -> ControlFlow<()> {
        self.add_all(f, v, |x| x.to_bits() as u64)
    }
    #[inline]
    fn f64s<I: Iterator<Item = f64>>(&mut self, f: FieldInfo<'a>, v: I) -> ControlFlow<()> {
        self.add_all(f, v, |x| x.to_bits())
    }
    #[inline]
    fn enums<I: Iterator<Item = i32>>(&mut self, f: FieldInfo<'a>, v: I, _: &'a EnumType) -> ControlFlow<()> {
        self.add_all(f, v, |x| x as i64 as u64)
    }
}

// ---------------------------------------------------------------------------------------
// protojit, tree.

/// The checksum as a tree [`Visitor`]: `msg.visit(&mut s)`, then `s.0`. Repeated numbers
/// come as slices (one loop each).
#[derive(Default)]
pub struct TreeSum(pub u64);

impl TreeSum {
    #[inline(always)]
    fn add(&mut self, f: FieldInfo<'_>, v: u64) {
        self.0 = self.0.wrapping_add(term(f.number(), v));
    }
    #[inline(always)]
    fn add_all<T: Copy>(&mut self, f: FieldInfo<'_>, v: &[T], to: impl Fn(T) -> u64) {
        let nk = u64::from(f.number()).wrapping_mul(K);
        let mut acc = self.0;
        for &x in v {
            acc = acc.wrapping_add(nk.wrapping_add(to(x)));
        }
        self.0 = acc;
    }
}

impl<'a> Visitor<'a> for TreeSum {
    fn string(&mut self, f: FieldInfo<'a>, v: &'a str) {
        self.add(f, bytes_val(v.as_bytes()))
    }
    fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) {
        self.add(f, bytes_val(v))
    }
    // As `StreamSum`'s: no UTF-8 check the other arms do not make.
    fn unchecked_string(&mut self, f: FieldInfo<'a>, v: &'a [u8]) {
        self.add(f, bytes_val(v))
    }
    fn enum_value(&mut self, f: FieldInfo<'a>, v: EnumValue<'a>) {
        self.add(f, v.number as i64 as u64)
    }
    fn message(&mut self, f: FieldInfo<'a>, _: MessageRef<'a>) -> Descend {
        self.add(f, 0);
        Descend::Yes
    }
    checksum_numbers!();
}

/// The checksum of a decoded protojit tree, through [`TreeSum`].
pub fn tree_sum(m: &MessageRef<'_>) -> u64 {
    let mut s = TreeSum(0);
    m.visit(&mut s);
    s.0
}

// ---------------------------------------------------------------------------------------
// prost's generated structs. A proto2 `optional` is `Option` (counted when `Some`); a
// `required` scalar is a plain field (counted always: the payloads all carry theirs).

/// Accumulator for the prost walks.
struct Acc(u64);

impl Acc {
    #[inline(always)]
    fn v(&mut self, n: u32, v: u64) {
        self.0 = self.0.wrapping_add(term(n, v));
    }
    #[inline(always)]
    fn opt<T: Copy>(&mut self, n: u32, v: Option<T>, to: impl Fn(T) -> u64) {
        if let Some(x) = v {
            self.v(n, to(x));
        }
    }
    #[inline(always)]
    fn all<T: Copy>(&mut self, n: u32, v: &[T], to: impl Fn(T) -> u64) {
        let nk = u64::from(n).wrapping_mul(K);
        let mut acc = self.0;
        for &x in v {
            acc = acc.wrapping_add(nk.wrapping_add(to(x)));
        }
        self.0 = acc;
    }
    #[inline(always)]
    fn msg(&mut self, n: u32) {
        self.v(n, 0);
    }
}

fn i32v(x: i32) -> u64 {
    x as i64 as u64
}
fn i64v(x: i64) -> u64 {
    x as u64
}
fn u32v(x: u32) -> u64 {
    x as u64
}

fn osm_info(a: &mut Acc, i: &osmpbf::Info) {
    a.opt(1, i.version, i32v);
    a.opt(2, i.timestamp, i64v);
    a.opt(3, i.changeset, i64v);
    a.opt(4, i.uid, i32v);
    a.opt(5, i.user_sid, u32v);
    a.opt(6, i.visible, |b| b as u64);
}

/// The checksum of a prost `OSMPBF.PrimitiveBlock`.
pub fn prost_primitive_block(b: &osmpbf::PrimitiveBlock) -> u64 {
    let mut a = Acc(0);
    a.msg(1);
    for s in &b.stringtable.s {
        a.v(1, bytes_val(s));
    }
    for g in &b.primitivegroup {
        a.msg(2);
        for n in &g.nodes {
            a.msg(1);
            a.v(1, n.id as u64);
            a.all(2, &n.keys, u32v);
            a.all(3, &n.vals, u32v);
            if let Some(i) = &n.info {
                a.msg(4);
                osm_info(&mut a, i);
            }
            a.v(8, n.lat as u64);
            a.v(9, n.lon as u64);
        }
        if let Some(d) = &g.dense {
            a.msg(2);
            a.all(1, &d.id, i64v);
            if let Some(i) = &d.denseinfo {
                a.msg(5);
                a.all(1, &i.version, i32v);
                a.all(2, &i.timestamp, i64v);
                a.all(3, &i.changeset, i64v);
                a.all(4, &i.uid, i32v);
                a.all(5, &i.user_sid, i32v);
                a.all(6, &i.visible, |b| b as u64);
            }
            a.all(8, &d.lat, i64v);
            a.all(9, &d.lon, i64v);
            a.all(10, &d.keys_vals, i32v);
        }
        for w in &g.ways {
            a.msg(3);
            a.v(1, w.id as u64);
            a.all(2, &w.keys, u32v);
            a.all(3, &w.vals, u32v);
            if let Some(i) = &w.info {
                a.msg(4);
                osm_info(&mut a, i);
            }
            a.all(8, &w.refs, i64v);
            a.all(9, &w.lat, i64v);
            a.all(10, &w.lon, i64v);
        }
        for r in &g.relations {
            a.msg(4);
            a.v(1, r.id as u64);
            a.all(2, &r.keys, u32v);
            a.all(3, &r.vals, u32v);
            if let Some(i) = &r.info {
                a.msg(4);
                osm_info(&mut a, i);
            }
            a.all(8, &r.roles_sid, i32v);
            a.all(9, &r.memids, i64v);
            a.all(10, &r.types, i32v);
        }
        for c in &g.changesets {
            a.msg(5);
            a.v(1, c.id as u64);
        }
    }
    a.opt(17, b.granularity, i32v);
    a.opt(18, b.date_granularity, i32v);
    a.opt(19, b.lat_offset, i64v);
    a.opt(20, b.lon_offset, i64v);
    a.0
}

/// The checksum of a prost `OSMPBF.HeaderBlock` (an OSM file's first block: small, with
/// two-byte tags past field 15).
pub fn prost_header_block(h: &osmpbf::HeaderBlock) -> u64 {
    let mut a = Acc(0);
    if let Some(b) = &h.bbox {
        a.msg(1);
        a.v(1, b.left as u64);
        a.v(2, b.right as u64);
        a.v(3, b.top as u64);
        a.v(4, b.bottom as u64);
    }
    for f in &h.required_features {
        a.v(4, bytes_val(f.as_bytes()));
    }
    for f in &h.optional_features {
        a.v(5, bytes_val(f.as_bytes()));
    }
    if let Some(s) = &h.writingprogram {
        a.v(16, bytes_val(s.as_bytes()));
    }
    if let Some(s) = &h.source {
        a.v(17, bytes_val(s.as_bytes()));
    }
    a.opt(32, h.osmosis_replication_timestamp, i64v);
    a.opt(33, h.osmosis_replication_sequence_number, i64v);
    if let Some(s) = &h.osmosis_replication_base_url {
        a.v(34, bytes_val(s.as_bytes()));
    }
    a.0
}

/// The checksum of a prost `vector_tile.Tile`.
pub fn prost_tile(t: &vector_tile::Tile) -> u64 {
    let mut a = Acc(0);
    for l in &t.layers {
        a.msg(3);
        a.v(15, u64::from(l.version));
        a.v(1, bytes_val(l.name.as_bytes()));
        for f in &l.features {
            a.msg(2);
            a.opt(1, f.id, |x| x);
            a.all(2, &f.tags, u32v);
            a.opt(3, f.r#type, i32v);
            a.all(4, &f.geometry, u32v);
        }
        for k in &l.keys {
            a.v(3, bytes_val(k.as_bytes()));
        }
        for v in &l.values {
            a.msg(4);
            if let Some(s) = &v.string_value {
                a.v(1, bytes_val(s.as_bytes()));
            }
            a.opt(2, v.float_value, |x| x.to_bits() as u64);
            a.opt(3, v.double_value, |x| x.to_bits());
            a.opt(4, v.int_value, i64v);
            a.opt(5, v.uint_value, |x| x);
            a.opt(6, v.sint_value, i64v);
            a.opt(7, v.bool_value, |b| b as u64);
        }
        a.opt(5, l.extent, u32v);
    }
    a.0
}

/// Which of the two schemas a payload is, for the prost arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `OSMPBF.PrimitiveBlock`.
    OsmBlock,
    /// `OSMPBF.HeaderBlock`.
    OsmHeader,
    /// `vector_tile.Tile`.
    Tile,
}

impl Kind {
    /// The root message's full name.
    pub fn message(self) -> &'static str {
        match self {
            Kind::OsmBlock => "OSMPBF.PrimitiveBlock",
            Kind::OsmHeader => "OSMPBF.HeaderBlock",
            Kind::Tile => "vector_tile.Tile",
        }
    }
    /// The `.proto` file (in the shared corpus) that declares it.
    pub fn proto(self) -> &'static str {
        match self {
            Kind::OsmBlock | Kind::OsmHeader => "osmformat.proto",
            Kind::Tile => "vector_tile.proto",
        }
    }
    /// Its name on the timing programs' command lines (`--kind`, the protozero harness).
    pub fn arg(self) -> &'static str {
        match self {
            Kind::OsmBlock => "osm",
            Kind::OsmHeader => "osm_header",
            Kind::Tile => "mvt",
        }
    }
    /// The kind named `arg` (see [`Kind::arg`]).
    pub fn from_arg(arg: &str) -> Option<Kind> {
        [Kind::OsmBlock, Kind::OsmHeader, Kind::Tile].into_iter().find(|k| k.arg() == arg)
    }
}

/// Decodes `bytes` with prost's generated code and returns the checksum of the struct.
pub fn prost_sum(kind: Kind, bytes: &[u8]) -> Result<u64, prost::DecodeError> {
    use prost::Message as _;
    Ok(match kind {
        Kind::OsmBlock => prost_primitive_block(&osmpbf::PrimitiveBlock::decode(bytes)?),
        Kind::OsmHeader => prost_header_block(&osmpbf::HeaderBlock::decode(bytes)?),
        Kind::Tile => prost_tile(&vector_tile::Tile::decode(bytes)?),
    })
}

/// (name, file in the shared corpus, kind) of the streaming benchmark's payloads.
pub const STREAM_CASES: &[(&str, &str, Kind)] = &[
    ("osm_header", "liechtenstein.block0.headerblock.bin", Kind::OsmHeader),
    ("osm_dense", "liechtenstein.block1.primitiveblock-dense.bin", Kind::OsmBlock),
    ("osm_ways", "liechtenstein.block40.primitiveblock-ways.bin", Kind::OsmBlock),
    ("osm_relations", "liechtenstein.block45.primitiveblock-relations.bin", Kind::OsmBlock),
    ("mvt_chicago", "mvt-chicago-13-2101-3044.mvt", Kind::Tile),
    ("mvt_sanfrancisco", "mvt-sanfrancisco-15-5238-12666.mvt", Kind::Tile),
    ("mvt_astana", "mvt-osmqa-astana-12-2860-1368.mvt", Kind::Tile),
    ("mvt_vtjs", "vector-tile-js-14-8801-5371.vector.pbf", Kind::Tile),
];
