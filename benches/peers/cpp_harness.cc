// libprotobuf (C++) decode timing for benches/peers/run.sh.
//
//   cpp_harness MODE TYPE FILE SECONDS [DESCRIPTOR_SET]
//   cpp_harness space TYPE FILE 0
//
// MODE: new      generated code, a fresh heap message per parse (prototype->New()), deleted
//       arena    generated code, a fresh google::protobuf::Arena per parse
//       reuse    generated code, one message parsed into again and again (Clear + parse)
//       dynamic  DynamicMessage from DESCRIPTOR_SET (a serialized FileDescriptorSet), fresh
//                message per parse
//       space    no timing: parses once into a fresh Arena and prints the bytes the Arena
//                took from the system (SpaceAllocated) and the heap bytes held in all while
//                the message lives (malloc's count: string buffers outside the Arena too)
// Generated types are found by full name in the generated pool (every .pb.cc of the peer
// schemas is linked in). Method as protojit's examples/decode_timing.rs: calibrate a batch to
// ~50 ms, run batches for SECONDS, print the median batch throughput in MB/s (10^6 B/s).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <malloc.h>

#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

using namespace google::protobuf;
using Clock = std::chrono::steady_clock;

static std::string slurp(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
  return std::string(std::istreambuf_iterator<char>(f), {});
}

int main(int argc, char** argv) {
  if (argc < 5) { fprintf(stderr, "usage: %s new|arena|reuse|dynamic TYPE FILE SECONDS [FDS]\n", argv[0]); return 2; }
  std::string mode = argv[1], type = argv[2];
  std::string data = slurp(argv[3]);
  double seconds = atof(argv[4]);

  const Message* proto = nullptr;
  DescriptorPool pool;
  std::unique_ptr<DynamicMessageFactory> factory;
  if (mode == "dynamic") {
    if (argc < 6) { fprintf(stderr, "dynamic needs a descriptor set\n"); return 2; }
    FileDescriptorSet fds;
    if (!fds.ParseFromString(slurp(argv[5]))) { fprintf(stderr, "bad descriptor set\n"); return 1; }
    for (const auto& f : fds.file())
      if (!pool.BuildFile(f)) { fprintf(stderr, "cannot build %s\n", f.name().c_str()); return 1; }
    const Descriptor* d = pool.FindMessageTypeByName(type);
    if (!d) { fprintf(stderr, "no type %s in the descriptor set\n", type.c_str()); return 1; }
    factory.reset(new DynamicMessageFactory(&pool));
    proto = factory->GetPrototype(d);
  } else {
    const Descriptor* d = DescriptorPool::generated_pool()->FindMessageTypeByName(type);
    if (!d) { fprintf(stderr, "no generated type %s\n", type.c_str()); return 1; }
    proto = MessageFactory::generated_factory()->GetPrototype(d);
  }

  if (mode == "space") {
    auto heap = [] {
      struct mallinfo2 mi = mallinfo2();
      return mi.uordblks + mi.hblkhd;
    };
    size_t before = heap();
    Arena arena;
    Message* m = proto->New(&arena);
    if (!m->ParseFromArray(data.data(), (int)data.size())) { fprintf(stderr, "parse failed\n"); return 1; }
    printf("%zu %zu\n", (size_t)arena.SpaceAllocated(), heap() - before);
    return 0;
  }

  std::unique_ptr<Message> reused(proto->New());
  auto once = [&]() -> bool {
    if (mode == "new" || mode == "dynamic") {
      std::unique_ptr<Message> m(proto->New());
      return m->ParseFromArray(data.data(), (int)data.size());
    } else if (mode == "arena") {
      Arena arena;
      Message* m = proto->New(&arena);
      return m->ParseFromArray(data.data(), (int)data.size());
    } else {
      reused->Clear();
      return reused->ParseFromArray(data.data(), (int)data.size());
    }
  };
  if (mode != "new" && mode != "arena" && mode != "reuse" && mode != "dynamic") { fprintf(stderr, "bad mode\n"); return 2; }
  if (!once()) { fprintf(stderr, "parse failed\n"); return 1; }

  long n = 1;
  for (;;) {
    auto t = Clock::now();
    for (long i = 0; i < n; i++) once();
    if (Clock::now() - t >= std::chrono::milliseconds(50) || n >= (1L << 30)) break;
    n *= 2;
  }
  std::vector<double> rates;
  auto start = Clock::now();
  while (rates.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    auto t = Clock::now();
    for (long i = 0; i < n; i++) once();
    double s = std::chrono::duration<double>(Clock::now() - t).count();
    rates.push_back((double)data.size() * n / s / 1e6);
  }
  std::sort(rates.begin(), rates.end());
  printf("%.1f\n", rates[rates.size() / 2]);
  return 0;
}
