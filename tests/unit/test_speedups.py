"""kxtx.fast.native (kxtx/fast/native.c), the optional C loops, against the Python loops they replace: the
same message arrays (kxtx.client.fast.batch._fill), the same partitions (Kafka's murmur2,
kxtx.produce.fast.murmur), and a JSON scan that vouches only for lines the parsers accept (msgspec,
orjson, json: kxtx.produce.fast.plain, kxtx.produce.mapping). Where the module was not built the tests skip; under CI (which installs a C
compiler and Python's headers, .ci/run) they fail instead: CI must run them."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import random
from array import array

import pytest

from kxtx.client.fast import batch
from kxtx.fast import speedups
from kxtx.produce.fast import murmur, plain
from kxtx.produce.inputs import Line
from kxtx.produce.jsondepth import MAX_JSON_DEPTH
from kxtx.produce.mapping import BadRecord, Mapper, MappingSpec, parse_json
from tests.binaries import need_native
from tests.conftest import fast_only


@pytest.fixture
def native():
    return need_native()


def _messages(n: int) -> array:
    return array("q", [0]) * (ctypes.sizeof(batch._Message) // 8 * n)


def _fields(msgs: array, n: int, at: str, length: str) -> list[bytes]:
    view = (batch._Message * n).from_buffer(msgs)
    return [ctypes.string_at(getattr(m, at), getattr(m, length)) for m in view]


RECORDS = [
    [b"a"],
    [b"", b"x", b""],
    [b"{}", b'{"k":1}', "é".encode() * 40, b"\x00\xff"],
    [bytes([i % 256]) * (i % 300) for i in range(1000)],
]


# from the first record and from the second (a batch of no record never gets here: Batcher.produce
# returns first)
@pytest.mark.parametrize("parts, k", [(parts, k) for parts in RECORDS for k in (0, 1) if k < len(parts)])
def test_fill_points_the_messages_where_the_python_fill_does(native, parts, k):
    """Payloads and keys of records [k, end): the same bytes through either loop (the C loop points
    at each record's own bytes, the Python one into a joined copy)."""
    end = len(parts)
    n = end - k
    keys = [b"k%d" % i for i in range(end)]
    by_c, by_py = _messages(n), _messages(n)
    assert native.fill(by_c, parts, k, end, batch._PAYLOAD, batch._LEN, batch._STRIDE) is True
    assert native.fill(by_c, keys, k, end, batch._KEY, batch._KEY_LEN, batch._STRIDE) is True
    keep = [batch._fill(by_py, parts[k:end], batch._PAYLOAD, batch._LEN)]
    keep.append(batch._fill(by_py, keys[k:end], batch._KEY, batch._KEY_LEN))
    assert _fields(by_c, n, "payload", "len") == _fields(by_py, n, "payload", "len") == parts[k:end]
    assert _fields(by_c, n, "key", "key_len") == _fields(by_py, n, "key", "key_len") == keys[k:end]
    # nothing but the two fields written: the rest of each message stays zero
    other = [
        i for i in range(batch._STRIDE) if i not in (batch._PAYLOAD, batch._LEN, batch._KEY, batch._KEY_LEN)
    ]
    assert all(by_c[m * batch._STRIDE + i] == 0 for m in range(n) for i in other)
    del keep


def test_fill_leaves_anything_but_bytes_to_the_caller(native):
    msgs = _messages(3)
    for odd in ("text", bytearray(b"b"), memoryview(b"m"), None):
        assert native.fill(msgs, [b"a", odd, b"c"], 0, 3, batch._PAYLOAD, batch._LEN, batch._STRIDE) is False
        assert not any(msgs), "nothing written"
    # and batch's own caller then joins them as before (bytes-like objects only)
    keep = batch._point(msgs, [b"a", bytearray(b"b"), b"c"], 0, 3, batch._PAYLOAD, batch._LEN)
    assert _fields(msgs, 3, "payload", "len") == [b"a", b"b", b"c"]
    del keep


@pytest.mark.parametrize(
    "k, end, at, short",
    [(-1, 2, 3, False), (0, 5, 3, False), (2, 1, 3, False), (0, 2, 99, False), (0, 2, 3, True)],
    ids=["negative-k", "past-the-list", "end-before-k", "field-outside-a-message", "array-too-short"],
)
def test_fill_refuses_what_would_write_outside_the_array(native, k, end, at, short):
    msgs = _messages(1 if short else 4)
    with pytest.raises(ValueError):
        native.fill(msgs, [b"a", b"b", b"c"], k, end, at, batch._LEN, batch._STRIDE)


def test_fill_needs_a_writable_array(native):
    with pytest.raises((TypeError, BufferError)):
        native.fill(bytes(72), [b"a"], 0, 1, batch._PAYLOAD, batch._LEN, batch._STRIDE)


@pytest.mark.parametrize("n", [1, 2, 6, 7, 100, 65537, 2**31 - 1])
def test_partitions_are_kafkas_murmur2(native, n):
    """Every key length 0-40 (each tail of 0-3 bytes after whole words), random bytes, against
    the Python reference of Kafka's Utils.murmur2; an empty key is -1 (left to librdkafka)."""
    rnd = random.Random(n)
    keys = [rnd.randbytes(length) for length in range(41) for _ in range(50)]
    want = [-1 if not key else murmur.partition(key, n) for key in keys]
    assert native.partitions(keys, n) == want


#: Kafka's own test vectors of Utils.murmur2 (clients/src/test/.../utils/UtilsTest.java, testMurmur2)
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("n", [1, 3, 2**31 - 1])
def test_partitions_of_kafkas_test_vectors(native, n):
    keys = list(KAFKA_MURMUR2)
    assert native.partitions(keys, n) == [(KAFKA_MURMUR2[k] & 0x7FFFFFFF) % n for k in keys]


def test_partitions_leave_anything_but_bytes_to_the_caller(native):
    assert native.partitions([b"a", "text"], 6) is None
    with pytest.raises(ValueError):
        native.partitions([b"a"], 0)


@fast_only
def test_kxtx_speedups_0_turns_them_off(monkeypatch):
    monkeypatch.setattr(speedups, "_module", None)
    monkeypatch.setenv("KXTX_SPEEDUPS", "0")
    assert speedups.module() is None
    assert murmur.Partitioner(6)._loop is None
    monkeypatch.setattr(speedups, "_module", None)
    monkeypatch.delenv("KXTX_SPEEDUPS")
    assert (speedups.module() is not None) == (importlib.util.find_spec("kxtx.fast.native") is not None)


# --- json_vouch ----------------------------------------------------------------------------------
#: the limits of the scan in kxtx/fast/native.c (VOUCH_DEPTH, VOUCH_NUMBER)
VOUCH_DEPTH, VOUCH_NUMBER = 64, 64

VOUCHED = [
    b"{}",
    b"[]",
    b'{"id": "o0", "user": "u0", "event": "click", "amount": 0}',
    b' \t{"a" : [1 , -2.5e-3, 0.0, 1E+2, 3e7, true, false, null, {}, []] }\r ',
    b'"text"',
    b"0",
    b"-0",
    b"null",
    b'"\\" \\/ \\b\\f\\n\\r\\t \\u00e9 \\uD83D\\uDE00 \\uffff"'.replace(b"\\\\", b"\\"),
    '{"é": "日本"}'.encode(),
    b'{"long string": "' + b"x" * 5000 + b'"}',
    b"[" * VOUCH_DEPTH + b"]" * VOUCH_DEPTH,
    b"1" * VOUCH_NUMBER,
    b'{"a":{"b":{"c":[{"d":1}]}}}',
]

NOT_VOUCHED = {
    # not JSON
    "empty": b"",
    "blank": b"  ",
    "two texts": b"{} {}",
    "trailing comma in an array": b"[1,]",
    "trailing comma in an object": b'{"a":1,}',
    "leading zero": b"01",
    "bare point": b"1.",
    "point first": b".5",
    "exponent without digits": b"1e",
    "minus alone": b"-",
    "plus sign": b"+1",
    "NaN": b"NaN",
    "Infinity": b"Infinity",
    "truncated literal": b"tru",
    "literal with a tail": b"nulls",
    "unknown escape": b'"a\\x"',
    "short unicode escape": b'"\\u12"',
    "bad hex digit": b'"\\u12g4"',
    "control character in a string": b'"a\x01b"',
    "line feed in a string": b'"a\nb"',
    "unterminated string": b'"abc',
    "unterminated object": b'{"a":1',
    "name without a colon": b'{"a" 1}',
    "name not a string": b"{1:2}",
    "single quotes": b"{'a':1}",
    "mismatched brackets": b"[1}",
    "NUL after the text": b"{}\x00",
    "form feed as whitespace": b"\x0c1",
    "comment": b"{} // c",
    # JSON, left to a parser: the scan is cautious
    "a high surrogate alone": b'"\\ud800"',
    "a low surrogate alone": b'"\\udc00"',
    "a high surrogate and no low one": b'"\\ud800\\u0041"',
    "nested one level past the scan": b"[" * (VOUCH_DEPTH + 1) + b"]" * (VOUCH_DEPTH + 1),
    "a long number": b"1" * (VOUCH_NUMBER + 1),
    "a long fraction": b"0." + b"1" * VOUCH_NUMBER,
}


def _parsers_accept(line: bytes) -> bool:
    """Whether every parser kxtx uses takes `line` as JSON (msgspec's check, parse_json, json)."""
    try:
        plain._check(line)
        parse_json(line)
        json.loads(line)
    except (ValueError, RecursionError, BadRecord):
        return False
    return True


@pytest.mark.parametrize("line", VOUCHED, ids=lambda line: repr(line[:30]))
def test_json_vouch_vouches_for_ordinary_json(native, line):
    assert _parsers_accept(line)
    assert native.json_vouch([line], 0, 1) == 1


@pytest.mark.parametrize("line", NOT_VOUCHED.values(), ids=NOT_VOUCHED.keys())
def test_json_vouch_leaves_the_rest_to_a_parser(native, line):
    assert native.json_vouch([line], 0, 1) == 0


def test_json_vouch_returns_the_first_line_it_does_not_vouch_for(native):
    lines = [b"1", b"{}", b"[1,]", b"2", "not bytes", b"3"]
    assert native.json_vouch(lines, 0, 6) == 2
    assert native.json_vouch(lines, 3, 6) == 4
    assert native.json_vouch(lines, 5, 6) == 6
    assert native.json_vouch(lines, 1, 2) == 2
    assert native.json_vouch(lines, 3, 3) == 3
    for k, end in ((-1, 2), (0, 7), (3, 2)):
        with pytest.raises(ValueError):
            native.json_vouch(lines, k, end)


def _random_json(rnd: random.Random, depth: int) -> object:
    kind = rnd.randrange(8 if depth < 6 else 5)
    if kind == 0:
        return rnd.choice([None, True, False])
    if kind == 1:
        return rnd.choice([0, -1, 7, 2**53, -(2**63), 10**30, 0.5, -1.25e-7, 3.0e300])
    if kind in (2, 3, 4):
        alphabet = 'ab "\\/\b\f\n\r\t\x00\x1f\x7fé日\U0001f600'
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(12)))
    if kind in (5, 6):
        return [_random_json(rnd, depth + 1) for _ in range(rnd.randrange(4))]
    return {str(_random_json(rnd, depth + 1)): _random_json(rnd, depth + 1) for _ in range(rnd.randrange(4))}


def test_json_vouch_vouches_for_what_json_writes(native):
    """JSON as serializers write it (escaped or raw non-ASCII, compact or spaced) is vouched for,
    so the scan, not the slower parser, decides ordinary lines."""
    rnd = random.Random(7)
    lines = []
    for _ in range(3000):
        value = _random_json(rnd, 0)
        lines.append(json.dumps(value, ensure_ascii=rnd.random() < 0.5, indent=None).encode())
        lines.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    assert native.json_vouch(lines, 0, len(lines)) == len(lines)


def test_json_vouch_never_vouches_for_what_a_parser_refuses(native):
    """Differential: random edits of JSON lines (valid UTF-8, as the caller guarantees); every
    line the scan vouches for is accepted by every parser. Enough lines of both outcomes are
    seen for the test to mean something."""
    rnd = random.Random(11)
    seeds = [json.dumps(_random_json(rnd, 0)).encode() for _ in range(200)] + VOUCHED[:10]
    alphabet = b' \t\r\n{}[]:,"\\/0123456789-+.eEtrufalsnbxu\x00\x1fABFdD'
    vouched = refused = 0
    for _ in range(60000):
        line = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randint(0, len(line))
            edit = rnd.random()
            if edit < 0.4 and line:
                del line[rnd.randrange(len(line))]
            elif edit < 0.85:
                line[at:at] = bytes([rnd.choice(alphabet)])
            else:
                line[at:at] = rnd.choice(seeds)
        text = bytes(line)
        try:
            text.decode()
        except UnicodeDecodeError:  # the caller checks UTF-8 itself, a block at a time
            continue
        if native.json_vouch([text], 0, 1) == 1:
            vouched += 1
            assert _parsers_accept(text), text
        else:
            refused += 1
    assert vouched > 5000 and refused > 5000


@pytest.mark.parametrize("utf8", [True, False])
def test_first_refused_is_the_same_with_or_without_the_scan(native, monkeypatch, utf8):
    """kxtx.produce.fast.plain.first_refused (the fast path's check) finds the same lines with the C
    scan as with the parser alone: blank, bad, nested too deeply (kxtx's limit), and lines the
    scan leaves to the parser that it accepts."""
    deep = b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)
    ok_deep = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    pool = [*VOUCHED, *NOT_VOUCHED.values(), deep, ok_deep, b'"\\ud83d\\ude00"', b"1" * 500]
    if not utf8:
        pool.append(b'"\xff"')
    rnd = random.Random(3)
    for _ in range(300):
        values = [rnd.choice(pool) for _ in range(rnd.randrange(1, 12))]
        k = rnd.randrange(len(values))
        with_scan = plain.first_refused(values, k, len(values), utf8)
        monkeypatch.setattr(speedups, "module", lambda: None)
        without = plain.first_refused(values, k, len(values), utf8)
        monkeypatch.undo()
        assert with_scan == without, values


# --- json_keys -----------------------------------------------------------------------------------
KEYS = {
    # line -> the key the scan reads, or None: left to msgspec (which may then find one)
    b'{"id": "o0", "user": "u0"}': b"o0",
    b'{"id":12}': b"12",
    b'{"id":-7}': b"-7",
    b'{"id":""}': b"",
    '{"id":"日本"}'.encode(): "日本".encode(),
    b'{"x":[1,{"id":"inner"}],"id":"top"}': b"top",
    b'{"x":{"id":"inner"}}': None,  # only nested: missing at the top
    b'{"id":-0}': None,  # Python writes 0
    b'{"id":0.5}': None,
    b'{"id":1e3}': None,
    b'{"id":1234567890123456789}': None,  # 19 digits
    b'{"id":true}': None,
    b'{"id":null}': None,
    b'{"id":{"a":1}}': None,
    b'{"id":[1]}': None,
    b'{"id":"a\\nb"}': None,  # escapes: msgspec decodes them
    b'{"i\\u0064":"x"}': None,  # a name with an escape may be "id"
    b'{"id":"a","id":"b"}': None,  # twice
    b'["id"]': None,
    b'"id"': None,
    b'{"id":"x"': None,  # not JSON
    b"": None,
}


@pytest.mark.parametrize("line, key", KEYS.items(), ids=lambda v: repr(v)[:30])
def test_json_keys_reads_ordinary_keys_and_leaves_the_rest(native, line, key):
    keys, undecided = native.json_keys([b"{}", line], b"id")
    assert keys == [None, key]
    assert undecided == [0, 1] if key is None else undecided == [0]


def test_json_keys_reads_what_the_general_mapper_makes(native):
    """Differential: random JSON objects with an "id" of any kind, random edits; each key the
    scan reads is the key of the general mapper's record for that line."""
    rnd = random.Random(5)
    mapper = Mapper(MappingSpec(key_field="id"), "jsonl")
    lines = []
    for _ in range(4000):
        doc = _random_json(rnd, 1)
        doc = doc if isinstance(doc, dict) else {"v": doc}
        doc["id"] = rnd.choice(
            [_random_json(rnd, 3), rnd.randrange(-(10**20), 10**20), f"k{rnd.randrange(99)}"]
        )
        text = json.dumps(doc, ensure_ascii=rnd.random() < 0.5).encode()
        if rnd.random() < 0.3:
            at = rnd.randrange(len(text))
            text = text[:at] + bytes([rnd.choice(b'",:{}[]\\ 1')]) + text[at:]
        try:
            text.decode()
        except UnicodeDecodeError:  # the caller checks UTF-8 itself, a block at a time
            continue
        lines.append(text)
    keys, undecided = native.json_keys(lines, b"id")
    read = 0
    for i, (line, key) in enumerate(zip(lines, keys)):
        if key is None:
            assert i in undecided
            continue
        read += 1
        assert mapper.map(Line(i + 1, 0, len(line), line, None, None)).key == key, line
    for i in undecided:
        assert keys[i] is None
    assert read > 1000 and len(undecided) > 500
