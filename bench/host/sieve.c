#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
static int64_t sieve(uint8_t *flags, int64_t n) {
    for (int64_t i = 0; i < n; i++) flags[i] = 1;
    flags[0] = 0; flags[1] = 0;
    for (int64_t p = 2; p * p < n; p++)
        if (flags[p]) for (int64_t m = p * p; m < n; m += p) flags[m] = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) count += flags[i];
    return count;
}
int main(void) {
    int64_t n = 8000000; uint8_t *flags = malloc(n); int64_t total = 0;
    for (int r = 0; r < 5; r++) total += sieve(flags, n);
    printf("%lld\n", (long long)total);
    return 0;
}
