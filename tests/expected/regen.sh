#!/usr/bin/env bash
# Regenerates the expected outputs in tests/expected/ with `protoc --decode` and `protoc --decode_raw`, the
# references that tests/text_format.rs, cli/tests/cli.rs and cli/tests/raw.rs compare protojit against.
#
#   tests/expected/regen.sh            (from anywhere; needs protoc and python3)
#   PROTOC=/path/to/protoc tests/expected/regen.sh
#
# The committed files were made with protoc 3.21.12 (Debian protobuf-compiler, with
# libprotobuf-dev for the well-known-type imports); another protoc version may print
# differently, so the script says which version ran.
#
# 1. Every corpus payload listed in `PAYLOADS` (tests/common/payloads.rs) is decoded with
#      protoc -I<corpus> --decode=<type> <corpus>/<proto> < <corpus>/<payload>
#    where <corpus> is ../shared/corpus beside the repository. Output of at most
#    $LIMIT bytes is stored as tests/expected/<payload>.txt; larger output is stored as
#    tests/expected/<payload>.digest: its length and 64-bit FNV-1a digest
#    ("len N" / "fnv1a64 HEX"), which the test computes the same way.
# 2. Every case in tests/schemas/textcases.cases (hex payloads) is decoded with
#      protoc -Itests/schemas --decode=<type> tests/schemas/<file> < <payload bytes>
#    into tests/expected/textcases/<case>.txt.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
corpus=$(cd "$root/../shared/corpus" && pwd)
schemas=$root/tests/schemas
protoc=${PROTOC:-protoc}
LIMIT=3000000

echo "using $("$protoc" --version) ($(command -v "$protoc"))"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$root/tests/common/payloads.rs" >"$work/payloads" <<'EOF'
import re, sys
src = open(sys.argv[1]).read()
block = re.search(r"pub const PAYLOADS[^=]*=\s*&\[(.*?)\n\];", src, re.S).group(1)
rows = re.findall(r'\(\s*"([^"]+)",\s*"([^"]+)",\s*"([^"]+)"\s*,?\s*\)', block)
assert rows, "no PAYLOADS rows found"
for row in rows:
    print(" ".join(row))
EOF

while read -r proto type payload; do
  out=$here/$payload.txt
  "$protoc" -I"$corpus" --decode="$type" "$corpus/$proto" <"$corpus/$payload" >"$work/out" 2>"$work/stderr" || {
    cat "$work/stderr" >&2; echo "protoc failed on $payload" >&2; exit 1; }
  size=$(stat -c %s "$work/out")
  if [ "$size" -le "$LIMIT" ]; then
    mv "$work/out" "$out"
    rm -f "$here/$payload.digest"
    echo "$payload: $size bytes"
  else
    python3 - "$work/out" >"$here/$payload.digest" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
h = 0xcbf29ce484222325
for b in data:
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print(f"len {len(data)}")
print(f"fnv1a64 {h:016x}")
EOF
    rm -f "$out"
    echo "$payload: $size bytes (stored as digest)"
  fi
done <"$work/payloads"

# Text-format edge cases: split the manifest into payload files, then decode each.
python3 - "$schemas/textcases.cases" "$work" <<'EOF'
import sys
cases, work = sys.argv[1], sys.argv[2]
current = None
names = []
for line in open(cases):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    if line.startswith("=="):
        name, proto, type_ = line[2:].split()[:3]
        names.append(f"{name} {proto} {type_}")
        current = open(f"{work}/{name}.bin", "wb")
        continue
    for tok in line.split():
        current.write(bytes.fromhex(tok))
open(f"{work}/cases", "w").write("\n".join(names) + "\n")
EOF
rm -rf "$here/textcases"
mkdir -p "$here/textcases"
while read -r name proto type; do
  "$protoc" -I"$schemas" --decode="$type" "$schemas/$proto" <"$work/$name.bin" >"$here/textcases/$name.txt" 2>"$work/stderr" || {
    cat "$work/stderr" >&2; echo "protoc failed on case $name" >&2; exit 1; }
  echo "textcases/$name: $(stat -c %s "$here/textcases/$name.txt") bytes"
done <"$work/cases"

# 3. `protoc --decode_raw` (no schema) on every corpus payload of `PAYLOADS`, plus the OSM
#    sample file (a stream of 4-byte-length-prefixed blobs, which protoc rejects):
#      protoc --decode_raw < <corpus>/<payload>
#    into tests/expected/raw/<payload>.txt (or .digest past $RAW_LIMIT bytes, as above);
#    when protoc fails ("Failed to parse input.", exit 1), its stderr goes to
#    tests/expected/raw/<payload>.fails instead. cli/tests/raw.rs compares
#    `protojit decode-raw` against these.
# 4. Raw edge cases: every payload of tests/schemas/textcases.cases, and the generated
#    cases below (nesting at protoc's limits, malformed input), stored as
#    tests/expected/raw/cases/<case>.bin with protoc's output in <case>.txt, or its stderr
#    in <case>.fails when it rejects the input.
RAW_LIMIT=400000
rm -rf "$here/raw"
mkdir -p "$here/raw/cases"
digest() {
  python3 - "$1" <<'PYEOF'
import sys
data = open(sys.argv[1], "rb").read()
h = 0xcbf29ce484222325
for b in data:
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print(f"len {len(data)}")
print(f"fnv1a64 {h:016x}")
PYEOF
}
# Decodes $1 with --decode_raw into $2.txt / $2.digest / $2.fails.
raw_one() {
  if "$protoc" --decode_raw <"$1" >"$work/out" 2>"$work/stderr"; then
    size=$(stat -c %s "$work/out")
    if [ "$size" -le "$RAW_LIMIT" ]; then
      mv "$work/out" "$2.txt"
      echo "raw/${2#"$here/raw/"}: $size bytes"
    else
      digest "$work/out" >"$2.digest"
      echo "raw/${2#"$here/raw/"}: $size bytes (stored as digest)"
    fi
  else
    cp "$work/stderr" "$2.fails"
    echo "raw/${2#"$here/raw/"}: protoc fails: $(head -c 200 "$work/stderr")"
  fi
}
{ cut -d' ' -f3 "$work/payloads"; echo osm-binary-sample.osm.pbf; } | while read -r payload; do
  raw_one "$corpus/$payload" "$here/raw/$payload"
done
python3 - "$here/raw/cases" <<'PYEOF'
import sys
out = sys.argv[1]
def varint(n):
    b = b""
    while True:
        x = n & 0x7F
        n >>= 7
        if n:
            b += bytes([x | 0x80])
        else:
            return b + bytes([x])
def nested_len(levels):
    m = b"\x08\x01"
    for _ in range(levels):
        m = b"\x0a" + varint(len(m)) + m
    return m
cases = {
    "empty": b"",
    "groups_100": b"\x0b" * 100 + b"\x0c" * 100,
    "groups_101": b"\x0b" * 101 + b"\x0c" * 101,
    "nested_len_10": nested_len(10),
    "nested_len_11": nested_len(11),
    "nested_len_12": nested_len(12),
    "group_in_len": b"\x12\x04\x0b\x08\x01\x0c",
    "all_wire_types": b"\x08\x96\x01\x11" + bytes(range(8)) + b"\x1a\x03abc\x23\x28\x05\x24\x2d\x01\x02\x03\x04",
    "negative_varint": b"\x08" + b"\xff" * 9 + b"\x01",
    "string_not_message": b"\x0a\x05hello\x12\x02\x08\x01\x1a\x00",
    "escapes": b"\x0a\x08\x00\n\r\t\"'\\\xff",
    "truncated_varint": b"\x08\x96",
    "truncated_len": b"\x0a\x09hi",
    "truncated_fixed64": b"\x09\x01\x02\x03",
    "field_zero": b"\x00\x01",
    "wire_type_6": b"\x0e\x01",
    "wire_type_7": b"\x0f\x01",
    "end_group_top": b"\x08\x01\x0c",
    "unterminated_group": b"\x0b\x08\x01",
    "mismatched_end_group": b"\x0b\x08\x01\x14",
    "varint_11_bytes": b"\x08" + b"\xff" * 10 + b"\x01",
}
for name, data in cases.items():
    open(f"{out}/{name}.bin", "wb").write(data)
PYEOF
while read -r name _; do
  cp "$work/$name.bin" "$here/raw/cases/text_$name.bin"
done <"$work/cases"
for bin in "$here/raw/cases/"*.bin; do
  raw_one "$bin" "${bin%.bin}"
done
