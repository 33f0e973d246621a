# tests/cli/chakra_write_foreign.py — a tiny Chakra ET writer that follows collectiveapi's
# conventions (MSCCL-IR → Chakra): hand-encoded protobuf, node ids that are not 0..n-1,
# comm_* attributes only, no tenet bookkeeping. Used by sim.sh to feed `tenet sim` foreign
# sets. Usage: python3 chakra_write_foreign.py KIND NPUS PREFIX
#   ring_ag        ring All-Gather, 1 MiB per NPU, one direction (3 steps on 4 NPUs)
#   ring_ag_bidir  the same with half of each shard going each way
#   ring_ar        collectiveapi's MSCCLang ring All-Reduce: 131,072 B messages, tag 0,
#                  one serial chain per rank, COMP of 7 us per reduction
#   unmatched      rank 0 sends one message too many (tag 9)
#   deadlock       ranks 0 and 1 both receive before they send
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from chakra_frames import encode_varint as varint, frame  # noqa: E402

COMP, SEND, RECV = 4, 5, 6


def field(num, wire, payload):
    return varint(num << 3 | wire) + payload


def ld(num, data):  # length-delimited
    return field(num, 2, varint(len(data)) + data)


def attr_int(name, member, value):  # member 7 = int32_val, 9 = int64_val
    return ld(10, ld(1, name.encode()) + field(member, 0, varint(value)))


def node(nid, name, ntype, deps=(), dur=0, comm=None):
    b = field(1, 0, varint(nid)) + ld(2, name.encode()) + field(3, 0, varint(ntype))
    if deps:
        b += ld(5, b"".join(varint(d) for d in deps))
    if dur:
        b += field(7, 0, varint(dur))
    if comm:
        peer_attr = "comm_dst" if ntype == SEND else "comm_src"
        peer, size, tag = comm
        b += attr_int(peer_attr, 7, peer) + attr_int("comm_size", 9, size)
        b += attr_int("comm_tag", 7, tag) + attr_int("comm_type", 9, ntype)
        b += ld(10, ld(1, b"is_cpu_op") + field(27, 0, varint(0)))
    return b


class Rank:
    """Collects one rank's nodes; ids start at 1000 and step by 3 (not dense)."""

    def __init__(self):
        self.nodes = []

    def add(self, name, ntype, deps=(), dur=0, comm=None):
        nid = 1000 + 3 * len(self.nodes)
        self.nodes.append(node(nid, name, ntype, deps, dur, comm))
        return nid

    def send(self, dst, size, tag, deps=()):
        return self.add("send", SEND, deps, comm=(dst, size, tag))

    def recv(self, src, size, tag, deps=()):
        return self.add("recv", RECV, deps, comm=(src, size, tag))

    def write(self, path):
        with open(path, "wb") as f:
            meta = ld(1, b"0.0.4")
            f.write(frame(meta))
            for n in self.nodes:
                f.write(frame(n))


def ring_ag(n, ranks, size, direction):
    for r in range(n):
        nxt, prv = (r + direction) % n, (r - direction) % n
        last = None
        for s in range(n - 1):
            tag = s if direction > 0 else 1000 + s
            ranks[r].send(nxt, size, tag, [last] if last is not None else [])
            last = ranks[r].recv(prv, size, tag)


def ring_ar(n, ranks):
    m = 131072
    for r in range(n):
        R, nxt, prv = ranks[r], (r + 1) % n, (r - 1) % n
        last = R.send(nxt, m, 0)
        for _ in range(n - 1):
            last = R.recv(prv, m, 0, [last])
            last = R.add("reduce", COMP, [last], dur=7)
            last = R.send(nxt, m, 0, [last])
        for _ in range(n - 2):
            last = R.recv(prv, m, 0, [last])
            last = R.send(nxt, m, 0, [last])
        R.recv(prv, m, 0, [last])


def main():
    kind, n, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ranks = [Rank() for _ in range(n)]
    if kind == "ring_ag":
        ring_ag(n, ranks, 1 << 20, +1)
    elif kind == "ring_ag_bidir":
        ring_ag(n, ranks, 1 << 19, +1)
        ring_ag(n, ranks, 1 << 19, -1)
    elif kind == "ring_ar":
        ring_ar(n, ranks)
    elif kind == "unmatched":
        ring_ag(n, ranks, 4096, +1)
        ranks[0].send(1, 4096, 9)
    elif kind == "deadlock":
        for r in range(n):
            if r < 2:
                last = ranks[r].recv(1 - r, 4096, 0)
                ranks[r].send(1 - r, 4096, 0, [last])
            else:
                ranks[r].add("idle", COMP)
    else:
        sys.exit("unknown kind " + kind)
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    for r in range(n):
        ranks[r].write("%s.%d.et" % (prefix, r))


main()
