/* The control file's layout, shared by the launcher, the stub and the nemesis
 * (nemesis/timewarp.py writes the same bytes with struct.pack: keep them in step). */
#ifndef ZKJ_TIMEWARP_H
#define ZKJ_TIMEWARP_H

#define TW_MAGIC "ZKJTIME1"
#define TW_ONE (1ULL << 32)      /* rate 1.0 in 32.32 fixed point */
#define TW_CODE_BYTES 4096       /* the stub's page; the control page follows it */
#define TW_CONTROL_BYTES 4096    /* the control file is at least this long */
#define TW_ENTRY_CLOCK_GETTIME 0 /* offsets of the three entries in the stub */
#define TW_ENTRY_GETTIMEOFDAY 16
#define TW_ENTRY_TIME 32

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

#endif
