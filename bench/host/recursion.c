#include <stdio.h>
#include <stdint.h>
static int64_t fib(int64_t n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }
static int64_t ack(int64_t m, int64_t n) {
    if (m == 0) return n + 1;
    if (n == 0) return ack(m - 1, 1);
    return ack(m - 1, ack(m, n - 1));
}
int main(void) {
    int64_t s = fib(32);
    for (int i = 0; i < 300; i++) s += ack(2, i);
    printf("%lld\n", (long long)s);
    return 0;
}
