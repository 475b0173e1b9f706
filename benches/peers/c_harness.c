/* protobuf-c decode timing for benches/peers/run.sh.
 *
 *   c_harness TYPE FILE SECONDS
 *
 * protobuf_c_message_unpack + protobuf_c_message_free_unpacked with the generated
 * descriptor of TYPE (found by full name in descriptors.h, which run.sh writes from the
 * generated .pb-c.h files). Method as protojit's examples/decode_timing.rs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <protobuf-c/protobuf-c.h>
#include "descriptors.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc < 4) { fprintf(stderr, "usage: %s TYPE FILE SECONDS\n", argv[0]); return 2; }
  const ProtobufCMessageDescriptor* desc = NULL;
  for (size_t i = 0; i < sizeof(DESCRIPTORS) / sizeof(DESCRIPTORS[0]); i++)
    if (strcmp(DESCRIPTORS[i]->name, argv[1]) == 0) desc = DESCRIPTORS[i];
  if (!desc) { fprintf(stderr, "no protobuf-c type %s\n", argv[1]); return 1; }
  FILE* f = fopen(argv[2], "rb");
  if (!f) { fprintf(stderr, "cannot read %s\n", argv[2]); return 1; }
  fseek(f, 0, SEEK_END);
  size_t len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* data = malloc(len ? len : 1);
  if (fread(data, 1, len, f) != len) { fprintf(stderr, "short read\n"); return 1; }
  fclose(f);
  double seconds = atof(argv[3]);

  ProtobufCMessage* m = protobuf_c_message_unpack(desc, NULL, len, data);
  if (!m) { fprintf(stderr, "unpack failed\n"); return 1; }
  protobuf_c_message_free_unpacked(m, NULL);

  long n = 1;
  for (;;) {
    double t = now();
    for (long i = 0; i < n; i++) protobuf_c_message_free_unpacked(protobuf_c_message_unpack(desc, NULL, len, data), NULL);
    if (now() - t >= 0.05 || n >= (1L << 30)) break;
    n *= 2;
  }
  double rates[4096];
  size_t k = 0;
  double start = now();
  while (k < 3 || (now() - start < seconds && k < 4096)) {
    double t = now();
    for (long i = 0; i < n; i++) protobuf_c_message_free_unpacked(protobuf_c_message_unpack(desc, NULL, len, data), NULL);
    rates[k++] = (double)len * n / (now() - t) / 1e6;
  }
  qsort(rates, k, sizeof(double), cmp);
  printf("%.1f\n", rates[k / 2]);
  return 0;
}
