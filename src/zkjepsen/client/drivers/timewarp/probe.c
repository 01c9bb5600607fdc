/* clockprobe: print what this process reads from its clocks, through libc (and so the vDSO),
 * every INTERVAL_MS for COUNT lines: `real_mono_ns realtime_ns monotonic_ns boottime_ns
 * gettimeofday_us time_s` (real_mono_ns by a raw syscall, which no patch reaches). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 1, ms = argc > 2 ? atoi(argv[2]) : 100;
    for (int i = 0; i < count; i++) {
        struct timespec raw;
        syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &raw);
        struct timeval tv;
        gettimeofday(&tv, NULL);
        printf("%lld %lld %lld %lld %lld %lld\n", raw.tv_sec * 1000000000LL + raw.tv_nsec,
               ns(CLOCK_REALTIME), ns(CLOCK_MONOTONIC), ns(CLOCK_BOOTTIME),
               tv.tv_sec * 1000000LL + tv.tv_usec, (long long)time(NULL));
        fflush(stdout);
        if (i + 1 < count) usleep(ms * 1000);
    }
    return 0;
}
