/*
 * fake_cuda.c: a CUDA-shaped shared library for tests on machines without a GPU.
 *
 * It exports the Driver API entry points that std/gpu host programs (LANGUAGE.md section 8)
 * and toolchain/providers/cuda/driver.py call. Each is a trivial success that records one
 * line in the file named by env METTLE_FAKE_CUDA_LOG (no file, no log):
 *
 *     <function> <arg>=<value> <arg>=<value> ...
 *
 * Handles and pointers are printed as 0x<hex>, integers in decimal, strings quoted.
 * cuLaunchKernel prints its eleven arguments in order (f gx gy gz bx by bz shared stream
 * kernelParams extra), then kernel="<name>" and cells=<hex>,<hex>,...: each parameter
 * cell's bytes in memory order (an int32 5 is 05000000). Cell sizes come from env
 * METTLE_FAKE_CUDA_CELLS ("8,8,8,4"), else from the .entry's parameter list in the PTX
 * text the module was loaded from, else cells=unknown.
 *
 * Device memory is host malloc, so HtoD/DtoH copies round-trip real data; copies that
 * fall outside a live allocation fail with CUDA_ERROR_INVALID_VALUE, as the real driver
 * would, and cuModuleGetFunction fails with CUDA_ERROR_NOT_FOUND for a name that the
 * loaded PTX text does not define as an .entry. A launch of a kernel named "vadd" with
 * cells (ptr, ptr, ptr, n) computes c[i] = a[i] + b[i] over float32 on those host copies
 * and adds computed=vadd to its line.
 *
 * cuModuleLoadDataEx with CU_JIT_LOG_VERBOSE writes ptxas-style register/spill lines for each
 * .entry into the info log; cuOccupancyMaxActiveBlocksPerMultiprocessor answers 2048 threads
 * per SM (at most 32 blocks); cuPointerGetAttribute knows the device ordinal (0) of live
 * allocations only.
 *
 * cuTensorMapEncodeTiled checks the driver's geometry rules and writes its arguments into
 * the 128-byte map (layout at the function), so a test can read back what reached the device.
 *
 * Env METTLE_FAKE_CUDA_FAIL="cuInit=100,cuModuleLoadDataEx=218" makes the named functions
 * return that code instead (logged as "<function> failed=<code>"), to test error paths.
 * Env METTLE_FAKE_CUDA_JIT_CACHE (set) models the driver's JIT cache: a PTX text loaded
 * before in the process gets an empty info log, as a cache hit does. Env
 * METTLE_FAKE_CUDA_LOCAL_BYTES=N makes every function use N bytes of local memory
 * (cuFuncGetAttribute), reported in the log as N bytes of stack and of spill stores/loads.
 * Not thread-safe; tests are single-threaded.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUhandle;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define MAX_CELLS 64
#define HEX(p) ((unsigned long long)(uintptr_t)(p))

/* ---- logging and failure injection ---------------------------------------------- */

static void fake_log(const char *fmt, ...) {
    const char *path = getenv("METTLE_FAKE_CUDA_LOG");
    if (!path || !*path) return;
    FILE *fp = fopen(path, "a");
    if (!fp) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(fp, fmt, ap);
    va_end(ap);
    fputc('\n', fp);
    fclose(fp);
}

/* The injected result for `name` from METTLE_FAKE_CUDA_FAIL, or 0. */
static int fake_fail(const char *name) {
    const char *spec = getenv("METTLE_FAKE_CUDA_FAIL");
    size_t len = strlen(name);
    while (spec && *spec) {
        if (strncmp(spec, name, len) == 0 && spec[len] == '=') return atoi(spec + len + 1);
        spec = strchr(spec, ',');
        if (spec) spec++;
    }
    return 0;
}

#define FAIL_IF_ASKED(name)                                                              \
    do {                                                                                 \
        int injected_ = fake_fail(name);                                                 \
        if (injected_) {                                                                 \
            fake_log("%s failed=%d", name, injected_);                                   \
            return injected_;                                                            \
        }                                                                                \
    } while (0)

/* ---- live allocations (device, managed and host memory are all malloc) ----------- */

struct allocation { uintptr_t base; size_t size; };
static struct allocation *allocs;
static size_t n_allocs, cap_allocs;

static void *track_alloc(size_t size) {
    void *p = malloc(size ? size : 1);
    if (!p) return NULL;
    if (n_allocs == cap_allocs) {
        size_t cap = cap_allocs ? 2 * cap_allocs : 64;
        struct allocation *grown = realloc(allocs, cap * sizeof *grown);
        if (!grown) { free(p); return NULL; }
        allocs = grown;
        cap_allocs = cap;
    }
    allocs[n_allocs].base = (uintptr_t)p;
    allocs[n_allocs].size = size;
    n_allocs++;
    return p;
}

static int track_free(uintptr_t p) {
    for (size_t i = 0; i < n_allocs; i++) {
        if (allocs[i].base == p) {
            free((void *)p);
            allocs[i] = allocs[--n_allocs];
            return 1;
        }
    }
    return 0;
}

/* Whether [addr, addr + size) lies inside one live allocation. */
static int track_covers(uintptr_t addr, size_t size) {
    for (size_t i = 0; i < n_allocs; i++) {
        uintptr_t base = allocs[i].base;
        if (addr >= base && addr - base <= allocs[i].size && size <= allocs[i].size - (addr - base))
            return 1;
    }
    return 0;
}

/* ---- opaque handles ---------------------------------------------------------------- */

struct fake_module { char *ptx; };
struct fake_function { struct fake_module *module; char name[256]; };

static CUhandle new_handle(void) { return calloc(1, 16); }

/* ---- initialisation, devices, contexts -------------------------------------------- */

CUresult cuInit(unsigned int flags) {
    FAIL_IF_ASKED("cuInit");
    fake_log("cuInit flags=%u", flags);
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
    FAIL_IF_ASKED("cuDriverGetVersion");
    *version = 13000;
    fake_log("cuDriverGetVersion version=%d", *version);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    FAIL_IF_ASKED("cuDeviceGetCount");
    const char *env = getenv("METTLE_FAKE_CUDA_DEVICES");
    *count = env ? atoi(env) : 1;
    fake_log("cuDeviceGetCount count=%d", *count);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    FAIL_IF_ASKED("cuDeviceGet");
    *device = ordinal;
    fake_log("cuDeviceGet device=%d ordinal=%d", *device, ordinal);
    return CUDA_SUCCESS;
}

/* Plausible H200 values for the attributes host programs ask about; 1 otherwise. */
static int attribute_value(int attrib) {
    switch (attrib) {
    case 1: return 1024;   /* MAX_THREADS_PER_BLOCK */
    case 8: return 49152;  /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 10: return 32;    /* WARP_SIZE */
    case 16: return 132;   /* MULTIPROCESSOR_COUNT */
    case 75: return 9;     /* COMPUTE_CAPABILITY_MAJOR */
    case 76: return 0;     /* COMPUTE_CAPABILITY_MINOR */
    default: return 1;
    }
}

CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev) {
    FAIL_IF_ASKED("cuDeviceGetAttribute");
    *value = attribute_value(attrib);
    fake_log("cuDeviceGetAttribute value=%d attrib=%d dev=%d", *value, attrib, dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    FAIL_IF_ASKED("cuDeviceGetName");
    if (len > 0) snprintf(name, (size_t)len, "%s", "Mettle fake CUDA device");
    fake_log("cuDeviceGetName name=0x%llx len=%d dev=%d", HEX(name), len, dev);
    return CUDA_SUCCESS;
}

static CUresult device_uuid(const char *fn, unsigned char *uuid, CUdevice dev) {
    FAIL_IF_ASKED(fn);
    for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(0xA0 + i);
    fake_log("%s uuid=0x%llx dev=%d", fn, HEX(uuid), dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(unsigned char *uuid, CUdevice dev) {
    return device_uuid("cuDeviceGetUuid", uuid, dev);
}

CUresult cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice dev) {
    return device_uuid("cuDeviceGetUuid_v2", uuid, dev);
}

CUresult cuDevicePrimaryCtxRetain(CUhandle *pctx, CUdevice dev) {
    FAIL_IF_ASKED("cuDevicePrimaryCtxRetain");
    static char primary[16];
    *pctx = primary;
    fake_log("cuDevicePrimaryCtxRetain pctx=0x%llx dev=%d", HEX(*pctx), dev);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    FAIL_IF_ASKED("cuDevicePrimaryCtxRelease_v2");
    fake_log("cuDevicePrimaryCtxRelease_v2 dev=%d", dev);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

CUresult cuCtxCreate_v2(CUhandle *pctx, unsigned int flags, CUdevice dev) {
    FAIL_IF_ASKED("cuCtxCreate_v2");
    *pctx = new_handle();
    fake_log("cuCtxCreate_v2 pctx=0x%llx flags=%u dev=%d", HEX(*pctx), flags, dev);
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUhandle ctx) {
    FAIL_IF_ASKED("cuCtxDestroy_v2");
    fake_log("cuCtxDestroy_v2 ctx=0x%llx", HEX(ctx));
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUhandle ctx) {
    FAIL_IF_ASKED("cuCtxSetCurrent");
    fake_log("cuCtxSetCurrent ctx=0x%llx", HEX(ctx));
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    FAIL_IF_ASKED("cuCtxSynchronize");
    fake_log("cuCtxSynchronize");
    return CUDA_SUCCESS;
}

/* ---- modules and functions --------------------------------------------------------- */

static struct fake_module *new_module(const void *image) {
    struct fake_module *m = calloc(1, sizeof *m);
    const char *text = image;
    /* Keep PTX text for parameter sizes; an ELF cubin has no terminator to copy up to. */
    if (m && text && strncmp(text, "\x7f" "ELF", 4) != 0) m->ptx = strdup(text);
    return m;
}

CUresult cuModuleLoadData(CUhandle *module, const void *image) {
    FAIL_IF_ASKED("cuModuleLoadData");
    *module = new_module(image);
    fake_log("cuModuleLoadData module=0x%llx image=0x%llx", HEX(*module), HEX(image));
    return CUDA_SUCCESS;
}

/* Write `msg` into the JIT error-log buffer option, if the caller passed one. */
static void write_error_log(unsigned n, const int *options, void **values, const char *msg) {
    char *buffer = NULL;
    size_t size = 0;
    for (unsigned i = 0; i < n; i++) {
        if (options[i] == 5) buffer = values[i];                  /* CU_JIT_ERROR_LOG_BUFFER */
        if (options[i] == 6) size = (size_t)(uintptr_t)values[i]; /* ..._SIZE_BYTES */
    }
    if (buffer && size) snprintf(buffer, size, "%s", msg);
}

static int local_bytes(void) {
    const char *env = getenv("METTLE_FAKE_CUDA_LOCAL_BYTES");
    return env ? atoi(env) : 0;
}

/* Whether METTLE_FAKE_CUDA_JIT_CACHE is set and this PTX text was loaded before (FNV-1a
 * hashes of up to 256 texts). */
static int jit_cache_hit(const char *ptx) {
    static uint64_t seen[256];
    static unsigned count;
    if (!getenv("METTLE_FAKE_CUDA_JIT_CACHE")) return 0;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = ptx; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (unsigned i = 0; i < count; i++)
        if (seen[i] == h) return 1;
    if (count < 256) seen[count++] = h;
    return 0;
}

/* With CU_JIT_LOG_VERBOSE (12) set, ptxas-style lines for every .entry in the info log
 * (CU_JIT_INFO_LOG_BUFFER 3, size 4): 16 registers and the local bytes, as
 * cuFuncGetAttribute says; nothing for a JIT cache hit. */
static void write_info_log(unsigned n, const int *options, void **values,
                           const struct fake_module *m) {
    char *buffer = NULL;
    size_t size = 0, used = 0;
    int verbose = 0, local = local_bytes();
    for (unsigned i = 0; i < n; i++) {
        if (options[i] == 3) buffer = values[i];
        if (options[i] == 4) size = (size_t)(uintptr_t)values[i];
        if (options[i] == 12) verbose = (int)(uintptr_t)values[i];
    }
    if (!buffer || !size) return;
    buffer[0] = '\0';
    if (!verbose || !m || !m->ptx || jit_cache_hit(m->ptx)) return;
    for (const char *p = strstr(m->ptx, ".entry"); p; p = strstr(p + 6, ".entry")) {
        const char *q = p + 6;
        while (*q == ' ' || *q == '\t') q++;
        int len = 0;
        while (q[len] && q[len] != '(' && q[len] != ' ' && q[len] != '\n') len++;
        int wrote = snprintf(buffer + used, size - used,
                             "ptxas info    : Function properties for %.*s\n"
                             "    %d bytes stack frame, %d bytes spill stores, %d bytes spill loads\n"
                             "ptxas info    : Used 16 registers\n", len, q, local, local, local);
        if (wrote < 0 || (size_t)wrote >= size - used) break;
        used += (size_t)wrote;
    }
}

CUresult cuModuleLoadDataEx(CUhandle *module, const void *image, unsigned numOptions,
                            int *options, void **optionValues) {
    int injected = fake_fail("cuModuleLoadDataEx");
    if (injected) {
        write_error_log(numOptions, options, optionValues,
                        "ptxas fatal   : fake JIT failure injected by METTLE_FAKE_CUDA_FAIL");
        fake_log("cuModuleLoadDataEx failed=%d", injected);
        return injected;
    }
    *module = new_module(image);
    write_info_log(numOptions, options, optionValues, *module);
    fake_log("cuModuleLoadDataEx module=0x%llx image=0x%llx numOptions=%u", HEX(*module),
             HEX(image), numOptions);
    return CUDA_SUCCESS;
}

static const char *find_entry(const char *ptx, const char *name);

CUresult cuModuleGetFunction(CUhandle *hfunc, CUhandle hmod, const char *name) {
    FAIL_IF_ASKED("cuModuleGetFunction");
    const struct fake_module *m = hmod;
    if (!name || (m && m->ptx && !find_entry(m->ptx, name))) {
        fake_log("cuModuleGetFunction failed=500 name=\"%s\"", name ? name : "");
        return 500; /* CUDA_ERROR_NOT_FOUND, as for a name the PTX does not define */
    }
    struct fake_function *f = calloc(1, sizeof *f);
    f->module = hmod;
    snprintf(f->name, sizeof f->name, "%s", name ? name : "");
    *hfunc = f;
    fake_log("cuModuleGetFunction hfunc=0x%llx hmod=0x%llx name=\"%s\"", HEX(f), HEX(hmod),
             f->name);
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUhandle hmod) {
    FAIL_IF_ASKED("cuModuleUnload");
    fake_log("cuModuleUnload hmod=0x%llx", HEX(hmod));
    return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *value, int attrib, CUhandle hfunc) {
    FAIL_IF_ASKED("cuFuncGetAttribute");
    /* CU_FUNC_ATTRIBUTE_NUM_REGS, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES */
    *value = attrib == 4 ? 16 : attrib == 3 ? local_bytes() : 0;
    fake_log("cuFuncGetAttribute value=%d attrib=%d hfunc=0x%llx", *value, attrib, HEX(hfunc));
    return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUhandle hfunc, int attrib, int value) {
    FAIL_IF_ASKED("cuFuncSetAttribute");
    fake_log("cuFuncSetAttribute hfunc=0x%llx attrib=%d value=%d", HEX(hfunc), attrib, value);
    return CUDA_SUCCESS;
}

/* ---- memory -------------------------------------------------------------------------- */

static CUresult device_alloc(const char *fn, CUdeviceptr *dptr, size_t bytes,
                             unsigned long long extra) {
    FAIL_IF_ASKED(fn);
    void *p = track_alloc(bytes);
    if (!p) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *dptr = HEX(p);
    fake_log("%s dptr=0x%llx bytesize=%zu flags=%llu", fn, *dptr, bytes, extra);
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    return device_alloc("cuMemAlloc_v2", dptr, bytesize, 0);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    return device_alloc("cuMemAllocManaged", dptr, bytesize, flags);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUhandle stream) {
    return device_alloc("cuMemAllocAsync", dptr, bytesize, HEX(stream));
}

static CUresult device_free(const char *fn, uintptr_t p) {
    FAIL_IF_ASKED(fn);
    int known = track_free(p);
    fake_log("%s dptr=0x%llx", fn, (unsigned long long)p);
    return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) { return device_free("cuMemFree_v2", dptr); }

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUhandle stream) {
    (void)stream;
    return device_free("cuMemFreeAsync", dptr);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
    CUdeviceptr p;
    CUresult rc = device_alloc("cuMemHostAlloc", &p, bytesize, flags);
    if (rc == CUDA_SUCCESS) *pp = (void *)(uintptr_t)p;
    return rc;
}

CUresult cuMemFreeHost(void *p) { return device_free("cuMemFreeHost", (uintptr_t)p); }

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned int flags) {
    FAIL_IF_ASKED("cuMemHostGetDevicePointer_v2");
    *dptr = HEX(p);
    fake_log("cuMemHostGetDevicePointer_v2 dptr=0x%llx p=0x%llx flags=%u", *dptr, HEX(p), flags);
    return CUDA_SUCCESS;
}

static CUresult copy(const char *fn, void *dst, const void *src, size_t n, uintptr_t dev) {
    FAIL_IF_ASKED(fn);
    int ok = track_covers(dev, n);
    fake_log("%s dst=0x%llx src=0x%llx bytes=%zu%s", fn, HEX(dst), HEX(src), n,
             ok ? "" : " invalid=1");
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    return copy("cuMemcpyHtoD_v2", (void *)(uintptr_t)dst, src, n, dst);
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    return copy("cuMemcpyDtoH_v2", dst, (const void *)(uintptr_t)src, n, src);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUhandle stream) {
    (void)stream;
    return copy("cuMemcpyHtoDAsync_v2", (void *)(uintptr_t)dst, src, n, dst);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUhandle stream) {
    (void)stream;
    return copy("cuMemcpyDtoHAsync_v2", dst, (const void *)(uintptr_t)src, n, src);
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
    FAIL_IF_ASKED("cuMemsetD8_v2");
    int ok = track_covers(dst, n);
    fake_log("cuMemsetD8_v2 dst=0x%llx value=%u bytes=%zu%s", dst, value, n,
             ok ? "" : " invalid=1");
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, value, n);
    return CUDA_SUCCESS;
}

/* ---- streams, events, graphs ---------------------------------------------------------- */

static CUresult new_object(const char *fn, const char *what, CUhandle *out, unsigned long long a) {
    FAIL_IF_ASKED(fn);
    *out = new_handle();
    fake_log("%s %s=0x%llx flags=%llu", fn, what, HEX(*out), a);
    return CUDA_SUCCESS;
}

static CUresult on_object(const char *fn, const char *what, CUhandle h) {
    FAIL_IF_ASKED(fn);
    fake_log("%s %s=0x%llx", fn, what, HEX(h));
    return CUDA_SUCCESS;
}

static CUresult on_pair(const char *fn, const char *a, CUhandle ha, const char *b, CUhandle hb) {
    FAIL_IF_ASKED(fn);
    fake_log("%s %s=0x%llx %s=0x%llx", fn, a, HEX(ha), b, HEX(hb));
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUhandle *s, unsigned int flags) {
    return new_object("cuStreamCreate", "stream", s, flags);
}
CUresult cuStreamDestroy_v2(CUhandle s) { return on_object("cuStreamDestroy_v2", "stream", s); }
CUresult cuStreamSynchronize(CUhandle s) { return on_object("cuStreamSynchronize", "stream", s); }

CUresult cuStreamWaitEvent(CUhandle s, CUhandle e, unsigned int flags) {
    (void)flags;
    return on_pair("cuStreamWaitEvent", "stream", s, "event", e);
}

CUresult cuEventCreate(CUhandle *e, unsigned int flags) {
    return new_object("cuEventCreate", "event", e, flags);
}
CUresult cuEventDestroy_v2(CUhandle e) { return on_object("cuEventDestroy_v2", "event", e); }
CUresult cuEventSynchronize(CUhandle e) { return on_object("cuEventSynchronize", "event", e); }

CUresult cuEventRecord(CUhandle e, CUhandle s) {
    return on_pair("cuEventRecord", "event", e, "stream", s);
}

/* A fixed 1 ms, so bandwidth figures that host programs print stay finite. */
static CUresult elapsed(const char *fn, float *ms, CUhandle start, CUhandle end) {
    FAIL_IF_ASKED(fn);
    *ms = 1.0f;
    fake_log("%s ms=1.0 start=0x%llx end=0x%llx", fn, HEX(start), HEX(end));
    return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *ms, CUhandle start, CUhandle end) {
    return elapsed("cuEventElapsedTime", ms, start, end);
}

CUresult cuEventElapsedTime_v2(float *ms, CUhandle start, CUhandle end) {
    return elapsed("cuEventElapsedTime_v2", ms, start, end);
}

CUresult cuStreamBeginCapture_v2(CUhandle s, int mode) {
    FAIL_IF_ASKED("cuStreamBeginCapture_v2");
    fake_log("cuStreamBeginCapture_v2 stream=0x%llx mode=%d", HEX(s), mode);
    return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUhandle s, CUhandle *graph) {
    FAIL_IF_ASKED("cuStreamEndCapture");
    *graph = new_handle();
    fake_log("cuStreamEndCapture stream=0x%llx graph=0x%llx", HEX(s), HEX(*graph));
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUhandle *exec, CUhandle graph, unsigned long long flags) {
    FAIL_IF_ASKED("cuGraphInstantiateWithFlags");
    *exec = new_handle();
    fake_log("cuGraphInstantiateWithFlags exec=0x%llx graph=0x%llx flags=%llu", HEX(*exec),
             HEX(graph), flags);
    return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUhandle exec, CUhandle s) {
    return on_pair("cuGraphLaunch", "exec", exec, "stream", s);
}
CUresult cuGraphExecDestroy(CUhandle e) { return on_object("cuGraphExecDestroy", "exec", e); }
CUresult cuGraphDestroy(CUhandle g) { return on_object("cuGraphDestroy", "graph", g); }

/* ---- kernel launch ------------------------------------------------------------------- */

/* Cell sizes from "8,8,8,4"; returns the count. */
static int sizes_from_env(const char *spec, int *sizes) {
    int n = 0;
    while (*spec && n < MAX_CELLS) {
        sizes[n++] = atoi(spec);
        spec = strchr(spec, ',');
        if (!spec) break;
        spec++;
    }
    return n;
}

/* Bytes of one PTX parameter declaration such as ".param .u64 .ptr.global a" or
 * ".param .align 8 .b8 s[24]": element width from the first .u/.s/.b/.f<bits> token,
 * times the array length if there is one. */
static int param_size(const char *decl, const char *end) {
    int bits = 0;
    for (const char *p = decl; p < end && !bits; p++) {
        int typed = p[0] == '.' && p[1] && strchr("usbf", p[1]) && p[2] >= '1' && p[2] <= '9';
        if (typed) bits = atoi(p + 2);
    }
    const char *bracket = memchr(decl, '[', (size_t)(end - decl));
    int count = bracket ? atoi(bracket + 1) : 1;
    return bits / 8 * (count > 0 ? count : 1);
}

/* Find ".entry <name>" followed by "(" in the PTX text. */
static const char *find_entry(const char *ptx, const char *name) {
    size_t len = strlen(name);
    for (const char *p = strstr(ptx, ".entry"); p; p = strstr(p + 6, ".entry")) {
        const char *q = p + 6;
        while (*q == ' ' || *q == '\t') q++;
        if (strncmp(q, name, len) != 0) continue;
        q += len;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
        if (*q == '(') return q + 1;
    }
    return NULL;
}

/* Cell sizes of kernel `name` read from its .entry parameter list; -1 if not found. */
static int sizes_from_ptx(const char *ptx, const char *name, int *sizes) {
    const char *p = ptx ? find_entry(ptx, name) : NULL;
    if (!p) return -1;
    const char *close = strchr(p, ')');
    if (!close) return -1;
    int n = 0;
    for (p = strstr(p, ".param"); p && p < close && n < MAX_CELLS; p = strstr(p + 6, ".param")) {
        const char *end = p + 6;
        while (end < close && *end != ',') end++;
        sizes[n++] = param_size(p + 6, end);
    }
    return n;
}

static int cell_sizes(const struct fake_function *f, int *sizes) {
    const char *env = getenv("METTLE_FAKE_CUDA_CELLS");
    if (env && *env) return sizes_from_env(env, sizes);
    if (!f || !f->module) return -1;
    return sizes_from_ptx(f->module->ptx, f->name, sizes);
}

/* Append each cell's bytes in hex, comma-separated, to out (size cap). */
static void format_cells(char *out, size_t cap, void **params, const int *sizes, int n) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used + 4 < cap; i++) {
        const unsigned char *cell = params ? params[i] : NULL;
        if (i) out[used++] = ',';
        for (int b = 0; cell && b < sizes[i] && used + 3 < cap; b++)
            used += (size_t)snprintf(out + used, cap - used, "%02x", cell[b]);
        if (!cell) used += (size_t)snprintf(out + used, cap - used, "null");
        out[used] = '\0';
    }
}

/* c[i] = a[i] + b[i] for a "vadd" whose cells are (ptr, ptr, ptr, n); 1 when done. */
static int fake_vadd(void **params, const int *sizes, int n) {
    if (n != 4 || sizes[0] != 8 || sizes[1] != 8 || sizes[2] != 8) return 0;
    if (sizes[3] != 4 && sizes[3] != 8) return 0;
    long long count = sizes[3] == 4 ? *(int32_t *)params[3] : *(int64_t *)params[3];
    CUdeviceptr a = *(CUdeviceptr *)params[0], b = *(CUdeviceptr *)params[1];
    CUdeviceptr c = *(CUdeviceptr *)params[2];
    size_t bytes = count > 0 ? (size_t)count * sizeof(float) : 0;
    if (!track_covers(a, bytes) || !track_covers(b, bytes) || !track_covers(c, bytes)) return 0;
    for (long long i = 0; i < count; i++)
        ((float *)(uintptr_t)c)[i] = ((float *)(uintptr_t)a)[i] + ((float *)(uintptr_t)b)[i];
    return 1;
}

CUresult cuLaunchKernel(CUhandle f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUhandle stream,
                        void **kernelParams, void **extra) {
    FAIL_IF_ASKED("cuLaunchKernel");
    struct fake_function *fn = f;
    int sizes[MAX_CELLS];
    int n = cell_sizes(fn, sizes);
    static char cells[MAX_CELLS * 2 * 64 + MAX_CELLS];
    if (n < 0) snprintf(cells, sizeof cells, "unknown");
    else format_cells(cells, sizeof cells, kernelParams, sizes, n);
    int computed = fn && kernelParams && strcmp(fn->name, "vadd") == 0
                   && fake_vadd(kernelParams, sizes, n);
    fake_log("cuLaunchKernel f=0x%llx gx=%u gy=%u gz=%u bx=%u by=%u bz=%u shared=%u "
             "stream=0x%llx kernelParams=0x%llx extra=0x%llx kernel=\"%s\" cells=%s%s",
             HEX(f), gx, gy, gz, bx, by, bz, shared, HEX(stream), HEX(kernelParams), HEX(extra),
             fn ? fn->name : "", cells, computed ? " computed=vadd" : "");
    return CUDA_SUCCESS;
}

/* ---- tensor maps ---------------------------------------------------------------------- */

/* Bytes of a CUtensorMapDataType; 0 for an unknown code. */
static unsigned tensor_element_size(int dtype) {
    static const unsigned size[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
    return dtype >= 0 && dtype < (int)(sizeof size / sizeof size[0]) ? size[dtype] : 0;
}

/* Append "a,b,c" of n values (from v32 when given, else v64) to out at *used. */
static void join_u64(char *out, size_t cap, size_t *used, const uint64_t *v64,
                     const uint32_t *v32, unsigned n) {
    for (unsigned i = 0; i < n && *used + 24 < cap; i++) {
        unsigned long long x = v32 ? v32[i] : v64[i];
        *used += (size_t)snprintf(out + *used, cap - *used, "%s%llu", i ? "," : "", x);
    }
}

/* The geometry rules the real driver checks (CUDA 12 cuTensorMapEncodeTiled, no interleave);
 * NULL when the arguments are acceptable. */
static const char *tensor_map_invalid(int dtype, unsigned rank, uint64_t base,
                                      const uint64_t *dims, const uint64_t *strides,
                                      const uint32_t *box, const uint32_t *estr, int interleave) {
    unsigned size = tensor_element_size(dtype);
    if (!size) return "dtype";
    if (rank < 1 || rank > 5) return "rank";
    if (base % 16) return "address";
    if (interleave != 0) return "interleave";
    if ((uint64_t)box[0] * size % 16) return "inner-box";
    for (unsigned d = 0; d < rank; d++) {
        if (dims[d] == 0 || dims[d] > (1ull << 32)) return "dims";
        if (box[d] == 0 || box[d] > 256) return "box";
        if (estr[d] == 0 || estr[d] > 8) return "element-strides";
        if (d + 1 < rank && (strides[d] % 16 || strides[d] >= (1ull << 40))) return "strides";
    }
    return NULL;
}

/* Records its arguments and fills the 128-byte map with them, little-endian: base (u64, at 0),
 * dtype and rank (u32, 8 and 12), dims[5] (u64, 16), box[5] (u32, 56), elementStrides[5]
 * (u32, 76), strides[4] (u64, 96); unused slots are zero (tensor_map.py builds the same bytes
 * in Python). Invalid geometry returns CUDA_ERROR_INVALID_VALUE with "invalid=<rule>" logged. */
CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *base,
                                const uint64_t *dims, const uint64_t *strides,
                                const uint32_t *box, const uint32_t *estr, int interleave,
                                int swizzle, int l2, int oob) {
    FAIL_IF_ASKED("cuTensorMapEncodeTiled");
    unsigned n = rank <= 5 ? rank : 0;
    char text[512];
    size_t used = 0;
    text[0] = '\0';
    used += (size_t)snprintf(text + used, sizeof text - used, " dims=");
    join_u64(text, sizeof text, &used, dims, NULL, n);
    used += (size_t)snprintf(text + used, sizeof text - used, " strides=");
    join_u64(text, sizeof text, &used, strides, NULL, n ? n - 1 : 0);
    used += (size_t)snprintf(text + used, sizeof text - used, " box=");
    join_u64(text, sizeof text, &used, NULL, box, n);
    used += (size_t)snprintf(text + used, sizeof text - used, " elementStrides=");
    join_u64(text, sizeof text, &used, NULL, estr, n);
    const char *invalid = n ? tensor_map_invalid(dtype, rank, HEX(base), dims, strides, box,
                                                 estr, interleave) : "rank";
    fake_log("cuTensorMapEncodeTiled map=0x%llx dtype=%d rank=%u base=0x%llx%s interleave=%d "
             "swizzle=%d l2=%d oob=%d%s%s", HEX(map), dtype, rank, HEX(base), text, interleave,
             swizzle, l2, oob, invalid ? " invalid=" : "", invalid ? invalid : "");
    if (invalid) return CUDA_ERROR_INVALID_VALUE;
    unsigned char image[128];
    memset(image, 0, sizeof image);
    uint64_t address = HEX(base);
    uint32_t head[2] = {(uint32_t)dtype, rank};
    memcpy(image, &address, 8);
    memcpy(image + 8, head, 8);
    for (unsigned d = 0; d < rank; d++) {
        memcpy(image + 16 + 8 * d, &dims[d], 8);
        memcpy(image + 56 + 4 * d, &box[d], 4);
        memcpy(image + 76 + 4 * d, &estr[d], 4);
        if (d + 1 < rank) memcpy(image + 96 + 8 * d, &strides[d], 8);
    }
    memcpy(map, image, sizeof image);
    return CUDA_SUCCESS;
}

/* ---- occupancy and pointer queries (the Python runtime's kernel facts and checks) ------ */

/* An H200-like answer: 2048 resident threads per SM, at most 32 blocks. */
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUhandle func,
                                                     int blockSize, size_t dynamicSMemSize) {
    FAIL_IF_ASKED("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    int blocks = blockSize > 0 ? 2048 / blockSize : 0;
    *numBlocks = blocks > 32 ? 32 : blocks;
    fake_log("cuOccupancyMaxActiveBlocksPerMultiprocessor numBlocks=%d func=0x%llx "
             "blockSize=%d dynamicSMemSize=%zu", *numBlocks, HEX(func), blockSize,
             dynamicSMemSize);
    return CUDA_SUCCESS;
}

/* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (9) is 0 inside a live allocation; anything else is
 * CUDA_ERROR_INVALID_VALUE, as the real driver answers for host memory it does not know. */
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
    FAIL_IF_ASKED("cuPointerGetAttribute");
    int ok = attribute == 9 && track_covers(ptr, 1);
    fake_log("cuPointerGetAttribute attribute=%d ptr=0x%llx%s", attribute, ptr,
             ok ? "" : " invalid=1");
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    *(int *)data = 0;
    return CUDA_SUCCESS;
}

/* ---- error descriptions --------------------------------------------------------------- */

static const char *error_name(int code) {
    switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    default: return NULL;
    }
}

CUresult cuGetErrorName(int code, const char **name) {
    *name = error_name(code);
    return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(int code, const char **text) {
    *text = error_name(code) ? "reported by the Mettle fake CUDA driver" : NULL;
    return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
