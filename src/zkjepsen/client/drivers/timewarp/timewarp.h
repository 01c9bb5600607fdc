/* The layouts shared by the launcher, the stub and the harness: the control file (the nemesis
 * writes it, nemesis side: docker/timewarp.py, with struct.pack) and the observation page (the
 * stub writes it, docker/timewarp.observed reads it). Keep both sides in step. */
#ifndef ZKJ_TIMEWARP_H
#define ZKJ_TIMEWARP_H

#define TW_MAGIC "ZKJTIME1"
#define TW_ONE (1ULL << 32)      /* rate 1.0 in 32.32 fixed point */
#define TW_CODE_BYTES 4096       /* the stub's page; the control page follows it */
#define TW_CONTROL_BYTES 4096    /* the control file is at least this long */
#define TW_ENTRY_CLOCK_GETTIME 0 /* offsets of the three entries in the stub */
#define TW_ENTRY_GETTIMEOFDAY 16
#define TW_ENTRY_TIME 32
/* A word in the stub's own page, set by the launcher: nonzero when the observation page is
 * mapped right after the control page (ZKJ_TIMEWARP_OBSERVE). */
#define TW_OBSERVING (TW_CODE_BYTES - 8)

struct tw_clock {
    long long a;                 /* the skewed reading at real time b (ns) */
    long long b;                 /* the real reading the line is anchored at (ns) */
    unsigned long long rate_q32; /* the skewed clock's speed, x 2^32 */
    long long converge;          /* +1: never below real, -1: never above, 0: free */
};

struct tw_control {
    char magic[8];
    unsigned long long seq;      /* odd while the writer changes clk[] */
    struct tw_clock clk[3];      /* REALTIME, MONOTONIC, BOOTTIME */
};

/* The observation page: what the processes under the launcher read, as they read it. */
#define TW_SEEN_MAGIC "ZKJSEEN1"
#define TW_OBSERVE_BYTES 4096
#define TW_INJECTED 32           /* the ring of injected processes */

struct tw_seen {                 /* the last reading of one clock, by any process */
    unsigned long long busy;     /* 1 while a writer fills the slot (lock cmpxchg 0 -> 1) */
    unsigned long long gen;      /* the control file's seq the reading used */
    long long real_ns;           /* the real clock's reading */
    long long read_ns;           /* what the process read */
    unsigned long long count;    /* readings recorded in this slot so far */
    unsigned long long pad[3];
};

struct tw_injected {
    long long pid;               /* > 0: injected; < 0: -pid, an exec the launcher could not reach */
    char exe[56];                /* /proc/pid/exe (its last 55 bytes if longer), NUL-terminated */
};

struct tw_observe {
    char magic[8];
    unsigned long long injections;       /* entries written to injected[] so far (ring) */
    struct tw_seen slot[3];              /* REALTIME, MONOTONIC, BOOTTIME */
    struct tw_injected injected[TW_INJECTED]; /* entry i at injected[i % TW_INJECTED] */
};

#endif
