#!/usr/bin/env bash
# Regenerates the expected text outputs in tests/expected/ with `protoc --decode`, the
# reference that tests/text_format.rs and cli/tests/cli.rs compare protojit against.
#
#   tests/expected/regen.sh            (from anywhere; needs protoc and python3)
#   PROTOC=/path/to/protoc tests/expected/regen.sh
#
# The committed files were made with protoc 3.21.12 (Debian protobuf-compiler, with
# libprotobuf-dev for the well-known-type imports); another protoc version may print
# differently, so the script says which version ran.
#
# 1. Every corpus payload listed in `PAYLOADS` (tests/common/mod.rs) is decoded with
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

python3 - "$root/tests/common/mod.rs" >"$work/payloads" <<'EOF'
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
