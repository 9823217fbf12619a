/* The loop of `kdash summary` that CPython cannot run fast enough: walk a block of log lines,
 * count them, sum the strict prefill lines and set aside the rest that are not access lines.
 *
 * Why C: on a busy server's log four lines in five are uvicorn access lines and most of the
 * rest are `Prefill batch` lines, of which a summary needs only the token sums. `re` spends
 * about 90 ns on each access line just to try a pattern at its start and see it fail, and a
 * prefill line costs it a match, a tuple and two numbers to convert; counting newlines is a
 * pass of its own. No library does this (numpy, pyarrow and `grep -v` were each measured
 * slower than `re`). Here `memchr` finds the newlines and plain comparisons do the rest.
 * Everything else stays in Python (dash/core/views/fastscan.py), which does this step with `re`
 * when the module was not built, with the same results.
 *
 * scan(buf, start, end, first_line) -> (lines, kept, numbers, prefill)
 *   buf[start] is the newline before the first line; the lines are buf[start + 1:end], the
 *   last one ending with the newline at buf[end - 1]. `lines` is how many there are.
 *   `prefill` is None, or (count, new tokens, cached tokens, first line number, its stamp,
 *   last line number, its stamp) of the strict prefill lines (`strict_prefill` below),
 *   with or without rank tags.
 *   `kept` holds every other line that is neither empty nor an access line, each after a
 *   newline, with a final newline; `numbers` their line numbers (the first line counting as
 *   `first_line`) as native int64. An access line is what `fastscan._ROW` skips: `[`, any 19
 *   bytes, `] INFO:     ` and an ASCII digit.
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

static int
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* `YYYY-MM-DD HH:MM:SS` in ASCII digits */
static int
is_stamp(const char *s)
{
    static const char shape[] = "0000-00-00 00:00:00";
    for (int k = 0; k < 19; k++) {
        if (shape[k] == '0' ? !is_digit(s[k]) : s[k] != shape[k])
            return 0;
    }
    return 1;
}

static int
literal(const char *l, Py_ssize_t len, Py_ssize_t *i, const char *text, Py_ssize_t n)
{
    if (len - *i < n || memcmp(l + *i, text, (size_t)n) != 0)
        return 0;
    *i += n;
    return 1;
}

/* One or more digits; refused past 15 (the sums stay exact and far from overflow). */
static int
number(const char *l, Py_ssize_t len, Py_ssize_t *i, int64_t *value)
{
    Py_ssize_t j = *i;
    int64_t v = 0;
    while (j < len && is_digit(l[j])) {
        if (j - *i == 15)
            return 0;
        v = v * 10 + (l[j] - '0');
        j++;
    }
    if (j == *i)
        return 0;
    *i = j;
    *value = v;
    return 1;
}

static int
contains(const char *l, Py_ssize_t len, const char *text, Py_ssize_t n)
{
    const char *p = l, *end = l + len;
    while (end - p >= n && (p = memchr(p, text[0], (size_t)(end - p - n + 1))) != NULL) {
        if (memcmp(p, text, (size_t)n) == 0)
            return 1;
        p++;
    }
    return 0;
}

/* Rank tags after the stamp, as fastscan._TAG reads them: ` TP0`, ` DP1 TP3 EP3`, ... each a
 * known name and 1 to 4 digits, then `] `. Moves *i past them; 0 when the prefix is not that. */
static int
rank_tags(const char *l, Py_ssize_t len, Py_ssize_t *i)
{
    static const char *const names[] = {"DP", "TP", "EP", "PP", "ATTN_CP", "MOE_DP"};
    Py_ssize_t j = *i;
    while (j < len && l[j] == ' ') {
        j++;
        int named = 0;
        for (size_t k = 0; k < sizeof names / sizeof names[0] && !named; k++) {
            Py_ssize_t n = (Py_ssize_t)strlen(names[k]);
            if (len - j >= n && memcmp(l + j, names[k], (size_t)n) == 0) {
                j += n;
                named = 1;
            }
        }
        Py_ssize_t digits = 0;
        while (j < len && is_digit(l[j]) && digits < 5) {
            j++;
            digits++;
        }
        if (!named || digits < 1 || digits > 4)
            return 0;
    }
    if (len - j < 2 || l[j] != ']' || l[j + 1] != ' ')
        return 0;
    *i = j + 2;
    return 1;
}

/* A prefill line that fastscan._ROW reads strictly, with a stamp in digits and nothing that
 * makes fastscan refuse its block: its new and cached token counts. Any other line, however
 * close, is kept for the pattern and the parser to decide on. */
static int
strict_prefill(const char *l, Py_ssize_t len, int64_t *new_tokens, int64_t *cached_tokens)
{
    int64_t seq;
    Py_ssize_t i = 20;
    if (len < 22 || l[0] != '[' || !is_stamp(l + 1) || !rank_tags(l, len, &i)
        || !literal(l, len, &i, "Prefill batch", 13) || i >= len || (l[i] != '.' && l[i] != ','))
        return 0;
    i++;
    if (!literal(l, len, &i, " #new-seq: ", 11) || !number(l, len, &i, &seq)
        || !literal(l, len, &i, ", #new-token: ", 14) || !number(l, len, &i, new_tokens)
        || !literal(l, len, &i, ", #cached-token: ", 17) || !number(l, len, &i, cached_tokens))
        return 0;
    if (i != len && !(len - i >= 2 && l[i] == ',' && l[i + 1] == ' '))
        return 0;
    return memchr(l, '\r', (size_t)len) == NULL && memchr(l, 0x1b, (size_t)len) == NULL
           && !contains(l, len, "^[", 2) && !contains(l, len, "Decode batch", 12);
}

static PyObject *
scan(PyObject *Py_UNUSED(self), PyObject *args)
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
    /* strict prefill lines, summed here instead of kept */
    long long pre_count = 0, pre_first = 0, pre_last = 0;
    int64_t new_sum = 0, cached_sum = 0, new_tokens, cached_tokens;
    const char *first_stamp = NULL, *last_stamp = NULL;
    Py_BEGIN_ALLOW_THREADS
    while (p < end) {
        const char *nl = memchr(s + p, '\n', (size_t)(end - p));
        Py_ssize_t q = nl - s; /* found: s[end - 1] is a newline */
        Py_ssize_t len = q - p;
        if (len > 0 && strict_prefill(s + p, len, &new_tokens, &cached_tokens)
            && new_tokens <= INT64_MAX - new_sum && cached_tokens <= INT64_MAX - cached_sum) {
            new_sum += new_tokens;
            cached_sum += cached_tokens;
            if (pre_count++ == 0) {
                pre_first = line;
                first_stamp = s + p + 1;
            }
            pre_last = line;
            last_stamp = s + p + 1;
        } else if (len > 0 && !is_access(s + p, len)) {
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
    PyObject *result = NULL;
    if (failed) {
        PyErr_NoMemory();
    } else {
        out[olen++] = '\n';
        PyObject *prefill = pre_count == 0 ? Py_NewRef(Py_None)
            : Py_BuildValue("(LLLLy#Ly#)", pre_count, (long long)new_sum, (long long)cached_sum,
                            pre_first, first_stamp, (Py_ssize_t)19, pre_last, last_stamp,
                            (Py_ssize_t)19);
        if (prefill != NULL)
            result = Py_BuildValue("(Ly#y#N)", line - first_line, out, olen, (const char *)nums,
                                   (Py_ssize_t)(kept * sizeof(int64_t)), prefill);
    }
    PyBuffer_Release(&view); /* only now: the stamps point into it */
    PyMem_RawFree(out);
    PyMem_RawFree(nums);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, start, end, first_line) -> (lines, kept, numbers, prefill): count a block's "
     "lines, sum its strict prefill lines and set aside the rest that are neither empty nor "
     "uvicorn access lines."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linescan", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

/* What fastscan expects of `scan`; raised whenever its arguments or results change, so that a
 * module left over from an older build is ignored rather than misread. */
#define LINESCAN_ABI 2

PyMODINIT_FUNC
PyInit__linescan(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "ABI", LINESCAN_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
