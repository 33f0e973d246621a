# tests/cli/chakra_decode.py — decodes a Chakra ET set with protobuf's Python runtime and a
# protoc-compiled emit/chakra/et_def.proto (Chakra's own way of reading files), and checks what
# docs/chakra-format.md promises. Usage: python3 chakra_decode.py GEN_DIR PREFIX
# Prints one summary line; exits 1 naming the file and node on the first violation.
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, sys.argv[1])
import et_def_pb2 as pb  # noqa: E402
from chakra_frames import read_records  # noqa: E402


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def main():
    prefix = sys.argv[2]
    counts = {4: 0, 5: 0, 6: 0}
    ranks = 0
    while os.path.exists("%s.%d.et" % (prefix, ranks)):
        ranks += 1
    if ranks == 0:
        fail("no files at " + prefix)
    for r in range(ranks):
        path = "%s.%d.et" % (prefix, r)
        recs = list(read_records(path))
        md = pb.GlobalMetadata()
        md.ParseFromString(recs[0])
        if not md.version:
            fail("%s: no version" % path)
        ids = set()
        nodes = []
        for raw in recs[1:]:
            n = pb.Node()
            n.ParseFromString(raw)
            nodes.append(n)
            ids.add(n.id)
        if not nodes:
            fail("%s: no node" % path)
        for n in nodes:
            where = "%s: node %d" % (path, n.id)
            if not n.name:
                fail(where + ": no name")
            if n.type not in counts:
                fail(where + ": type %d" % n.type)
            counts[n.type] += 1
            for d in list(n.data_deps) + list(n.ctrl_deps):
                if d not in ids:
                    fail(where + ": dangling dependency %d" % d)
            attrs = {}
            for a in n.attr:
                attrs[a.name] = (a.WhichOneof("value"), getattr(a, a.WhichOneof("value")))
            need = {5: {"comm_dst": "int32_val", "comm_size": "int64_val", "comm_tag": "int32_val"},
                    6: {"comm_src": "int32_val", "comm_size": "int64_val", "comm_tag": "int32_val"},
                    4: {}}[n.type]
            for name, member in need.items():
                if name not in attrs or attrs[name][0] != member:
                    fail(where + ": %s missing or not %s" % (name, member))
            if n.type in (5, 6):
                peer = attrs["comm_dst" if n.type == 5 else "comm_src"][1]
                if not 0 <= peer < ranks or peer == r:
                    fail(where + ": bad peer %d" % peer)
                if attrs["comm_size"][1] <= 0:
                    fail(where + ": comm_size <= 0")
                if not 0 <= attrs["comm_tag"][1] < 500000000:
                    fail(where + ": tag out of range")
    print("decoded %d files: %d nodes, %d SEND, %d RECV, %d COMP"
          % (ranks, sum(counts.values()), counts[5], counts[6], counts[4]))


main()
