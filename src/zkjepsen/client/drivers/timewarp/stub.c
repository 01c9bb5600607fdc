/* The code zkj-timewarp maps into the process under test: replacements for the vDSO's
 * clock_gettime, gettimeofday and time that read the real clock with a raw syscall and apply
 *
 *     t' = a + (t - b) * rate        (per clock: REALTIME, MONOTONIC, BOOTTIME)
 *
 * from the control page mapped right after this code (MAP_SHARED of the run's control file,
 * rewritten in place by the nemesis under a sequence counter, so a change needs no ptrace).
 * `converge` (+1 or -1) ends a heal: the clock runs slower (or faster) than real until it meets
 * real time, then stays on it, so a heal never steps backward.
 *
 * When the launcher observes (ZKJ_TIMEWARP_OBSERVE), a third page follows the control page and
 * every reading of REALTIME, MONOTONIC or BOOTTIME (and their _COARSE forms) is written to that
 * clock's slot: the control seq it used, the real and the read ns. A writer takes the slot
 * with `lock cmpxchg` and skips the write when another holds it: a reader of the page wants
 * the latest reading made under a change, not every one, and a clock read must never wait.
 *
 * Freestanding and position independent: it lives in its own section, `zkjstub`, which the
 * launcher copies byte for byte; it must call nothing and read nothing outside that section
 * but the control page (compiled with -fPIC -fno-jump-tables -ffreestanding, no libc). */
#include "timewarp.h"

#define SYS_gettimeofday 96
#define SYS_time 201
#define SYS_clock_gettime 228

#define STUB __attribute__((section("zkjstub"), used, visibility("hidden")))
#define LOCAL static __attribute__((section("zkjstub"), used))

struct k_timespec { long tv_sec; long tv_nsec; };
struct k_timeval { long tv_sec; long tv_usec; };

/* The three entries the vDSO's functions jump to, at fixed offsets (TW_ENTRY_*), and the
 * label the control page is found from (TW_CODE_BYTES after it). */
__asm__(".pushsection zkjstub,\"ax\",@progbits\n"
        ".globl zkj_stub_base\n.hidden zkj_stub_base\n"
        "zkj_stub_base:\n"
        "  jmp zkj_clock_gettime\n  .balign 16\n"
        "  jmp zkj_gettimeofday\n  .balign 16\n"
        "  jmp zkj_time\n  .balign 16\n"
        ".popsection\n");

extern const char zkj_stub_base[] __attribute__((visibility("hidden")));

LOCAL long raw2(long nr, long a1, long a2) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a1), "S"(a2) : "rcx", "r11", "memory");
    return ret;
}

LOCAL int slot_of(long clk) {
    switch (clk) {  /* no jump table (-fno-jump-tables): nothing outside the section */
    case 0: case 5: return 0;         /* REALTIME, REALTIME_COARSE */
    case 1: case 4: case 6: return 1; /* MONOTONIC, _RAW, _COARSE */
    case 7: return 2;                 /* BOOTTIME */
    default: return -1;
    }
}

/* The skewed reading of clock slot `s` for the real reading `t` (ns); `*gen`: the seq used. */
LOCAL long long skew(int s, long long t, unsigned long long *gen) {
    const volatile struct tw_control *c =
        (const volatile struct tw_control *)(zkj_stub_base + TW_CODE_BYTES);
    struct tw_clock k;
    unsigned long long s1;
    for (int tries = 0;; tries++) {
        s1 = c->seq;
        __asm__ volatile("" ::: "memory");
        k.a = c->clk[s].a;
        k.b = c->clk[s].b;
        k.rate_q32 = c->clk[s].rate_q32;
        k.converge = c->clk[s].converge;
        __asm__ volatile("" ::: "memory");
        /* a writer that died mid-change must not hang the process: take what is there */
        if (((s1 & 1) == 0 && c->seq == s1) || tries > 1000) break;
    }
    *gen = s1;
    if (k.rate_q32 == TW_ONE && k.a == k.b) return t;
    long long d = t - k.b;
    __int128 scaled = (__int128)d * (__int128)k.rate_q32;
    long long f = k.a + (long long)(scaled >> 32);
    if ((k.converge > 0 && f < t) || (k.converge < 0 && f > t)) return t;
    return f;
}

/* Record one reading in the observation page, if there is one and the slot is free. */
LOCAL void note(int s, unsigned long long gen, long long t, long long f) {
    if (!*(const volatile unsigned long long *)(zkj_stub_base + TW_OBSERVING)) return;
    struct tw_observe *o = (struct tw_observe *)(zkj_stub_base + TW_CODE_BYTES + TW_CONTROL_BYTES);
    struct tw_seen *w = &o->slot[s];
    unsigned long long free = 0;
    if (__atomic_load_n(&w->busy, __ATOMIC_RELAXED) ||
        !__atomic_compare_exchange_n(&w->busy, &free, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    w->gen = gen;
    w->real_ns = t;
    w->read_ns = f;
    w->count = w->count + 1;
    __atomic_store_n(&w->busy, 0, __ATOMIC_RELEASE);
}

STUB long zkj_clock_gettime(long clk, struct k_timespec *ts) {
    long r = raw2(SYS_clock_gettime, clk, (long)ts);
    int s = slot_of(clk);
    if (r != 0 || s < 0 || !ts) return r;
    long long t = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
    unsigned long long gen;
    long long f = skew(s, t, &gen);
    if (clk != 4) note(s, gen, t, f); /* MONOTONIC_RAW is not MONOTONIC's real reading */
    long long sec = f / 1000000000LL, ns = f % 1000000000LL;
    if (ns < 0) { ns += 1000000000LL; sec -= 1; }
    ts->tv_sec = sec;
    ts->tv_nsec = ns;
    return 0;
}

STUB long zkj_gettimeofday(struct k_timeval *tv, void *tz) {
    if (tz) {
        long r = raw2(SYS_gettimeofday, 0, (long)tz);
        if (r != 0) return r;
    }
    if (!tv) return 0;
    struct k_timespec ts;
    long r = zkj_clock_gettime(0, &ts);
    if (r != 0) return r;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

STUB long zkj_time(long *out) {
    struct k_timespec ts;
    long r = zkj_clock_gettime(0, &ts);
    if (r != 0) return r;
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
