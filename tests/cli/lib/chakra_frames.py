# tests/cli/lib/chakra_frames.py — the framing of a Chakra ET file (docs/chakra-format.md): a sequence
# of records, each a protobuf message preceded by its length as a base-128 varint. Shared
# by the Python helpers of the CLI tests; knows nothing of the messages themselves.


def encode_varint(value):
    """The base-128 varint bytes of a non-negative integer (protobuf's encoding)."""
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def decode_varint(buf, pos):
    """(value, position after it) of the varint at buf[pos]; ValueError if cut short."""
    shift = value = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated length prefix")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def frame(body):
    """One record: body (serialized message bytes) with its length prefix."""
    return encode_varint(len(body)) + body


def read_records(path):
    """The message bodies of the file at path, in order; ValueError naming the file and
    byte on an empty or overlong record."""
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0
    while pos < len(buf):
        n, pos = decode_varint(buf, pos)
        if n == 0 or pos + n > len(buf):
            raise ValueError("%s: bad record length %d at byte %d" % (path, n, pos))
        yield buf[pos:pos + n]
        pos += n

