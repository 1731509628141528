/* The Avro writer of schemas/avro_encoder.py in C (issue 28: the ingest path's encode), and its
 * reader (the Kafka learner's, the projector's and the logs' bulk decode; see read below).
 *
 * write(program, record, header) -> bytes | None
 * write_many(program, records, header) -> (messages, left)   (write of each; left: the positions of the Nones)
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
#include <stdlib.h>
#include <string.h>

/* the opcodes of avro_encoder.compile_program */
enum { OP_NULL, OP_BOOLEAN, OP_INT, OP_LONG, OP_DOUBLE, OP_STRING, OP_BYTES, OP_RECORD, OP_ARRAY, OP_MAP, OP_UNION };

enum { WROTE = 0, UNSUPPORTED = 1, FAILED = -1 }; /* FAILED: out of memory, or a Python error is set */

/* One set of writers for the encoder's message and the reader's Native columns (issue 28, round seventeen:
 * the encoder had its own Buffer beside them, the same reserve/put/varint over PyMem). libc's allocator, so
 * the columns fill without the GIL; a writer that runs out of memory returns FAILED with no Python error set,
 * and the caller holding the GIL sets it (``avro_write``, ``avro_native_block``). */
typedef struct { /* a growing byte buffer */
    char *data;
    size_t len, cap;
} RawBuf;

/* The writers' common case (room left) inlined into every caller, the growth out of line: with the encoder's
 * calls beside the reader's, gcc stopped inlining the shared writers into the Native walk (frame ~x1.08) */
static Py_NO_INLINE int raw_grow(RawBuf *b, size_t more) {
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + more)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data)
        return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static Py_ALWAYS_INLINE inline int raw_reserve(RawBuf *b, size_t more) {
    return b->len + more <= b->cap ? 0 : raw_grow(b, more);
}

static Py_ALWAYS_INLINE inline int raw_put(RawBuf *b, const void *src, size_t n) {
    if (raw_reserve(b, n) < 0)
        return FAILED;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return WROTE;
}

/* unsigned LEB128: ClickHouse's VarUInt, and Avro's varint of an already zig-zagged value */
static Py_ALWAYS_INLINE inline int raw_varuint(RawBuf *b, uint64_t n) {
    if (raw_reserve(b, 10) < 0)
        return FAILED;
    while (n >= 0x80) {
        b->data[b->len++] = (char)((n & 0x7F) | 0x80);
        n >>= 7;
    }
    b->data[b->len++] = (char)n;
    return WROTE;
}

static Py_ALWAYS_INLINE inline int raw_le(RawBuf *b, uint64_t v, int bytes) { /* little-endian, as Native's numbers */
    unsigned char out[8];
    for (int i = 0; i < bytes; i++)
        out[i] = (unsigned char)(v >> (8 * i));
    return raw_put(b, out, bytes);
}

static inline uint64_t zigzag(int64_t n) { return ((uint64_t)n << 1) ^ (uint64_t)(n >> 63); }

static int put_string(RawBuf *b, PyObject *value) {
    if (!PyUnicode_CheckExact(value))
        return UNSUPPORTED;
    if (PyUnicode_IS_ASCII(value)) { /* its characters are its UTF-8 bytes */
        const Py_ssize_t n = PyUnicode_GET_LENGTH(value);
        if (raw_varuint(b, zigzag(n)) < 0)
            return FAILED;
        return raw_put(b, PyUnicode_DATA(value), (size_t)n);
    }
    /* a new bytes object, not PyUnicode_AsUTF8AndSize: that keeps a UTF-8 copy inside the str for
     * its lifetime, and the records' texts live on in the learner and the index (encoding straight into the
     * message from the code points, its length counted first, measured no faster: round seventeen) */
    PyObject *raw = PyUnicode_AsUTF8String(value);
    if (!raw) { /* a lone surrogate: fastavro raises its own error for it */
        PyErr_Clear();
        return UNSUPPORTED;
    }
    const Py_ssize_t n = PyBytes_GET_SIZE(raw);
    int rc = raw_varuint(b, zigzag(n));
    if (rc == WROTE)
        rc = raw_put(b, PyBytes_AS_STRING(raw), (size_t)n);
    Py_DECREF(raw);
    return rc;
}

static int write_value(RawBuf *b, PyObject *program, PyObject *value);

static int write_record(RawBuf *b, PyObject *names, PyObject *programs, PyObject *value) {
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
static int write_block(RawBuf *b, int is_map, PyObject *items_program, PyObject *value) {
    if (is_map ? !PyDict_CheckExact(value) : !PyList_CheckExact(value))
        return UNSUPPORTED;
    const Py_ssize_t n = is_map ? PyDict_GET_SIZE(value) : PyList_GET_SIZE(value);
    int rc;
    if (n) {
        if ((rc = raw_varuint(b, zigzag(n))) != WROTE)
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
    return raw_varuint(b, 0);
}

static int write_value(RawBuf *b, PyObject *program, PyObject *value) {
    const long op = PyLong_AsLong(PyTuple_GET_ITEM(program, 0));
    switch (op) {
    case OP_NULL:
        return value == Py_None ? WROTE : UNSUPPORTED;
    case OP_BOOLEAN:
        if (value != Py_True && value != Py_False)
            return UNSUPPORTED;
        return raw_put(b, value == Py_True ? "\x01" : "\x00", 1);
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
        return raw_varuint(b, zigzag((int64_t)n));
    }
    case OP_DOUBLE: {
        if (!PyFloat_CheckExact(value))
            return UNSUPPORTED;
        unsigned char raw[8];
        if (PyFloat_Pack8(PyFloat_AS_DOUBLE(value), (char *)raw, 1) < 0) /* little-endian, as struct "<d" */
            return FAILED;
        return raw_put(b, raw, 8);
    }
    case OP_STRING:
        return put_string(b, value);
    case OP_BYTES: {
        if (!PyBytes_CheckExact(value))
            return UNSUPPORTED;
        const Py_ssize_t n = PyBytes_GET_SIZE(value);
        int rc = raw_varuint(b, zigzag(n));
        return rc == WROTE ? raw_put(b, PyBytes_AS_STRING(value), n) : rc;
    }
    case OP_RECORD:
        return write_record(b, PyTuple_GET_ITEM(program, 1), PyTuple_GET_ITEM(program, 2), value);
    case OP_ARRAY:
    case OP_MAP:
        return write_block(b, op == OP_MAP, PyTuple_GET_ITEM(program, 1), value);
    case OP_UNION: { /* (op, null's branch byte, the other's, the other's program) */
        const int is_null = value == Py_None;
        const char tag = (char)PyLong_AsLong(PyTuple_GET_ITEM(program, is_null ? 1 : 2));
        int rc = raw_put(b, &tag, 1);
        return rc != WROTE || is_null ? rc : write_value(b, PyTuple_GET_ITEM(program, 3), value);
    }
    default:
        PyErr_Format(PyExc_ValueError, "not an Avro program opcode: %ld", op);
        return FAILED;
    }
}

/* The message buffer of the last write, kept for the next: a fresh one grew by realloc two or three times a
 * record and was freed after it. One write at a time uses it (taken and given back with the GIL held; a dict
 * look-up could run a key's __eq__, which could write); a write beside it gets a fresh one. Kept only up to
 * KEEP_MESSAGE bytes (a record with a long text does not pin its size). */
#define KEEP_MESSAGE ((size_t)1 << 20)
static RawBuf kept_message;
static int kept_message_busy;

/* header + record's Avro body as bytes, Py_None for a value left to fastavro, or NULL with the error set: the
 * body of write and write_many, in the kept message buffer when no other write holds it. */
static PyObject *write_message(PyObject *program, PyObject *record, const Py_buffer *header) {
    const int kept = !kept_message_busy;
    RawBuf fresh = {0}, *b = kept ? &kept_message : &fresh;
    kept_message_busy = 1;
    b->len = 0;
    PyObject *out = NULL;
    int rc = raw_put(b, header->buf, (size_t)header->len);
    if (rc == WROTE)
        rc = write_value(b, program, record);
    if (rc == WROTE)
        out = PyBytes_FromStringAndSize(b->data, (Py_ssize_t)b->len);
    else if (rc == UNSUPPORTED)
        out = Py_NewRef(Py_None);
    else if (!PyErr_Occurred()) /* a writer out of memory sets no error (it may run without the GIL) */
        PyErr_NoMemory();
    if (!kept || b->cap > KEEP_MESSAGE) {
        free(b->data);
        *b = (RawBuf){0};
    }
    if (kept)
        kept_message_busy = 0;
    return out;
}

static PyObject *avro_write(PyObject *self, PyObject *args) {
    PyObject *program, *record;
    Py_buffer header;
    if (!PyArg_ParseTuple(args, "O!Oy*:write", &PyTuple_Type, &program, &record, &header))
        return NULL;
    PyObject *out = write_message(program, record, &header);
    PyBuffer_Release(&header);
    return out;
}

/* write_many(program, records, header) -> (messages, left): write of each of a list of records, in one call (a
 * batch's records were a Python call and a look-up each through Registry.encode: issue 28, round eighteen);
 * left lists the positions whose message is None (values left to fastavro), in order. */
static PyObject *avro_write_many(PyObject *self, PyObject *args) {
    PyObject *program, *records;
    Py_buffer header;
    if (!PyArg_ParseTuple(args, "O!O!y*:write_many", &PyTuple_Type, &program, &PyList_Type, &records, &header))
        return NULL;
    PyObject *messages = PyList_New(0), *left = PyList_New(0), *out = NULL;
    /* a record's write can run Python (a key's __eq__) that changes the list: its length is read each time */
    for (Py_ssize_t i = 0; messages && left && i < PyList_GET_SIZE(records); i++) {
        PyObject *record = Py_NewRef(PyList_GET_ITEM(records, i));
        PyObject *message = write_message(program, record, &header);
        Py_DECREF(record);
        PyObject *at = message == Py_None ? PyLong_FromSsize_t(i) : NULL;
        const int ok = message && PyList_Append(messages, message) == 0 &&
                       (message != Py_None || (at && PyList_Append(left, at) == 0));
        Py_XDECREF(message);
        Py_XDECREF(at);
        if (!ok)
            Py_CLEAR(messages);
    }
    if (messages && left)
        out = PyTuple_Pack(2, messages, left);
    Py_XDECREF(messages);
    Py_XDECREF(left);
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

/* an array's or a map's block header: its item count (0 ends the value; a negative count carries its bytes'
 * size after it, as the spec allows and fastavro reads); more items than bytes left is corrupt, or fastavro's
 * to judge: UNSUPPORTED. Shared by read_block and check_value. */
static int take_block_count(Reader *r, int64_t *count) {
    int64_t size;
    const int rc = take_long(r, count);
    if (rc != WROTE)
        return rc;
    if (*count < 0) {
        if (*count == INT64_MIN || take_long(r, &size) != WROTE)
            return UNSUPPORTED;
        *count = -*count;
    }
    return *count > r->end - r->p ? UNSUPPORTED : WROTE;
}

/* an array or a map: blocks of items until a zero count (a negative count carries its bytes' size
 * after it, as the spec allows and fastavro reads) */
static int read_block(Reader *r, int is_map, PyObject *items_program, PyObject **out) {
    PyObject *block = is_map ? PyDict_New() : PyList_New(0);
    if (!block)
        return FAILED;
    int rc;
    for (;;) {
        int64_t count;
        if ((rc = take_block_count(r, &count)) != WROTE)
            break;
        if (count == 0) {
            *out = block;
            return WROTE;
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

/* ---- UTF-8 as Python's strict decoder has it (native_block's strings) ---- */

/* one well-formed UTF-8 sequence at p (Unicode's table 3-7: no overlong form, no surrogate, nothing
 * past U+10FFFF, nothing cut), as Python's strict decoder and chDB's isValidUTF8 take it; its length, 0 if none */
static int utf8_sequence(const unsigned char *p, const unsigned char *end) {
    const unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return end - p >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (end - p < 3 || (p[2] & 0xC0) != 0x80)
            return 0;
        const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (end - p < 4 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        const unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi ? 4 : 0;
    }
    return 0;
}

static int valid_utf8(const unsigned char *p, const unsigned char *end) {
    while (p < end) {
        while (end - p >= 8) { /* ASCII runs, 8 bytes a step: most of a text */
            uint64_t word;
            memcpy(&word, p, 8);
            if (word & 0x8080808080808080ULL)
                break;
            p += 8;
        }
        if (p >= end)
            break;
        const int n = utf8_sequence(p, end);
        if (!n)
            return 0;
        p += n;
    }
    return 1;
}

/* a length-prefixed string or bytes value (utf8: checked); WROTE or UNSUPPORTED */
static int skip_sized(Reader *r, int utf8) {
    int64_t n;
    int rc = take_length(r, &n);
    if (rc != WROTE)
        return rc;
    if (utf8 && !valid_utf8(r->p, r->p + n))
        return UNSUPPORTED;
    r->p += n;
    return WROTE;
}

/* ---- native_block(program, header, columns, nonempty, bounded, batches, start, stop) -> (bytes, rows) | None ----
 *
 * For a Kafka replay's and the worker's record batches (streams/kafka_batches.py): the records of ``batches``
 * (each ``(data, begin, end, count, base)``: the records section of one uncompressed v2 batch and its base
 * offset) checked (each record in its place, its value the current perception read whole, its strings strict
 * UTF-8: what round fourteen's check_records checked, folded in here), and the values of those at offsets
 * [start, stop) as one ClickHouse Native block: a column a leaf of ``program`` (records flattened, in schema
 * order; ``columns`` names each leaf, None drops it), then ``_offset`` (UInt64). chDB reads Native columns with no parse of its
 * own (~0.7 us a record against Avro's ~2.9 in an INSERT, docs/speed.md "Kafka replay, round fifteen"), so
 * the statement has nothing left to check. A row also needs its ``nonempty`` columns' strings non-empty and
 * its ``bounded`` column, (index, low, high), inside [low, high] (invalid_reason's checks). Any record
 * refused: None (the caller takes the per-record path). The walk runs without the GIL: the program is
 * compiled to a C array first. Leaves: string, bytes, int, long, boolean, double, a union of null and one
 * of those, an array or a map of strings; another leaf in the program raises ValueError.
 */

enum { K_STRING, K_INT32, K_INT64, K_BOOL, K_FLOAT64, K_ARRAY, K_MAP };
#define MAX_NODES 256

typedef struct {
    int op;
    long null_branch, other_branch; /* OP_UNION's branch indexes */
    int first, count;               /* children in Plan.kids: a record's fields; an array's, map's or union's one */
    int inner;                      /* a union's other branch's, an array's or a map's items' scalar opcode */
    int column;                     /* the column a leaf fills, -1 for a record or a dropped leaf */
} Node;

typedef struct {
    Node nodes[MAX_NODES];
    int kids[MAX_NODES];
    int n_nodes, n_kids, n_leaves;
} Plan;


typedef struct {
    int kind, nullable, utf8, inner_op; /* inner_op: the scalar's opcode (a union's other branch, an item's) */
    const char *name;
    Py_ssize_t name_len;
    RawBuf nulls, offsets, data, values; /* values: a map's values (data: its keys) */
    uint64_t items;                      /* an array's or map's items so far: its offsets are cumulative */
    int64_t last;                        /* this row's value: a string's length (0 if null), an integer */
} Column;

static int is_scalar(int op) {
    return op == OP_STRING || op == OP_BYTES || op == OP_INT || op == OP_LONG || op == OP_BOOLEAN || op == OP_DOUBLE;
}

static int scalar_kind(int op) {
    return op == OP_INT ? K_INT32 : op == OP_LONG ? K_INT64 : op == OP_BOOLEAN ? K_BOOL : op == OP_DOUBLE ? K_FLOAT64
                                                                                                          : K_STRING;
}

/* program (a tuple of avro_encoder.compile_program) into plan->nodes; its index, -1 with a Python error set.
 * Leaves are numbered in schema order; ``columns`` says which fill a column (cols[] set up here). */
static int compile_node(Plan *plan, PyObject *program, PyObject *columns, Column *cols, int *n_cols) {
    if (!PyTuple_Check(program) || PyTuple_GET_SIZE(program) < 1) {
        PyErr_SetString(PyExc_ValueError, "native_block: not an Avro program");
        return -1;
    }
    if (plan->n_nodes >= MAX_NODES) {
        PyErr_SetString(PyExc_ValueError, "native_block: the program is too large");
        return -1;
    }
    const int at = plan->n_nodes++;
    Node *node = &plan->nodes[at];
    node->op = (int)PyLong_AsLong(PyTuple_GET_ITEM(program, 0));
    node->column = -1;
    node->first = node->count = 0;
    if (node->op == OP_RECORD) {
        PyObject *programs = PyTuple_GET_ITEM(program, 2);
        const int count = (int)PyTuple_GET_SIZE(programs);
        if (plan->n_kids + count > MAX_NODES) {
            PyErr_SetString(PyExc_ValueError, "native_block: the program is too large");
            return -1;
        }
        node->first = plan->n_kids;
        node->count = count;
        plan->n_kids += count;
        for (int i = 0; i < count; i++) {
            const int kid = compile_node(plan, PyTuple_GET_ITEM(programs, i), columns, cols, n_cols);
            if (kid < 0)
                return -1;
            plan->kids[plan->nodes[at].first + i] = kid;
        }
        return at;
    }
    /* a leaf: what its column holds */
    int kind, nullable = 0, inner;
    if (is_scalar(node->op)) {
        kind = scalar_kind(node->op);
        inner = node->op;
    } else if (node->op == OP_UNION && is_scalar((int)PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(program, 3), 0)))) {
        inner = (int)PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(program, 3), 0));
        kind = scalar_kind(inner);
        nullable = 1;
        node->null_branch = PyLong_AsLong(PyTuple_GET_ITEM(program, 1)) >> 1;
        node->other_branch = PyLong_AsLong(PyTuple_GET_ITEM(program, 2)) >> 1;
    } else if ((node->op == OP_ARRAY || node->op == OP_MAP) &&
               PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(program, 1), 0)) == OP_STRING) {
        kind = node->op == OP_ARRAY ? K_ARRAY : K_MAP;
        inner = OP_STRING;
    } else {
        PyErr_Format(PyExc_ValueError, "native_block: leaf %d of the program (opcode %d) has no Native column here",
                     plan->n_leaves, node->op);
        return -1;
    }
    node->inner = inner;
    const int leaf = plan->n_leaves++;
    if (leaf >= PyTuple_GET_SIZE(columns)) {
        PyErr_SetString(PyExc_ValueError, "native_block: fewer column names than the program has leaves");
        return -1;
    }
    PyObject *name = PyTuple_GET_ITEM(columns, leaf);
    if (name == Py_None)
        return at;
    Column *c = &cols[*n_cols];
    if (!(c->name = PyUnicode_AsUTF8AndSize(name, &c->name_len)))
        return -1;
    c->kind = kind;
    c->nullable = nullable;
    c->inner_op = inner;
    c->utf8 = inner == OP_STRING;
    node->column = (*n_cols)++;
    return at;
}

static int take_string(Reader *r, int utf8, RawBuf *out, int64_t *len) { /* a string or bytes, Native's way */
    int64_t n;
    int rc = take_length(r, &n);
    if (rc != WROTE)
        return rc;
    if (utf8 && !valid_utf8(r->p, r->p + n))
        return UNSUPPORTED;
    if (raw_varuint(out, (uint64_t)n) != WROTE || raw_put(out, r->p, (size_t)n) != WROTE)
        return FAILED;
    r->p += n;
    *len = n;
    return WROTE;
}

static int take_scalar(Reader *r, int op, Column *c) {
    int64_t n;
    int rc;
    switch (op) {
    case OP_STRING:
    case OP_BYTES:
        return take_string(r, op == OP_STRING, &c->data, &c->last);
    case OP_INT:
    case OP_LONG:
        if ((rc = take_long(r, &n)) != WROTE)
            return rc;
        if (op == OP_INT && (n < INT32_MIN || n > INT32_MAX))
            return UNSUPPORTED;
        c->last = n;
        return raw_le(&c->data, (uint64_t)n, op == OP_INT ? 4 : 8);
    case OP_BOOLEAN:
        if (r->p >= r->end || *r->p > 1)
            return UNSUPPORTED;
        c->last = *r->p;
        return raw_put(&c->data, r->p++, 1);
    default: /* OP_DOUBLE: Avro's 8 bytes are Native's (both little-endian IEEE 754) */
        if (r->end - r->p < 8)
            return UNSUPPORTED;
        r->p += 8;
        return raw_put(&c->data, r->p - 8, 8);
    }
}

static int put_default(int op, Column *c) { /* what Native holds under a null */
    static const char zeros[8] = {0};
    c->last = 0;
    return raw_put(&c->data, zeros, op == OP_STRING || op == OP_BYTES || op == OP_BOOLEAN ? 1 : op == OP_INT ? 4 : 8);
}

/* one scalar of opcode ``op`` checked as check_value checks it, nothing kept */
static int skip_scalar(Reader *r, int op) {
    int64_t n;
    int rc;
    switch (op) {
    case OP_STRING:
    case OP_BYTES:
        return skip_sized(r, op == OP_STRING);
    case OP_INT:
    case OP_LONG:
        if ((rc = take_long(r, &n)) != WROTE)
            return rc;
        return op == OP_INT && (n < INT32_MIN || n > INT32_MAX) ? UNSUPPORTED : WROTE;
    case OP_BOOLEAN:
        if (r->p >= r->end || *r->p > 1)
            return UNSUPPORTED;
        r->p++;
        return WROTE;
    default: /* OP_DOUBLE */
        if (r->end - r->p < 8)
            return UNSUPPORTED;
        r->p += 8;
        return WROTE;
    }
}

/* a value of node ``at``: into its columns when ``cols`` (a row in range), else only checked (check_value's
 * walk); a dropped leaf is only checked either way */
static int take_node(Reader *r, const Plan *plan, int at, Column *cols) {
    const Node *node = &plan->nodes[at];
    Column *c = cols && node->column >= 0 ? &cols[node->column] : NULL;
    int64_t n, count, len;
    int rc;
    switch (node->op) {
    case OP_RECORD:
        for (int i = 0; i < node->count; i++)
            if ((rc = take_node(r, plan, plan->kids[node->first + i], cols)) != WROTE)
                return rc;
        return WROTE;
    case OP_UNION:
        if ((rc = take_long(r, &n)) != WROTE)
            return rc;
        if (n != node->null_branch && n != node->other_branch)
            return UNSUPPORTED; /* a branch this schema does not have */
        if (!c)
            return n == node->null_branch ? WROTE : skip_scalar(r, node->inner);
        if (raw_reserve(&c->nulls, 1) < 0)
            return FAILED;
        c->nulls.data[c->nulls.len++] = n == node->null_branch;
        return n == node->null_branch ? put_default(node->inner, c) : take_scalar(r, node->inner, c);
    case OP_ARRAY:
    case OP_MAP: /* of strings (compile_node) */
        for (;;) {
            if ((rc = take_block_count(r, &count)) != WROTE)
                return rc;
            if (count == 0)
                return c ? raw_le(&c->offsets, c->items, 8) : WROTE;
            for (int64_t i = 0; i < count; i++) {
                if (node->op == OP_MAP && (rc = c ? take_string(r, 1, &c->data, &len) : skip_sized(r, 1)) != WROTE)
                    return rc;
                if ((rc = c ? take_string(r, 1, node->op == OP_MAP ? &c->values : &c->data, &len)
                            : skip_sized(r, 1)) != WROTE)
                    return rc;
            }
            if (c)
                c->items += (uint64_t)count;
        }
    default:
        return c ? take_scalar(r, node->op, c) : skip_scalar(r, node->op);
    }
}

/* the value of one Kafka v2 record at r, the ``index``-th of its batch, past ``header``: the record's own
 * fields as native_block takes them (attributes 0, its offset delta its index, a UTF-8 key, no headers, its
 * length what they take). WROTE with ``value`` set, else UNSUPPORTED. */
static int record_value(Reader *r, const unsigned char *header, Py_ssize_t header_len, int64_t index, Reader *value) {
    int64_t length, delta, n;
    int rc;
    if ((rc = take_length(r, &length)) != WROTE)
        return rc;
    Reader record = {r->p, r->p + length};
    r->p += length;
    if (record.p >= record.end || *record.p++ != 0) /* attributes */
        return UNSUPPORTED;
    if ((rc = take_long(&record, &n)) != WROTE || (rc = take_long(&record, &delta)) != WROTE)
        return rc; /* the timestamp delta (any), the offset delta */
    if (delta != index || (rc = skip_sized(&record, 1)) != WROTE) /* the key: -1 (null) is refused */
        return UNSUPPORTED;
    if ((rc = take_length(&record, &n)) != WROTE)
        return rc;
    *value = (Reader){record.p, record.p + n};
    record.p += n;
    if (n < header_len || memcmp(value->p, header, (size_t)header_len) != 0)
        return UNSUPPORTED;
    value->p += header_len;
    if (take_long(&record, &n) != WROTE || n != 0) /* no headers */
        return UNSUPPORTED;
    return record.p == record.end ? WROTE : UNSUPPORTED;
}

typedef struct {
    Py_buffer data;
    Py_ssize_t begin, end, count;
    int64_t base;
} Batch;

/* every batch's records into cols (rows at offsets [start, stop)) and offsets; WROTE, UNSUPPORTED or FAILED
 * (memory: no Python error set, the caller holds no GIL) */
static int take_batches(const Plan *plan, const unsigned char *header, Py_ssize_t header_len, const Batch *batches,
                        Py_ssize_t n_batches, int64_t start, int64_t stop, Column *cols,
                        const int *nonempty, int n_nonempty, int bounded, int64_t low, int64_t high, RawBuf *offsets,
                        uint64_t *rows) {
    for (Py_ssize_t b = 0; b < n_batches; b++) {
        Reader r = {(const unsigned char *)batches[b].data.buf + batches[b].begin,
                    (const unsigned char *)batches[b].data.buf + batches[b].end};
        for (Py_ssize_t i = 0; i < batches[b].count; i++) {
            Reader value;
            int rc = record_value(&r, header, header_len, i, &value);
            if (rc != WROTE)
                return rc;
            const int64_t offset = batches[b].base + i;
            const int keep = offset >= start && offset < stop;
            if ((rc = take_node(&value, plan, 0, keep ? cols : NULL)) != WROTE)
                return rc;
            if (value.p != value.end) /* read to the value's last byte */
                return UNSUPPORTED;
            if (!keep)
                continue;
            for (int k = 0; k < n_nonempty; k++)
                if (cols[nonempty[k]].last <= 0)
                    return UNSUPPORTED;
            if (bounded >= 0 && (cols[bounded].last < low || cols[bounded].last > high))
                return UNSUPPORTED;
            if (raw_le(offsets, (uint64_t)offset, 8) != WROTE)
                return FAILED;
            (*rows)++;
        }
        if (r.p != r.end) /* the batch is exactly its records */
            return UNSUPPORTED;
    }
    return WROTE;
}

static const char *native_type(const Column *c) {
    static const char *plain[] = {"String", "Int32", "Int64", "Bool", "Float64", "Array(String)", "Map(String, String)"};
    static const char *nullable[] = {"Nullable(String)", "Nullable(Int32)", "Nullable(Int64)", "Nullable(Bool)",
                                     "Nullable(Float64)"};
    return c->nullable ? nullable[c->kind] : plain[c->kind];
}

/* the Native block (no block info: the ``Native`` file format): columns and rows, then per column its name,
 * its type and its streams (a null map before the values, an array's offsets before its items, a map's keys
 * before its values). Written into ``out`` when it is not NULL; its size either way. */
static size_t native_bytes(const Column *cols, int n_cols, const RawBuf *offsets, uint64_t rows, char *out) {
    unsigned char head[20];
    size_t at = 0;
#define EMIT(src, n) do { if (out) memcpy(out + at, (src), (n)); at += (n); } while (0)
#define EMIT_VARUINT(v) do { uint64_t v_ = (v); int n_ = 0; while (v_ >= 0x80) { head[n_++] = (unsigned char)((v_ & 0x7F) | 0x80); v_ >>= 7; } \
        head[n_++] = (unsigned char)v_; EMIT(head, n_); } while (0)
    EMIT_VARUINT((uint64_t)n_cols + 1);
    EMIT_VARUINT(rows);
    for (int k = 0; k <= n_cols; k++) {
        const Column *c = k < n_cols ? &cols[k] : NULL;
        const char *name = c ? c->name : "_offset", *type = c ? native_type(c) : "UInt64";
        const size_t name_len = c ? (size_t)c->name_len : 7;
        EMIT_VARUINT(name_len);
        EMIT(name, name_len);
        EMIT_VARUINT(strlen(type));
        EMIT(type, strlen(type));
        const RawBuf *streams[] = {c ? &c->nulls : NULL, c ? &c->offsets : NULL, c ? &c->data : offsets,
                                   c ? &c->values : NULL};
        for (int s = 0; s < 4; s++)
            if (streams[s] && streams[s]->len)
                EMIT(streams[s]->data, streams[s]->len);
    }
#undef EMIT_VARUINT
#undef EMIT
    return at;
}

/* the index of the column called ``name``; -1 with a ValueError if none */
static int column_named(const Column *cols, int n_cols, PyObject *name) {
    const char *want = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int k = 0; want && k < n_cols; k++)
        if (strcmp(cols[k].name, want) == 0)
            return k;
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "native_block: %R is not a column", name);
    return -1;
}

/* The column buffers of the last call, kept for the next: a range's ~24 MB of fresh pages cost ~0.8 us a
 * record in page faults (docs/speed.md, round fifteen). One call at a time uses them (taken and given back
 * with the GIL held); a call beside it gets fresh ones. Kept only up to KEEP_BYTES. */
#define KEEP_BYTES ((size_t)64 << 20)
static Column kept_cols[MAX_NODES];
static RawBuf kept_offsets;
static int kept_busy;

static RawBuf *buffer_of(Column *c, int s) {
    return s == 0 ? &c->nulls : s == 1 ? &c->offsets : s == 2 ? &c->data : &c->values;
}

/* empties every buffer (``release``: gives back its memory too); their bytes held before */
static size_t empty_buffers(Column *cols, RawBuf *offsets, int release) {
    size_t held = offsets->cap;
    for (int k = 0; k < MAX_NODES; k++) {
        for (int s = 0; s < 4; s++) {
            RawBuf *b = buffer_of(&cols[k], s);
            held += b->cap;
            if (release) {
                free(b->data);
                *b = (RawBuf){0};
            }
            b->len = 0;
        }
        cols[k].items = 0;
    }
    if (release) {
        free(offsets->data);
        *offsets = (RawBuf){0};
    }
    offsets->len = 0;
    return held;
}

static PyObject *avro_native_block(PyObject *self, PyObject *args) {
    PyObject *program, *columns, *nonempty_names, *bounded_arg, *batch_list;
    Py_buffer header;
    long long start, stop;
    if (!PyArg_ParseTuple(args, "O!y*O!O!O!O!LL:native_block", &PyTuple_Type, &program, &header, &PyTuple_Type,
                          &columns, &PyTuple_Type, &nonempty_names, &PyTuple_Type, &bounded_arg, &PyList_Type,
                          &batch_list, &start, &stop))
        return NULL;
    Plan *plan = PyMem_Calloc(1, sizeof(Plan));
    const int kept = !kept_busy;
    Column *cols = kept ? kept_cols : PyMem_Calloc(MAX_NODES, sizeof(Column));
    RawBuf fresh_offsets = {0}, *offsets = kept ? &kept_offsets : &fresh_offsets;
    kept_busy = 1;
    const Py_ssize_t n_batches = PyList_GET_SIZE(batch_list);
    Batch *batches = PyMem_Calloc(n_batches ? n_batches : 1, sizeof(Batch));
    int nonempty[MAX_NODES], n_nonempty = 0, bounded = -1, n_cols = 0;
    long long low = 0, high = 0;
    Py_ssize_t got = 0;
    uint64_t rows = 0;
    PyObject *result = NULL;
    if (!plan || !cols || !batches) {
        PyErr_NoMemory();
        goto done;
    }
    if (compile_node(plan, program, columns, cols, &n_cols) < 0)
        goto done;
    if (plan->n_leaves != PyTuple_GET_SIZE(columns)) {
        PyErr_SetString(PyExc_ValueError, "native_block: more column names than the program has leaves");
        goto done;
    }
    if (plan->nodes[0].op != OP_RECORD) {
        PyErr_SetString(PyExc_ValueError, "native_block: the program is not a record");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(nonempty_names); i++)
        if ((nonempty[n_nonempty++] = column_named(cols, n_cols, PyTuple_GET_ITEM(nonempty_names, i))) < 0)
            goto done;
    PyObject *bounded_name;
    if (!PyArg_ParseTuple(bounded_arg, "OLL", &bounded_name, &low, &high)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "native_block: bounded is (column, low, high)");
        goto done;
    }
    if ((bounded = column_named(cols, n_cols, bounded_name)) < 0)
        goto done;
    if (cols[bounded].kind != K_INT64 || cols[bounded].nullable) {
        PyErr_Format(PyExc_ValueError, "native_block: %R is not a long", bounded_name);
        goto done;
    }
    for (got = 0; got < n_batches; got++) {
        Batch *b = &batches[got];
        PyObject *item = PyList_GET_ITEM(batch_list, got), *data;
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "OnnnL", &data, &b->begin, &b->end, &b->count, &b->base))
            goto bad_batch;
        if (PyObject_GetBuffer(data, &b->data, PyBUF_SIMPLE) < 0)
            goto done;
        if (b->begin < 0 || b->begin > b->end || b->end > b->data.len || b->count < 0) {
            PyBuffer_Release(&b->data);
            goto bad_batch;
        }
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = take_batches(plan, header.buf, header.len, batches, n_batches, start, stop, cols, nonempty,
                      n_nonempty, bounded, low, high, offsets, &rows);
    Py_END_ALLOW_THREADS
    if (rc == FAILED)
        PyErr_NoMemory();
    else if (rc != WROTE)
        result = Py_NewRef(Py_None);
    else { /* written straight into the bytes object (one copy of the columns, not two) */
        PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)native_bytes(cols, n_cols, offsets, rows, NULL));
        if (bytes) {
            char *into = PyBytes_AS_STRING(bytes);
            Py_BEGIN_ALLOW_THREADS
            native_bytes(cols, n_cols, offsets, rows, into);
            Py_END_ALLOW_THREADS
            result = Py_BuildValue("(NK)", bytes, (unsigned long long)rows);
        }
    }
    goto done;
bad_batch:
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "native_block: a batch is (data, begin, end, count, base) inside its data");
    }
done:
    for (Py_ssize_t i = 0; i < got; i++)
        PyBuffer_Release(&batches[i].data);
    if (kept) { /* emptied for the next call; given back when a range made them large */
        if (empty_buffers(cols, offsets, 0) > KEEP_BYTES)
            empty_buffers(cols, offsets, 1);
        kept_busy = 0;
    } else if (cols) {
        empty_buffers(cols, offsets, 1);
        PyMem_Free(cols);
    }
    PyMem_Free(plan);
    PyMem_Free(batches);
    PyBuffer_Release(&header);
    return result;
}

/* ---- crc32c(data, start, end) -> int: CRC-32C (Castagnoli) of data[start:end] ----
 *
 * The v2 record batch's checksum, as aiokafka's calc_crc32c computes it (a table, ~1 us a 1.2 KB record: as much
 * as the records' checks); here by the CPU's crc32 instruction where it has one (SSE 4.2), else by a table. */

static uint32_t crc_table[256];

static void crc_table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc_by_table(uint32_t crc, const unsigned char *p, Py_ssize_t n) {
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
__attribute__((target("sse4.2"))) static uint32_t crc_by_instruction(uint32_t crc, const unsigned char *p,
                                                                     Py_ssize_t n) {
    uint64_t c = crc;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
    }
    crc = (uint32_t)c;
    for (; n > 0; n--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
static int has_crc_instruction(void) { return __builtin_cpu_supports("sse4.2"); }
#else
static uint32_t crc_by_instruction(uint32_t crc, const unsigned char *p, Py_ssize_t n) { return crc_by_table(crc, p, n); }
static int has_crc_instruction(void) { return 0; }
#endif

static int crc_instruction;

static PyObject *avro_crc32c(PyObject *self, PyObject *args) {
    Py_buffer data;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn:crc32c", &data, &start, &end))
        return NULL;
    PyObject *out = NULL;
    if (start < 0 || start > end || end > data.len)
        PyErr_SetString(PyExc_ValueError, "start or end outside the data");
    else {
        const unsigned char *p = (const unsigned char *)data.buf + start;
        uint32_t crc;
        Py_BEGIN_ALLOW_THREADS
        crc = ~(crc_instruction ? crc_by_instruction(0xFFFFFFFFu, p, end - start) : crc_by_table(0xFFFFFFFFu, p, end - start));
        Py_END_ALLOW_THREADS
        out = PyLong_FromUnsignedLong(crc);
    }
    PyBuffer_Release(&data);
    return out;
}

static PyMethodDef methods[] = {
    {"write", avro_write, METH_VARARGS,
     "write(program, record, header) -> bytes | None: header + the record's Avro body, or None for a value "
     "left to fastavro."},
    {"write_many", avro_write_many, METH_VARARGS,
     "write_many(program, records, header) -> (messages, left): write of each record of a list; left: the positions "
     "whose message is None (left to fastavro)."},
    {"read", avro_read, METH_VARARGS,
     "read(program, message, offset) -> record | None: the Avro body from offset to the message's end, or None "
     "for a body left to fastavro (not well-formed, or not read to its end)."},
    {"crc32c", avro_crc32c, METH_VARARGS,
     "crc32c(data, start, end) -> int: the CRC-32C of data[start:end] (a Kafka v2 record batch's checksum)."},
    {"native_block", avro_native_block, METH_VARARGS,
     "native_block(program, header, columns, nonempty, bounded, batches, start, stop) -> (bytes, rows) | None: the "
     "Kafka v2 records of batches checked, those at offsets [start, stop) as one ClickHouse Native block "
     "(streams/kafka_batches.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_avro", "The compiled Avro writer and reader in C (issue 28).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__avro(void) {
    crc_table_init();
    crc_instruction = has_crc_instruction();
    return PyModule_Create(&module);
}
