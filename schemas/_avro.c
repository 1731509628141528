/* The Avro writer of schemas/avro_encoder.py in C (issue 28: the ingest path's encode), and its
 * reader (the Kafka learner's, the projector's and the logs' bulk decode; see read below).
 *
 * write(program, record, header) -> bytes | None
 *
 * ``program`` is a schema compiled by ``avro_encoder.compile_program`` into nested tuples (the
 * field order, each union's branch bytes and each type fixed once); ``header`` is prepended (the
 * codec's magic and fingerprint), so a message is one allocation. It takes exactly the values the
 * generated Python writer (``compile_writer``, the oracle) takes: exact ``str``/``int``/``float``/
 * ``list``/``dict``, ``True``/``False``/``None``, integers in range, strings that encode to UTF-8.
 * For any other value it returns None and the codec leaves the record to fastavro, whose bytes or
 * error it then gets (the Python writer raised ``Unsupported`` in the same places). Same bytes as
 * fastavro: tests/schemas/test_avro_encoder.py compares all three over generated records.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* the opcodes of avro_encoder.compile_program */
enum { OP_NULL, OP_BOOLEAN, OP_INT, OP_LONG, OP_DOUBLE, OP_STRING, OP_BYTES, OP_RECORD, OP_ARRAY, OP_MAP, OP_UNION };

enum { WROTE = 0, UNSUPPORTED = 1, FAILED = -1 }; /* FAILED: a Python error is set (memory) */

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buffer;

static int reserve(Buffer *b, Py_ssize_t more) {
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    char *data = PyMem_Realloc(b->data, cap);
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static int put(Buffer *b, const void *src, Py_ssize_t n) {
    if (reserve(b, n) < 0)
        return FAILED;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return WROTE;
}

/* a base-128 varint of an already zig-zagged value */
static int put_varint(Buffer *b, uint64_t n) {
    if (reserve(b, 10) < 0)
        return FAILED;
    while (n >= 0x80) {
        b->data[b->len++] = (char)((n & 0x7F) | 0x80);
        n >>= 7;
    }
    b->data[b->len++] = (char)n;
    return WROTE;
}

static inline uint64_t zigzag(int64_t n) { return ((uint64_t)n << 1) ^ (uint64_t)(n >> 63); }

static int put_string(Buffer *b, PyObject *value) {
    if (!PyUnicode_CheckExact(value))
        return UNSUPPORTED;
    if (PyUnicode_IS_ASCII(value)) { /* its characters are its UTF-8 bytes */
        const Py_ssize_t n = PyUnicode_GET_LENGTH(value);
        if (put_varint(b, zigzag(n)) < 0)
            return FAILED;
        return put(b, PyUnicode_DATA(value), n);
    }
    /* a new bytes object, not PyUnicode_AsUTF8AndSize: that keeps a UTF-8 copy inside the str for
     * its lifetime, and the records' texts live on in the learner and the index */
    PyObject *raw = PyUnicode_AsUTF8String(value);
    if (!raw) { /* a lone surrogate: fastavro raises its own error for it */
        PyErr_Clear();
        return UNSUPPORTED;
    }
    const Py_ssize_t n = PyBytes_GET_SIZE(raw);
    int rc = put_varint(b, zigzag(n));
    if (rc == WROTE)
        rc = put(b, PyBytes_AS_STRING(raw), n);
    Py_DECREF(raw);
    return rc;
}

static int write_value(Buffer *b, PyObject *program, PyObject *value);

static int write_record(Buffer *b, PyObject *names, PyObject *programs, PyObject *value) {
    if (!PyDict_CheckExact(value))
        return UNSUPPORTED;
    const Py_ssize_t count = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < count; i++) {
        /* a missing field: fastavro writes its default (or fails); that is left to it */
        PyObject *item = PyDict_GetItemWithError(value, PyTuple_GET_ITEM(names, i));
        if (!item)
            return PyErr_Occurred() ? FAILED : UNSUPPORTED;
        int rc = write_value(b, PyTuple_GET_ITEM(programs, i), item);
        if (rc != WROTE)
            return rc;
    }
    return WROTE;
}

/* an array or a map: one block of all items (as fastavro writes them), then the end mark */
static int write_block(Buffer *b, int is_map, PyObject *items_program, PyObject *value) {
    if (is_map ? !PyDict_CheckExact(value) : !PyList_CheckExact(value))
        return UNSUPPORTED;
    const Py_ssize_t n = is_map ? PyDict_GET_SIZE(value) : PyList_GET_SIZE(value);
    int rc;
    if (n) {
        if ((rc = put_varint(b, zigzag(n))) != WROTE)
            return rc;
        if (is_map) {
            Py_ssize_t pos = 0;
            PyObject *key, *item;
            while (PyDict_Next(value, &pos, &key, &item)) { /* insertion order, as dict.items() */
                if ((rc = put_string(b, key)) != WROTE || (rc = write_value(b, items_program, item)) != WROTE)
                    return rc;
            }
        } else {
            for (Py_ssize_t i = 0; i < n; i++) /* nothing here runs Python code that could change the list */
                if ((rc = write_value(b, items_program, PyList_GET_ITEM(value, i))) != WROTE)
                    return rc;
        }
    }
    return put_varint(b, 0);
}

static int write_value(Buffer *b, PyObject *program, PyObject *value) {
    const long op = PyLong_AsLong(PyTuple_GET_ITEM(program, 0));
    switch (op) {
    case OP_NULL:
        return value == Py_None ? WROTE : UNSUPPORTED;
    case OP_BOOLEAN:
        if (value != Py_True && value != Py_False)
            return UNSUPPORTED;
        return put(b, value == Py_True ? "\x01" : "\x00", 1);
    case OP_INT:
    case OP_LONG: {
        if (!PyLong_CheckExact(value)) /* a bool is an int subclass: not taken, as in the Python writer */
            return UNSUPPORTED;
        int overflow = 0;
        const long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (n == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return UNSUPPORTED;
        }
        if (op == OP_INT && (n < INT32_MIN || n > INT32_MAX))
            return UNSUPPORTED;
        return put_varint(b, zigzag((int64_t)n));
    }
    case OP_DOUBLE: {
        if (!PyFloat_CheckExact(value))
            return UNSUPPORTED;
        unsigned char raw[8];
        if (PyFloat_Pack8(PyFloat_AS_DOUBLE(value), (char *)raw, 1) < 0) /* little-endian, as struct "<d" */
            return FAILED;
        return put(b, raw, 8);
    }
    case OP_STRING:
        return put_string(b, value);
    case OP_BYTES: {
        if (!PyBytes_CheckExact(value))
            return UNSUPPORTED;
        const Py_ssize_t n = PyBytes_GET_SIZE(value);
        int rc = put_varint(b, zigzag(n));
        return rc == WROTE ? put(b, PyBytes_AS_STRING(value), n) : rc;
    }
    case OP_RECORD:
        return write_record(b, PyTuple_GET_ITEM(program, 1), PyTuple_GET_ITEM(program, 2), value);
    case OP_ARRAY:
    case OP_MAP:
        return write_block(b, op == OP_MAP, PyTuple_GET_ITEM(program, 1), value);
    case OP_UNION: { /* (op, null's branch byte, the other's, the other's program) */
        const int is_null = value == Py_None;
        const char tag = (char)PyLong_AsLong(PyTuple_GET_ITEM(program, is_null ? 1 : 2));
        int rc = put(b, &tag, 1);
        return rc != WROTE || is_null ? rc : write_value(b, PyTuple_GET_ITEM(program, 3), value);
    }
    default:
        PyErr_Format(PyExc_ValueError, "not an Avro program opcode: %ld", op);
        return FAILED;
    }
}

static PyObject *avro_write(PyObject *self, PyObject *args) {
    PyObject *program, *record;
    Py_buffer header;
    if (!PyArg_ParseTuple(args, "O!Oy*:write", &PyTuple_Type, &program, &record, &header))
        return NULL;
    Buffer b = {0};
    PyObject *out = NULL;
    int rc = put(&b, header.buf, header.len);
    if (rc == WROTE)
        rc = write_value(&b, program, record);
    if (rc == WROTE)
        out = PyBytes_FromStringAndSize(b.data, b.len);
    else if (rc == UNSUPPORTED)
        out = Py_NewRef(Py_None);
    PyMem_Free(b.data);
    PyBuffer_Release(&header);
    return out;
}


/* ---- the reader: read(program, message, offset) -> record | None ----
 *
 * The mirror of write: the same program decodes a body written with that same schema into the
 * values fastavro's schemaless_reader gives (exact str/int/float/bool/None/bytes/list/dict, a
 * record's keys in field order, the field names the program holds as its keys). It takes only
 * well-formed bodies read to their last byte: anything else (truncated, trailing bytes, a union
 * branch the program does not name, a boolean byte other than 0/1, invalid UTF-8, a varint beyond
 * 64 bits, an int beyond 32, a block count the bytes left cannot hold) returns None, and the codec
 * asks fastavro, whose record or error it then gets: the C reader only skips fastavro's work.
 */

typedef struct {
    const unsigned char *p, *end;
} Reader;

/* an Avro long: a base-128 varint (at most 10 bytes, 64 bits) zig-zag decoded */
static int take_long(Reader *r, int64_t *out) {
    uint64_t n = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end)
            return UNSUPPORTED;
        const unsigned char byte = *r->p++;
        if (shift == 63 && byte > 1) /* beyond 64 bits */
            return UNSUPPORTED;
        n |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = (int64_t)(n >> 1) ^ -(int64_t)(n & 1);
            return WROTE;
        }
    }
    return UNSUPPORTED;
}

/* a length (of a string, bytes or a block) the bytes left can hold */
static int take_length(Reader *r, int64_t *out) {
    int rc = take_long(r, out);
    if (rc == WROTE && (*out < 0 || *out > r->end - r->p))
        return UNSUPPORTED;
    return rc;
}

static int read_string(Reader *r, PyObject **out) {
    int64_t n;
    int rc = take_length(r, &n);
    if (rc != WROTE)
        return rc;
    *out = PyUnicode_DecodeUTF8((const char *)r->p, (Py_ssize_t)n, "strict");
    if (!*out) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return FAILED;
        PyErr_Clear(); /* fastavro's strict decode raises: its error, from the codec's fallback */
        return UNSUPPORTED;
    }
    r->p += n;
    return WROTE;
}

static int read_value(Reader *r, PyObject *program, PyObject **out);

static int read_record(Reader *r, PyObject *names, PyObject *programs, PyObject **out) {
    PyObject *record = PyDict_New();
    if (!record)
        return FAILED;
    const Py_ssize_t count = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item;
        int rc = read_value(r, PyTuple_GET_ITEM(programs, i), &item);
        if (rc == WROTE) {
            rc = PyDict_SetItem(record, PyTuple_GET_ITEM(names, i), item) < 0 ? FAILED : WROTE;
            Py_DECREF(item);
        }
        if (rc != WROTE) {
            Py_DECREF(record);
            return rc;
        }
    }
    *out = record;
    return WROTE;
}

/* an array or a map: blocks of items until a zero count (a negative count carries its bytes' size
 * after it, as the spec allows and fastavro reads) */
static int read_block(Reader *r, int is_map, PyObject *items_program, PyObject **out) {
    PyObject *block = is_map ? PyDict_New() : PyList_New(0);
    if (!block)
        return FAILED;
    int rc;
    for (;;) {
        int64_t count, size;
        if ((rc = take_long(r, &count)) != WROTE)
            break;
        if (count == 0) {
            *out = block;
            return WROTE;
        }
        if (count < 0) {
            if (count == INT64_MIN || (rc = take_long(r, &size)) != WROTE) {
                rc = UNSUPPORTED;
                break;
            }
            count = -count;
        }
        if (count > r->end - r->p) { /* more items than bytes: corrupt, or fastavro's to judge */
            rc = UNSUPPORTED;
            break;
        }
        for (int64_t i = 0; i < count && rc == WROTE; i++) {
            PyObject *key = NULL, *item;
            if (is_map && (rc = read_string(r, &key)) != WROTE)
                break;
            if ((rc = read_value(r, items_program, &item)) == WROTE) {
                if (is_map ? PyDict_SetItem(block, key, item) < 0 : PyList_Append(block, item) < 0)
                    rc = FAILED;
                Py_DECREF(item);
            }
            Py_XDECREF(key);
        }
        if (rc != WROTE)
            break;
    }
    Py_DECREF(block);
    return rc;
}

static int read_value(Reader *r, PyObject *program, PyObject **out) {
    const long op = PyLong_AsLong(PyTuple_GET_ITEM(program, 0));
    int64_t n;
    int rc;
    switch (op) {
    case OP_NULL:
        *out = Py_NewRef(Py_None);
        return WROTE;
    case OP_BOOLEAN:
        if (r->p >= r->end || *r->p > 1)
            return UNSUPPORTED;
        *out = Py_NewRef(*r->p++ ? Py_True : Py_False);
        return WROTE;
    case OP_INT:
    case OP_LONG:
        if ((rc = take_long(r, &n)) != WROTE)
            return rc;
        if (op == OP_INT && (n < INT32_MIN || n > INT32_MAX))
            return UNSUPPORTED;
        *out = PyLong_FromLongLong(n);
        return *out ? WROTE : FAILED;
    case OP_DOUBLE: {
        if (r->end - r->p < 8)
            return UNSUPPORTED;
        const double d = PyFloat_Unpack8((const char *)r->p, 1); /* little-endian, as struct "<d" */
        if (d == -1.0 && PyErr_Occurred())
            return FAILED;
        r->p += 8;
        *out = PyFloat_FromDouble(d);
        return *out ? WROTE : FAILED;
    }
    case OP_STRING:
        return read_string(r, out);
    case OP_BYTES:
        if ((rc = take_length(r, &n)) != WROTE)
            return rc;
        *out = PyBytes_FromStringAndSize((const char *)r->p, (Py_ssize_t)n);
        if (!*out)
            return FAILED;
        r->p += n;
        return WROTE;
    case OP_RECORD:
        return read_record(r, PyTuple_GET_ITEM(program, 1), PyTuple_GET_ITEM(program, 2), out);
    case OP_ARRAY:
    case OP_MAP:
        return read_block(r, op == OP_MAP, PyTuple_GET_ITEM(program, 1), out);
    case OP_UNION: { /* (op, null's branch byte, the other's, the other's program): bytes are index << 1 */
        if ((rc = take_long(r, &n)) != WROTE)
            return rc;
        if (n == PyLong_AsLong(PyTuple_GET_ITEM(program, 1)) >> 1) {
            *out = Py_NewRef(Py_None);
            return WROTE;
        }
        if (n == PyLong_AsLong(PyTuple_GET_ITEM(program, 2)) >> 1)
            return read_value(r, PyTuple_GET_ITEM(program, 3), out);
        return UNSUPPORTED; /* a branch this schema does not have: fastavro's error */
    }
    default:
        PyErr_Format(PyExc_ValueError, "not an Avro program opcode: %ld", op);
        return FAILED;
    }
}

static PyObject *avro_read(PyObject *self, PyObject *args) {
    PyObject *program;
    Py_buffer message;
    Py_ssize_t offset;
    if (!PyArg_ParseTuple(args, "O!y*n:read", &PyTuple_Type, &program, &message, &offset))
        return NULL;
    if (offset < 0 || offset > message.len) {
        PyBuffer_Release(&message);
        PyErr_SetString(PyExc_ValueError, "offset outside the message");
        return NULL;
    }
    Reader r = {(const unsigned char *)message.buf + offset, (const unsigned char *)message.buf + message.len};
    PyObject *record = NULL;
    int rc = read_value(&r, program, &record);
    PyObject *out = NULL;
    if (rc == WROTE && r.p == r.end)
        out = record;
    else if (rc != FAILED) { /* not taken, or trailing bytes: the codec's fastavro decides */
        Py_XDECREF(record);
        out = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&message);
    return out;
}

static PyMethodDef methods[] = {
    {"write", avro_write, METH_VARARGS,
     "write(program, record, header) -> bytes | None: header + the record's Avro body, or None for a value "
     "left to fastavro."},
    {"read", avro_read, METH_VARARGS,
     "read(program, message, offset) -> record | None: the Avro body from offset to the message's end, or None "
     "for a body left to fastavro (not well-formed, or not read to its end)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_avro", "The compiled Avro writer and reader in C (issue 28).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__avro(void) { return PyModule_Create(&module); }
