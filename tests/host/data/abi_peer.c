/* C functions with every argument/result shape the host ABIs treat specially, built by
 * each target's C compiler into a shared library that Mettle programs call (and that calls
 * back into Mettle): tests/host/test_c_abi.py. */
#include <stdint.h>

#ifdef _WIN32
#define API __declspec(dllexport)
#else
#define API
#endif

typedef struct { double x, y; } V2;                  /* HFA / two SSE eightbytes / 16 B */
typedef struct { float a, b, c; } F3;                 /* HFA of three floats, 12 B */
typedef struct { int32_t a; float f; } Mixed;         /* one mixed eightbyte, 8 B */
typedef struct { int64_t a, b, c; int8_t tag; } Big;  /* 32 B: memory / by reference */
typedef struct { int8_t a; int16_t b; } Small;        /* 4 B */

API V2 v2_add(V2 p, V2 q) { V2 r = {p.x + q.x, p.y + q.y}; return r; }
API F3 f3_scale(F3 v, float k) { F3 r = {v.a * k, v.b * k, v.c * k}; return r; }
API Mixed mixed_mul(Mixed m, int32_t k) { Mixed r = {m.a * k, m.f * 2.0f}; return r; }
API Big big_grow(Big b, int64_t d) {
    Big r = {b.a + d, b.b + d, b.c + d, (int8_t)(b.tag + 1)};
    return r;
}
API Small small_swap(Small s) { Small r = {(int8_t)s.b, (int16_t)(s.a * 1000)}; return r; }
API int64_t many(int64_t a, int32_t b, int16_t c, int8_t d, uint64_t e, uint32_t f,
                 uint16_t g, uint8_t h, int64_t i, int32_t j) {
    return a + (int64_t)b * 2 + (int64_t)c * 3 + (int64_t)d * 4 + (int64_t)e * 5 +
           (int64_t)f * 6 + (int64_t)g * 7 + (int64_t)h * 8 + i * 9 + (int64_t)j * 10;
}
API double manyf(double a, float b, double c, float d, double e, double f, double g, double h,
                 double i, float j, int32_t k, double l) {
    return a + b * 2.0 + c * 3.0 + d * 4.0 + e * 5.0 + f * 6.0 + g * 7.0 + h * 8.0 +
           i * 9.0 + j * 10.0 + k * 11.0 + l * 12.0;
}
API int64_t mixed_args(int8_t a, double b, Big c, float d, V2 e, int32_t f, F3 g, int64_t h,
                       Small i, Mixed j) {
    return a + (int64_t)(b * 10) + c.a + c.b * 2 + c.c * 3 + c.tag * 4 + (int64_t)(d * 100) +
           (int64_t)(e.x * 1000) + (int64_t)(e.y * 10000) + f * 5 + (int64_t)(g.a * 6) +
           (int64_t)(g.b * 7) + (int64_t)(g.c * 8) + h * 9 + i.a * 11 + i.b * 13 + j.a * 17 +
           (int64_t)(j.f * 19);
}
/* C calling Mettle: the callee side of our ABI. */
API int64_t call_back(int64_t (*cb)(int64_t, double, V2, Big, F3, Small), int64_t k) {
    V2 v = {1.5, 2.5};
    Big b = {10, 20, 30, 7};
    F3 f = {0.5f, 1.5f, 2.5f};
    Small s = {3, -4};
    return cb(k, 0.25, v, b, f, s) * 2;
}
API V2 call_back_v2(V2 (*cb)(V2, double), double k) {
    V2 v = {3.0, 4.0};
    V2 r = cb(v, k);
    r.x += 1.0;
    return r;
}
