// The five symbols protobuf's prebuilt conformance_test_runner (Ubuntu 24.04: glibc 2.39, GCC 13)
// needs and Debian bookworm (glibc 2.36, GCC 12's libstdc++) lacks; preloaded (LD_PRELOAD) into
// the runner after patch_verneed.py has retargeted the versions that name them.
// Build: g++ -shared -fPIC -O2 -o libshim.so shim.cc
#include <cstdlib>
#include <iostream>  // its static std::ios_base::Init constructs std::cout and the other streams

extern "C" {
// C23's strtol family differs from C17's only in also reading "0b"/"0B" prefixes (base 0 or 2);
// the C17 functions answer the same for everything else.
long __isoc23_strtol(const char* s, char** end, int base) { return strtol(s, end, base); }
long long __isoc23_strtoll(const char* s, char** end, int base) { return strtoll(s, end, base); }
unsigned long __isoc23_strtoul(const char* s, char** end, int base) { return strtoul(s, end, base); }
unsigned long long __isoc23_strtoull(const char* s, char** end, int base) { return strtoull(s, end, base); }
}

namespace std {
// GCC 13's <iostream> only references this symbol, to require a libstdc++ that constructs the
// standard streams itself, instead of defining a static ios_base::Init in every file. GCC 12's
// libstdc++ does not, so the static ios_base::Init that <iostream> puts in this file does it.
void ios_base_library_init() {}
}  // namespace std
