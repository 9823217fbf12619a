/* The one loop of `kdash summary` that CPython cannot run fast enough: walk a block of log
 * lines, count them, and set aside the few that are not uvicorn access lines.
 *
 * Why C: on a busy server's log four lines in five are access lines, and `re` spends about
 * 90 ns on each just to try a pattern at its start and see it fail, plus a byte-at-a-time loop
 * to reach the next one; counting the newlines costs a second pass. No library does this
 * (numpy, pyarrow and `grep -v` were each measured slower than `re`). Here `memchr` finds the
 * newlines and a 13-byte comparison recognises an access line. Everything else stays in
 * Python (dash/core/fastscan.py), which falls back to doing this step with `re` when the
 * module was not built.
 *
 * scan(buf, start, end, first_line) -> (lines, kept, numbers)
 *   buf[start] is the newline before the first line; the lines are buf[start + 1:end], the
 *   last one ending with the newline at buf[end - 1]. `lines` is how many there are. `kept`
 *   holds every line that is neither empty nor an access line, each after a newline, with a
 *   final newline; `numbers` their line numbers (counting the first as `first_line`) as
 *   native int64. An access line is what `fastscan._ROW` skips: `[`, any 19 bytes,
 *   `] INFO:     ` and an ASCII digit.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define ACCESS_LEN 33 /* "[" + 19 + "] INFO:     " + digit */
static const char ACCESS_MID[] = "] INFO:     ";

static int
is_access(const char *line, Py_ssize_t len)
{
    return len >= ACCESS_LEN && line[0] == '[' && memcmp(line + 20, ACCESS_MID, 12) == 0
           && line[32] >= '0' && line[32] <= '9';
}

static PyObject *
scan(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start, end;
    long long first_line;
    if (!PyArg_ParseTuple(args, "y*nnL:scan", &view, &start, &end, &first_line))
        return NULL;
    const char *s = (const char *)view.buf;
    if (start < 0 || end > view.len || start >= end || s[start] != '\n' || s[end - 1] != '\n') {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError,
                        "scan: buf[start] and buf[end - 1] must be newlines, start < end <= len(buf)");
        return NULL;
    }
    /* Raw allocators: the loop runs without the GIL. */
    char *out = PyMem_RawMalloc((size_t)(end - start) + 1);
    size_t cap = 1024, kept = 0;
    int64_t *nums = PyMem_RawMalloc(cap * sizeof(int64_t));
    if (out == NULL || nums == NULL) {
        PyMem_RawFree(out);
        PyMem_RawFree(nums);
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Py_ssize_t olen = 0, p = start + 1;
    long long line = first_line;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    while (p < end) {
        const char *nl = memchr(s + p, '\n', (size_t)(end - p));
        Py_ssize_t q = nl - s; /* found: s[end - 1] is a newline */
        Py_ssize_t len = q - p;
        if (len > 0 && !is_access(s + p, len)) {
            if (kept == cap) {
                int64_t *grown = PyMem_RawRealloc(nums, 2 * cap * sizeof(int64_t));
                if (grown == NULL) {
                    failed = 1;
                    break;
                }
                nums = grown;
                cap *= 2;
            }
            nums[kept++] = line;
            out[olen++] = '\n';
            memcpy(out + olen, s + p, (size_t)len);
            olen += len;
        }
        line++;
        p = q + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (failed) {
        PyErr_NoMemory();
    } else {
        out[olen++] = '\n';
        result = Py_BuildValue("(Ly#y#)", line - first_line, out, olen, (const char *)nums,
                               (Py_ssize_t)(kept * sizeof(int64_t)));
    }
    PyMem_RawFree(out);
    PyMem_RawFree(nums);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, start, end, first_line) -> (lines, kept, numbers): count a block's lines and "
     "set aside those that are neither empty nor uvicorn access lines."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_linescan", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__linescan(void)
{
    return PyModule_Create(&module);
}
