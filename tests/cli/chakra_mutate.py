# tests/cli/chakra_mutate.py — breaks one file of a Chakra ET set in a chosen way, decoding
# and re-encoding it with protobuf's Python runtime and a protoc-compiled et_def.proto, so
# the CLI tests can check that `tenet verify` rejects it.
# Usage: python3 chakra_mutate.py GEN_DIR FILE size|drop|cycle
#   size   the first SEND's comm_size grows by one byte
#   drop   the last SEND is removed (with the dependencies on it and tenet_nodes fixed)
#   cycle  a node that depends on another becomes that node's dependency too
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, sys.argv[1])
import et_def_pb2 as pb  # noqa: E402
from chakra_frames import frame, read_records  # noqa: E402

path, mode = sys.argv[2], sys.argv[3]
recs = list(read_records(path))
md = pb.GlobalMetadata()
md.ParseFromString(recs[0])
nodes = []
for raw in recs[1:]:
    node = pb.Node()
    node.ParseFromString(raw)
    nodes.append(node)
sends = [x for x in nodes if x.type == pb.COMM_SEND_NODE]
if mode == "size":
    for a in sends[0].attr:
        if a.name == "comm_size":
            a.int64_val += 1
elif mode == "drop":
    victim = sends[-1].id
    nodes = [x for x in nodes if x.id != victim]
    for x in nodes:
        while victim in x.data_deps:
            x.data_deps.remove(victim)
    for a in md.attr:
        if a.name == "tenet_nodes":
            a.int64_val -= 1
elif mode == "cycle":
    b = next(x for x in nodes if x.data_deps)
    a = next(x for x in nodes if x.id == b.data_deps[0])
    a.data_deps.append(b.id)
else:
    sys.exit("unknown mode " + mode)
open(path, "wb").write(frame(md.SerializeToString())
                       + b"".join(frame(x.SerializeToString()) for x in nodes))
