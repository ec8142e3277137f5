/* sim.maxmin.maxmin_rates in C: max-min fair rates by progressive filling, round by round, with the same
 * floating-point operations in the same order as the numpy rounds (so the same rates to the bit). The
 * flow classes of sim/classes.py solve with it at every completion instant (thousands of solves of
 * tens of rounds each, where numpy's per-call overhead was most of the time).
 *
 * sim/maxmin.py is the reference (and the fallback where this module is not built, or COLLSIM_PURE=1);
 * its docstring gives the reasoning. What the numpy rounds do, and this loop with them:
 *   share   = remaining / count where count > 0, inf elsewhere
 *   tight_f = min over the flow's live crossings of share (np.minimum.reduceat)
 *   a link is settled when none of its live crossings has share > tight_f * (1 + rtol), and count > 0
 *   a flow is fixed (at max(tight_f, 0)) when it crosses a settled link
 *   remaining -= (the fixed crossings' rate x weight, summed per link in crossing order: np.bincount),
 *   then max(remaining, 0); count -= (their weights, summed the same way)
 *
 * Beside it, the flow classes' own lines (sim/classes.py, each one's Python lines the reference): the
 * verification's numbers (necks), a split's counts (counted), and the settle of a component that lost
 * classes down the path it nearly always takes (settle_above: the cut, the solve above it, the loads
 * followed, the verification and the completion times in one call -- where the path leaves that one it
 * changes nothing and the Python lines run), with the completions' scan (due_at), the finish (finish),
 * the kept crossings (kept_rows) and _full's loads (full_loads).
 * Plain C99 and the CPython API; arrays are read through the buffer protocol. Compiled without fused
 * multiply-adds (setup.py). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_buffer view;
    int held;
} Buf;

/* ``obj`` as a C-contiguous 1-d buffer of ``fmt`` ('q': int64, 'd': float64, '?': bool); 0 where it is not one */
static int buf_open(PyObject *obj, Buf *b, char fmt, int writable) {
    b->held = 0;
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    b->held = 1;
    const char *f = b->view.format ? b->view.format : "B";
    char c = f[strlen(f) - 1];
    int ok = b->view.ndim == 1 && (fmt == '?' ? b->view.itemsize == 1 && c == '?'
                                              : b->view.itemsize == 8 &&
                                                    (fmt == 'd' ? c == 'd' : (c == 'q' || c == 'l' || c == 'n')));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "_classcore: expected a 1-d %s array, got format %s",
                     fmt == 'd' ? "float64" : fmt == '?' ? "bool" : "int64", f);
        PyBuffer_Release(&b->view);
        b->held = 0;
        return -1;
    }
    return 0;
}

static void buf_close(Buf *b) {
    if (b->held) {
        PyBuffer_Release(&b->view);
        b->held = 0;
    }
}

/* the buffers of a call: ``args[at[k]]`` as ``fmts[k]`` for k < nb, writable from the ``writable``-th on;
 * -1 with an error set (what was opened is closed by close_all) */
static int open_all(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *usage, Buf *b, int nb,
                    const char *fmts, const int *at, int writable) {
    for (int k = 0; k < nb; k++)
        b[k].held = 0;
    if (nargs != want) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    for (int k = 0; k < nb; k++)
        if (buf_open(args[at[k]], &b[k], fmts[k], k >= writable) < 0)
            return -1;
    return 0;
}

static void close_all(Buf *b, int nb) {
    for (int k = 0; k < nb; k++)
        buf_close(&b[k]);
}


static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Numbers for the arcs crossed, kept between calls: ``id[a]`` is arc a's where ``mark[a] == stamp``. */
static struct {
    uint32_t *mark;
    int64_t *id;
    size_t cap;
    uint32_t stamp;
} local;

/* Number the arcs ``arc[0..ne-1]`` cross (below ``narcs``) as first crossed: ``used`` lists them by number,
 * ``*nused`` says how many, ``local.id`` gives each its number. -1 where memory ran out. */
static int number_crossed(const int64_t *arc, Py_ssize_t ne, Py_ssize_t narcs, int64_t *used, Py_ssize_t *nused) {
    if ((size_t)narcs > local.cap) {
        uint32_t *mark = calloc((size_t)narcs, sizeof(uint32_t));
        int64_t *id = malloc((size_t)narcs * sizeof(int64_t));
        if (!mark || !id) {
            free(mark);
            free(id);
            return -1;
        }
        free(local.mark);
        free(local.id);
        local.mark = mark, local.id = id, local.cap = (size_t)narcs, local.stamp = 0;
    }
    if (++local.stamp == 0) { /* wrapped: every mark is stale again */
        memset(local.mark, 0, local.cap * sizeof(uint32_t));
        local.stamp = 1;
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t e = 0; e < ne; e++) {
        int64_t a = arc[e];
        if (local.mark[a] != local.stamp) {
            local.mark[a] = local.stamp;
            local.id[a] = n;
            used[n++] = a;
        }
    }
    *nused = n;
    return 0;
}

/* np.minimum(a, b) and np.maximum(x, 0.0) to the bit, signed zeros too: numpy's loops give the second operand
 * where the two compare equal (np.minimum(0.0, -0.0) is -0.0, np.maximum(-0.0, 0.0) is 0.0) and a NaN where
 * either is one (the first where both are). */
static inline double np_minimum(double a, double b) { return a < b || a != a ? a : b; }
static inline double np_maximum0(double x) { return x > 0.0 || x != x ? x : 0.0; }

/* The max-min rounds: ``flow``/``arc`` (``ne`` crossings, sorted by flow), ``cap`` (``narcs`` arcs), ``wt`` per
 * crossing or NULL (1 each), ``rate`` (``nflows``, written), ``bound`` per flow or NULL (none). 1: solved; 0: the
 * Python path must answer (the crossings not sorted by flow, a flow with none, an arc out of range); -1 with an
 * error set. With ``bound``, as the numpy rounds with ``flow_bound``: a flow's tightest constraint is
 * np.minimum(its links' least share, its bound), and it is fixed also where its bound <= tightest * (1 + rtol). */
static int maxmin_rounds(const int64_t *flow, const int64_t *arc, Py_ssize_t ne, const double *cap, Py_ssize_t narcs,
                         const double *wt, double *rate, Py_ssize_t nflows, const double *bound, int sorted) {
    int result = -1;
    double *remaining = NULL, *count = NULL, *share = NULL, *acc_used = NULL, *acc_w = NULL, *tight = NULL;
    int64_t *la = NULL, *lo = NULL, *hi = NULL, *ids = NULL, *slack = NULL, *used = NULL;
    double *lw = NULL;
    unsigned char *newly = NULL;
    for (Py_ssize_t f = 0; f < nflows; f++)
        rate[f] = 0.0;
    if (nflows == 0)
        return 1;
    /* sorted by flow, every flow 0..nflows-1 present, every arc in range: else the Python path (``sorted``: so
     * already, as the caller made them) */
    int fine = ne > 0 && flow[0] == 0 && flow[ne - 1] == nflows - 1;
    for (Py_ssize_t e = 0; fine && !sorted && e < ne; e++) {
        if (arc[e] < 0 || arc[e] >= narcs || (e && flow[e] != flow[e - 1] && flow[e] != flow[e - 1] + 1))
            fine = 0;
    }
    if (!fine)
        return 0;
    /* few crossings for many arcs (a few flows on a whole cluster's graph): the rounds below run over the
     * arcs crossed only, numbered as first crossed -- each arc's arithmetic is its own, in crossing order,
     * whatever its number, so the rates are the same to the bit */
    if ((size_t)narcs > 4 * (size_t)ne) {
        used = malloc((size_t)ne * sizeof(int64_t));
        if (!used || number_crossed(arc, ne, narcs, used, &narcs) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    size_t A = (size_t)narcs + 1, F = (size_t)nflows + 1, E = (size_t)ne + 1;
    remaining = malloc(A * sizeof(double));
    count = malloc(A * sizeof(double));
    share = malloc(A * sizeof(double));
    acc_used = malloc(A * sizeof(double));
    acc_w = malloc(A * sizeof(double));
    slack = malloc(A * sizeof(int64_t));
    tight = malloc(F * sizeof(double));
    lo = malloc((F + 1) * sizeof(int64_t));
    hi = malloc((F + 1) * sizeof(int64_t));
    ids = malloc(F * sizeof(int64_t));
    newly = malloc(F);
    la = malloc(E * sizeof(int64_t));
    lw = malloc(E * sizeof(double));
    if (!remaining || !count || !share || !acc_used || !acc_w || !slack || !tight || !lo || !hi || !ids || !newly || !la ||
        !lw) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t a = 0; a < narcs; a++) {
        remaining[a] = cap[used ? used[a] : a];
        count[a] = 0.0;
    }
    for (Py_ssize_t e = 0; e < ne; e++) { /* np.bincount(local, weights=weight) */
        la[e] = used ? local.id[arc[e]] : arc[e];
        lw[e] = wt ? wt[e] : 1.0;
        count[la[e]] += lw[e];
    }
    /* the live flows (ids) and their crossings' arcs and weights: la/lw[lo[i] .. hi[i]-1] for live flow i
     * (the rounds keep the live flows in order, not copying their crossings) */
    Py_ssize_t nlive = nflows;
    {
        Py_ssize_t i = 0;
        lo[0] = 0;
        for (Py_ssize_t e = 1; e < ne; e++)
            if (flow[e] != flow[e - 1])
                hi[i] = e, lo[++i] = e;
        hi[nflows - 1] = ne;
        for (Py_ssize_t f = 0; f < nflows; f++)
            ids[f] = f;
    }
    const double factor = 1.0 + 1e-12; /* 1 + sim.maxmin._RTOL */
    for (;;) {
        for (Py_ssize_t a = 0; a < narcs; a++) {
            share[a] = count[a] > 0 ? remaining[a] / count[a] : INFINITY;
            slack[a] = 0;
            acc_used[a] = 0.0;
            acc_w[a] = 0.0;
        }
        for (Py_ssize_t i = 0; i < nlive; i++) {
            double t = share[la[lo[i]]];
            for (int64_t j = lo[i] + 1; j < hi[i]; j++)
                t = np_minimum(t, share[la[j]]);
            if (bound) /* tightest = np.minimum(tightest, flow_bound[ids]) */
                t = np_minimum(t, bound[ids[i]]);
            tight[i] = t;
            double limit = t * factor;
            for (int64_t j = lo[i]; j < hi[i]; j++)
                if (share[la[j]] > limit)
                    slack[la[j]]++;
        }
        Py_ssize_t fixed = 0;
        for (Py_ssize_t i = 0; i < nlive; i++) {
            unsigned char hit = 0;
            for (int64_t j = lo[i]; j < hi[i] && !hit; j++) {
                int64_t a = la[j];
                hit = slack[a] == 0 && count[a] > 0;
            }
            if (bound && !hit) /* newly |= flow_bound[ids] <= tightest * (1 + rtol) */
                hit = bound[ids[i]] <= tight[i] * factor;
            newly[i] = hit;
            fixed += hit;
        }
        if (!fixed) {
            PyErr_SetString(PyExc_AssertionError, "max-min filling made no progress");
            goto done;
        }
        for (Py_ssize_t i = 0; i < nlive; i++) {
            if (!newly[i])
                continue;
            double given = np_maximum0(tight[i]);
            rate[ids[i]] = given;
            for (int64_t j = lo[i]; j < hi[i]; j++) { /* crossing order: np.bincount's */
                acc_used[la[j]] += wt ? given * lw[j] : given; /* (numpy: no product without weights) */
                acc_w[la[j]] += lw[j];
            }
        }
        for (Py_ssize_t a = 0; a < narcs; a++) {
            remaining[a] = np_maximum0(remaining[a] - acc_used[a]);
            count[a] -= acc_w[a];
        }
        if (fixed == nlive)
            break;
        /* keep the unfixed flows, in order */
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < nlive; i++) {
            if (newly[i])
                continue;
            ids[k] = ids[i], lo[k] = lo[i], hi[k] = hi[i];
            k++;
        }
        nlive = k;
    }
    result = 1;
done:
    free(remaining);
    free(count);
    free(share);
    free(acc_used);
    free(acc_w);
    free(slack);
    free(tight);
    free(lo);
    free(hi);
    free(ids);
    free(newly);
    free(la);
    free(lw);
    free(used);
    return result;
}

static int maxmin_core(const int64_t *flow, const int64_t *arc, Py_ssize_t ne, const double *cap, Py_ssize_t narcs,
                       const double *wt, double *rate, Py_ssize_t nflows, const double *bound) {
    return maxmin_rounds(flow, arc, ne, cap, narcs, wt, rate, nflows, bound, 0);
}

/* maxmin_core for crossings the caller made sorted by flow, every flow 0..nflows-1 present (each one crossing a
 * link or more) and every arc below ``narcs``: the same rounds, the crossings not looked over first */
static int maxmin_core_sorted(const int64_t *flow, const int64_t *arc, Py_ssize_t ne, const double *cap,
                              Py_ssize_t narcs, const double *wt, double *rate, Py_ssize_t nflows, const double *bound) {
    return maxmin_rounds(flow, arc, ne, cap, narcs, wt, rate, nflows, bound, 1);
}

/* maxmin(flow, arc, capacity, weight, out[, bound]) -> True, or False where the Python path must answer (the
 * crossings not sorted by flow, a flow with none, an arc out of range, fewer bounds than flows): ``flow``/``arc``
 * int64 (one entry per crossing), ``capacity`` float64 per arc, ``weight`` float64 per crossing or None (1 each),
 * ``out`` float64 per flow (written), ``bound`` float64 per flow or None (no bound; ``inf``: none either). */
static PyObject *py_maxmin(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "maxmin(flow, arc, capacity, weight, out[, bound])");
        return NULL;
    }
    Buf bf, ba, bc, bw, bo, bb;
    bf.held = ba.held = bc.held = bw.held = bo.held = bb.held = 0;
    PyObject *result = NULL;
    if (buf_open(args[0], &bf, 'q', 0) < 0 || buf_open(args[1], &ba, 'q', 0) < 0 ||
        buf_open(args[2], &bc, 'd', 0) < 0 || (args[3] != Py_None && buf_open(args[3], &bw, 'd', 0) < 0) ||
        buf_open(args[4], &bo, 'd', 1) < 0 || (nargs == 6 && args[5] != Py_None && buf_open(args[5], &bb, 'd', 0) < 0))
        goto done;
    Py_ssize_t ne = bf.view.shape[0];
    if (ba.view.shape[0] != ne || (bw.held && bw.view.shape[0] != ne)) {
        PyErr_SetString(PyExc_ValueError, "maxmin: flow, arc and weight differ in length");
        goto done;
    }
    if (bb.held && bb.view.shape[0] < bo.view.shape[0]) { /* (numpy: flow_bound[ids] raises) */
        result = Py_False;
        goto done;
    }
    int got = maxmin_core(bf.view.buf, ba.view.buf, ne, bc.view.buf, bc.view.shape[0],
                          bw.held ? (const double *)bw.view.buf : NULL, bo.view.buf, bo.view.shape[0],
                          bb.held ? (const double *)bb.view.buf : NULL);
    result = got < 0 ? NULL : got ? Py_True : Py_False;
done:
    buf_close(&bf);
    buf_close(&ba);
    buf_close(&bc);
    buf_close(&bw);
    buf_close(&bo);
    buf_close(&bb);
    Py_XINCREF(result);
    return result;
}

/* The numbers of py_necks (below) on arrays checked already: -1 where memory ran out (no error set). */
static int necks_core(const int64_t *cls, const int64_t *local, const double *count, const int64_t *hop,
                      const double *rate, const double *taken, const double *cap, const int64_t *size,
                      Py_ssize_t width, Py_ssize_t ne, Py_ssize_t narcs, Py_ssize_t nlive, unsigned char *full,
                      unsigned char *neck, unsigned char *quick) {
    double *load = calloc((size_t)narcs + 1, sizeof(double));
    double *fastest = calloc((size_t)narcs + 1, sizeof(double));
    double *cover = calloc((size_t)width + 1, sizeof(double));
    if (!load || !fastest || !cover) {
        free(load);
        free(fastest);
        free(cover);
        return -1;
    }
    for (Py_ssize_t e = 0; e < ne; e++) {
        double r = rate[cls[e]];
        load[local[e]] += count[e] * r; /* np.bincount(local, weights=count * rate[cls]) */
        fastest[local[e]] = r >= fastest[local[e]] || r != r ? r : fastest[local[e]]; /* np.maximum.at */
    }
    const double near = 1.0 - 1e-9; /* 1 - sim.classes._TOL */
    for (Py_ssize_t a = 0; a < narcs; a++)
        full[a] = taken[a] + load[a] >= cap[a] * near;
    for (Py_ssize_t e = 0; e < ne; e++)
        neck[e] = full[local[e]] && rate[cls[e]] >= fastest[local[e]] * near;
    for (Py_ssize_t e = 0, c = 0; c < nlive; c++) {
        for (Py_ssize_t h = 0; h < width; h++)
            cover[h] = 0.0;
        for (; e < ne && cls[e] == c; e++)
            if (neck[e])
                cover[hop[e]] += count[e];
        unsigned char any = 0;
        for (Py_ssize_t h = 0; h < width && !any; h++)
            any = cover[h] >= (double)size[c];
        quick[c] = any;
    }
    free(load);
    free(fastest);
    free(cover);
    return 0;
}

/* necks(cls, local, count, hop, rate, taken, capacity, size, width, full, neck, quick): the numbers of
 * FanExecutor._unverified in its order -- per arc crossed (``local`` numbers them, ``taken``/``capacity``
 * per arc) its load, taken + the crossings' count x rate summed in crossing order (np.bincount), and
 * whether it is full (load >= capacity x (1 - 1e-9)); per crossing whether it is a bottleneck (its arc
 * full, its class's rate >= the arc's fastest x (1 - 1e-9)); per class (``cls``: crossings sorted by
 * class) whether its bottleneck crossings at one hop position count ``size`` members or more. Writes
 * ``full`` (per arc), ``neck`` (per crossing) and ``quick`` (per class), all bool. */
static PyObject *py_necks(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[11];
    PyObject *result = NULL;
    static const int at[11] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11}; /* (8: width) */
    if (open_all(args, nargs, 12, "necks(cls, local, count, hop, rate, taken, capacity, size, width, full, neck, quick)",
                 b, 11, "qqdqdddq???", at, 8) < 0)
        goto done;
    Py_ssize_t width = PyLong_AsSsize_t(args[8]);
    if (width == -1 && PyErr_Occurred())
        goto done;
    const int64_t *cls = b[0].view.buf, *local = b[1].view.buf, *hop = b[3].view.buf;
    Py_ssize_t ne = b[0].view.shape[0], narcs = b[5].view.shape[0], nlive = b[7].view.shape[0];
    int fine = width > 0 && b[1].view.shape[0] == ne && b[2].view.shape[0] == ne && b[3].view.shape[0] == ne &&
               b[9].view.shape[0] == ne && b[6].view.shape[0] == narcs && b[8].view.shape[0] == narcs &&
               b[4].view.shape[0] == nlive && b[10].view.shape[0] == nlive;
    for (Py_ssize_t e = 0; fine && e < ne; e++)
        fine = cls[e] >= 0 && cls[e] < nlive && local[e] >= 0 && local[e] < narcs && hop[e] >= 0 && hop[e] < width &&
               (e == 0 || cls[e] >= cls[e - 1]);
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "necks: arrays out of shape, or crossings not sorted by class");
        goto done;
    }
    if (necks_core(cls, local, b[2].view.buf, hop, b[4].view.buf, b[5].view.buf, b[6].view.buf, b[7].view.buf, width,
                   ne, narcs, nlive, b[8].view.buf, b[9].view.buf, b[10].view.buf) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_None;
done:
    close_all(b, 11);
    Py_XINCREF(result);
    return result;
}


/* Scratch kept between calls, grown as needed: slots 0-28 settle_above's, 29-36 cut's. */
static struct {
    void *p[37];
    size_t cap[37];
    uint32_t *mark; /* per arc: ``stamp`` where crossed in this call */
    int64_t *num;   /* ... its number among the arcs crossed */
    double *hot;    /* ... its load followed exactly, as the solve leaves it */
    size_t arcs;
    uint32_t stamp;
    uint32_t *cmark; /* per component number: ``cstamp`` where seen in this call */
    size_t ncomps;
    uint32_t cstamp;
} sc;

/* scratch slot ``k`` holding ``n`` items of ``size`` bytes; NULL where memory ran out */
static void *scratch(int k, size_t n, size_t size) {
    if (n * size > sc.cap[k]) {
        size_t want = n * size * 2 + 64;
        void *p = malloc(want);
        if (!p)
            return NULL;
        free(sc.p[k]);
        sc.p[k] = p, sc.cap[k] = want;
    }
    return sc.p[k];
}

/* A table of every (arc, hop) cell's count, kept zeroed between calls (count_cells clears what it touched),
 * grown as needed. */
static struct {
    int32_t *cell;
    size_t cap;
} cells;

/* cells.cell for ``n`` cells, zeroed; NULL where memory ran out */
static int32_t *cell_table(size_t n) {
    if (n + 1 > cells.cap) {
        int32_t *cell = calloc(n + 1, sizeof(int32_t));
        if (!cell)
            return NULL;
        free(cells.cell);
        cells.cell = cell, cells.cap = n + 1;
    }
    return cells.cell;
}

/* ``a[0..n-1]`` (each at least 0 and below ``top``) sorted in place: by insertion where they are few, else by
 * their bytes, least significant first, through ``tmp`` (room for n) */
static void sort_keys(int64_t *a, Py_ssize_t n, int64_t top, int64_t *tmp) {
    if (n <= 32) {
        for (Py_ssize_t i = 1; i < n; i++) {
            int64_t x = a[i];
            Py_ssize_t j = i;
            while (j > 0 && a[j - 1] > x) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return;
    }
    int64_t *src = a, *dst = tmp;
    for (int shift = 0; shift < 63 && (top - 1) >> shift; shift += 8) {
        Py_ssize_t at[257];
        memset(at, 0, sizeof at);
        for (Py_ssize_t i = 0; i < n; i++)
            at[((src[i] >> shift) & 255) + 1]++;
        for (int d = 1; d < 257; d++)
            at[d] += at[d - 1];
        for (Py_ssize_t i = 0; i < n; i++)
            dst[at[(src[i] >> shift) & 255]++] = src[i];
        int64_t *swap = src;
        src = dst, dst = swap;
    }
    if (src != a)
        memcpy(a, src, (size_t)n * sizeof(int64_t));
}

/* The distinct (arc, hop) cells of each bucket's crossings, sorted, and how many crossings each has: bucket q's
 * crossings are arc[j], hop[j] for j = order[i] (i itself where ``order`` is NULL), first[q] <= i < first[q + 1].
 * Writes the cells bucket after bucket into o_arc, o_hop, o_cnt (and each one's bucket into o_part, or each
 * bucket's number of cells into lens, where not NULL); returns how many. ``cell``: cell_table's zeroed counts,
 * left zeroed; ``touched``: scratch twice as long as the longest bucket. */
static Py_ssize_t count_cells(Py_ssize_t parts, const int64_t *first, const int64_t *order, const int64_t *arc,
                              const int64_t *hop, int64_t width, int64_t ncells, int32_t *cell, int64_t *touched,
                              int64_t *o_part, int64_t *lens, int64_t *o_arc, int64_t *o_hop, double *o_cnt) {
    Py_ssize_t K = 0;
    for (Py_ssize_t q = 0; q < parts; q++) {
        Py_ssize_t t = 0;
        for (int64_t i = first[q]; i < first[q + 1]; i++) {
            int64_t j = order ? order[i] : i, key = arc[j] * width + hop[j];
            if (cell[key]++ == 0)
                touched[t++] = key;
        }
        sort_keys(touched, t, ncells, touched + t);
        if (lens)
            lens[q] = t;
        for (Py_ssize_t i = 0; i < t; i++, K++) {
            int64_t key = touched[i];
            if (o_part)
                o_part[K] = q;
            o_arc[K] = key / width;
            o_hop[K] = key % width;
            o_cnt[K] = (double)cell[key];
            cell[key] = 0;
        }
    }
    return K;
}

/* counted(part, parts, arcs, hop, width, arcs_n, out_part, out_arc, out_hop, out_cnt) -> K: the distinct
 * (part, arc, hop) of the crossings in order -- np.unique of the keys (part * arcs_n + arc) * width +
 * hop -- and how many crossings each has, in the outputs' first K places (each as long as the
 * crossings). Crossings bucketed by part, then each part's (arc, hop) cells counted in a table of
 * every cell and the cells it touched sorted. */
static PyObject *py_counted(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[7];
    PyObject *result = NULL;
    int64_t *first = NULL, *order = NULL, *touched = NULL;
    int32_t *cell = NULL;
    static const int at[7] = {0, 2, 3, 6, 7, 8, 9}; /* (1, 4, 5: parts, width, arcs_n) */
    if (open_all(args, nargs, 10, "counted(part, parts, arcs, hop, width, arcs_n, out_part, out_arc, out_hop, out_cnt)", b,
                 7, "qqqqqqd", at, 3) < 0)
        goto done;
    Py_ssize_t parts = PyLong_AsSsize_t(args[1]), width = PyLong_AsSsize_t(args[4]), arcs_n = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred())
        goto done;
    const int64_t *part = b[0].view.buf, *arc = b[1].view.buf, *hop = b[2].view.buf;
    Py_ssize_t n = b[0].view.shape[0];
    int fine = parts >= 0 && width > 0 && arcs_n >= 0 && b[1].view.shape[0] == n && b[2].view.shape[0] == n;
    for (int k = 3; k < 7; k++)
        fine = fine && b[k].view.shape[0] >= n;
    for (Py_ssize_t e = 0; fine && e < n; e++)
        fine = part[e] >= 0 && part[e] < parts && arc[e] >= 0 && arc[e] < arcs_n && hop[e] >= 0 && hop[e] < width;
    if (!fine || (arcs_n && width > PY_SSIZE_T_MAX / 8 / arcs_n)) {
        PyErr_SetString(PyExc_ValueError, "counted: arrays out of shape or values out of range");
        goto done;
    }
    first = calloc((size_t)parts + 2, sizeof(int64_t));
    order = malloc(((size_t)n + 1) * sizeof(int64_t));
    touched = malloc(2 * ((size_t)n + 1) * sizeof(int64_t));
    cell = cell_table((size_t)(arcs_n * width));
    if (!first || !order || !touched || !cell) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t e = 0; e < n; e++) /* bucket the crossings by part */
        first[part[e] + 2]++;
    for (Py_ssize_t q = 2; q < parts + 2; q++)
        first[q] += first[q - 1];
    for (Py_ssize_t e = 0; e < n; e++)
        order[first[part[e] + 1]++] = e;
    result = PyLong_FromSsize_t(count_cells(parts, first, order, arc, hop, width, arcs_n * width, cell, touched,
                                            b[3].view.buf, NULL, b[4].view.buf, b[5].view.buf, b[6].view.buf));
done:
    close_all(b, 7);
    free(first);
    free(order);
    free(touched);
    return result;
}

/* An open-addressed table of the signatures met in one class (cut_groups), kept between calls: slot s holds
 * key[s] with value val[s] (-1: empty; the slots filled are emptied again before the next class). */
static struct {
    uint64_t *key;
    int64_t *val;
    size_t cap; /* a power of two */
    int bits;
} sigs;

static inline size_t sig_slot(uint64_t s) { return (size_t)((s * 0x9E3779B97F4A7C15ULL) >> (64 - sigs.bits)); }

/* sigs grown to hold ``n`` signatures at most half full, the ``nd`` held now (distinct[d] in slot[d]) moved;
 * -1 where memory ran out */
static int sigs_grow(size_t n, const uint64_t *distinct, int64_t *slot, Py_ssize_t nd) {
    if (2 * n <= sigs.cap)
        return 0;
    size_t cap = sigs.cap ? sigs.cap : 64;
    int bits = sigs.cap ? sigs.bits : 6;
    while (cap < 2 * n)
        cap *= 2, bits++;
    uint64_t *key = malloc(cap * sizeof(uint64_t));
    int64_t *val = malloc(cap * sizeof(int64_t));
    if (!key || !val) {
        free(key);
        free(val);
        return -1;
    }
    for (size_t s = 0; s < cap; s++)
        val[s] = -1;
    free(sigs.key);
    free(sigs.val);
    sigs.key = key, sigs.val = val, sigs.cap = cap, sigs.bits = bits;
    for (Py_ssize_t d = 0; d < nd; d++) {
        size_t s = sig_slot(distinct[d]);
        while (val[s] >= 0)
            s = (s + 1) & (cap - 1);
        key[s] = distinct[d], val[s] = d, slot[d] = (int64_t)s;
    }
    return 0;
}

typedef struct {
    uint64_t sig;
    int64_t d;
} SigRank;

static int cmp_sig(const void *x, const void *y) {
    uint64_t a = ((const SigRank *)x)->sig, b = ((const SigRank *)y)->sig;
    return (a > b) - (a < b);
}

/* One class's members m0 .. m0 + size - 1 grouped by signature (sig[m]): the parts numbered from ``p0`` in the
 * order of their signatures, each member's part in part[m] and place within it in where[m], the members
 * written part after part from ``m0`` on in out, each part's first place in cuts. Returns how many parts, -1
 * where memory ran out. Scratch as long as the class: distinct, slot, sr, at. */
static Py_ssize_t cut_groups(const uint64_t *sig, const int64_t *members, Py_ssize_t m0, Py_ssize_t size, int64_t p0,
                             int64_t *part, int64_t *where, int64_t *out, int64_t *cuts, uint64_t *distinct, int64_t *slot,
                             SigRank *sr, int64_t *at) {
    Py_ssize_t nd = 0;
    for (Py_ssize_t m = m0; m < m0 + size; m++) { /* each member's signature numbered as first met */
        if (sigs_grow((size_t)nd + 1, distinct, slot, nd) < 0)
            return -1;
        size_t s = sig_slot(sig[m]);
        while (sigs.val[s] >= 0 && sigs.key[s] != sig[m])
            s = (s + 1) & (sigs.cap - 1);
        if (sigs.val[s] < 0) {
            sigs.key[s] = sig[m], sigs.val[s] = nd, slot[nd] = (int64_t)s, distinct[nd++] = sig[m];
        }
        part[m] = sigs.val[s];
    }
    for (Py_ssize_t d = 0; d < nd; d++) {
        sigs.val[slot[d]] = -1;
        sr[d].sig = distinct[d], sr[d].d = d;
    }
    qsort(sr, (size_t)nd, sizeof(SigRank), cmp_sig); /* the parts in the order of their signatures */
    for (Py_ssize_t r = 0; r < nd; r++)
        slot[sr[r].d] = r, at[r] = 0;
    for (Py_ssize_t m = m0; m < m0 + size; m++)
        at[slot[part[m]]]++;
    for (Py_ssize_t r = 0, first = m0; r < nd; r++) {
        cuts[p0 + r] = first;
        first += at[r];
        at[r] = cuts[p0 + r];
    }
    for (Py_ssize_t m = m0; m < m0 + size; m++) { /* members in their order within each part */
        int64_t r = slot[part[m]];
        out[at[r]] = members[m];
        where[m] = at[r]++ - cuts[p0 + r];
        part[m] = p0 + r;
    }
    return nd;
}

/* cut(sizes, counts, which, arcs, hop, members, saturated, arc_hash, arcs_n, per, cuts, out_members, lens, e_arc,
 * e_hop, e_cnt, edges, x_member, x_arc, x_hop) -> (P, K): sim.classes._parts (its numpy lines the reference),
 * FanExecutor._cut's split of n classes: class i has sizes[i] members (members, class after class) and counts[i]
 * crossings (which: the member's index within its class, arcs, hop; class after class). Each member's signature
 * is the sum of arc_hash over the saturated arcs it crosses (modulo 2**64); each class's members with one
 * signature form a part, the parts in the order of the signatures, class after class: per[i] parts for class i,
 * part p's members out_members[cuts[p] .. cuts[p + 1] - 1] in their order. The parts' crossings: counted by
 * (arc, hop) -- part p's lens[p] cells in e_arc, e_hop, e_cnt, sorted, part after part (K in all) -- and listed,
 * part p's in edges[p] .. edges[p + 1] - 1 of x_member (the member's place in its part), x_arc, x_hop, in their
 * order. Outputs as long as: per n, cuts and edges M + 1, out_members and lens M, the others N. */
static PyObject *py_cut(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[19];
    PyObject *result = NULL;
    uint64_t *sig = NULL, *distinct = NULL;
    int64_t *part = NULL, *where = NULL, *slot = NULL, *at = NULL, *touched = NULL;
    SigRank *sr = NULL;
    int32_t *cell = NULL;
    static const int at_[19] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    if (open_all(args, nargs, 20,
                 "cut(sizes, counts, which, arcs, hop, members, saturated, arc_hash, arcs_n, per, cuts, out_members, lens, "
                 "e_arc, e_hop, e_cnt, edges, x_member, x_arc, x_hop)",
                 b, 19, "qqqqqq?qqqqqqqdqqqq", at_, 8) < 0)
        goto done;
    Py_ssize_t arcs_n = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred())
        goto done;
    const int64_t *size = b[0].view.buf, *count = b[1].view.buf, *which = b[2].view.buf, *arc = b[3].view.buf,
                  *hop = b[4].view.buf, *members = b[5].view.buf;
    const unsigned char *saturated = b[6].view.buf;
    const uint64_t *hash = b[7].view.buf;
    int64_t *per = b[8].view.buf, *cuts = b[9].view.buf, *out = b[10].view.buf, *lens = b[11].view.buf;
    int64_t *e_arc = b[12].view.buf, *e_hop = b[13].view.buf, *edges = b[15].view.buf;
    int64_t *x_member = b[16].view.buf, *x_arc = b[17].view.buf, *x_hop = b[18].view.buf;
    double *e_cnt = b[14].view.buf;
    Py_ssize_t n = b[0].view.shape[0], M = 0, N = 0, most = 0;
    int fine = arcs_n >= 0 && b[1].view.shape[0] == n && b[6].view.shape[0] == arcs_n && b[7].view.shape[0] >= arcs_n;
    for (Py_ssize_t i = 0; fine && i < n; i++) {
        fine = size[i] >= 0 && count[i] >= 0;
        M += size[i], N += count[i], most = size[i] > most ? size[i] : most;
    }
    fine = fine && b[2].view.shape[0] == N && b[3].view.shape[0] == N && b[4].view.shape[0] == N &&
           b[5].view.shape[0] == M && b[8].view.shape[0] >= n && b[9].view.shape[0] > M && b[10].view.shape[0] >= M &&
           b[11].view.shape[0] >= M && b[15].view.shape[0] > M;
    for (int k = 12; k < 19; k++)
        fine = fine && (k == 15 || b[k].view.shape[0] >= N);
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "cut: arrays out of shape or values out of range");
        goto done;
    }
    sig = scratch(29, (size_t)M + 1, sizeof(uint64_t));
    part = scratch(30, (size_t)M + 1, sizeof(int64_t));
    where = scratch(31, (size_t)M + 1, sizeof(int64_t));
    distinct = scratch(32, (size_t)most + 1, sizeof(uint64_t));
    slot = scratch(33, (size_t)most + 1, sizeof(int64_t));
    sr = scratch(34, (size_t)most + 1, sizeof(SigRank));
    at = scratch(35, (size_t)most + 1, sizeof(int64_t));
    touched = scratch(36, 2 * ((size_t)N + 1), sizeof(int64_t));
    if (!sig || !part || !where || !distinct || !slot || !sr || !at || !touched) {
        PyErr_NoMemory();
        goto done;
    }
    memset(sig, 0, (size_t)M * sizeof(uint64_t));
    int64_t width = 1;
    for (Py_ssize_t i = 0, e = 0, m0 = 0; fine && i < n; m0 += size[i++]) /* the signatures, the crossings checked */
        for (int64_t j = 0; j < count[i]; j++, e++) {
            int64_t w = which[e], a = arc[e], h = hop[e];
            if ((uint64_t)w >= (uint64_t)size[i] || (uint64_t)a >= (uint64_t)arcs_n ||
                (uint64_t)h >= PY_SSIZE_T_MAX / 8) {
                fine = 0;
                break;
            }
            width = h >= width ? h + 1 : width;
            if (saturated[a])
                sig[m0 + w] += hash[a];
        }
    if (!fine || (arcs_n && width > PY_SSIZE_T_MAX / 8 / arcs_n)) {
        PyErr_SetString(PyExc_ValueError, "cut: arrays out of shape or values out of range");
        goto done;
    }
    cell = cell_table((size_t)(arcs_n * width));
    if (!cell) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t P = 0;
    for (Py_ssize_t i = 0, m0 = 0; i < n; m0 += size[i++]) { /* the parts */
        Py_ssize_t got = cut_groups(sig, members, m0, size[i], P, part, where, out, cuts, distinct, slot, sr, at);
        if (got < 0) {
            PyErr_NoMemory();
            goto done;
        }
        per[i] = got;
        P += got;
    }
    cuts[P] = M;
    memset(edges, 0, ((size_t)P + 1) * sizeof(int64_t)); /* the crossings bucketed by part, in their order */
    for (Py_ssize_t i = 0, e = 0, m0 = 0; i < n; m0 += size[i++])
        for (int64_t j = 0; j < count[i]; j++, e++)
            edges[part[m0 + which[e]] + 1]++;
    for (Py_ssize_t p = 0; p < P; p++)
        edges[p + 1] += edges[p];
    for (Py_ssize_t i = 0, e = 0, m0 = 0; i < n; m0 += size[i++])
        for (int64_t j = 0; j < count[i]; j++, e++) {
            int64_t m = m0 + which[e], k = edges[part[m]]++;
            x_member[k] = where[m], x_arc[k] = arc[e], x_hop[k] = hop[e];
        }
    for (Py_ssize_t p = P; p > 0; p--)
        edges[p] = edges[p - 1];
    edges[0] = 0;
    Py_ssize_t K =
        count_cells(P, edges, NULL, x_arc, x_hop, width, arcs_n * width, cell, touched, NULL, lens, e_arc, e_hop, e_cnt);
    result = Py_BuildValue("nn", P, K);
done:
    close_all(b, 19);
    return result;
}

static int cmp_desc(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

/* FanExecutor._cut_below's first_gap: the first of ``desc`` (descending) below the one before it (``floor``
 * for the first) by more than _TOL relative; 0 where there is none */
static int first_gap(const double *desc, Py_ssize_t n, double floor, double *cut) {
    double prev = floor;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (desc[i] < prev * (1.0 - 1e-9)) {
            *cut = desc[i];
            return 1;
        }
        prev = desc[i];
    }
    return 0;
}

/* union-find over the classes solved (settle_above's components): the root of ``i``, paths halved */
static int64_t uf_root(int64_t *parent, int64_t i) {
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* settle_above(region, t, floor, rate, rem, since, due, comp, lo, hi, k_lo, k_hi, k_ver, version, k_arc, k_hop,
 * k_cnt, width, size, hbooked, booked, keep, hot, hot_loads, capacity, rise, room, out_members, out_live,
 * before, nactive, arc_comp, next_comp, out_arcs, tail, joined):
 * FanExecutor._settle of ``region`` (one component that lost classes at ``t``, the least rate of those
 * ``floor``, nothing else changed; ``joined``: or such joined, after arcs were kept anew, to the components
 * those arcs meet -- then advanced to ``t`` first, whatever follows) down the paths it takes nearly always, with the same operations in the same order (the
 * classes' rates, loads, completion times and components to the bit). The one solve -- of the classes above
 * the cut (_cut_below, _solve_above), or of the whole component where there is no gap or no class above it
 * (_solve) -- keeps no arc anew, books nothing (the largest rise since the last booking, ``rise``, stays below
 * ``room``), splits nothing (every class verified by its quick test). Returns None, having changed nothing,
 * where the path leaves those (the Python lines then run it); else (how, live, n, rise, first, comp, slack,
 * through, was, kept). ``tail`` (not ``joined``; else None): (q, top, first, nan) where ``region[q:]`` is the
 * component's tail (FanExecutor._due_split_comp) -- slow classes of its last settles, their rates and completion
 * times unchanged since, none due -- ``top`` their largest rate, ``first`` their first completion (NaN left out),
 * ``nan`` whether one is NaN: where ``top`` is below the floor's neighbourhood they are slow whatever the cut (unless
 * the rates crowd down to the floor: then every class is read) and only ``region[:q]`` is read, the tail copied
 * in its places. ``out_live[:live]`` the classes solved with crossings, ``rise`` the largest rise since the last
 * booking, and by ``how``:
 *   0: solved above the cut: ``out_members[:n]`` the component's classes in their new order, ``first`` its
 *      first completion, ``comp`` its number (where ``joined``: ``next_comp``, the classes and the kept
 *      arcs they cross renumbered to it, ``was`` the list of the numbers they had, each once; else None);
 *      ``kept``: (ns, q, top, first, nan), the slow classes read (``out_members[ns:q]``, ``q`` the tail given or
 *      ``n``: the tail's first segment) and their largest rate, first completion (NaN left out) and NaN;
 *   1: above the cut, an arc not kept filled: the solve committed as _solve leaves it when it returns None
 *      (the classes advanced, their rates, the followed loads; where not ``joined``, ``before[region]`` the
 *      rates before), ``out_arcs[:n]`` the arcs to keep (distinct): the Python lines keep them, join and go on;
 *   3: the same where the whole component was solved (no gap, or no class above it: ``through``);
 *   2: the whole component solved (not ``joined``): its classes and the kept arcs they cross numbered into
 *      ``n`` components from ``next_comp`` as _components numbers them (where one: ``first`` its first
 *      completion), ``comp`` the next free number, ``slack``
 *      the arcs left out (where the region is every active class: ``nactive``), ``through``: 1 where
 *      _solve_above found no class above the cut first. */
static PyObject *py_settle_above(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    enum { REGION, RATE, REM, SINCE, DUE, COMP, LO, HI, KLO, KHI, KVER, KARC, KHOP, KCNT, WIDTH, SIZE, HBOOKED,
           BOOKED, KEEP, HOT, HOTLOADS, CAP, OUTM, OUTL, BEFORE, ARCCOMP, OUTA, NB };
    static const int at[NB] = {0,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 14, 15, 16,
                               17, 18, 19, 20, 21, 22, 23, 24, 27, 28, 29, 31, 33};
    static const char fmts[NB + 1] = "qddddqqqqqqqqdqqdd??ddqqdqq";
    Buf b[NB];
    PyObject *result = NULL;
    for (int k = 0; k < NB; k++)
        b[k].held = 0;
    if (nargs != 36) {
        PyErr_SetString(PyExc_TypeError, "settle_above: 36 arguments");
        return NULL;
    }
    for (int k = 0; k < NB; k++) {
        int w = k == RATE || k == REM || k == SINCE || k == DUE || k == COMP || k == HBOOKED || k == KEEP ||
                k == HOTLOADS || k == OUTM || k == OUTL || k == BEFORE || k == ARCCOMP || k == OUTA;
        if (buf_open(args[at[k]], &b[k], fmts[k], w) < 0)
            goto done;
    }
    double t = PyFloat_AsDouble(args[1]), floor = PyFloat_AsDouble(args[2]);
    double rise0 = PyFloat_AsDouble(args[25]), room = PyFloat_AsDouble(args[26]);
    long long version = PyLong_AsLongLong(args[13]), next_comp = PyLong_AsLongLong(args[32]);
    Py_ssize_t nactive = PyLong_AsSsize_t(args[30]);
    int joined = PyObject_IsTrue(args[35]);
    /* the tail kept from the last settle (``tail``: (q, tmax, tfirst, tnan), or None): ``region[q:]`` are the
     * component's slow classes of that settle, unchanged since, none due; their largest rate, first
     * completion (NaN left out) and whether one is NaN */
    Py_ssize_t tq = -1;
    double tmax = NAN, tfirst = NAN;
    int tnan = 0;
    if (args[34] != Py_None) {
        long long q_ = 0;
        if (!PyArg_ParseTuple(args[34], "Lddi", &q_, &tmax, &tfirst, &tnan))
            goto done;
        tq = (Py_ssize_t)q_;
    }
    if (PyErr_Occurred() || joined < 0)
        goto done;
    const int64_t *region = b[REGION].view.buf, *lo = b[LO].view.buf, *hi = b[HI].view.buf, *k_lo = b[KLO].view.buf,
                  *k_hi = b[KHI].view.buf, *k_ver = b[KVER].view.buf, *k_arc = b[KARC].view.buf,
                  *k_hop = b[KHOP].view.buf, *width = b[WIDTH].view.buf, *size = b[SIZE].view.buf;
    double *rate = b[RATE].view.buf, *rem = b[REM].view.buf, *since = b[SINCE].view.buf, *due = b[DUE].view.buf,
           *hbooked = b[HBOOKED].view.buf, *hot_loads = b[HOTLOADS].view.buf, *before = b[BEFORE].view.buf;
    const double *k_cnt = b[KCNT].view.buf, *booked = b[BOOKED].view.buf, *cap = b[CAP].view.buf;
    unsigned char *keep = b[KEEP].view.buf;
    const unsigned char *hot = b[HOT].view.buf;
    int64_t *comp = b[COMP].view.buf, *out_m = b[OUTM].view.buf, *out_l = b[OUTL].view.buf,
            *arc_comp = b[ARCCOMP].view.buf, *out_a = b[OUTA].view.buf;
    Py_ssize_t R = b[REGION].view.shape[0], nrows = b[RATE].view.shape[0], nk = b[KARC].view.shape[0];
    Py_ssize_t narcs = b[CAP].view.shape[0], nbefore = b[BEFORE].view.shape[0], nouta = b[OUTA].view.shape[0];
    int fine = R > 0 && b[OUTM].view.shape[0] >= R && b[OUTL].view.shape[0] >= R && b[KEEP].view.shape[0] == narcs &&
               b[HOT].view.shape[0] == narcs && b[HOTLOADS].view.shape[0] == narcs && b[KHOP].view.shape[0] == nk &&
               b[KCNT].view.shape[0] == nk && b[ARCCOMP].view.shape[0] == narcs;
    for (int k = REM; k <= BOOKED && fine; k++)
        if (k != KARC && k != KHOP && k != KCNT)
            fine = b[k].view.shape[0] == nrows;
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "settle_above: arrays out of shape");
        goto done;
    }
    /* one pass over the region: its component, FanExecutor._cut_below's candidates -- the rates below the
     * floor within _NEAR of it (``below``), and the highest under those -- and the classes that may be above
     * the cut (``above``, by index: every rate not below the floor's neighbourhood; the cut is at most the
     * highest rate under it unless the rates crowd down to it) */
    double *below = scratch(0, (size_t)R + 1, sizeof(double));
    int64_t *order = scratch(1, (size_t)R, sizeof(int64_t)); /* the classes solved, in order */
    int64_t *empty = scratch(2, (size_t)R, sizeof(int64_t)), *above = scratch(22, (size_t)R, sizeof(int64_t));
    if (!below || !order || !empty || !above) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nbelow = 0, ntop = 0, nabove = 0;
    const double near = floor * (1.0 - 1e-6); /* 1 - sim.classes._NEAR */
    double under = -INFINITY;
    int one = 1, crowd = 0, beyond = 0;
    const uint64_t rows = (uint64_t)(nbefore < nrows ? nbefore : nrows);
    int64_t comp0 = region[0] >= 0 && region[0] < nrows ? comp[region[0]] : 0;
    /* the tail: its classes are slow whatever the cut (every rate in it below the floor's neighbourhood,
     * under it) -- unless the rates crowd down (then every class is read, below) */
    Py_ssize_t q = !joined && tq >= 0 && tq < R && tmax < near ? tq : R;
    for (Py_ssize_t i = 0; i < q; i++) {
        int64_t c = region[i];
        if ((uint64_t)c >= rows) {
            if (c < 0 || c >= nrows) {
                PyErr_SetString(PyExc_ValueError, "settle_above: a class out of range");
                goto done;
            }
            beyond = 1; /* (``before`` too short: the Python lines grow it) */
            continue;
        }
        if (comp[c] != comp0)
            one = 0;
        double r = rate[c];
        if (!(r < floor)) { /* (NaN too) */
            above[nabove++] = i;
            continue;
        }
        nbelow++;
        if (r >= near)
            below[ntop++] = r, above[nabove++] = i;
        else if (r > under) /* (np.max: -inf where every one is) */
            under = r;
    }
    if (q < R) { /* the tail's rates: below the floor, under its neighbourhood (np.max: the largest) */
        nbelow += R - q;
        if (tmax > under)
            under = tmax;
    }
    if (joined) /* Tab.advance(region, t), whatever follows (FanExecutor._settle leaves it to this call) */
        for (Py_ssize_t i = 0; i < R; i++) {
            int64_t c = region[i];
            if (t > since[c])
                rem[c] = isinf(rate[c]) ? 0.0 : rem[c] - rate[c] * (t - since[c]);
            since[c] = t;
        }
    if ((!one && !joined) || beyond) /* not one component: the Python lines number them anew */
        goto fallback;
    double cut = -INFINITY;
    if (nbelow) {
        qsort(below, (size_t)ntop, sizeof(double), cmp_desc);
        Py_ssize_t n = ntop;
        if (ntop < nbelow)
            below[n++] = under;
        if (!first_gap(below, n, floor, &cut) && ntop < nbelow) { /* the rates crowd down: all of them */
            Py_ssize_t m = 0;
            for (Py_ssize_t i = 0; i < R; i++)
                if (rate[region[i]] < floor)
                    below[m++] = rate[region[i]];
            qsort(below, (size_t)m, sizeof(double), cmp_desc);
            crowd = first_gap(below, m, floor, &cut);
            q = R; /* (the cut may fall in the tail: every class read below) */
        }
    }
    /* _solve_above: the classes above the cut (``above``, by index in order; ``order``, the live ones with
     * crossings ``out_l``, the empty ones without); the others are slow. No gap, or no class above it
     * (``through``): the whole component, every class solved (_solve; the Python lines where joined) */
    int whole = !(cut > -INFINITY), through = 0;
    Py_ssize_t ns = 0, nlive = 0, nempty = 0, nslow = 0;
    if (!whole) {
        for (Py_ssize_t j = 0; j < (crowd ? R : nabove); j++) {
            Py_ssize_t i = crowd ? j : above[j];
            if (!(rate[region[i]] <= cut))
                above[ns++] = i;
        }
        whole = through = !ns;
    }
    if (whole && joined)
        goto fallback;
    if (whole)
        cut = -INFINITY, ns = R;
    nslow = R - ns;
    for (Py_ssize_t j = 0; j < ns; j++) {
        int64_t c = region[whole ? j : above[j]];
        if (whole && !(rate[c] > -INFINITY)) /* NaN or -inf: the whole solve would advance it otherwise */
            goto fallback;
        order[j] = c;
        if (hi[c] - lo[c] > 0)
            out_l[nlive++] = c;
        else
            empty[nempty++] = c;
    }
    if (!nlive)
        goto fallback;
    /* _Table.kept(live, hot, hot, version): their copied crossings of the followed arcs; the kept ones (where
     * joined, every member's: their kept arcs take the new number) */
    Py_ssize_t nhot = 0;
    for (Py_ssize_t i = 0; i < nlive; i++) {
        int64_t c = out_l[i];
        if (k_ver[c] != version || k_lo[c] < 0 || k_hi[c] > nk || k_lo[c] > k_hi[c])
            goto fallback;
        nhot += k_hi[c] - k_lo[c];
    }
    for (Py_ssize_t i = 0; joined && i < R; i++) {
        int64_t c = region[i];
        if (k_ver[c] != version || k_lo[c] < 0 || k_hi[c] > nk || k_lo[c] > k_hi[c])
            goto fallback;
        for (int64_t k = k_lo[c]; k < k_hi[c]; k++)
            if (k_arc[k] < 0 || k_arc[k] >= narcs)
                goto fallback;
    }
    int64_t *hrow = scratch(3, (size_t)nhot + 1, sizeof(int64_t)), *harc = scratch(4, (size_t)nhot + 1, sizeof(int64_t));
    double *hcnt = scratch(23, (size_t)nhot + 1, sizeof(double)), *upv = scratch(24, (size_t)nlive + 1, sizeof(double));
    int64_t *cls = scratch(5, (size_t)nhot + 1, sizeof(int64_t)), *kidx = scratch(6, (size_t)nhot + 1, sizeof(int64_t));
    int64_t *loc = scratch(7, (size_t)nhot + 1, sizeof(int64_t)), *hop = scratch(8, (size_t)nhot + 1, sizeof(int64_t));
    double *cnt = scratch(9, (size_t)nhot + 1, sizeof(double));
    if ((size_t)narcs > sc.arcs) {
        uint32_t *mark = calloc((size_t)narcs, sizeof(uint32_t));
        int64_t *num = malloc((size_t)narcs * sizeof(int64_t));
        double *hl = malloc((size_t)narcs * sizeof(double));
        if (!mark || !num || !hl) {
            free(mark), free(num), free(hl);
            PyErr_NoMemory();
            goto done;
        }
        free(sc.mark), free(sc.num), free(sc.hot);
        sc.mark = mark, sc.num = num, sc.hot = hl, sc.arcs = (size_t)narcs, sc.stamp = 0;
    }
    if (!hrow || !harc || !hcnt || !upv || !cls || !kidx || !loc || !hop || !cnt) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nh = 0, ne = 0;
    int64_t wmax = 0;
    for (Py_ssize_t i = 0; i < nlive; i++) {
        int64_t c = out_l[i];
        Py_ssize_t had = ne;
        for (int64_t k = k_lo[c]; k < k_hi[c]; k++) {
            int64_t a = k_arc[k];
            if (a < 0 || a >= narcs)
                goto fallback;
            if (!hot[a])
                continue;
            hrow[nh] = i, harc[nh] = a, hcnt[nh++] = k_cnt[k];
            if (keep[a])
                cls[ne] = i, kidx[ne++] = k;
        }
        if (ne == had) /* bare: nothing kept on its routes yet (the Python lines keep its tightest arcs) */
            goto fallback;
        if (width[c] > wmax)
            wmax = width[c];
    }
    /* _numbered: the arcs crossed in increasing order, each crossing's index among them */
    if (++sc.stamp == 0) {
        memset(sc.mark, 0, sc.arcs * sizeof(uint32_t));
        sc.stamp = 1;
    }
    int64_t *where = scratch(10, (size_t)ne + 1, sizeof(int64_t));
    if (!where) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nw = 0;
    for (Py_ssize_t e = 0; e < ne; e++) {
        int64_t a = k_arc[kidx[e]];
        if (sc.mark[a] != sc.stamp)
            sc.mark[a] = sc.stamp, where[nw++] = a;
    }
    qsort(where, (size_t)nw, sizeof(int64_t), cmp_i64);
    for (Py_ssize_t w = 0; w < nw; w++)
        sc.num[where[w]] = w;
    for (Py_ssize_t e = 0; e < ne; e++) {
        int64_t k = kidx[e];
        loc[e] = sc.num[k_arc[k]];
        hop[e] = k_hop[k];
        cnt[e] = k_cnt[k];
        if (hop[e] < 0 || hop[e] >= wmax)
            goto fallback;
    }
    /* taken: the arcs' loads less the region's (np.bincount in crossing order; none where the whole
     * component is solved), and the capacities left */
    double *mine = scratch(11, (size_t)nw + 1, sizeof(double)), *taken = scratch(12, (size_t)nw + 1, sizeof(double));
    double *left = scratch(13, (size_t)nw + 1, sizeof(double)), *capw = scratch(14, (size_t)nw + 1, sizeof(double));
    double *got = scratch(15, (size_t)nlive + 1, sizeof(double));
    if (!mine || !taken || !left || !capw || !got) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t w = 0; w < nw; w++)
        mine[w] = 0.0;
    if (!whole)
        for (Py_ssize_t e = 0; e < ne; e++)
            mine[loc[e]] += cnt[e] * hbooked[out_l[cls[e]]];
    for (Py_ssize_t w = 0; w < nw; w++) {
        taken[w] = whole ? 0.0 : np_maximum0(hot_loads[where[w]] - mine[w]);
        capw[w] = cap[where[w]];
        left[w] = np_maximum0(capw[w] - taken[w]);
    }
    int solved = maxmin_core(cls, loc, ne, left, nw, cnt, got, nlive, NULL);
    if (solved < 0)
        goto done;
    if (!solved)
        goto fallback;
    /* _full: the followed loads as the rises leave them (np.add.at, in crossing order), the arcs not kept
     * that they fill (to keep anew: ``out_arcs``, distinct), the largest rise since the last booking */
    for (Py_ssize_t i = 0; i < nlive; i++) {
        double r = got[i];
        upv[i] = isfinite(r) ? r - hbooked[out_l[i]] : 0.0;
    }
    for (Py_ssize_t h = 0; h < nh; h++)
        sc.hot[harc[h]] = hot_loads[harc[h]];
    for (Py_ssize_t h = 0; h < nh; h++)
        sc.hot[harc[h]] += hcnt[h] * upv[hrow[h]];
    if (++sc.stamp == 0) {
        memset(sc.mark, 0, sc.arcs * sizeof(uint32_t));
        sc.stamp = 1;
    }
    Py_ssize_t nfull = 0;
    for (Py_ssize_t h = 0; h < nh; h++) {
        int64_t a = harc[h];
        if (!keep[a] && sc.hot[a] >= cap[a] * (1.0 - 1e-9) && sc.mark[a] != sc.stamp) {
            if (nfull >= nouta)
                goto fallback;
            sc.mark[a] = sc.stamp, out_a[nfull++] = a;
        }
    }
    double rise = 0.0;
    for (Py_ssize_t i = 0; i < nlive; i++) {
        double r = got[i];
        double up = isfinite(r) ? r - booked[out_l[i]] : 0.0;
        if (up != up)
            goto fallback;
        if (up > rise)
            rise = up;
    }
    if (!(rise <= rise0))
        rise0 = rise;
    if (rise0 >= room) /* every class booked again (the Python lines) */
        goto fallback;
    int how = nfull ? (whole ? 3 : 1) : whole ? 2 : 0;
    Py_ssize_t nslack = 0;
    if (how != 1) {
        /* _unverified: every class verified by its quick test, else the Python lines check member by member */
        unsigned char *full = scratch(16, (size_t)nw + 1, 1);
        unsigned char *neck = scratch(17, (size_t)ne + 1, 1);
        unsigned char *quick = scratch(18, (size_t)nlive + 1, 1);
        int64_t *sizes = scratch(19, (size_t)nlive + 1, sizeof(int64_t));
        if (!full || !neck || !quick || !sizes) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < nlive; i++)
            sizes[i] = size[out_l[i]];
        if (necks_core(cls, loc, cnt, hop, got, taken, capw, sizes, (Py_ssize_t)wmax, ne, nw, nlive, full, neck,
                       quick) < 0) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < nlive; i++)
            if (!quick[i] || !(got[i] > cut)) /* (a class solved at or below the cut: never seen) */
                goto fallback;
        if (whole && R == nactive) /* everything solved: the kept arcs it leaves slack are left out */
            for (Py_ssize_t w = 0; w < nw; w++)
                if (!full[w])
                    keep[where[w]] = 0, nslack++;
    }
    /* the path holds: write it. Tab.advance(solved, t) (the slow classes' rates stand) */
    double *old = scratch(20, (size_t)ns + 1, sizeof(double));
    if (!old) {
        PyErr_NoMemory();
        goto done;
    }
    if (how == 1 || how == 3) /* _solve returns None: the rates before stand in ``before`` for the completion times */
        for (Py_ssize_t i = 0; !joined && i < R; i++)
            before[region[i]] = rate[region[i]];
    for (Py_ssize_t i = 0; i < ns; i++) {
        int64_t c = order[i];
        old[i] = rate[c];
        if (!(old[i] > cut)) /* (NaN: not advanced, as the numpy lines leave it) */
            continue;
        if (t > since[c])
            rem[c] = isinf(rate[c]) ? 0.0 : rem[c] - rate[c] * (t - since[c]);
        since[c] = t;
    }
    for (Py_ssize_t i = 0; i < nempty; i++)
        rate[empty[i]] = INFINITY;
    for (Py_ssize_t i = 0; i < nlive; i++)
        rate[out_l[i]] = got[i];
    for (Py_ssize_t h = 0; h < nh; h++)
        hot_loads[harc[h]] = sc.hot[harc[h]];
    for (Py_ssize_t i = 0; i < nlive; i++)
        hbooked[out_l[i]] = isfinite(got[i]) ? got[i] : 0.0;
    if (how == 1 || how == 3) {
        result = Py_BuildValue("innddLniOO", how, nlive, nfull, rise0, NAN, 0LL, (Py_ssize_t)0, through, Py_None,
                               Py_None);
        goto done;
    }
    /* completion times where the rate changed (from its rate before the settle: ``before`` where joined) */
    for (Py_ssize_t i = 0; i < ns; i++) {
        int64_t c = order[i];
        double r = rate[c], was = joined ? before[c] : old[i];
        if (r != was)
            due[c] = isinf(r) ? t : t + rem[c] / r;
    }
    if (how == 2) {
        /* _components: the empty classes one each, then the live ones joined by the kept arcs they cross,
         * numbered by their first class; each kept arc crossed under its component's number */
        int64_t *parent = scratch(25, (size_t)nlive + 1, sizeof(int64_t));
        int64_t *lab = scratch(26, (size_t)nw + 1, sizeof(int64_t)), *rank = scratch(27, (size_t)nlive + 1, sizeof(int64_t));
        if (!parent || !lab || !rank) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < nempty; i++)
            comp[empty[i]] = next_comp + i;
        long long base = next_comp + nempty, k = 0;
        for (Py_ssize_t i = 0; i < nlive; i++)
            parent[i] = i, rank[i] = -1;
        for (Py_ssize_t w = 0; w < nw; w++)
            lab[w] = -1;
        for (Py_ssize_t e = 0; e < ne; e++) {
            if (!keep[where[loc[e]]])
                continue;
            if (lab[loc[e]] < 0) {
                lab[loc[e]] = cls[e];
                continue;
            }
            int64_t x = uf_root(parent, lab[loc[e]]), y = uf_root(parent, cls[e]);
            if (x != y)
                parent[x > y ? x : y] = x < y ? x : y;
        }
        for (Py_ssize_t i = 0; i < nlive; i++) {
            int64_t r = uf_root(parent, i);
            if (rank[r] < 0)
                rank[r] = k++;
            comp[out_l[i]] = base + rank[r];
        }
        for (Py_ssize_t w = 0; w < nw; w++)
            if (lab[w] >= 0)
                arc_comp[where[w]] = base + rank[uf_root(parent, lab[w])];
        double first = NAN; /* one component: its first completion (np.minimum.reduceat: NaN wins) */
        if (k == 1 && !nempty) {
            first = INFINITY;
            int nan = 0;
            for (Py_ssize_t i = 0; i < R; i++) {
                double d = due[region[i]];
                nan |= d != d;
                first = d < first ? d : first;
            }
            if (nan)
                first = NAN;
        }
        result = Py_BuildValue("innddLniOO", how, nlive, (Py_ssize_t)(k + nempty), rise0, first, base + k, nslack,
                               through, Py_None, Py_None);
        goto done;
    }
    /* one component: the classes solved, then the slow ones in order; the first completion of its classes
     * (np.min: NaN wins); where joined, its new number */
    double first = INFINITY;
    int nan = 0;
    for (Py_ssize_t i = 0; i < ns; i++) {
        double d = due[order[i]];
        nan |= d != d;
        first = d < first ? d : first;
    }
    /* the slow ones: the next settle's tail (their largest rate, first completion, whether one is NaN) */
    double smax = -INFINITY, sfirst = INFINITY;
    int snan = 0;
    Py_ssize_t k = ns;
    int64_t *slow = scratch(28, (size_t)q + 1, sizeof(int64_t)); /* (``out_members`` may be ``region``) */
    if (!slow) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0, j = 0; i < q; i++) {
        if (j < ns && above[j] == i) {
            j++;
            continue;
        }
        int64_t c = slow[k++ - ns] = region[i];
        double d = due[c], r = rate[c];
        snan |= d != d;
        sfirst = d < sfirst ? d : sfirst;
        smax = r > smax ? r : smax;
    }
    memcpy(out_m, order, (size_t)ns * sizeof(int64_t)); /* (``region`` read: it may be written now) */
    memcpy(out_m + ns, slow, (size_t)(k - ns) * sizeof(int64_t));
    nan |= snan;
    first = sfirst < first ? sfirst : first;
    if (q < R) { /* the tail as it was: in its places (copied where ``out_members`` is not ``region``) */
        if (out_m != region)
            memcpy(out_m + k, region + q, (size_t)(R - q) * sizeof(int64_t));
        nan |= tnan;
        first = tfirst < first ? tfirst : first;
    }
    if (nan)
        first = NAN;
    Py_ssize_t nm = ns + nslow;
    long long number = joined ? next_comp : (long long)comp[region[0]];
    PyObject *was = Py_None; /* where joined: the components renumbered (once each) */
    Py_INCREF(was);
    if (joined) {
        Py_DECREF(was);
        if (!(was = PyList_New(0)))
            goto done;
        if ((size_t)next_comp > sc.ncomps) {
            uint32_t *cm = calloc((size_t)next_comp * 2 + 16, sizeof(uint32_t));
            if (!cm) {
                Py_DECREF(was);
                PyErr_NoMemory();
                goto done;
            }
            free(sc.cmark);
            sc.cmark = cm, sc.ncomps = (size_t)next_comp * 2 + 16, sc.cstamp = 0;
        }
        if (++sc.cstamp == 0) {
            memset(sc.cmark, 0, sc.ncomps * sizeof(uint32_t));
            sc.cstamp = 1;
        }
        for (Py_ssize_t i = 0; i < nm; i++) {
            int64_t c = out_m[i], x = comp[c];
            if (x >= 0 && x < next_comp && sc.cmark[x] != sc.cstamp) {
                sc.cmark[x] = sc.cstamp;
                PyObject *v = PyLong_FromLongLong(x);
                if (!v || PyList_Append(was, v) < 0) {
                    Py_XDECREF(v);
                    Py_DECREF(was);
                    goto done;
                }
                Py_DECREF(v);
            }
            comp[c] = number;
            for (int64_t k = k_lo[c]; k < k_hi[c]; k++)
                if (keep[k_arc[k]])
                    arc_comp[k_arc[k]] = number;
        }
    }
    result = Py_BuildValue("innddLniN(nnddi)", how, nlive, nm, rise0, first, number, (Py_ssize_t)0, 0, was, ns, q,
                           smax, sfirst, snan);
    goto done;
fallback:
    result = Py_None;
    Py_INCREF(result);
done:
    for (int k = 0; k < NB; k++)
        buf_close(&b[k]);
    return result;
}

/* The alive classes of ``members[a:e]``, in order: those with ``due - t <= near`` (every one where ``all``) on at
 * ``out[*k]``, the others (where ``split``) on at ``out[*m]`` -- due_scan's pass and due_split_tail's before the
 * tail. -1 where a class is out of range (``rows``). */
static int scan_due(const int64_t *members, Py_ssize_t a, Py_ssize_t e, Py_ssize_t rows, const unsigned char *alive,
                    const double *due, double t, double near, int all, int split, int64_t *out, Py_ssize_t *k,
                    Py_ssize_t *m) {
    Py_ssize_t kk = *k, mm = *m;
    for (Py_ssize_t i = a; i < e; i++) {
        int64_t c = members[i];
        if ((uint64_t)c >= (uint64_t)rows)
            return -1;
        if (!alive[c])
            continue;
        if (all || due[c] - t <= near)
            out[kk++] = c;
        else if (split)
            out[mm++] = c;
    }
    *k = kk, *m = mm;
    return 0;
}

/* due_at(members, alive, due, t, near, out) -> k: ``members[alive[members]]`` and of those the ones with
 * ``due - t <= near`` (FanExecutor._simulate: the classes that complete at ``t``) in ``out[:k]``; with ``near``
 * NaN, only the alive ones (FanExecutor._members_of) */
static PyObject *due_scan(PyObject *const *args, Py_ssize_t nargs, int split) {
    Buf b[4];
    PyObject *result = NULL;
    static const int at[4] = {0, 1, 2, 5};
    const char *usage = split ? "due_split(members, alive, due, t, near, out)"
                              : "due_at(members, alive, due, t, near, out)";
    if (open_all(args, nargs, 6, usage, b, 4, "q?dq", at, 3) < 0)
        goto done;
    double t = PyFloat_AsDouble(args[3]), near = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred())
        goto done;
    const int64_t *members = b[0].view.buf;
    const unsigned char *alive = b[1].view.buf;
    const double *due = b[2].view.buf;
    int64_t *out = b[3].view.buf;
    Py_ssize_t n = b[0].view.shape[0], rows = b[1].view.shape[0];
    Py_ssize_t k = 0, m = n;
    if (b[2].view.shape[0] != rows || b[3].view.shape[0] < (split ? 2 * n : n) ||
        scan_due(members, 0, n, rows, alive, due, t, near, near != near, split, out, &k, &m) < 0) {
        PyErr_Format(PyExc_ValueError, "%s: arrays out of shape", split ? "due_split" : "due_at");
        goto done;
    }
    result = split ? Py_BuildValue("nn", k, m - n) : PyLong_FromSsize_t(k);
done:
    close_all(b, 4);
    return result;
}

static PyObject *py_due_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return due_scan(args, nargs, 0); }

/* due_split(members, alive, due, t, near, out) -> (k, m): due_at's ``out[:k]`` (the alive members due by ``t +
 * near``, in order) and beside them, in ``out[n:n + m]`` (``n`` members), the other alive ones in order (the
 * component's classes once those due complete: FanExecutor._simulate) -- one pass */
static PyObject *py_due_split(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return due_scan(args, nargs, 1);
}

/* due_split_tail(members, p, head, segs, alive, due, rate, t, near, most, out, segs_out) -> (k, m, ns, q, top, first,
 * nan):
 * due_split of a component's classes ``members`` whose end, from ``p`` on, is its tail in segments (FanExecutor.
 * _due_split_comp): ``head`` (a tuple, or None) and ``segs`` (rows of 5, flat) its segments (start, end, largest
 * rate, first completion with NaN left out, whether one is NaN), contiguous from ``p``, of classes alive whose
 * rates and completion times stood since. The classes before the tail and each segment with a class due (first
 * completion - t <= near) are read; the others are copied.
 * ``out[:k]`` the classes due, in order, ``out[n:n + m]`` the others, in order (``n`` members); the tail of
 * those from ``q`` on, in ``segs_out[:ns]`` (positions among them; a segment read anew has its numbers anew,
 * one left empty is dropped; the two adjacent ones fewest together joined while more than ``most``), ``top``
 * its largest rate, ``first`` its first completion (NaN left out), ``nan`` whether one is NaN. */
static PyObject *py_due_split_tail(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    enum { MEM, SEGS, ALIVE, DUE, RATE, OUT, SOUT, NB };
    static const int at[NB] = {0, 3, 4, 5, 6, 10, 11};
    static const char fmts[NB + 1] = "qd?ddqd";
    Buf b[NB];
    PyObject *result = NULL;
    if (open_all(args, nargs, 12, "due_split_tail(members, p, head, segs, alive, due, rate, t, near, most, out, segs_out)",
                 b, NB, fmts, at, OUT) < 0)
        goto done;
    Py_ssize_t p = PyLong_AsSsize_t(args[1]), most = PyLong_AsSsize_t(args[9]);
    double t = PyFloat_AsDouble(args[7]), near = PyFloat_AsDouble(args[8]);
    double hd[5] = {0.0, 0.0, 0.0, 0.0, 0.0};
    int H = args[2] != Py_None;
    if (H && !PyArg_ParseTuple(args[2], "ddddd", hd, hd + 1, hd + 2, hd + 3, hd + 4))
        goto done;
    if (PyErr_Occurred())
        goto done;
    const int64_t *members = b[MEM].view.buf;
    const double *given = b[SEGS].view.buf, *due = b[DUE].view.buf, *rate = b[RATE].view.buf;
    const unsigned char *alive = b[ALIVE].view.buf;
    int64_t *out = b[OUT].view.buf;
    double *sout = b[SOUT].view.buf;
    Py_ssize_t n = b[MEM].view.shape[0], rows = b[ALIVE].view.shape[0];
    Py_ssize_t S = b[SEGS].view.shape[0] % 5 ? -1 : b[SEGS].view.shape[0] / 5 + H;
    double *segs = scratch(21, 5 * (size_t)(S > 0 ? S : 1), sizeof(double)); /* the head, then the others */
    if (!segs) {
        PyErr_NoMemory();
        goto done;
    }
    if (S > 0) {
        memcpy(segs, hd, (size_t)H * 5 * sizeof(double));
        memcpy(segs + 5 * H, given, (size_t)(S - H) * 5 * sizeof(double));
    }
    int fine = S >= 0 && b[SOUT].view.shape[0] >= 5 * S &&
               b[DUE].view.shape[0] == rows && b[RATE].view.shape[0] == rows && b[OUT].view.shape[0] >= 2 * n &&
               p >= 0 && p <= n && most >= 1;
    for (Py_ssize_t s = 0, at_ = p; fine && s < S; s++) { /* contiguous from p, within the members */
        fine = segs[5 * s] == (double)at_ && segs[5 * s + 1] > segs[5 * s] && segs[5 * s + 1] <= (double)n;
        at_ = (Py_ssize_t)segs[5 * s + 1];
    }
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "due_split_tail: arrays out of shape");
        goto done;
    }
    Py_ssize_t k = 0, m = n;
    if (scan_due(members, 0, p, rows, alive, due, t, near, 0, 1, out, &k, &m) < 0)
        goto range;
    Py_ssize_t q = m - n, ns = 0;
    double top = -INFINITY, first = INFINITY;
    int nan = 0;
    for (Py_ssize_t s = 0; s < S; s++) {
        Py_ssize_t a = (Py_ssize_t)segs[5 * s], e = (Py_ssize_t)segs[5 * s + 1], from = m;
        double smax = segs[5 * s + 2], sfirst = segs[5 * s + 3];
        int snan = segs[5 * s + 4] != 0.0;
        if (sfirst - t <= near) { /* a class of it due: read, its numbers anew */
            smax = -INFINITY, sfirst = INFINITY, snan = 0;
            for (Py_ssize_t i = a; i < e; i++) {
                int64_t c = members[i];
                if ((uint64_t)c >= (uint64_t)rows)
                    goto range;
                if (!alive[c])
                    continue;
                double d = due[c], r = rate[c];
                if (d - t <= near) {
                    out[k++] = c;
                    continue;
                }
                out[m++] = c;
                snan |= d != d;
                sfirst = d < sfirst ? d : sfirst;
                smax = r > smax ? r : smax;
            }
            if (m == from)
                continue;
        } else {
            memcpy(out + m, members + a, (size_t)(e - a) * sizeof(int64_t));
            m += e - a;
        }
        double *row = sout + 5 * ns++;
        row[0] = (double)(from - n), row[1] = (double)(m - n), row[2] = smax, row[3] = sfirst, row[4] = snan;
    }
    while (ns > most) { /* the two adjacent segments fewest together joined */
        Py_ssize_t j = 0;
        for (Py_ssize_t s = 1; s + 1 < ns; s++)
            if (sout[5 * (s + 1) + 1] - sout[5 * s] < sout[5 * (j + 1) + 1] - sout[5 * j])
                j = s;
        double *x = sout + 5 * j, *y = x + 5;
        x[1] = y[1];
        x[2] = y[2] > x[2] ? y[2] : x[2];
        x[3] = y[3] < x[3] ? y[3] : x[3];
        x[4] = x[4] != 0.0 || y[4] != 0.0;
        memmove(y, y + 5, (size_t)(ns - j - 2) * 5 * sizeof(double));
        ns--;
    }
    for (Py_ssize_t s = 0; s < ns; s++) {
        double *row = sout + 5 * s;
        top = row[2] > top ? row[2] : top;
        first = row[3] < first ? row[3] : first;
        nan |= row[4] != 0.0;
    }
    result = Py_BuildValue("nnnnddi", k, m - n, ns, q, top, first, nan);
    goto done;
range: /* (the classes copied are not read: only those read are checked) */
    PyErr_SetString(PyExc_ValueError, "due_split_tail: a class out of range");
done:
    close_all(b, NB);
    return result;
}

/* crossing(ids, lo, hi, e_arc, mark, out) -> k: the classes of ``ids`` (in order) with a crossing of an arc
 * ``mark`` marks, in ``out[:k]`` (FanExecutor._joined: those that cross an arc kept anew) */
static PyObject *py_crossing(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[6];
    PyObject *result = NULL;
    static const int at[6] = {0, 1, 2, 3, 4, 5};
    if (open_all(args, nargs, 6, "crossing(ids, lo, hi, e_arc, mark, out)", b, 6, "qqqq?q", at, 5) < 0)
        goto done;
    const int64_t *ids = b[0].view.buf, *lo = b[1].view.buf, *hi = b[2].view.buf, *e_arc = b[3].view.buf;
    const unsigned char *mark = b[4].view.buf;
    int64_t *out = b[5].view.buf;
    Py_ssize_t n = b[0].view.shape[0], rows = b[1].view.shape[0], ne = b[3].view.shape[0], narcs = b[4].view.shape[0];
    int fine = b[2].view.shape[0] == rows && b[5].view.shape[0] >= n;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; fine && i < n; i++) { /* each class up to its first crossing of a marked arc */
        int64_t c = ids[i];
        fine = c >= 0 && c < rows && lo[c] >= 0 && hi[c] <= ne;
        int64_t e = fine ? lo[c] : 0, end = fine ? hi[c] : 0;
        while (e < end && (uint64_t)e_arc[e] < (uint64_t)narcs && !mark[e_arc[e]])
            e++;
        if (e < end) {
            fine = (uint64_t)e_arc[e] < (uint64_t)narcs;
            out[k++] = c;
        }
    }
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "crossing: arrays out of shape");
        goto done;
    }
    result = PyLong_FromSsize_t(k);
done:
    close_all(b, 6);
    return result;
}

/* finish(done, lo, hi, e_arc, e_cnt, booked, hbooked, hot, loads, crossers, hot_loads): FanExecutor._finish's
 * loads -- the crossings of the classes ``done``, class by class, taken off every arc's load at the booked
 * rate, its crossing members, and the followed arcs' loads at the rate (np.add.at, in that order) */
static PyObject *py_finish(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[11];
    PyObject *result = NULL;
    static const int at[11] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    if (open_all(args, nargs, 11, "finish(done, lo, hi, e_arc, e_cnt, booked, hbooked, hot, loads, crossers, hot_loads)",
                 b, 11, "qqqqddd?ddd", at, 8) < 0)
        goto done;
    const int64_t *ids = b[0].view.buf, *lo = b[1].view.buf, *hi = b[2].view.buf, *e_arc = b[3].view.buf;
    const double *e_cnt = b[4].view.buf, *booked = b[5].view.buf, *hbooked = b[6].view.buf;
    const unsigned char *hot = b[7].view.buf;
    double *loads = b[8].view.buf, *crossers = b[9].view.buf, *hot_loads = b[10].view.buf;
    Py_ssize_t n = b[0].view.shape[0], rows = b[1].view.shape[0], ne = b[3].view.shape[0];
    Py_ssize_t narcs = b[7].view.shape[0];
    int fine = b[2].view.shape[0] == rows && b[4].view.shape[0] == ne && b[5].view.shape[0] == rows &&
               b[6].view.shape[0] == rows && b[8].view.shape[0] == narcs && b[9].view.shape[0] == narcs &&
               b[10].view.shape[0] == narcs;
    for (Py_ssize_t i = 0; fine && i < n; i++) {
        int64_t c = ids[i];
        fine = c >= 0 && c < rows && lo[c] >= 0 && hi[c] <= ne;
        for (int64_t e = fine ? lo[c] : 0; fine && e < hi[c]; e++)
            fine = e_arc[e] >= 0 && e_arc[e] < narcs;
    }
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "finish: arrays out of shape");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = ids[i];
        for (int64_t e = lo[c]; e < hi[c]; e++) {
            int64_t a = e_arc[e];
            double minus = -e_cnt[e];
            loads[a] += minus * booked[c];
            crossers[a] += minus;
            if (hot[a])
                hot_loads[a] += minus * hbooked[c];
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    close_all(b, 11);
    return result;
}

/* kept_rows(ids, k_lo, k_hi, k_arc, hot, keep, row, idx, on) -> n: _Table.kept(ids, hot, hot, version) for
 * classes whose copies are of that version -- (row within ``ids``, index into the k_* columns) of every copied
 * crossing of an arc ``hot``, class by class, in ``row[:n]``/``idx[:n]``, and whether its arc is kept in
 * ``on[:n]``; -n where the outputs are shorter than n (nothing usable written) */
static PyObject *py_kept_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[9];
    PyObject *result = NULL;
    static const int at[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    if (open_all(args, nargs, 9, "kept_rows(ids, k_lo, k_hi, k_arc, hot, keep, row, idx, on)", b, 9, "qqqq??qq?", at,
                 6) < 0)
        goto done;
    const int64_t *ids = b[0].view.buf, *k_lo = b[1].view.buf, *k_hi = b[2].view.buf, *k_arc = b[3].view.buf;
    const unsigned char *hot = b[4].view.buf, *keep = b[5].view.buf;
    int64_t *row = b[6].view.buf, *idx = b[7].view.buf;
    unsigned char *on = b[8].view.buf;
    Py_ssize_t n = b[0].view.shape[0], rows = b[1].view.shape[0], nk = b[3].view.shape[0], narcs = b[4].view.shape[0];
    Py_ssize_t room = b[6].view.shape[0];
    int fine = b[2].view.shape[0] == rows && b[5].view.shape[0] == narcs && b[7].view.shape[0] == room &&
               b[8].view.shape[0] == room;
    for (Py_ssize_t i = 0; fine && i < n; i++) {
        int64_t c = ids[i];
        fine = c >= 0 && c < rows && k_lo[c] >= 0 && k_hi[c] <= nk;
        for (int64_t k = fine ? k_lo[c] : 0; fine && k < k_hi[c]; k++)
            fine = k_arc[k] >= 0 && k_arc[k] < narcs;
    }
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "kept_rows: arrays out of shape");
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = ids[i];
        for (int64_t k = k_lo[c]; k < k_hi[c]; k++) {
            int64_t a = k_arc[k];
            if (!hot[a])
                continue;
            if (m < room)
                row[m] = i, idx[m] = k, on[m] = keep[a];
            m++;
        }
    }
    result = PyLong_FromSsize_t(m <= room ? m : -m);
done:
    close_all(b, 9);
    return result;
}

/* full_loads(live, rate, hbooked, booked, row, idx, k_arc, k_cnt, hot_loads, keep, capacity, out) -> (n, rise):
 * FanExecutor._full's lines before the booking -- the followed arcs' loads moved by the rises of the classes
 * ``live`` (np.add.at in crossing order: ``row``/``idx`` as kept_rows gives them), their rates booked
 * (``hbooked``), the arcs crossed not kept that are full now (with repeats, in crossing order) in ``out[:n]``,
 * and the largest rise of a rate over its booked one (np.max with 0: NaN wins) */
static PyObject *py_full_loads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[12];
    PyObject *result = NULL;
    static const int at[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    if (open_all(args, nargs, 12, "full_loads(live, rate, hbooked, booked, row, idx, k_arc, k_cnt, hot_loads, keep, capacity, out)",
                 b, 12, "qdddqqqdd?dq", at, 8) < 0)
        goto done;
    const int64_t *live = b[0].view.buf, *row = b[4].view.buf, *idx = b[5].view.buf, *k_arc = b[6].view.buf;
    const double *rate = b[1].view.buf, *booked = b[3].view.buf, *k_cnt = b[7].view.buf, *cap = b[10].view.buf;
    double *hbooked = b[2].view.buf, *hot_loads = b[8].view.buf;
    const unsigned char *keep = b[9].view.buf;
    int64_t *out = b[11].view.buf;
    Py_ssize_t n = b[0].view.shape[0], rows = b[1].view.shape[0], nh = b[4].view.shape[0], nk = b[6].view.shape[0];
    Py_ssize_t narcs = b[8].view.shape[0];
    int fine = b[2].view.shape[0] == rows && b[3].view.shape[0] == rows && b[5].view.shape[0] == nh &&
               b[7].view.shape[0] == nk && b[9].view.shape[0] == narcs && b[10].view.shape[0] == narcs &&
               b[11].view.shape[0] >= nh;
    for (Py_ssize_t i = 0; fine && i < n; i++)
        fine = live[i] >= 0 && live[i] < rows;
    for (Py_ssize_t h = 0; fine && h < nh; h++)
        fine = row[h] >= 0 && row[h] < n && idx[h] >= 0 && idx[h] < nk && k_arc[idx[h]] >= 0 && k_arc[idx[h]] < narcs;
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "full_loads: arrays out of shape");
        goto done;
    }
    for (Py_ssize_t h = 0; h < nh; h++) {
        int64_t c = live[row[h]], k = idx[h];
        double r = rate[c];
        double up = isfinite(r) ? r - hbooked[c] : 0.0;
        hot_loads[k_arc[k]] += k_cnt[k] * up;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double r = rate[live[i]];
        hbooked[live[i]] = isfinite(r) ? r : 0.0;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t h = 0; h < nh; h++) {
        int64_t a = k_arc[idx[h]];
        if (!keep[a] && hot_loads[a] >= cap[a] * (1.0 - 1e-9))
            out[m++] = a;
    }
    double rise = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double r = rate[live[i]];
        double up = isfinite(r) ? r - booked[live[i]] : 0.0;
        if (up != up) {
            rise = up;
            break;
        }
        if (up > rise)
            rise = up;
    }
    result = Py_BuildValue("nd", m, rise);
done:
    close_all(b, 12);
    return result;
}

static PyMethodDef module_methods[] = {
    {"maxmin", (PyCFunction)(void (*)(void))py_maxmin, METH_FASTCALL,
     "maxmin(flow, arc, capacity, weight, out[, bound]) -> True (out: the max-min rates), False: ask sim.maxmin"},
    {"necks", (PyCFunction)(void (*)(void))py_necks, METH_FASTCALL,
     "necks(cls, local, count, hop, rate, taken, capacity, size, width, full, neck, quick): FanExecutor._unverified's numbers"},
    {"counted", (PyCFunction)(void (*)(void))py_counted, METH_FASTCALL,
     "counted(part, parts, arcs, hop, width, arcs_n, out_part, out_arc, out_hop, out_cnt) -> K: sim.classes._counted"},
    {"cut", (PyCFunction)(void (*)(void))py_cut, METH_FASTCALL,
     "cut(sizes, counts, which, arcs, hop, members, saturated, arc_hash, arcs_n, per, cuts, out_members, lens, e_arc, "
     "e_hop, e_cnt, edges, x_member, x_arc, x_hop) -> (P, K): sim.classes._parts"},
    {"settle_above", (PyCFunction)(void (*)(void))py_settle_above, METH_FASTCALL,
     "settle_above(region, t, floor, ..., tail, joined) -> None or (how, live, n, rise, first, comp, slack, through, was, kept): FanExecutor._settle's usual paths"},
    {"due_at", (PyCFunction)(void (*)(void))py_due_at, METH_FASTCALL,
     "due_at(members, alive, due, t, near, out) -> k: the alive members due by t + near (all alive ones: near NaN)"},
    {"due_split", (PyCFunction)(void (*)(void))py_due_split, METH_FASTCALL,
     "due_split(members, alive, due, t, near, out) -> (k, m): due_at's out[:k], the other alive members in out[n:n + m]"},
    {"due_split_tail", (PyCFunction)(void (*)(void))py_due_split_tail, METH_FASTCALL,
     "due_split_tail(members, p, segs, alive, due, rate, t, near, most, out, segs_out) -> (k, m, ns, q, top, first, nan): "
     "due_split of a component whose classes end with its tail (FanExecutor._due_split_comp)"},
    {"crossing", (PyCFunction)(void (*)(void))py_crossing, METH_FASTCALL,
     "crossing(ids, lo, hi, e_arc, mark, out) -> k: the classes of ids crossing an arc marked, in out[:k]"},
    {"finish", (PyCFunction)(void (*)(void))py_finish, METH_FASTCALL,
     "finish(done, lo, hi, e_arc, e_cnt, booked, hbooked, hot, loads, crossers, hot_loads): FanExecutor._finish's loads"},
    {"kept_rows", (PyCFunction)(void (*)(void))py_kept_rows, METH_FASTCALL,
     "kept_rows(ids, k_lo, k_hi, k_arc, hot, keep, row, idx, on) -> n: _Table.kept's rows for copies up to date"},
    {"full_loads", (PyCFunction)(void (*)(void))py_full_loads, METH_FASTCALL,
     "full_loads(live, rate, hbooked, booked, row, idx, k_arc, k_cnt, hot_loads, keep, capacity, out) -> (n, rise)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_classcore", "sim.maxmin.maxmin_rates and the flow classes' lines in C (see sim/_classcore.c).",
    -1, module_methods,
};

/* the module, with ``_maxmin_core`` and ``_maxmin_core_sorted``: capsules holding maxmin_core and
 * maxmin_core_sorted, which sim/_ratecore.c's solve of every flow calls where sim.maxmin.maxmin_rates would (the
 * same rounds without numpy arrays made for the call) */
PyMODINIT_FUNC PyInit__classcore(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    void *fns[2] = {(void *)maxmin_core, (void *)maxmin_core_sorted};
    const char *names[2] = {"sim._classcore._maxmin_core", "sim._classcore._maxmin_core_sorted"};
    for (int k = 0; k < 2; k++) {
        PyObject *cap = PyCapsule_New(fns[k], names[k], NULL);
        if (!cap || PyModule_AddObject(m, names[k] + strlen("sim._classcore."), cap) < 0) {
            Py_XDECREF(cap);
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
