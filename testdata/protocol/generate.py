#!/usr/bin/env python3
"""Writes the golden frames of the Nearstream wire protocol (docs/protocol.md).

This is an independent implementation of docs/protocol.md, written from that page and not from
the C++ codec, so that the C++ and Java tests compare their codecs against a third party. Python
standard library only; CRC32C is implemented here.

Usage:  python3 testdata/protocol/generate.py [output-dir]   (default: this script's folder)

It writes one .bin per frame (complete frames, length prefix included), chunk.bin (a bare chunk)
and vectors.json (the decoded field values of every file). Output is deterministic. Changing a
vector is a protocol change: see README.md.
"""

import json
import pathlib
import struct
import sys

# ---- CRC32C (Castagnoli, reflected polynomial 0x82F63B78, init and final XOR 0xFFFFFFFF) ------


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ _CRC_TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283, "CRC32C check value"

# ---- primitive types (docs/protocol.md "Conventions") -----------------------------------------


class Writer:
    def __init__(self):
        self.buf = bytearray()

    def u8(self, v):
        self.buf += struct.pack("<B", v)

    def bool(self, v):
        self.u8(1 if v else 0)

    def u16(self, v):
        self.buf += struct.pack("<H", v)

    def u32(self, v):
        self.buf += struct.pack("<I", v)

    def u64(self, v):
        self.buf += struct.pack("<Q", v)

    def i64(self, v):
        self.buf += struct.pack("<q", v)

    def str(self, s):
        b = s.encode("utf-8")
        assert len(b) <= 0xFFFF
        self.u16(len(b))
        self.buf += b

    def blob(self, b):
        self.u32(len(b))
        self.buf += b

    def position(self, p):
        self.u64(p["group"])
        self.u64(p["segment"])
        self.u32(p["offset"])

    def bytes(self):
        return bytes(self.buf)


def pos(group, segment, offset):
    return {"group": group, "segment": segment, "offset": offset}


EARLIEST = pos(0, 0, 0)

# ---- chunks (docs/protocol.md "Chunk format") --------------------------------------------------

CHUNK_MAGIC = 0x4B43534E


def make_chunk(producer_id, sequence, first_timestamp_ms, records):
    """Returns (chunk bytes, description for vectors.json)."""
    payload = Writer()
    for r in records:
        payload.blob(r)  # a record is u32 length + bytes, the same layout as a Blob
    payload = payload.bytes()
    head = Writer()
    head.u32(CHUNK_MAGIC)
    head.u8(1)  # version
    head.u8(0)  # flags
    head.u16(48)  # header length
    head.u32(len(payload))
    head.u32(crc32c(payload))
    head.u64(producer_id)
    head.u64(sequence)
    head.i64(first_timestamp_ms)
    head.u32(len(records))
    header_crc = crc32c(head.bytes())
    head.u32(header_crc)
    chunk = head.bytes() + payload
    assert len(chunk) == 48 + len(payload)
    desc = {
        "size": len(chunk),
        "version": 1,
        "flags": 0,
        "header_length": 48,
        "payload_length": len(payload),
        "payload_crc": crc32c(payload),
        "producer_id": producer_id,
        "sequence": sequence,
        "first_timestamp_ms": first_timestamp_ms,
        "record_count": len(records),
        "header_crc": header_crc,
        "records_hex": [r.hex() for r in records],
    }
    return chunk, desc


# ---- frames (docs/protocol.md "Frames") --------------------------------------------------------

OPCODES = {
    "Handshake": 1,
    "CreateStream": 2,
    "DeleteStream": 3,
    "DescribeStream": 4,
    "ListStreams": 5,
    "Metadata": 6,
    "Append": 7,
    "Fetch": 8,
    "Stats": 9,
    "LookupTimestamp": 10,
    "ClusterMetadata": 11,
    "MoveStreamlet": 12,
    "SealStreamlet": 13,
    "ReplicaAppend": 14,
    "ReplicaJoin": 15,
    "ReplicaMove": 16,
    "ReplicaCheck": 17,
    "ReplicaTxn": 18,
    "ReplicaTxnFiles": 19,
    "PushSubscribe": 20,
    "PushUpdate": 21,
    "PushClose": 22,
    "TxnInit": 30,
    "TxnBegin": 31,
    "TxnAppend": 32,
    "TxnPrepare": 33,
    "TxnCommit": 34,
    "TxnAbort": 35,
    "TxnList": 36,
    "ReplicaPublished": 40,
}

STATUS = {
    "OK": 0,
    "STREAM_NOT_FOUND": 5,
    "STREAMLET_NOT_FOUND": 7,
    "OUT_OF_ORDER_SEQUENCE": 11,
    "POSITION_OUT_OF_RANGE": 12,
    "DATA_LOSS": 17,
    "TXN_FENCED": 19,
    "NOT_OWNER": 22,
    "STREAMLET_MOVING": 25,
}

TXN_STATE = {"open": 1, "prepared": 2}
# The scope of the transactions of a stream without replication (docs/protocol.md, "Transaction
# scopes"); any other value is a streamlet index.
BROKER_SCOPE = 0xFFFFFFFF


def request_frame(opcode_name, request_id, body):
    header = struct.pack("<BBHQ", 1, 0x00, OPCODES[opcode_name], request_id)
    return struct.pack("<I", len(header) + len(body)) + header + body


def response_frame(opcode_name, request_id, status, message, body):
    assert status == 0 or not body, "a non-OK response has no body"
    header = struct.pack("<BBHQ", 1, 0x01, OPCODES[opcode_name], request_id)
    w = Writer()
    w.u16(status)
    w.str(message)
    rest = header + w.bytes() + body
    return struct.pack("<I", len(rest)) + rest


# ---- message bodies (docs/protocol.md "Message bodies") ----------------------------------------


def enc_handshake_request(m):
    w = Writer()
    w.u16(m["min_version"])
    w.u16(m["max_version"])
    w.str(m["client_name"])
    return w.bytes()


def enc_handshake_response(m):
    w = Writer()
    w.u16(m["version"])
    w.u64(m["broker_epoch"])
    w.u32(m["max_frame_bytes"])
    w.str(m["broker_version"])
    return w.bytes()


def enc_stream_config(m):
    w = Writer()
    w.str(m["name"])
    w.u32(m["streamlets"])
    w.u32(m["segment_bytes"])
    w.u32(m["segments_per_group"])
    w.u32(m["active_groups"])
    w.u8(m["durability"])
    w.i64(m["retention_bytes"])
    w.i64(m["retention_ms"])
    w.u8(m["replication"])
    return w.bytes()


def enc_stream_name(m):
    w = Writer()
    w.str(m["name"])
    return w.bytes()


def enc_list_streams_response(m):
    w = Writer()
    w.u32(len(m["names"]))
    for n in m["names"]:
        w.str(n)
    return w.bytes()


def enc_metadata_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(len(m["streamlets"]))
    for s in m["streamlets"]:
        w.u32(s)
    return w.bytes()


def enc_metadata_response(m):
    w = Writer()
    w.u32(len(m["streamlets"]))
    for s in m["streamlets"]:
        w.u32(s["streamlet"])
        w.position(s["head"])
        w.position(s["tail"])
        w.u32(len(s["groups"]))
        for g in s["groups"]:
            w.u64(g["group_id"])
            w.bool(g["closed"])
            w.u64(g["first_segment"])
            w.u32(g["segment_count"])
            w.u64(g["bytes"])
    return w.bytes()


def enc_append_entries(w, entries, chunks):
    """The AppendEntry list that ends both Append and TxnAppend requests."""
    w.u32(len(entries))
    for e, c in zip(entries, chunks):
        w.u32(e["streamlet"])
        w.blob(c)


def enc_append_request(m, chunks):
    w = Writer()
    w.str(m["stream"])
    enc_append_entries(w, m["entries"], chunks)
    return w.bytes()


def enc_append_response(m):
    w = Writer()
    w.u32(len(m["results"]))
    for r in m["results"]:
        w.u32(r["streamlet"])
        w.u16(r["status"])
        w.str(r["message"])
        w.position(r["position"])
        w.bool(r["duplicate"])
    return w.bytes()


def enc_fetch_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["max_wait_ms"])
    w.u32(len(m["entries"]))
    for e in m["entries"]:
        w.u32(e["streamlet"])
        w.position(e["position"])
        w.u32(e["max_bytes"])
    return w.bytes()


def enc_fetch_response(m, block_data):
    w = Writer()
    w.u32(len(m["results"]))
    for i, r in enumerate(m["results"]):
        w.u32(r["streamlet"])
        w.u16(r["status"])
        w.str(r["message"])
        w.position(r["next"])
        w.position(r["tail"])
        w.u32(len(r["blocks"]))
        for j, b in enumerate(r["blocks"]):
            w.position(b["at"])
            w.blob(block_data[i][j])
    return w.bytes()


def enc_lookup_timestamp_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(len(m["entries"]))
    for e in m["entries"]:
        w.u32(e["streamlet"])
        w.i64(e["timestamp_ms"])
    return w.bytes()


def enc_lookup_timestamp_response(m):
    w = Writer()
    w.u32(len(m["results"]))
    for r in m["results"]:
        w.u32(r["streamlet"])
        w.u16(r["status"])
        w.str(r["message"])
        w.position(r["position"])
    return w.bytes()


def enc_stats_response(m):
    w = Writer()
    w.u32(len(m["values"]))
    for v in m["values"]:
        w.str(v["name"])
        w.u64(v["value"])
    return w.bytes()


def enc_cluster_metadata_request(m):
    w = Writer()
    w.u32(len(m["streams"]))
    for name in m["streams"]:
        w.str(name)
    return w.bytes()


def enc_streamlet_ref(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    return w.bytes()


def enc_seal_streamlet_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    w.u32(m["seal_ms"])
    return w.bytes()


def enc_seal_streamlet_response(m):
    w = Writer()
    w.position(m["tail"])
    return w.bytes()


def enc_cluster_metadata_response(m):
    w = Writer()
    w.u32(m["broker_id"])
    w.u32(len(m["brokers"]))
    for b in m["brokers"]:
        w.u32(b["id"])
        w.str(b["address"])
        w.str(b["host"])
    w.u32(len(m["streams"]))
    for st in m["streams"]:
        w.str(st["name"])
        w.u32(st["version"])
        w.u32(len(st["owners"]))
        for owner in st["owners"]:
            w.u32(owner)
        assert len(st["replicas"]) == len(st["owners"]), "one ReplicaSet per streamlet"
        for owner, rs in zip(st["owners"], st["replicas"]):
            assert rs["isr"][0] == owner and owner in rs["replicas"], "the leader leads its isr"
            assert set(rs["isr"]) <= set(rs["replicas"])
            w.u64(rs["leader_epoch"])
            w.u8(len(rs["replicas"]))
            for b in rs["replicas"]:
                w.u32(b)
            w.u8(len(rs["isr"]))
            for b in rs["isr"]:
                w.u32(b)
    w.u32(m["controller_id"])
    return w.bytes()


def enc_replica_append_request(m, chunk):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    w.u32(m["leader"])
    w.u64(m["leader_epoch"])
    w.position(m["at"])
    w.blob(chunk)  # a Bytes/Blob field: u32 length + the chunk's bytes
    return w.bytes()


def enc_replica_published_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    w.u32(m["leader"])
    w.u64(m["leader_epoch"])
    w.u64(m["since"])
    w.u64(m["version"])
    w.position(m["head"])
    w.u32(len(m["groups"]))
    for g in m["groups"]:
        w.u64(g["id"])
        w.u8(1 if g["closed"] else 0)
        w.u32(len(g["segments"]))
        for seg in g["segments"]:
            w.u64(seg["id"])
            w.u32(seg["committed"])
    return w.bytes()


def enc_replica_join_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    w.u32(m["follower"])
    w.u64(m["leader_epoch"])
    w.position(m["tail"])
    w.u8(m["take_over"])
    return w.bytes()


def enc_replica_move_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    w.u32(m["from"])
    return w.bytes()


def enc_replica_check_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    w.u32(m["follower"])
    return w.bytes()


def enc_replica_check_response(m):
    w = Writer()
    w.u64(m["leader_epoch"])
    w.u32(len(m["epochs"]))
    for e in m["epochs"]:
        w.u64(e["epoch"])
        w.u64(e["start_group"])
    w.u32(len(m["segments"]))
    for s in m["segments"]:
        w.u64(s["group"])
        w.u64(s["segment"])
        w.u32(s["bytes"])
    return w.bytes()


REPLICA_TXN_OP = {"append": 1, "replace": 2, "rename": 3, "delete": 4}


def enc_replica_txn_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    w.u32(m["leader"])
    w.u64(m["leader_epoch"])
    w.u8(REPLICA_TXN_OP[m["op"]])
    w.str(m["file"])
    w.u64(m["offset"])
    w.str(m["to"])
    w.blob(m["data"])
    return w.bytes()


def enc_replica_txn_files_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["streamlet"])
    w.u32(m["follower"])
    w.u32(m["max_bytes"])
    w.u32(len(m["held"]))
    for h in m["held"]:
        w.str(h["name"])
        w.u64(h["have"])
    return w.bytes()


def enc_replica_txn_files_response(m):
    w = Writer()
    w.u8(1 if m["complete"] else 0)
    w.u32(len(m["files"]))
    for f in m["files"]:
        w.str(f["name"])
        w.u64(f["size"])
        w.u64(f["offset"])
        w.blob(f["data"])
    return w.bytes()


def enc_push_rings(w, rings):
    w.u32(len(rings))
    for ring in rings:
        w.u32(ring["subtask_index"])
        w.u32(len(ring["splits"]))
        for split in ring["splits"]:
            w.u32(split["streamlet"])
            w.position(split["start"])


def enc_push_subscribe_request(m):
    w = Writer()
    w.str(m["stream"])
    w.u32(m["slots_per_ring"])
    w.u32(m["slot_bytes"])
    w.u32(m["consumer_timeout_ms"])
    enc_push_rings(w, m["rings"])
    enc_record_filter(w, m["filter"])
    w.u8(SLOT_FORMAT[m["slot_format"]])
    return w.bytes()


SLOT_FORMAT = {"binary": 0, "binary_view": 1}


FILTER_KIND = {"none": 0, "json_field_in": 1, "bytes_contain": 2}


def enc_record_filter(w, f):
    w.u8(FILTER_KIND[f["kind"]])
    if f["kind"] == "json_field_in":
        w.str(f["field"])
        w.u32(len(f["values"]))
        for v in f["values"]:
            w.str(v)
    elif f["kind"] == "bytes_contain":
        w.blob(bytes.fromhex(f["needle"]))


def enc_push_subscribe_response(m):
    w = Writer()
    w.u64(m["subscription_id"])
    w.u64(m["broker_epoch"])
    w.str(m["region_path"])
    w.u64(m["region_bytes"])
    return w.bytes()


def enc_push_update_request(m):
    w = Writer()
    w.u64(m["subscription_id"])
    enc_push_rings(w, m["rings"])
    return w.bytes()


def enc_push_close_request(m):
    w = Writer()
    w.u64(m["subscription_id"])
    return w.bytes()


def enc_txn_ref_fields(w, m):
    w.str(m["stream"])
    w.str(m["transactional_id"])
    w.u32(m["epoch"])
    w.u64(m["serial"])
    w.u32(m["scope"])


def enc_txn_ref(m):
    w = Writer()
    enc_txn_ref_fields(w, m)
    return w.bytes()


def enc_txn_init_request(m):
    w = Writer()
    w.str(m["stream"])
    w.str(m["transactional_id"])
    w.u64(m["keep_prepared_through"])
    w.u32(m["scope"])
    return w.bytes()


def enc_txn_init_response(m):
    w = Writer()
    w.u32(m["epoch"])
    w.u64(m["last_serial"])
    return w.bytes()


def enc_txn_begin_response(m):
    w = Writer()
    w.u64(m["serial"])
    return w.bytes()


def enc_txn_append_request(m, chunks):
    w = Writer()
    enc_txn_ref_fields(w, m)
    enc_append_entries(w, m["entries"], chunks)
    return w.bytes()


def enc_txn_list_request(m):
    w = Writer()
    w.str(m["stream"])
    w.str(m["id_prefix"])
    w.u32(m["scope"])
    return w.bytes()


def enc_txn_list_response(m):
    w = Writer()
    w.u32(len(m["transactions"]))
    for t in m["transactions"]:
        w.str(t["transactional_id"])
        w.u32(t["epoch"])
        w.u64(t["serial"])
        w.u8(t["state"])
        w.u64(t["bytes"])
        w.u32(t["chunks"])
        w.u32(t["streamlets"])
        w.i64(t["started_ms"])
        w.u32(t["scope"])
    return w.bytes()


# ---- the vectors -------------------------------------------------------------------------------

STREAM = "golden.stream-1_x"
PRODUCER = 0x1122334455667788


def build():
    """Returns [(file name, bytes, description)]."""
    out = []

    def req(file, opcode, request_id, body_desc, body):
        frame = request_frame(opcode, request_id, body)
        desc = {
            "kind": "request",
            "frame": {
                "length": len(frame) - 4,
                "version": 1,
                "flags": 0,
                "opcode": OPCODES[opcode],
                "opcode_name": opcode,
                "request_id": request_id,
            },
            "body_length": len(body),
            "body": body_desc,
        }
        out.append((file, frame, desc))

    def resp(file, opcode, request_id, status, message, body_desc, body):
        frame = response_frame(opcode, request_id, STATUS[status], message, body)
        desc = {
            "kind": "response",
            "frame": {
                "length": len(frame) - 4,
                "version": 1,
                "flags": 1,
                "opcode": OPCODES[opcode],
                "opcode_name": opcode,
                "request_id": request_id,
            },
            "status": STATUS[status],
            "status_name": status,
            "message": message,
            "body_length": len(body),
            "body": body_desc,
        }
        out.append((file, frame, desc))

    # chunk.bin: 3 records, the second one empty, the third with a 2-byte UTF-8 character.
    chunk, chunk_desc = make_chunk(
        PRODUCER, 0x0102030405060708, 1_700_000_000_123,
        [b"first", b"", "third record ü".encode("utf-8")])
    out.append(("chunk.bin", chunk, dict({"kind": "chunk"}, **chunk_desc)))

    # Handshake
    rid = 0x0102030405060708
    m = {"min_version": 1, "max_version": 1, "client_name": "golden-client/1.0 (ü)"}
    req("handshake_request.bin", "Handshake", rid, m, enc_handshake_request(m))
    m = {"version": 1, "broker_epoch": 0x0A0B0C0D0E0F1011, "max_frame_bytes": 64 << 20,
         "broker_version": "nearstreamd 0.1.0"}
    resp("handshake_response.bin", "Handshake", rid, "OK", "", m, enc_handshake_response(m))

    # CreateStream
    rid = 0x1112131415161718
    m = {"name": STREAM, "streamlets": 258, "segment_bytes": 0x00A0B0C0,
         "segments_per_group": 772, "active_groups": 5, "durability": 2,
         "retention_bytes": 0x0102030405060708, "retention_ms": -1, "replication": 3}
    req("create_stream_request.bin", "CreateStream", rid, m, enc_stream_config(m))
    resp("create_stream_response.bin", "CreateStream", rid, "OK", "", {}, b"")

    # DeleteStream
    rid = 0x2122232425262728
    m = {"name": "old-stream"}
    req("delete_stream_request.bin", "DeleteStream", rid, m, enc_stream_name(m))
    resp("delete_stream_response.bin", "DeleteStream", rid, "OK", "", {}, b"")

    # DescribeStream
    rid = 0x3132333435363738
    m = {"name": STREAM}
    req("describe_stream_request.bin", "DescribeStream", rid, m, enc_stream_name(m))
    m = {"name": STREAM, "streamlets": 4, "segment_bytes": 8 << 20, "segments_per_group": 16,
         "active_groups": 2, "durability": 1, "retention_bytes": -1,
         "retention_ms": 604_800_000, "replication": 2}
    resp("describe_stream_response.bin", "DescribeStream", rid, "OK", "", m,
         enc_stream_config(m))

    # ListStreams
    rid = 0x4142434445464748
    req("list_streams_request.bin", "ListStreams", rid, {}, b"")
    m = {"names": ["alpha", "beta.2", STREAM]}
    resp("list_streams_response.bin", "ListStreams", rid, "OK", "", m,
         enc_list_streams_response(m))

    # Metadata
    rid = 0x5152535455565758
    m = {"stream": STREAM, "streamlets": [3, 258]}
    req("metadata_request.bin", "Metadata", rid, m, enc_metadata_request(m))
    m = {"streamlets": [
        {"streamlet": 3, "head": pos(1, 1, 0), "tail": pos(2, 18, 0x000A0B0C), "groups": [
            {"group_id": 1, "closed": True, "first_segment": 1, "segment_count": 16,
             "bytes": 16 * (8 << 20)},
            {"group_id": 2, "closed": False, "first_segment": 17, "segment_count": 2,
             "bytes": (8 << 20) + 0x000A0B0C},
        ]},
        {"streamlet": 258, "head": pos(0x100000002, 0x200000003, 0),
         "tail": pos(0x100000002, 0x200000003, 0x1234), "groups": [
            {"group_id": 0x100000002, "closed": False, "first_segment": 0x200000003,
             "segment_count": 1, "bytes": 0x1234},
        ]},
    ]}
    resp("metadata_response.bin", "Metadata", rid, "OK", "", m, enc_metadata_response(m))

    # Append
    rid = 0x6162636465666768
    c1, d1 = make_chunk(PRODUCER, 41, 1_700_000_000_456, [b"hello", b"world"])
    c2, d2 = make_chunk(0, 0, -86_400_000, [bytes([0x00, 0x01, 0xFE, 0xFF])])
    m = {"stream": STREAM, "entries": [
        {"streamlet": 3, "chunk_size": len(c1), "chunk": d1},
        {"streamlet": 258, "chunk_size": len(c2), "chunk": d2},
    ]}
    req("append_request.bin", "Append", rid, m, enc_append_request(m, [c1, c2]))
    m = {"results": [
        {"streamlet": 3, "status": 0, "message": "", "position": pos(2, 18, 0x000A0B0C),
         "duplicate": False},
        {"streamlet": 3, "status": 0, "message": "", "position": pos(2, 17, 4096),
         "duplicate": True},
        {"streamlet": 258, "status": STATUS["OUT_OF_ORDER_SEQUENCE"],
         "message": "producer %d sent sequence 44 after 41" % PRODUCER,
         "position": EARLIEST, "duplicate": False},
    ]}
    resp("append_response.bin", "Append", rid, "OK", "", m, enc_append_response(m))

    # Fetch
    rid = 0x7172737475767778
    m = {"stream": STREAM, "max_wait_ms": 500, "entries": [
        {"streamlet": 3, "position": EARLIEST, "max_bytes": 1 << 20},
        {"streamlet": 258, "position": pos(1, 1, 0), "max_bytes": 0x00010203},
    ]}
    req("fetch_request.bin", "Fetch", rid, m, enc_fetch_request(m))
    f1, fd1 = make_chunk(PRODUCER, 1, 1_700_000_001_000, [b"r1-a", b"r1-b"])
    f2, fd2 = make_chunk(PRODUCER, 2, 1_700_000_002_000, [b"r2"])
    f3, fd3 = make_chunk(0x99AABBCCDDEEFF00, 7, 1_700_000_003_000, [b"", b"z"])
    m = {"results": [
        {"streamlet": 3, "status": 0, "message": "", "next": pos(1, 2, len(f2) + len(f3)),
         "tail": pos(2, 18, 0x000A0B0C), "blocks": [
            {"at": pos(1, 1, 0), "size": len(f1), "chunks": [fd1]},
            {"at": pos(1, 2, 0), "size": len(f2) + len(f3), "chunks": [fd2, fd3]},
        ]},
        {"streamlet": 258, "status": STATUS["POSITION_OUT_OF_RANGE"],
         "message": "position 1:1:0 is not in streamlet 258 (it holds groups "
                    "4294967298..4294967298)",
         "next": pos(1, 1, 0), "tail": EARLIEST, "blocks": []},
    ]}
    resp("fetch_response.bin", "Fetch", rid, "OK", "", m,
         enc_fetch_response(m, [[f1, f2 + f3], []]))

    # Fetch reaching a damaged range: streamlet 3 is served up to it (next = its start);
    # streamlet 258 starts at one and gets DATA_LOSS with next = where the range ends.
    rid = 0x7A7B7C7D7E7F7071
    m = {"results": [
        {"streamlet": 3, "status": 0, "message": "", "next": pos(1, 1, len(f1)),
         "tail": pos(1, 3, 96), "blocks": [
            {"at": pos(1, 1, 0), "size": len(f1), "chunks": [fd1]},
        ]},
        {"streamlet": 258, "status": STATUS["DATA_LOSS"],
         "message": "stream 'golden.stream-1_x' streamlet 258: 1000 bytes from 1:2:2000 to "
                    "1:2:3000 were found damaged when the broker recovered (chunk payload CRC "
                    "mismatch); the records there are lost, reading on from 1:2:3000 skips them",
         "next": pos(1, 2, 3000), "tail": EARLIEST, "blocks": []},
    ]}
    resp("fetch_response_data_loss.bin", "Fetch", rid, "OK", "", m,
         enc_fetch_response(m, [[f1], []]))

    # Stats
    rid = 0x8182838485868788
    req("stats_request.bin", "Stats", rid, {}, b"")
    m = {"values": [
        {"name": "nearstream_append_chunks_total", "value": 0x0000000100000002},
        {"name": "nearstream_append_bytes_total", "value": 0x0102030405060708},
        {"name": 'nearstream_thread_busy_ns_total{thread="worker-0"}',
         "value": 0xF0E0D0C0B0A09080},
    ]}
    resp("stats_response.bin", "Stats", rid, "OK", "", m, enc_stats_response(m))

    # LookupTimestamp
    rid = 0xA1A2A3A4A5A6A7A8
    m = {"stream": STREAM, "entries": [
        {"streamlet": 3, "timestamp_ms": 1_700_000_001_500},
        {"streamlet": 258, "timestamp_ms": -1},
    ]}
    req("lookup_timestamp_request.bin", "LookupTimestamp", rid, m,
        enc_lookup_timestamp_request(m))
    m = {"results": [
        {"streamlet": 3, "status": 0, "message": "", "position": pos(1, 2, 0x0102)},
        {"streamlet": 258, "status": STATUS["STREAMLET_NOT_FOUND"],
         "message": "stream 'golden.stream-1_x' has no streamlet 258",
         "position": EARLIEST},
    ]}
    resp("lookup_timestamp_response.bin", "LookupTimestamp", rid, "OK", "", m,
         enc_lookup_timestamp_response(m))

    # PushSubscribe: ring_count is the length of "rings"; split_count the length of "splits".
    rid = 0xB1B2B3B4B5B6B7B8
    m = {"stream": STREAM, "slots_per_ring": 8, "slot_bytes": 1 << 20,
         "consumer_timeout_ms": 5000, "rings": [
            {"subtask_index": 0, "splits": [
                {"streamlet": 3, "start": EARLIEST},
                {"streamlet": 258, "start": pos(0x100000002, 0x200000003, 0x1234)},
            ]},
            {"subtask_index": 5, "splits": []},
            {"subtask_index": 0x01020304, "splits": [
                {"streamlet": 7, "start": pos(1, 2, 64)},
            ]},
        ], "filter": {"kind": "none"}, "slot_format": "binary"}
    req("push_subscribe_request.bin", "PushSubscribe", rid, m, enc_push_subscribe_request(m))
    # The same subscription with each kind of record filter (one ring, to keep them short).
    rid = 0xB9BABBBCBDBEBFB0
    m = {"stream": STREAM, "slots_per_ring": 4, "slot_bytes": 1 << 16,
         "consumer_timeout_ms": 0, "rings": [
            {"subtask_index": 2, "splits": [{"streamlet": 3, "start": EARLIEST}]},
        ], "filter": {"kind": "json_field_in", "field": "event_type",
                      "values": ["view", "cl\u00efck", ""]},
         "slot_format": "binary_view"}
    req("push_subscribe_request_json_filter.bin", "PushSubscribe", rid, m,
        enc_push_subscribe_request(m))
    rid = 0xBABBBCBDBEBFB0B1
    m = {"stream": STREAM, "slots_per_ring": 2, "slot_bytes": 1 << 16,
         "consumer_timeout_ms": 0, "rings": [
            {"subtask_index": 0, "splits": []},
        ], "filter": {"kind": "bytes_contain", "needle": "00ff22"},
         "slot_format": "binary"}
    req("push_subscribe_request_bytes_filter.bin", "PushSubscribe", rid, m,
        enc_push_subscribe_request(m))
    rid = 0xB1B2B3B4B5B6B7B8
    m = {"subscription_id": 0x0102030405060708, "broker_epoch": 0x0A0B0C0D0E0F1011,
         "region_path": "/dev/shm/nearstream-push-4242-1",
         "region_bytes": 4096 + 3 * 8392704}
    resp("push_subscribe_response.bin", "PushSubscribe", rid, "OK", "", m,
         enc_push_subscribe_response(m))

    # PushUpdate
    rid = 0xC1C2C3C4C5C6C7C8
    m = {"subscription_id": 0x0102030405060708, "rings": [
        {"subtask_index": 0, "splits": [{"streamlet": 3, "start": EARLIEST}]},
        {"subtask_index": 5, "splits": [
            {"streamlet": 258, "start": pos(0x100000002, 0x200000003, 0x1234)},
            {"streamlet": 9, "start": pos(3, 40, 0x00ABCDEF)},
        ]},
        {"subtask_index": 0x01020304, "splits": []},
    ]}
    req("push_update_request.bin", "PushUpdate", rid, m, enc_push_update_request(m))
    resp("push_update_response.bin", "PushUpdate", rid, "OK", "", {}, b"")

    # PushClose
    rid = 0xD1D2D3D4D5D6D7D8
    m = {"subscription_id": 0x0102030405060708}
    req("push_close_request.bin", "PushClose", rid, m, enc_push_close_request(m))
    resp("push_close_response.bin", "PushClose", rid, "OK", "", {}, b"")

    # Transactions: one producer's life. Epochs and serials above 2^24 and 2^32 so that a field
    # read with the wrong width or byte order shows.
    txn_id = "job-42.sink-3"
    epoch = 0x01020304
    serial = 0x100000008

    # TxnInit: keeps the prepared transactions up to serial 0x100000006 for the committer.
    rid = 0xE1E2E3E4E5E6E7E8
    m = {"stream": STREAM, "transactional_id": txn_id,
         "keep_prepared_through": 0x100000006, "scope": BROKER_SCOPE}
    req("txn_init_request.bin", "TxnInit", rid, m, enc_txn_init_request(m))
    m = {"epoch": epoch, "last_serial": serial - 1}
    resp("txn_init_response.bin", "TxnInit", rid, "OK", "", m, enc_txn_init_response(m))

    # TxnBegin: a TxnRef whose serial is 0.
    rid = 0xF1F2F3F4F5F6F7F8
    m = {"stream": STREAM, "transactional_id": txn_id, "epoch": epoch, "serial": 0,
         "scope": BROKER_SCOPE}
    req("txn_begin_request.bin", "TxnBegin", rid, m, enc_txn_ref(m))
    m = {"serial": serial}
    resp("txn_begin_response.bin", "TxnBegin", rid, "OK", "", m, enc_txn_begin_response(m))

    # TxnAppend: two chunks of one transactional producer; sequences start afresh inside a
    # transaction.
    rid = 0xE9EAEBECEDEEEFE0
    t1, td1 = make_chunk(PRODUCER, 0, 1_700_000_004_000, [b"txn-a", b"txn-b"])
    t2, td2 = make_chunk(PRODUCER, 0, 1_700_000_004_001, [bytes([0x00, 0x74, 0xFF])])
    m = {"stream": STREAM, "transactional_id": txn_id, "epoch": epoch, "serial": serial,
         "scope": BROKER_SCOPE, "entries": [
             {"streamlet": 3, "chunk_size": len(t1), "chunk": td1},
             {"streamlet": 258, "chunk_size": len(t2), "chunk": td2},
         ]}
    req("txn_append_request.bin", "TxnAppend", rid, m, enc_txn_append_request(m, [t1, t2]))
    # An AppendResponse whose positions are all-zero; the second entry was a retried chunk.
    m = {"results": [
        {"streamlet": 3, "status": 0, "message": "", "position": EARLIEST, "duplicate": False},
        {"streamlet": 258, "status": 0, "message": "", "position": EARLIEST, "duplicate": True},
    ]}
    resp("txn_append_response.bin", "TxnAppend", rid, "OK", "", m, enc_append_response(m))

    # TxnPrepare, TxnCommit, TxnAbort: a TxnRef each, an empty OK response each. The commit is
    # of a transaction an earlier epoch prepared and TxnInit kept.
    for file, opcode, rid, m in [
            ("txn_prepare", "TxnPrepare", 0xF9FAFBFCFDFEFFF0,
             {"stream": STREAM, "transactional_id": txn_id, "epoch": epoch, "serial": serial,
              "scope": BROKER_SCOPE}),
            ("txn_commit", "TxnCommit", 0x1A1B1C1D1E1F1011,
             {"stream": STREAM, "transactional_id": txn_id, "epoch": epoch - 1,
              "serial": 0x100000006, "scope": BROKER_SCOPE}),
            ("txn_abort", "TxnAbort", 0x2A2B2C2D2E2F2021,
             {"stream": STREAM, "transactional_id": "job-42.sink-ü", "epoch": 7,
              "serial": 0x0102030405060708, "scope": 0x01020304}),
    ]:
        req(file + "_request.bin", opcode, rid, m, enc_txn_ref(m))
        resp(file + "_response.bin", opcode, rid, "OK", "", {}, b"")

    # TxnList: a prefix, and one prepared and one open transaction (ordered by scope, then id,
    # then serial), the second with a non-ASCII id; streamlet scopes, as a replicated stream's.
    rid = 0x3A3B3C3D3E3F3031
    m = {"stream": STREAM, "id_prefix": "job-42.", "scope": BROKER_SCOPE}
    req("txn_list_request.bin", "TxnList", rid, m, enc_txn_list_request(m))
    m = {"transactions": [
        {"transactional_id": txn_id, "epoch": epoch - 1, "serial": 0x100000006,
         "state": TXN_STATE["prepared"], "bytes": 0x0000000200000010, "chunks": 0x00010002,
         "streamlets": 1, "started_ms": 1_700_000_000_999, "scope": 3},
        {"transactional_id": "job-42.sink-ü", "epoch": 7, "serial": 0x0102030405060708,
         "state": TXN_STATE["open"], "bytes": len(t1) + len(t2), "chunks": 2, "streamlets": 1,
         "started_ms": 1_700_000_004_000, "scope": 258},
    ]}
    resp("txn_list_response.bin", "TxnList", rid, "OK", "", m, enc_txn_list_response(m))

    # An error response: non-OK status, message, no body.
    resp("error_response.bin", "DescribeStream", 0x9192939495969798, "STREAM_NOT_FOUND",
         "stream 'nope' does not exist", {}, b"")

    # ClusterMetadata: three brokers (one id above 2^24, one non-ASCII host), one stream.
    rid = 0x0C1C2C3C4C5C6C7C
    m = {"streams": [STREAM, "missing"]}
    req("cluster_metadata_request.bin", "ClusterMetadata", rid, m,
        enc_cluster_metadata_request(m))
    m = {"broker_id": 2, "brokers": [
        {"id": 1, "address": "127.0.0.1:7421", "host": "host-a"},
        {"id": 2, "address": "127.0.0.1:7422", "host": "höst-b"},
        {"id": 0x01020304, "address": "10.0.0.3:7420", "host": "host-c"},
    ], "streams": [
        {"name": STREAM, "version": 0x0A0B0C0D, "owners": [1, 2, 0x01020304, 1],
         # One ReplicaSet per streamlet (r and s vary so that a count read with the wrong width
         # or from the wrong place shows); each owner leads: first of its replicas and its isr.
         "replicas": [
             {"leader_epoch": 0x0102030405060708, "replicas": [1, 2, 0x01020304],
              "isr": [1, 2]},
             {"leader_epoch": 0, "replicas": [2], "isr": [2]},
             {"leader_epoch": 7, "replicas": [0x01020304, 1], "isr": [0x01020304]},
             {"leader_epoch": 1, "replicas": [1, 2, 0x01020304],
              "isr": [1, 2, 0x01020304]},
         ]},
    ], "controller_id": 0x01020304}
    resp("cluster_metadata_response.bin", "ClusterMetadata", rid, "OK", "", m,
         enc_cluster_metadata_response(m))

    # Moving a streamlet: MoveStreamlet to the target, SealStreamlet from it to the owner, and an
    # append refused while the streamlet moves.
    rid = 0x0D1D2D3D4D5D6D7D
    m = {"stream": STREAM, "streamlet": 0x00010203}
    req("move_streamlet_request.bin", "MoveStreamlet", rid, m, enc_streamlet_ref(m))
    resp("move_streamlet_response.bin", "MoveStreamlet", rid, "OK", "", {}, b"")
    rid = 0x0E1E2E3E4E5E6E7E
    m = {"stream": STREAM, "streamlet": 5, "seal_ms": 30000}
    req("seal_streamlet_request.bin", "SealStreamlet", rid, m, enc_seal_streamlet_request(m))
    m = {"tail": pos(0x0102030405060708, 0x1112131415161718, 0x21222324)}
    resp("seal_streamlet_response.bin", "SealStreamlet", rid, "OK", "", m,
         enc_seal_streamlet_response(m))
    resp("append_response_moving.bin", "Append", 0x6162636465666768, "STREAMLET_MOVING",
         "streamlet 5 is moving to another broker; retry after a back-off", {}, b"")

    # ReplicaAppend: a leader sends chunk.bin, as stored at a position above 2^32, to a follower.
    rid = 0x5A5B5C5D5E5F5051
    m = {"stream": STREAM, "streamlet": 258, "leader": 0x01020304,
         "leader_epoch": 0x0A0B0C0D0E0F1011, "at": pos(0x100000002, 0x200000003, 0x1234),
         "chunk_size": len(chunk), "chunk": chunk_desc}
    req("replica_append_request.bin", "ReplicaAppend", rid, m,
        enc_replica_append_request(m, chunk))
    resp("replica_append_response.bin", "ReplicaAppend", rid, "OK", "", {}, b"")

    # ReplicaPublished: a leader's view with a closed group of two segments, an open one whose
    # first segment is being opened, and ids above 2^32.
    rid = 0x5061626364656667
    m = {"stream": STREAM, "streamlet": 258, "leader": 0x01020304,
         "leader_epoch": 0x0A0B0C0D0E0F1011, "since": 0x1000000020000001,
         "version": 0x1000000020000003,
         "head": pos(0x100000002, 0x200000003, 0),
         "groups": [{"id": 0x100000005, "closed": True,
                     "segments": [{"id": 0x200000007, "committed": 0x00800000},
                                  {"id": 0x200000009, "committed": 0x1234}]},
                    {"id": 0x100000006, "closed": False, "segments": []}]}
    req("replica_published_request.bin", "ReplicaPublished", rid, m,
        enc_replica_published_request(m))
    resp("replica_published_response.bin", "ReplicaPublished", rid, "OK", "", {}, b"")

    # ReplicaJoin: a follower whose copy ends at a tail above 2^32 asks the leader to be in sync.
    rid = 0x6A6B6C6D6E6F6061
    m = {"stream": STREAM, "streamlet": 3, "follower": 0x01020304,
         "leader_epoch": 0x0102030405060708, "tail": pos(0x100000002, 0x200000003, 0x00ABCDEF),
         "take_over": 2}
    req("replica_join_request.bin", "ReplicaJoin", rid, m, enc_replica_join_request(m))
    resp("replica_join_response.bin", "ReplicaJoin", rid, "OK", "", {}, b"")

    rid = 0x7A7B7C7D7E7F7071
    m = {"stream": STREAM, "streamlet": 3, "from": 0x01020304}
    req("replica_move_request.bin", "ReplicaMove", rid, m, enc_replica_move_request(m))
    resp("replica_move_response.bin", "ReplicaMove", rid, "OK", "", {}, b"")

    rid = 0x8A8B8C8D8E8F8081
    m = {"stream": STREAM, "streamlet": 3, "follower": 0x01020304}
    req("replica_check_request.bin", "ReplicaCheck", rid, m, enc_replica_check_request(m))
    m = {"leader_epoch": 0x0102030405060708,
         "epochs": [{"epoch": 0, "start_group": 0}, {"epoch": 3, "start_group": 0x100000002}],
         "segments": [{"group": 1, "segment": 1, "bytes": 0x00ABCDEF},
                      {"group": 0x100000002, "segment": 0x200000003, "bytes": 0}]}
    resp("replica_check_response.bin", "ReplicaCheck", rid, "OK", "", m,
         enc_replica_check_response(m))

    # ReplicaTxn: a chunk appended to a transaction part's file at an offset above 2^32, and a
    # commit's rename (no offset, no data); an empty OK response each.
    part = "txn-00000000000000000007-00000000000000000003.seg"
    chunk, chunk_data = make_chunk(PRODUCER, 2, 1_700_000_005_000, [b"in a replica"])
    rid = 0x9A9B9C9D9E9F9091
    m = {"stream": STREAM, "streamlet": 3, "leader": 0x01020304,
         "leader_epoch": 0x0102030405060708, "op": "append", "file": part,
         "offset": 0x100000040, "to": "", "data": chunk}
    req("replica_txn_request.bin", "ReplicaTxn", rid, dict(m, data=chunk_data),
        enc_replica_txn_request(m))
    resp("replica_txn_response.bin", "ReplicaTxn", rid, "OK", "", {}, b"")
    rid = 0xAAABACADAEAFA0A1
    m = {"stream": STREAM, "streamlet": 3, "leader": 2, "leader_epoch": 9, "op": "rename",
         "file": part, "offset": 0, "to": "00000000000000000012-00000000000000000003.seg",
         "data": b""}
    req("replica_txn_rename_request.bin", "ReplicaTxn", rid, dict(m, data=""),
        enc_replica_txn_request(m))

    # ReplicaTxnFiles: a follower that holds the first 0x100000040 bytes of a part file asks for
    # at most 4 MiB more; the answer lists txn.log (whole) and that part from there.
    rid = 0xCACBCCCDCECFC0C1
    m = {"stream": STREAM, "streamlet": 3, "follower": 0x01020304, "max_bytes": 0x00400000,
         "held": [{"name": part, "have": 0x100000040}]}
    req("replica_txn_files_request.bin", "ReplicaTxnFiles", rid, m,
        enc_replica_txn_files_request(m))
    m = {"complete": True,
         "files": [{"name": "txn.log", "size": 32, "offset": 0,
                    "data": bytes(range(0x10, 0x30))},
                   {"name": part, "size": 0x100000040 + len(chunk), "offset": 0x100000040,
                    "data": chunk}]}
    resp("replica_txn_files_response.bin", "ReplicaTxnFiles", rid, "OK", "",
         {"complete": True,
          "files": [{"name": "txn.log", "size": 32, "offset": 0,
                     "data": bytes(range(0x10, 0x30)).hex()},
                    {"name": part, "size": 0x100000040 + len(chunk), "offset": 0x100000040,
                     "data": chunk_data}]},
         enc_replica_txn_files_response(m))

    # A Metadata request sent to a broker that does not own the streamlet.
    resp("metadata_response_not_owner.bin", "Metadata", 0x5152535455565758, "NOT_OWNER",
         "streamlet 3 of stream 'golden.stream-1_x' is stored by broker 1 at 127.0.0.1:7421",
         {}, b"")

    # A zombie producer's TxnAppend after a successor's TxnInit: TXN_FENCED, no body.
    resp("txn_append_response_fenced.bin", "TxnAppend", 0x4A4B4C4D4E4F4041, "TXN_FENCED",
         "transactional id 'job-42.sink-3' of stream 'golden.stream-1_x' is at epoch 16909061; "
         "the request's epoch 16909060 is fenced", {}, b"")
    return out


def main():
    out_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent
    out_dir.mkdir(parents=True, exist_ok=True)
    vectors = {
        "comment": "Decoded field values of every golden file; written by generate.py from "
                   "docs/protocol.md. Integers are exact JSON numbers (u64 values may exceed "
                   "2^63); records are hex. Changing a vector is a protocol change.",
        "protocol_version": 1,
        "files": {},
    }
    for name, data, desc in build():
        (out_dir / name).write_bytes(data)
        desc["file_size"] = len(data)
        vectors["files"][name] = desc
    with open(out_dir / "vectors.json", "w", encoding="utf-8", newline="\n") as f:
        json.dump(vectors, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print("wrote %d files to %s" % (len(vectors["files"]) + 1, out_dir))


if __name__ == "__main__":
    main()
