/* kxtx.native: optional C versions of two per-record loops of `kxtx produce`'s fast paths.
 *
 * Built when a C compiler and Python's headers are there (setup.py: an optional extension);
 * without it kxtx runs the same loops in Python (kxtx.client.batch._fill,
 * kxtx.produce.murmur.Partitioner), which tests/unit/test_speedups.py compares these with.
 *
 * fill(msgs, values, k, end, at, len_at, stride) -> bool
 *     For i in 0..end-k: msgs[i*stride + at] = address of values[k+i]'s bytes,
 *     msgs[i*stride + len_at] = its length. `msgs` is a writable buffer of 64-bit words (the
 *     rd_kafka_message_t array of kxtx.client.batch). Returns False, writing nothing, when a value
 *     is not exactly `bytes` (the caller then takes its own path). The addresses are valid while
 *     the values live: the caller keeps the list for the call that reads them.
 *
 * partitions(keys, n) -> list[int] | None
 *     (murmur2(key) & 0x7fffffff) % n for each key (Kafka's Utils.murmur2, the Java client's and
 *     librdkafka's murmur2_random), -1 for an empty key. None when a key is not exactly `bytes`
 *     (the caller then takes its own path).
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

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS, "Point a message array's fields at a list's bytes (see the module's source)."},
    {"partitions", partitions, METH_VARARGS, "Kafka's murmur2 partition of each key; -1 for an empty key."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kxtx.native", NULL, -1, methods};

PyMODINIT_FUNC PyInit_native(void) {
    const uint32_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    if (first != 1) { /* murmur2 reads words little-endian, as Kafka does */
        PyErr_SetString(PyExc_ImportError, "kxtx.native: built for little-endian machines only");
        return NULL;
    }
    return PyModule_Create(&module);
}
