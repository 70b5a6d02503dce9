#include <stdio.h>
#include <stdint.h>
static int64_t work(int64_t n) {
    uint64_t x = 12345; int64_t acc = 0;
    for (int64_t i = 0; i < n; i = i + 1) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        acc = acc + (int64_t)((x >> 33) % 1000) - (acc >> 7);
    }
    return acc;
}
int main(void) { printf("%lld\n", (long long)work(60000000)); return 0; }
