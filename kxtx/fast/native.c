/* kxtx.fast.native: optional C versions of per-record loops of `kxtx produce`'s fast paths.
 *
 * Built when a C compiler and Python's headers are there (setup.py: an optional extension);
 * without it kxtx runs the same loops in Python (kxtx.client.fast.batch._fill,
 * kxtx.produce.fast.murmur.Partitioner, the JSON check of kxtx.produce.fast.plain.first_refused), which
 * tests/unit/test_speedups.py compares these with.
 *
 * fill(msgs, values, k, end, at, len_at, stride) -> bool
 *     For i in 0..end-k: msgs[i*stride + at] = address of values[k+i]'s bytes,
 *     msgs[i*stride + len_at] = its length. `msgs` is a writable buffer of 64-bit words (the
 *     rd_kafka_message_t array of kxtx.client.fast.batch). Returns False, writing nothing, when a value
 *     is not exactly `bytes` (the caller then takes its own path). The addresses are valid while
 *     the values live: the caller keeps the list for the call that reads them.
 *
 * partitions(keys, n) -> list[int] | None
 *     (murmur2(key) & 0x7fffffff) % n for each key (Kafka's Utils.murmur2, the Java client's and
 *     librdkafka's murmur2_random), -1 for an empty key. None when a key is not exactly `bytes`
 *     (the caller then takes its own path).
 *
 * json_vouch(values, k, end) -> int
 *     The index of the first of values[k:end] this scan does not vouch for, or `end`. It vouches
 *     for a value that is exactly `bytes` holding one JSON text (RFC 8259; whitespace around it)
 *     that every parser kxtx uses accepts: nesting at most VOUCH_DEPTH levels, numbers of at most
 *     VOUCH_NUMBER characters, \u escapes of surrogates only in high-low pairs. Anything else is
 *     left to the caller's parser, which decides (a cautious scan: refusing more than a parser is
 *     safe, vouching for more is not; tests/unit/test_speedups.py compares it with msgspec and
 *     json). Bytes >= 0x80 in strings are not checked as UTF-8: the caller checks a block's
 *     UTF-8 in one pass before.
 *
 * json_keys(values, name) -> (keys, undecided)
 *     For each of `values`, the bytes kxtx's general mapper makes of the top-level member `name`
 *     (UTF-8 as written in JSON, no escape) where this scan is sure of them: a line it vouches for
 *     (as json_vouch) holding an object with exactly one member of that name (no member name with
 *     an escape, which could be it), whose value is a string without escapes (its UTF-8 as
 *     written) or an integer as Python writes it (up to 18 digits, no "-0"). Else None, and the
 *     line's index is in `undecided` (the caller decodes those lines with a parser).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static uint32_t murmur2(const unsigned char *data, Py_ssize_t length) {
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    Py_ssize_t words = length / 4, i;
    for (i = 0; i < words; i++) {
        uint32_t k;
        memcpy(&k, data + 4 * i, 4); /* little-endian machines only: checked at import */
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (length % 4) {
    case 3: h ^= (uint32_t)data[(length & ~3) + 2] << 16; /* fall through */
    case 2: h ^= (uint32_t)data[(length & ~3) + 1] << 8;  /* fall through */
    case 1: h ^= (uint32_t)data[length & ~3]; h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

static PyObject *partitions(PyObject *self, PyObject *args) {
    PyObject *keys, *out;
    long n;
    Py_ssize_t count, i;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!l:partitions", &PyList_Type, &keys, &n))
        return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "partitions: the partition count must be at least 1");
        return NULL;
    }
    count = PyList_GET_SIZE(keys);
    out = PyList_New(count);
    if (out == NULL)
        return NULL;
    for (i = 0; i < count; i++) {
        PyObject *key = PyList_GET_ITEM(keys, i), *p;
        Py_ssize_t len;
        long part;
        if (!PyBytes_CheckExact(key)) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        len = PyBytes_GET_SIZE(key);
        part = len == 0 ? -1 : (long)((murmur2((const unsigned char *)PyBytes_AS_STRING(key), len) & 0x7fffffffu) % (unsigned long)n);
        p = PyLong_FromLong(part);
        if (p == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, p);
    }
    return out;
}

static PyObject *fill(PyObject *self, PyObject *args) {
    PyObject *msgs, *values;
    Py_ssize_t k, end, at, len_at, stride, i, n;
    Py_buffer view;
    int64_t *words;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO!nnnnn:fill", &msgs, &PyList_Type, &values, &k, &end, &at, &len_at, &stride))
        return NULL;
    n = end - k;
    if (k < 0 || n < 0 || end > PyList_GET_SIZE(values) || stride < 1 || at < 0 || at >= stride || len_at < 0 ||
        len_at >= stride) {
        PyErr_SetString(PyExc_ValueError, "fill: index out of range");
        return NULL;
    }
    if (PyObject_GetBuffer(msgs, &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (view.len < (Py_ssize_t)sizeof(int64_t) * stride * n) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "fill: the message array is too short");
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (!PyBytes_CheckExact(PyList_GET_ITEM(values, k + i))) {
            PyBuffer_Release(&view);
            Py_RETURN_FALSE;
        }
    }
    words = (int64_t *)view.buf;
    for (i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, k + i);
        words[i * stride + at] = (int64_t)(intptr_t)PyBytes_AS_STRING(v);
        words[i * stride + len_at] = (int64_t)PyBytes_GET_SIZE(v);
    }
    PyBuffer_Release(&view);
    Py_RETURN_TRUE;
}

/* JSON: a scan that vouches for ordinary lines, in one call for a block */
#define VOUCH_DEPTH 64
#define VOUCH_NUMBER 64

/* bytes that end a run of plain string characters: '"', '\\' and control characters */
static unsigned char string_stop[256];

static void init_tables(void) {
    int c;
    for (c = 0; c < 0x20; c++)
        string_stop[c] = 1;
    string_stop['"'] = string_stop['\\'] = 1;
}

#define SKIP_WS(p, e) while ((p) < (e) && (*(p) == ' ' || *(p) == '\t' || *(p) == '\n' || *(p) == '\r')) (p)++

static int hex4(const unsigned char *p, unsigned *out) {
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* *pp at the opening quote: past the closing one, or 0 */
static int scan_string(const unsigned char **pp, const unsigned char *e) {
    const unsigned char *p = *pp + 1;
    for (;;) {
        /* eight bytes at a time: the lowest byte that is '"', '\\' or below 0x20 (exact for the
         * lowest one, which is all this needs) */
        while (e - p >= 8) {
            uint64_t x, stop;
            memcpy(&x, p, 8); /* little-endian: byte 0 is the lowest (checked at import) */
            stop = ((x ^ 0x2222222222222222ull) - 0x0101010101010101ull) & ~(x ^ 0x2222222222222222ull);
            stop |= ((x ^ 0x5c5c5c5c5c5c5c5cull) - 0x0101010101010101ull) & ~(x ^ 0x5c5c5c5c5c5c5c5cull);
            stop |= (x - 0x2020202020202020ull) & ~x;
            stop &= 0x8080808080808080ull;
            if (stop) {
                p += __builtin_ctzll(stop) / 8;
                break;
            }
            p += 8;
        }
        while (p < e && !string_stop[*p])
            p++;
        if (p >= e)
            return 0;
        if (*p == '"') {
            *pp = p + 1;
            return 1;
        }
        if (*p != '\\') /* a control character */
            return 0;
        if (e - p < 2)
            return 0;
        switch (p[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p += 2;
            break;
        case 'u': {
            unsigned u, low;
            if (e - p < 6 || !hex4(p + 2, &u))
                return 0;
            p += 6;
            if (u >= 0xDC00 && u <= 0xDFFF) /* a low surrogate alone */
                return 0;
            if (u >= 0xD800 && u <= 0xDBFF) { /* a high one: a low one must follow */
                if (e - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, &low) || low < 0xDC00 || low > 0xDFFF)
                    return 0;
                p += 6;
            }
            break;
        }
        default:
            return 0;
        }
    }
}

/* *pp at '-' or a digit: past the number, or 0 */
static int scan_number(const unsigned char **pp, const unsigned char *e) {
    const unsigned char *p = *pp, *start = *pp;
    if (*p == '-')
        p++;
    if (p >= e)
        return 0;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (p < e && *p >= '0' && *p <= '9') p++;
    else
        return 0;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9')
            return 0;
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || *p < '0' || *p > '9')
            return 0;
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    if (p - start > VOUCH_NUMBER)
        return 0;
    *pp = p;
    return 1;
}

static int scan_word(const unsigned char **pp, const unsigned char *e, const char *word, Py_ssize_t n) {
    if (e - *pp < n || memcmp(*pp, word, (size_t)n) != 0)
        return 0;
    *pp += n;
    return 1;
}

/* What `vouch` notes of one member of a top-level object (json_keys). */
struct field {
    const unsigned char *name; /* the member's name as written in JSON (UTF-8, no escape) */
    Py_ssize_t name_len;
    int found;  /* members of that name */
    int unsure; /* a member's name has an escape: it may be that name */
    int plain;  /* the (last) value is a string without escapes or a short integer */
    const unsigned char *start, *end; /* that value: the string's content, or the integer */
};

/* An integer whose text is what Python writes for it (json.dumps): no sign of zero, no fraction or
 * exponent, and within 64 bits (msgspec then decodes it to an int). */
static int plain_integer(const unsigned char *p, const unsigned char *e) {
    Py_ssize_t digits = e - p - (*p == '-');
    const unsigned char *q;
    if (digits < 1 || digits > 18 || (*p == '-' && p[1] == '0'))
        return 0;
    for (q = p + (*p == '-'); q < e; q++)
        if (*q < '0' || *q > '9')
            return 0;
    return 1;
}

/* whether s[0:n] is one JSON text the scan vouches for; `f` (or NULL): a member to note */
static int vouch(const unsigned char *s, Py_ssize_t n, struct field *f) {
    const unsigned char *p = s, *e = s + n, *vstart = NULL;
    unsigned char close[VOUCH_DEPTH]; /* the bracket that closes each level: '}' or ']' */
    int depth = 0, wanted = 0;
value:
    SKIP_WS(p, e);
    if (p >= e)
        return 0;
    if (wanted) { /* the value of the member `f` names: a scalar is noted once it ends */
        wanted = 0;
        f->plain = 0;
        if (*p == '"' || *p == '-' || (*p >= '0' && *p <= '9'))
            vstart = p;
    }
    switch (*p) {
    case '{':
    case '[':
        if (depth == VOUCH_DEPTH)
            return 0;
        close[depth++] = *p == '{' ? '}' : ']';
        p++;
        SKIP_WS(p, e);
        if (p < e && *p == close[depth - 1]) { /* empty */
            p++;
            depth--;
            goto after;
        }
        if (close[depth - 1] == '}')
            goto member;
        goto value;
    case '"':
        if (!scan_string(&p, e))
            return 0;
        goto after;
    case 't':
    case 'f':
    case 'n': {
        const char *word = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
        if (!scan_word(&p, e, word, (Py_ssize_t)strlen(word)))
            return 0;
        goto after;
    }
    default:
        if (*p != '-' && (*p < '0' || *p > '9'))
            return 0;
        if (!scan_number(&p, e))
            return 0;
        goto after;
    }
member: /* at a member's name (after '{' or ',' and whitespace) */
    if (p >= e || *p != '"') {
        return 0;
    } else {
        const unsigned char *name = p + 1;
        if (!scan_string(&p, e))
            return 0;
        if (f != NULL && depth == 1) {
            Py_ssize_t len = p - 1 - name;
            if (memchr(name, '\\', (size_t)len) != NULL)
                f->unsure = 1;
            else if (len == f->name_len && memcmp(name, f->name, (size_t)len) == 0)
                f->found++, wanted = 1;
        }
    }
    SKIP_WS(p, e);
    if (p >= e || *p != ':')
        return 0;
    p++;
    goto value;
after: /* a value ended */
    if (vstart != NULL) { /* the noted member's scalar */
        if (*vstart == '"') {
            f->start = vstart + 1;
            f->end = p - 1;
            f->plain = memchr(f->start, '\\', (size_t)(f->end - f->start)) == NULL;
        } else {
            f->start = vstart;
            f->end = p;
            f->plain = plain_integer(vstart, p);
        }
        vstart = NULL;
    }
    SKIP_WS(p, e);
    if (depth == 0)
        return p == e;
    if (p >= e)
        return 0;
    if (*p == ',') {
        p++;
        if (close[depth - 1] == '}') {
            SKIP_WS(p, e);
            goto member;
        }
        goto value;
    }
    if (*p == close[depth - 1]) {
        p++;
        depth--;
        goto after;
    }
    return 0;
}

static PyObject *json_vouch(PyObject *self, PyObject *args) {
    PyObject *values;
    Py_ssize_t k, end, i;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!nn:json_vouch", &PyList_Type, &values, &k, &end))
        return NULL;
    if (k < 0 || end < k || end > PyList_GET_SIZE(values)) {
        PyErr_SetString(PyExc_ValueError, "json_vouch: index out of range");
        return NULL;
    }
    for (i = k; i < end; i++) {
        PyObject *v = PyList_GET_ITEM(values, i);
        if (!PyBytes_CheckExact(v) || !vouch((const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), NULL))
            break;
    }
    return PyLong_FromSsize_t(i);
}

static PyObject *json_keys(PyObject *self, PyObject *args) {
    PyObject *values, *name, *keys, *undecided;
    Py_ssize_t n, i;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!:json_keys", &PyList_Type, &values, &PyBytes_Type, &name))
        return NULL;
    n = PyList_GET_SIZE(values);
    keys = PyList_New(n);
    undecided = PyList_New(0);
    if (keys == NULL || undecided == NULL)
        goto fail;
    for (i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, i), *key = NULL;
        struct field f = {(const unsigned char *)PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name), 0, 0, 0, NULL, NULL};
        if (PyBytes_CheckExact(v) && vouch((const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), &f) &&
            f.found == 1 && !f.unsure && f.plain) {
            key = PyBytes_FromStringAndSize((const char *)f.start, f.end - f.start);
            if (key == NULL)
                goto fail;
        } else {
            PyObject *at = PyLong_FromSsize_t(i);
            int failed = at == NULL || PyList_Append(undecided, at) < 0;
            Py_XDECREF(at);
            if (failed)
                goto fail;
            key = Py_None;
            Py_INCREF(key);
        }
        PyList_SET_ITEM(keys, i, key);
    }
    return Py_BuildValue("(NN)", keys, undecided);
fail:
    Py_XDECREF(keys);
    Py_XDECREF(undecided);
    return NULL;
}

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS, "Point a message array's fields at a list's bytes (see the module's source)."},
    {"partitions", partitions, METH_VARARGS, "Kafka's murmur2 partition of each key; -1 for an empty key."},
    {"json_vouch", json_vouch, METH_VARARGS, "The first value a cautious JSON scan does not vouch for."},
    {"json_keys", json_keys, METH_VARARGS, "A top-level member's value of each JSON line where the scan is sure of it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kxtx.fast.native", NULL, -1, methods};

PyMODINIT_FUNC PyInit_native(void) {
    const uint32_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    if (first != 1) { /* murmur2 reads words little-endian, as Kafka does */
        PyErr_SetString(PyExc_ImportError, "kxtx.fast.native: built for little-endian machines only");
        return NULL;
    }
    init_tables();
    return PyModule_Create(&module);
}
