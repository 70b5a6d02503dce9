#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
static void matmul(double *a, double *b, double *c, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t k = 0; k < n; k++) s = s + a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
}
int main(void) {
    int64_t n = 160;
    double *a = malloc(n * n * 8), *b = malloc(n * n * 8), *c = malloc(n * n * 8);
    for (int64_t i = 0; i < n * n; i++) { a[i] = (double)(i % 7) * 0.5; b[i] = (double)(i % 5) - 1.0; }
    double total = 0.0;
    for (int r = 0; r < 12; r++) { matmul(a, b, c, n); total = total + c[r * 17]; }
    printf("%lld\n", (long long)(total * 1000.0));
    return 0;
}
