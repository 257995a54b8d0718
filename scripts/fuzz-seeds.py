#!/usr/bin/env python3
"""Cuts the recorded fixtures (tests/fixtures/golden, tests/fixtures/tracedat) down to small,
still valid seed files for tests/fuzz/corpus/trace_file_fuzzer/: a few records or ring-buffer
pages each, tracing data without the bulk (printk formats, saved cmdlines and ftrace formats
trimmed to a few entries), every offset rewritten. For tests/fuzz/corpus/trace_records_fuzzer/
it turns the same recordings into that target's chunk lists (real tracepoint payloads and real
ring-buffer pages; see tests/fuzz/trace_records_fuzzer.cc for the encoding). Run by hand after a
fixture changes:

    python3 scripts/fuzz-seeds.py            # rewrites both corpus directories

Files named regress-* in the corpus are inputs that once crashed a target (kept by hand, not
written here).
"""
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus", "trace_file_fuzzer")
OUT_RECORDS = os.path.join(ROOT, "tests", "fuzz", "corpus", "trace_records_fuzzer")

TRACING_MAGIC = b"\x17\x08\x44tracing"


# --- tracing data (perf's HEADER_TRACING_DATA, the head of a trace.dat v6) -------------------

def decode_tracing_data(b, off=0):
    p = off
    assert b[p:p + 10] == TRACING_MAGIC
    p += 10

    def cstr():
        nonlocal p
        e = b.index(b"\0", p)
        s = b[p:e]
        p = e + 1
        return s

    def sized(width=8):
        nonlocal p
        (n,) = struct.unpack_from("<Q" if width == 8 else "<I", b, p)
        p += width
        s = b[p:p + n]
        p += n
        return s

    d = {"version": cstr()}
    d["long"] = b[p + 1]
    (d["page"],) = struct.unpack_from("<I", b, p + 2)
    p += 6
    assert cstr() == b"header_page"
    d["header_page"] = sized()
    assert cstr() == b"header_event"
    d["header_event"] = sized()
    (n,) = struct.unpack_from("<I", b, p)
    p += 4
    d["ftrace"] = [sized() for _ in range(n)]
    (systems,) = struct.unpack_from("<I", b, p)
    p += 4
    d["events"] = []
    for _ in range(systems):
        system = cstr()
        (n,) = struct.unpack_from("<I", b, p)
        p += 4
        d["events"] += [(system, sized()) for _ in range(n)]
    d["kallsyms"] = sized(4)
    d["printk"] = sized(4)
    if d["version"] != b"0.5":
        d["cmdlines"] = sized()
    d["end"] = p
    return d


def sized_bytes(s, width=8):
    return struct.pack("<Q" if width == 8 else "<I", len(s)) + s


def header_info_body(d):
    return (b"header_page\0" + sized_bytes(d["header_page"]) + b"header_event\0" +
            sized_bytes(d["header_event"]))


def ftrace_body(d):
    return struct.pack("<I", len(d["ftrace"])) + b"".join(sized_bytes(f) for f in d["ftrace"])


def events_body(d):
    systems = []
    for s, _ in d["events"]:
        if s not in systems:
            systems.append(s)
    out = struct.pack("<I", len(systems))
    for s in systems:
        texts = [t for ss, t in d["events"] if ss == s]
        out += s + b"\0" + struct.pack("<I", len(texts)) + b"".join(sized_bytes(t) for t in texts)
    return out


def encode_tracing_data(d):
    out = TRACING_MAGIC + d["version"] + b"\0" + bytes([0, d["long"]]) + struct.pack("<I", d["page"])
    out += header_info_body(d) + ftrace_body(d) + events_body(d)
    out += sized_bytes(d["kallsyms"], 4) + sized_bytes(d["printk"], 4)
    if d["version"] != b"0.5":
        out += sized_bytes(d["cmdlines"])
    return out


def first_lines(text, n):
    return b"".join(line + b"\n" for line in text.split(b"\n")[:n] if line)


def trim(d):
    d = dict(d)
    d["ftrace"] = d["ftrace"][:2]
    d["printk"] = first_lines(d["printk"], 3)
    d["cmdlines"] = first_lines(d.get("cmdlines", b""), 6)
    return d


# --- perf.data -----------------------------------------------------------------------------

def cut_perf(src, records):
    """The first `records` data records; the tracing data trimmed; features moved as needed."""
    b = bytearray(open(src, "rb").read())
    (hsize, attr_size, attrs_off, attrs_size, data_off, data_size) = struct.unpack_from("<6Q", b, 8)
    features = struct.unpack_from("<4Q", b, 72)
    nfeat = sum(bin(f).count("1") for f in features)
    # Keep the first `records` samples and a few of every other record type, in file order.
    p, kept, quota = data_off, b"", {}
    while p < data_off + data_size:
        (rtype, _, size) = struct.unpack_from("<IHH", b, p)
        limit = records if rtype == 9 else 6
        if quota.get(rtype, 0) < limit:
            quota[rtype] = quota.get(rtype, 0) + 1
            kept += b[p:p + size]
        p += size
    new_data_size = len(kept)
    table = data_off + data_size
    sections = [list(struct.unpack_from("<QQ", b, table + 16 * i)) for i in range(nfeat)]
    bits = [i for i in range(256) if features[i // 64] >> (i % 64) & 1]
    contents = [bytes(b[o:o + s]) for o, s in sections]
    tracing = bits.index(1)  # HEADER_TRACING_DATA
    d = decode_tracing_data(contents[tracing])
    contents[tracing] = encode_tracing_data(trim(d))
    # Lay the file out again: header, attrs + ids, data, feature table, feature sections.
    out = bytearray(b[:hsize])
    attrs = bytearray(b[attrs_off:attrs_off + attrs_size])
    ids = []
    for i in range(attrs_size // attr_size):
        (io, isz) = struct.unpack_from("<QQ", attrs, i * attr_size + attr_size - 16)
        ids.append(bytes(b[io:io + isz]))
    ids_off = hsize
    id_bytes = b""
    for i, chunk in enumerate(ids):
        struct.pack_into("<QQ", attrs, i * attr_size + attr_size - 16, ids_off + len(id_bytes),
                         len(chunk))
        id_bytes += chunk
    out += id_bytes
    new_attrs_off = len(out)
    out += attrs
    new_data_off = len(out)
    out += kept
    table_off = len(out)
    out += b"\0" * (16 * nfeat)
    for i, c in enumerate(contents):
        struct.pack_into("<QQ", out, table_off + 16 * i, len(out), len(c))
        out += c
    struct.pack_into("<QQQQ", out, 24, new_attrs_off, attrs_size, new_data_off, new_data_size)
    return bytes(out)


# --- trace.dat ------------------------------------------------------------------------------

def v6_options(b, p):
    opts = []
    while True:
        (i,) = struct.unpack_from("<H", b, p)
        p += 2
        if i == 0:
            return opts, p
        (s,) = struct.unpack_from("<I", b, p)
        opts.append((i, bytes(b[p + 4:p + 4 + s])))
        p += 4 + s


def cut_v6(src, pages_per_cpu):
    b = open(src, "rb").read()
    d = decode_tracing_data(b)
    p = d["end"]
    (cpus,) = struct.unpack_from("<I", b, p)
    p += 4
    assert b[p:p + 10] == b"options  \0"
    opts, p = v6_options(b, p + 10)
    page = d["page"]
    # The top instance's flyrecord, then one per BUFFER option.
    flys = [("", p)] + [(o[8:].split(b"\0")[0], struct.unpack_from("<Q", o)[0])
                        for i, o in opts if i == 3]
    tables = []
    for _, at in flys:
        assert b[at:at + 10] == b"flyrecord\0"
        t = [struct.unpack_from("<QQ", b, at + 10 + 16 * c) for c in range(cpus)]
        (clock_size,) = struct.unpack_from("<Q", b, at + 10 + 16 * cpus)
        clock = b[at + 18 + 16 * cpus:at + 18 + 16 * cpus + clock_size]
        tables.append((t, clock))
    head = encode_tracing_data(trim(d)) + struct.pack("<I", cpus)

    def layout(buffer_offsets, data_offsets):
        out = head + b"options  \0"
        k = 0
        for i, o in opts:
            if i == 3:
                o = struct.pack("<Q", buffer_offsets[k]) + o[8:]
                k += 1
            out += struct.pack("<HI", i, len(o)) + o
        out += b"\0\0"
        starts, blobs = [], b""
        for f, (t, clock) in enumerate(tables):
            starts.append(len(out))
            out += b"flyrecord\0"
            for c, (off, size) in enumerate(t):
                n = min(size, pages_per_cpu * page)
                out += struct.pack("<QQ", data_offsets[f][c], n)
            out += struct.pack("<Q", len(clock)) + clock
        return out, starts

    # Two passes: the first finds where things land, the second writes the final offsets.
    zero = [[0] * cpus for _ in tables]
    meta, starts = layout([0] * (len(tables) - 1), zero)
    data, offsets, at = b"", [], len(meta)
    for t, _ in tables:
        row = []
        for off, size in t:
            n = min(size, pages_per_cpu * page)
            row.append(at + len(data) if n else 0)
            data += b[off:off + n]
        offsets.append(row)
    meta2, starts2 = layout(starts[1:], offsets)
    assert len(meta2) == len(meta) and starts2 == starts
    return meta2 + data


def section(sid, body, string_id=0):
    return struct.pack("<HHIQ", sid, 0, string_id, len(body)) + body


def cut_v7(src, pages_per_cpu):
    """Rebuilds a version 7 file (uncompressed) with trimmed metadata and a few pages."""
    b = open(src, "rb").read()
    p = 10
    assert b[p:p + 2] == b"7\0"
    p += 2
    long_size, page_size = b[p + 1], struct.unpack_from("<I", b, p + 2)[0]
    p += 6
    comp = b[p:b.index(b"\0", p)]
    p += len(comp) + 1
    comp_version = b[p:b.index(b"\0", p)]
    p += len(comp_version) + 1
    (options_offset,) = struct.unpack_from("<Q", b, p)
    # Collect every option section's options and the metadata section bodies.
    sections, chain = {}, []
    while options_offset:
        q = options_offset + 16
        opts = []
        while True:
            (i, s) = struct.unpack_from("<HI", b, q)
            data = bytes(b[q + 6:q + 6 + s])
            q += 6 + s
            if i == 0:
                (options_offset,) = struct.unpack_from("<Q", data)
                break
            if 16 <= i <= 21:
                (off,) = struct.unpack_from("<Q", data)
                (_, _, _, size) = struct.unpack_from("<HHIQ", b, off)
                sections[i] = bytes(b[off + 16:off + 16 + size])
            opts.append((i, data))
        chain.append(opts)
    # Trimmed metadata, through the v6 decoder.
    v6 = (TRACING_MAGIC + b"6\0" + bytes([0, long_size]) + struct.pack("<I", page_size) +
          sections[16] + sections[17] + sections[18] + sections[19] + sections[20] + sections[21])
    d = trim(decode_tracing_data(v6))
    bodies = {16: header_info_body(d), 17: ftrace_body(d), 18: events_body(d),
              19: sized_bytes(d["kallsyms"], 4), 20: sized_bytes(d["printk"], 4),
              21: sized_bytes(d["cmdlines"])}
    header = TRACING_MAGIC + b"7\0" + bytes([0, long_size]) + struct.pack("<I", page_size)
    header += comp + b"\0" + comp_version + b"\0"
    out = bytearray(header + b"\0" * 8)
    offsets = {}
    for sid in sorted(bodies):
        offsets[sid] = len(out)
        out += section(sid, bodies[sid])

    def buffers(opts):
        for i, data in opts:
            if i != 3:
                continue
            r = 8
            name = data[r:data.index(b"\0", r)]
            r += len(name) + 1
            clock = data[r:data.index(b"\0", r)]
            r += len(clock) + 1
            (pg, n) = struct.unpack_from("<II", data, r)
            r += 8
            yield name, clock, pg, [struct.unpack_from("<IQQ", data, r + 20 * k) for k in range(n)]

    # Data pages first (so their offsets are known), then the option sections.
    data_at = {}
    for opts in chain:
        for name, clock, pg, cpus in buffers(opts):
            for cpu, off, size in cpus:
                n = min(size, pages_per_cpu * pg)
                data_at[(name, cpu)] = (len(out), n)
                out += b[off:off + n]
    encoded = []
    for opts in chain:
        blob = b""
        for i, data in opts:
            if 16 <= i <= 21:
                data = struct.pack("<Q", offsets[i])
            elif i == 3:
                name, clock, pg, cpus = next(buffers([(i, data)]))
                data = struct.pack("<Q", 0) + name + b"\0" + clock + b"\0"
                data += struct.pack("<II", pg, len(cpus))
                for cpu, _, _ in cpus:
                    data += struct.pack("<IQQ", cpu, *data_at[(name, cpu)])
            blob += struct.pack("<HI", i, len(data)) + data
        encoded.append(blob)
    starts = []
    for blob in encoded:
        starts.append(len(out))
        out += b"\0" * (16 + len(blob) + 6 + 8)
    for k, blob in enumerate(encoded):
        nxt = starts[k + 1] if k + 1 < len(encoded) else 0
        body = blob + struct.pack("<HIQ", 0, 8, nxt)
        out[starts[k]:starts[k] + 16 + len(body)] = struct.pack("<HHIQ", 0, 0, 0, len(body)) + body
    struct.pack_into("<Q", out, len(header), starts[0])
    return bytes(out)


# --- trace_records_fuzzer chunk lists -------------------------------------------------------

# The attrs of trace_records_fuzzer, in order (their format ids are the fixture formats').
RECORDS_FORMATS = [2105, 2104, 2107, 2108, 2103]  # insert, issue, complete, requeue, merge


def perf_chunks(src, samples):
    """Samples of a perf.data file as chunks: op 8 (sample, common_type kept), arg = attr | cpu<<4,
    dt = time delta (op | 16 when time goes back), the RAW payload."""
    b = open(src, "rb").read()
    (_, attr_size, attrs_off, attrs_size, data_off, data_size) = struct.unpack_from("<6Q", b, 8)
    # iotrace's sample layout: IDENTIFIER, TID, TIME, CPU, RAW.
    p, out, last, n = data_off, b"", None, 0
    while p < data_off + data_size and n < samples:
        (rtype, _, size) = struct.unpack_from("<IHH", b, p)
        if rtype == 9:
            (_, _, _, t, cpu, _, raw_size) = struct.unpack_from("<QIIQIII", b, p + 8)
            raw = b[p + 44:p + 44 + raw_size]
            (common_type,) = struct.unpack_from("<H", raw)
            if common_type in RECORDS_FORMATS and len(raw) < 256:
                attr = RECORDS_FORMATS.index(common_type)
                last = t if last is None else last
                dt, op = t - last, 8
                if dt < 0:
                    dt, op = -dt, 8 | 16
                out += struct.pack("<BBHB", op, attr | (cpu & 1) << 4, min(dt, 0xffff), len(raw))
                out += raw
                last = t
                n += 1
        p += size
    return out


def page_chunks(src, pages_per_cpu):
    """Ring-buffer pages of a v6 trace.dat as chunks: cpu, flags 0, len = commit, the data."""
    b = open(src, "rb").read()
    d = decode_tracing_data(b)
    p = d["end"]
    (cpus,) = struct.unpack_from("<I", b, p)
    opts, p = v6_options(b, p + 14)
    flys = [p] + [struct.unpack_from("<Q", o)[0] for i, o in opts if i == 3]
    out = b""
    for at in flys:
        for c in range(cpus):
            (off, size) = struct.unpack_from("<QQ", b, at + 10 + 16 * c)
            for k in range(min(pages_per_cpu, size // 4096)):
                page = b[off + 4096 * k:off + 4096 * (k + 1)]
                (commit,) = struct.unpack_from("<Q", page, 8)
                n = commit & ((1 << 27) - 1)
                out += struct.pack("<BBH", c, 0, n) + page[16:16 + n]
    return out


def records_seeds():
    golden = os.path.join(FIXTURES, "golden")
    tracedat = os.path.join(FIXTURES, "tracedat")
    mq = perf_chunks(os.path.join(golden, "iotrace_mq.data"), 60)
    none = perf_chunks(os.path.join(golden, "iotrace_none.data"), 40)
    seeds = {}
    for variant in range(6):  # every sample layout of the target
        seeds[f"perf_mq_v{variant}"] = bytes([variant << 1]) + mq
    seeds["perf_none_v0"] = bytes([0]) + none
    # Losses, a round mark and a COMM record (type 3: pid, tid, "dd\0" padded) among samples.
    extra = (struct.pack("<BBHB", 4, 0x11, 5, 0) + struct.pack("<BBHB", 5, 0x02, 5, 0) +
             struct.pack("<BBHB", 6, 0, 0, 0) +
             struct.pack("<BBHB", 7, 3, 0, 16) + struct.pack("<II", 7, 7) + b"dd\0\0\0\0\0\0")
    seeds["perf_losses_v0"] = bytes([0]) + extra + mq[:2000]
    v6 = page_chunks(os.path.join(tracedat, "dd_v6.dat"), 1)
    buffered = page_chunks(os.path.join(tracedat, "dd_buffered_v6.dat"), 2)
    seeds["tracedat_dd_2cpu"] = bytes([3]) + v6
    seeds["tracedat_buffered_2cpu"] = bytes([3]) + buffered
    seeds["tracedat_dd_1cpu"] = bytes([1]) + v6
    stats = b"CPU: 1\nentries: 0\noverrun: 7\ncommit overrun: 0\nbytes: 0\ndropped events: 2\n"
    seeds["tracedat_stats_2cpu"] = bytes([3]) + struct.pack("<BBH", 1, 8, len(stats)) + stats + v6
    return seeds

def main():
    os.makedirs(OUT, exist_ok=True)
    golden = os.path.join(FIXTURES, "golden")
    tracedat = os.path.join(FIXTURES, "tracedat")
    seeds = {
        "iotrace_none.data": cut_perf(os.path.join(golden, "iotrace_none.data"), 60),
        "iotrace_mq.data": cut_perf(os.path.join(golden, "iotrace_mq.data"), 80),
        "perf_mq.data": cut_perf(os.path.join(golden, "perf_mq.data"), 120),
        "dd_v6.dat": cut_v6(os.path.join(tracedat, "dd_v6.dat"), 1),
        "dd_buffered_v6.dat": cut_v6(os.path.join(tracedat, "dd_buffered_v6.dat"), 2),
        "dd_v7_none.dat": cut_v7(os.path.join(tracedat, "dd_v7_none.dat"), 1),
        # Refused early (compressed sections): the header is all it takes.
        "dd_v7_zstd.dat": open(os.path.join(tracedat, "dd_v7_zstd.dat"), "rb").read()[:48],
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes", file=sys.stderr)
    os.makedirs(OUT_RECORDS, exist_ok=True)
    for name, data in records_seeds().items():
        with open(os.path.join(OUT_RECORDS, name), "wb") as f:
            f.write(data)
        print(f"records/{name}: {len(data)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
