// protozero consumer of OSM PrimitiveBlocks and Mapbox vector tiles: reads every field and sums it, the peer of protojit's streaming visitor (issue 29; benches/peers/stream.sh).
//
//   protozero_harness osm|osm_header|mvt FILE SECONDS     prints "MB/s checksum"
//   protozero_harness osm|osm_header|mvt FILE 0           prints "0 checksum" (one pass, no timing)
//
// The checksum is the one in benches/support/src/stream_sum.rs, computed the same way by
// every arm: a wrapping u64 sum over every value and every nested message, at every depth,
//   value v of field n:            n*K + val(v)
//   nested message in field n:     n*K
//   K = 0x9E3779B97F4A7C15
//   val: integers and enum numbers as u64 (signed sign-extended, sint zigzag-decoded),
//        bool 0/1, float/double IEEE bits, string/bytes length + first byte * 2^32.
// Packed arrays are decoded element by element (protozero's packed iterators), never
// handed over as raw bytes. Fields are matched on number and wire type
// (tag_and_type), as idiomatic protozero code (libosmium, vtzero) does; like them, the
// repeated scalar fields are read in their packed form only (the schemas declare them
// packed, and every payload writes them so), and anything else is skipped.
//
// Timing method as cpp_harness.cc and protojit's examples/stream_timing.rs: calibrate a
// batch to ~50 ms, run batches for SECONDS, print the median batch throughput in MB/s.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <protozero/exception.hpp>
#include <protozero/pbf_reader.hpp>

using protozero::pbf_reader;
using protozero::pbf_wire_type;
using protozero::tag_and_type;
using Clock = std::chrono::steady_clock;

static constexpr uint64_t K = 0x9E3779B97F4A7C15ull;
static constexpr uint32_t VARINT(uint32_t n) { return tag_and_type(n, pbf_wire_type::varint); }
static constexpr uint32_t LEN(uint32_t n) { return tag_and_type(n, pbf_wire_type::length_delimited); }
static constexpr uint32_t I32(uint32_t n) { return tag_and_type(n, pbf_wire_type::fixed32); }
static constexpr uint32_t I64(uint32_t n) { return tag_and_type(n, pbf_wire_type::fixed64); }

struct Sum {
  uint64_t a = 0;
  inline void v(uint32_t n, uint64_t x) { a += n * K + x; }
  inline void msg(uint32_t n) { a += n * K; }
  inline void str(uint32_t n, protozero::data_view d) {
    a += n * K + d.size() + (d.size() ? uint64_t((unsigned char)d.data()[0]) << 32 : 0);
  }
  template <typename R>
  inline void all(uint32_t n, R range) {  // each element as u64 (signed: sign-extended)
    const uint64_t nk = n * K;
    uint64_t acc = a;
    for (auto x : range) acc += nk + uint64_t(int64_t(x));
    a = acc;
  }
  template <typename R>
  inline void all_u(uint32_t n, R range) {  // unsigned elements, zero-extended
    const uint64_t nk = n * K;
    uint64_t acc = a;
    for (auto x : range) acc += nk + uint64_t(x);
    a = acc;
  }
};

static inline uint64_t s64(int64_t x) { return uint64_t(x); }

// ---- OSMPBF (osmformat.proto) ----------------------------------------------------------

static void osm_info(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case VARINT(1): s.v(1, s64(m.get_int32())); break;   // version
      case VARINT(2): s.v(2, s64(m.get_int64())); break;   // timestamp
      case VARINT(3): s.v(3, s64(m.get_int64())); break;   // changeset
      case VARINT(4): s.v(4, s64(m.get_int32())); break;   // uid
      case VARINT(5): s.v(5, m.get_uint32()); break;       // user_sid
      case VARINT(6): s.v(6, m.get_bool()); break;         // visible
      default: m.skip();
    }
  }
}

static void osm_dense_info(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case LEN(1): s.all(1, m.get_packed_int32()); break;    // version
      case LEN(2): s.all(2, m.get_packed_sint64()); break;   // timestamp
      case LEN(3): s.all(3, m.get_packed_sint64()); break;   // changeset
      case LEN(4): s.all(4, m.get_packed_sint32()); break;   // uid
      case LEN(5): s.all(5, m.get_packed_sint32()); break;   // user_sid
      case LEN(6): s.all_u(6, m.get_packed_bool()); break;   // visible
      default: m.skip();
    }
  }
}

static void osm_dense(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case LEN(1): s.all(1, m.get_packed_sint64()); break;   // id
      case LEN(5): s.msg(5); osm_dense_info(s, m.get_message()); break;
      case LEN(8): s.all(8, m.get_packed_sint64()); break;   // lat
      case LEN(9): s.all(9, m.get_packed_sint64()); break;   // lon
      case LEN(10): s.all(10, m.get_packed_int32()); break;  // keys_vals
      default: m.skip();
    }
  }
}

static void osm_node(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case VARINT(1): s.v(1, s64(m.get_sint64())); break;  // id
      case LEN(2): s.all_u(2, m.get_packed_uint32()); break;
      case LEN(3): s.all_u(3, m.get_packed_uint32()); break;
      case LEN(4): s.msg(4); osm_info(s, m.get_message()); break;
      case VARINT(8): s.v(8, s64(m.get_sint64())); break;  // lat
      case VARINT(9): s.v(9, s64(m.get_sint64())); break;  // lon
      default: m.skip();
    }
  }
}

static void osm_way(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case VARINT(1): s.v(1, s64(m.get_int64())); break;  // id
      case LEN(2): s.all_u(2, m.get_packed_uint32()); break;
      case LEN(3): s.all_u(3, m.get_packed_uint32()); break;
      case LEN(4): s.msg(4); osm_info(s, m.get_message()); break;
      case LEN(8): s.all(8, m.get_packed_sint64()); break;    // refs
      case LEN(9): s.all(9, m.get_packed_sint64()); break;    // lat
      case LEN(10): s.all(10, m.get_packed_sint64()); break;  // lon
      default: m.skip();
    }
  }
}

static void osm_relation(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case VARINT(1): s.v(1, s64(m.get_int64())); break;  // id
      case LEN(2): s.all_u(2, m.get_packed_uint32()); break;
      case LEN(3): s.all_u(3, m.get_packed_uint32()); break;
      case LEN(4): s.msg(4); osm_info(s, m.get_message()); break;
      case LEN(8): s.all(8, m.get_packed_int32()); break;    // roles_sid
      case LEN(9): s.all(9, m.get_packed_sint64()); break;   // memids
      case LEN(10): s.all(10, m.get_packed_enum()); break;   // types
      default: m.skip();
    }
  }
}

static void osm_group(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case LEN(1): s.msg(1); osm_node(s, m.get_message()); break;
      case LEN(2): s.msg(2); osm_dense(s, m.get_message()); break;
      case LEN(3): s.msg(3); osm_way(s, m.get_message()); break;
      case LEN(4): s.msg(4); osm_relation(s, m.get_message()); break;
      case LEN(5): {  // changeset
        s.msg(5);
        pbf_reader c = m.get_message();
        while (c.next()) {
          if (c.tag_and_type() == VARINT(1)) s.v(1, s64(c.get_int64()));
          else c.skip();
        }
        break;
      }
      default: m.skip();
    }
  }
}

static uint64_t osm_block(const char* data, size_t size) {
  Sum s;
  pbf_reader m{data, size};
  while (m.next()) {
    switch (m.tag_and_type()) {
      case LEN(1): {  // stringtable
        s.msg(1);
        pbf_reader t = m.get_message();
        while (t.next()) {
          if (t.tag_and_type() == LEN(1)) s.str(1, t.get_view());
          else t.skip();
        }
        break;
      }
      case LEN(2): s.msg(2); osm_group(s, m.get_message()); break;
      case VARINT(17): s.v(17, s64(m.get_int32())); break;  // granularity
      case VARINT(18): s.v(18, s64(m.get_int32())); break;  // date_granularity
      case VARINT(19): s.v(19, s64(m.get_int64())); break;  // lat_offset
      case VARINT(20): s.v(20, s64(m.get_int64())); break;  // lon_offset
      default: m.skip();
    }
  }
  return s.a;
}

// ---- vector_tile (vector_tile.proto) -----------------------------------------------------

static void mvt_value(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case LEN(1): s.str(1, m.get_view()); break;
      case I32(2): { float f = m.get_float(); uint32_t b; memcpy(&b, &f, 4); s.v(2, b); break; }
      case I64(3): { double d = m.get_double(); uint64_t b; memcpy(&b, &d, 8); s.v(3, b); break; }
      case VARINT(4): s.v(4, s64(m.get_int64())); break;
      case VARINT(5): s.v(5, m.get_uint64()); break;
      case VARINT(6): s.v(6, s64(m.get_sint64())); break;
      case VARINT(7): s.v(7, m.get_bool()); break;
      default: m.skip();  // extensions 8 to max
    }
  }
}

static void mvt_feature(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case VARINT(1): s.v(1, m.get_uint64()); break;           // id
      case LEN(2): s.all_u(2, m.get_packed_uint32()); break;    // tags
      case VARINT(3): s.v(3, s64(m.get_enum())); break;        // type
      case LEN(4): s.all_u(4, m.get_packed_uint32()); break;    // geometry
      default: m.skip();
    }
  }
}

static void mvt_layer(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case VARINT(15): s.v(15, m.get_uint32()); break;  // version
      case LEN(1): s.str(1, m.get_view()); break;       // name
      case LEN(2): s.msg(2); mvt_feature(s, m.get_message()); break;
      case LEN(3): s.str(3, m.get_view()); break;       // keys
      case LEN(4): s.msg(4); mvt_value(s, m.get_message()); break;
      case VARINT(5): s.v(5, m.get_uint32()); break;    // extent
      default: m.skip();
    }
  }
}

static uint64_t mvt_tile(const char* data, size_t size) {
  Sum s;
  pbf_reader m{data, size};
  while (m.next()) {
    if (m.tag_and_type() == LEN(3)) {
      s.msg(3);
      mvt_layer(s, m.get_message());
    } else {
      m.skip();
    }
  }
  return s.a;
}

// ---- OSMPBF HeaderBlock (an OSM file's first block) ---------------------------------------

static void osm_bbox(Sum& s, pbf_reader m) {
  while (m.next()) {
    switch (m.tag_and_type()) {
      case VARINT(1): s.v(1, s64(m.get_sint64())); break;  // left
      case VARINT(2): s.v(2, s64(m.get_sint64())); break;  // right
      case VARINT(3): s.v(3, s64(m.get_sint64())); break;  // top
      case VARINT(4): s.v(4, s64(m.get_sint64())); break;  // bottom
      default: m.skip();
    }
  }
}

static uint64_t osm_header(const char* data, size_t size) {
  Sum s;
  pbf_reader m{data, size};
  while (m.next()) {
    switch (m.tag_and_type()) {
      case LEN(1): s.msg(1); osm_bbox(s, m.get_message()); break;
      case LEN(4): s.str(4, m.get_view()); break;    // required_features
      case LEN(5): s.str(5, m.get_view()); break;    // optional_features
      case LEN(16): s.str(16, m.get_view()); break;  // writingprogram
      case LEN(17): s.str(17, m.get_view()); break;  // source
      case VARINT(32): s.v(32, s64(m.get_int64())); break;  // osmosis_replication_timestamp
      case VARINT(33): s.v(33, s64(m.get_int64())); break;  // osmosis_replication_sequence_number
      case LEN(34): s.str(34, m.get_view()); break;  // osmosis_replication_base_url
      default: m.skip();
    }
  }
  return s.a;
}

// ---- timing ------------------------------------------------------------------------------

static std::string slurp(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
  return std::string(std::istreambuf_iterator<char>(f), {});
}

int main(int argc, char** argv) {
  if (argc != 4) { fprintf(stderr, "usage: %s osm|osm_header|mvt FILE SECONDS\n", argv[0]); return 2; }
  std::string kind = argv[1];
  uint64_t (*walk)(const char*, size_t) = kind == "osm" ? osm_block
                                          : kind == "osm_header" ? osm_header
                                          : kind == "mvt" ? mvt_tile : nullptr;
  if (!walk) { fprintf(stderr, "kind must be osm, osm_header or mvt, not %s\n", argv[1]); return 2; }
  std::string data = slurp(argv[2]);
  double seconds = atof(argv[3]);
  auto once = [&]() { return walk(data.data(), data.size()); };
  uint64_t sum;
  try {
    sum = once();
  } catch (const protozero::exception& e) {
    fprintf(stderr, "%s: malformed: %s\n", argv[2], e.what());
    return 1;
  }
  if (seconds <= 0) { printf("0 %" PRIu64 "\n", sum); return 0; }

  volatile uint64_t sink = 0;
  long n = 1;
  for (;;) {
    auto t = Clock::now();
    for (long i = 0; i < n; i++) sink = sink + once();
    if (Clock::now() - t >= std::chrono::milliseconds(50) || n >= (1L << 30)) break;
    n *= 2;
  }
  std::vector<double> rates;
  auto start = Clock::now();
  while (rates.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    auto t = Clock::now();
    for (long i = 0; i < n; i++) sink = sink + once();
    double s = std::chrono::duration<double>(Clock::now() - t).count();
    rates.push_back((double)data.size() * n / s / 1e6);
  }
  std::sort(rates.begin(), rates.end());
  printf("%.1f %" PRIu64 "\n", rates[rates.size() / 2], sum);
  return 0;
}
