/* zkj-timewarp CONTROL PROGRAM [ARGS...]: run PROGRAM, and every process it forks or execs,
 * with their clocks read through CONTROL.
 *
 * The launcher forks; the child waits until the launcher has attached to it (PTRACE_SEIZE of
 * its own child: no capability needed) with exec, fork, vfork and clone events on, then execs
 * PROGRAM. Each exec in the tree - PROGRAM's own, and any process of the tree that execs
 * later (`sh -c CMD` running CMD, a Python program's subprocess, a JVM's helper) - stops
 * before the new image's first instruction, and the launcher, by making the stopped process
 * run single syscalls: maps one page of code (stub.c) and, right after it, CONTROL
 * (MAP_SHARED, read-only); overwrites the entries of the vDSO's clock_gettime, gettimeofday and
 * time, at their code addresses (Go keeps those addresses and calls them directly; libc calls
 * them too), with `movabs $stub, %rax; jmp *%rax`; and lets it go on. A thread, and a fork
 * without exec, shares or inherits the patched pages (CONTROL stays MAP_SHARED in a fork), so
 * it needs nothing; it stays traced only so that its own later exec is caught. The nemesis
 * changes the skew by rewriting CONTROL in place: no ptrace is needed for that.
 *
 * Why stay the tracer of the whole tree rather than detach after the first exec: an exec
 * gives a process a fresh vDSO, so a shell's exec of the real program (`--client-cmd` runs
 * `/bin/sh -c CMD`) used to drop the patch, and the program ran on real time (issue 47).
 * The price: every fork, clone and exec of the tree stops once for the launcher (about a
 * context switch each way; benchmarks/timewarp_cost.py measures it). Clock reads never stop.
 *
 * With ZKJ_TIMEWARP_OBSERVE=PATH the launcher creates PATH (the observation page, timewarp.h)
 * and maps it right after CONTROL into every process it injects: the stub writes each clock's
 * latest reading there, and the launcher the pid and exe of every process it injected (or,
 * as -pid, every exec it could not reach, with the reason on stderr). Without it: no page.
 *
 * Signals: every signal a traced process gets is passed on unchanged; a stop signal stops it
 * as without a tracer (PTRACE_LISTEN). The signals the launcher itself gets (a container's
 * stop) go to PROGRAM's process; SIGPWR stops PROGRAM's process (SIGSTOP: a power loss's
 * first instant, which the harness cannot give the launcher itself). The launcher exits with PROGRAM's status (128 + signal if a
 * signal ended it) as soon as PROGRAM's process ends; processes of the tree still running are
 * then untraced (the kernel detaches them) and keep the patches they have. x86_64 only. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timewarp.h"

#if !defined(__x86_64__)
int main(void) {
    fputs("zkj-timewarp: clock injection patches x86_64's vDSO; this machine is not x86_64\n",
          stderr);
    return 254;
}
#else

#define OPTIONS (PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | \
                 PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD)
#define MAX_PATH 1800 /* CONTROL and the observation page's path share the stub's page */
#define USER_CS_64 0x33 /* a 64-bit process (a 32-bit one has another vDSO: left alone) */

extern const char __start_zkjstub[], __stop_zkjstub[];
static const char *const NAMES[3] = {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time"};
static const long ENTRIES[3] = {TW_ENTRY_CLOCK_GETTIME, TW_ENTRY_GETTIMEOFDAY, TW_ENTRY_TIME};
static pid_t child;
static const char *control, *observe; /* observe: NULL when not observing */
static struct tw_observe *seen;       /* the launcher's own mapping of the observation page */
static long voff[3];                  /* the three functions' offsets in the vDSO */
static int say;

static void die(const char *what) {
    fprintf(stderr, "zkj-timewarp: %s: %s\n", what, strerror(errno));
    if (child > 0) kill(child, SIGKILL);
    exit(255);
}

/* Offsets (from the vDSO's start) of the three functions, from our own vDSO: the kernel maps
 * the same image into every 64-bit process. */
static void vdso_symbols(void) {
    const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!base) { errno = ENOENT; die("no vDSO in this process"); }
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    long vaddr0 = -1, size[3] = {0, 0, 0};
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) { vaddr0 = (long)ph[i].p_vaddr; break; }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    for (int i = 0; i < 3; i++) voff[i] = -1;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM) continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
        const char *str = (const char *)(base + sh[sh[i].sh_link].sh_offset);
        for (size_t j = 0; j < sh[i].sh_size / sizeof(Elf64_Sym); j++)
            for (int k = 0; k < 3; k++)
                if (strcmp(str + sym[j].st_name, NAMES[k]) == 0) {
                    voff[k] = (long)sym[j].st_value - vaddr0;
                    size[k] = (long)sym[j].st_size;
                }
    }
    for (int k = 0; k < 3; k++)
        if (voff[k] < 0 || size[k] < 12) {
            fprintf(stderr, "zkj-timewarp: this kernel's vDSO has no patchable %s\n", NAMES[k]);
            exit(255);
        }
}

/* One process being injected: where it stopped, and what went wrong (`why`, or it `died`). */
struct tracee {
    pid_t pid;
    struct user_regs_struct saved;
    unsigned long at;    /* its entry point, where `syscall; int3` is written for a while */
    const char *why;     /* set by the first step that failed; later steps then do nothing */
    int err;
    int died, status;    /* it ended while we waited (status: waitpid's) */
    sigset_t held;       /* signals that arrived meanwhile, sent again when it goes on */
};

static long fail(struct tracee *t, const char *why) {
    if (!t->why) { t->why = why; t->err = errno; }
    return -EIO;
}

static unsigned long tracee_vdso(struct tracee *t) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/auxv", t->pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fail(t, "reading its auxv");
        return 0;
    }
    Elf64_auxv_t a;
    unsigned long found = 0;
    while (read(fd, &a, sizeof a) == (ssize_t)sizeof a && a.a_type != AT_NULL)
        if (a.a_type == AT_SYSINFO_EHDR) found = a.a_un.a_val;
    close(fd);
    if (!found) { errno = ENOENT; fail(t, "it has no vDSO"); }
    return found;
}

/* Write `n` bytes at `addr` in the tracee, a word at a time (read-modify-write at the tail). */
static void poke(struct tracee *t, unsigned long addr, const void *src, size_t n) {
    const unsigned char *p = src;
    for (size_t i = 0; i < n && !t->why; i += 8) {
        long word;
        if (n - i < 8) {
            errno = 0;
            word = ptrace(PTRACE_PEEKDATA, t->pid, (void *)(addr + i), 0);
            if (errno) { fail(t, "reading its memory"); return; }
            memcpy(&word, p + i, n - i);
        } else {
            memcpy(&word, p + i, 8);
        }
        if (ptrace(PTRACE_POKEDATA, t->pid, (void *)(addr + i), (void *)word) < 0)
            fail(t, "writing its memory");
    }
}

/* Wait for the tracee's next stop of the kind wanted: its trap after the syscall at `at`
 * (`exec_exit` 0), or the exit of its execve (`exec_exit` 1, resumed with PTRACE_SYSCALL). A
 * signal that arrives meanwhile is held (sent again when it goes on), any other stop is let
 * go. 0 once there (registers in *r), < 0 if not. */
static long await_stop(struct tracee *t, struct user_regs_struct *r, int exec_exit) {
    int resume = exec_exit ? PTRACE_SYSCALL : PTRACE_CONT;
    for (;;) {
        int st;
        if (waitpid(t->pid, &st, __WALL) < 0) {
            if (errno == EINTR) continue;
            return fail(t, "waiting for it");
        }
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            t->died = 1;
            t->status = st;
            errno = ESRCH;
            return fail(t, "it ended");
        }
        int sig = WSTOPSIG(st), event = (unsigned)st >> 16;
        if (exec_exit && sig == (SIGTRAP | 0x80)) {
            if (ptrace(PTRACE_GETREGS, t->pid, 0, r) < 0) return fail(t, "its registers");
            return 0;
        }
        if (!exec_exit && event == 0 && sig == SIGTRAP) {
            if (ptrace(PTRACE_GETREGS, t->pid, 0, r) < 0) return fail(t, "its registers");
            if (r->rip == t->at + 3) return 0;
        }
        if (event == 0 && sig != (SIGTRAP | 0x80)) sigaddset(&t->held, sig);
        if (ptrace(resume, t->pid, 0, 0) < 0) return fail(t, "letting it go on");
    }
}

/* Make the stopped tracee run one syscall at `at` (where `syscall; int3` has been written). */
static long remote(struct tracee *t, long nr, long a1, long a2, long a3, long a4, long a5,
                   long a6) {
    if (t->why) return -EIO;
    struct user_regs_struct r = t->saved;
    r.rax = nr; r.rdi = a1; r.rsi = a2; r.rdx = a3; r.r10 = a4; r.r8 = a5; r.r9 = a6;
    r.rip = t->at;
    r.orig_rax = -1;  /* no syscall restart from the exec stop */
    if (ptrace(PTRACE_SETREGS, t->pid, 0, &r) < 0) return fail(t, "setting its registers");
    if (ptrace(PTRACE_CONT, t->pid, 0, 0) < 0) return fail(t, "running its syscall");
    if (await_stop(t, &r, 0) < 0) return -EIO;
    long ret = (long)r.rax;
    if (ret < 0 && ret > -4096) { errno = (int)-ret; fail(t, "its syscall"); }
    return ret;
}

/* Add this process to the observation page's ring (pid < 0: not reached). */
static void record(pid_t pid, int reached) {
    if (!seen) return;
    char path[64], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n < 0) n = 0;
    exe[n] = 0;
    size_t keep = sizeof seen->injected[0].exe - 1;
    const char *tail = (size_t)n > keep ? exe + n - keep : exe;
    unsigned long long i = seen->injections;
    struct tw_injected *e = &seen->injected[i % TW_INJECTED];
    e->pid = reached ? pid : -(long long)pid;
    memset(e->exe, 0, sizeof e->exe);
    memcpy(e->exe, tail, strlen(tail));
    __atomic_store_n(&seen->injections, i + 1, __ATOMIC_RELEASE);
}

/* The steps of an injection (the tracee is stopped at its exec, registers in t->saved). */
static void map_and_patch(struct tracee *t) {
    unsigned long vdso = tracee_vdso(t);
    size_t code = (size_t)(__stop_zkjstub - __start_zkjstub);
    long bytes = TW_CODE_BYTES + TW_CONTROL_BYTES + (observe ? TW_OBSERVE_BYTES : 0);
    long page = remote(t, 9 /* mmap */, 0, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t cl = strlen(control) + 1, ol = observe ? strlen(observe) + 1 : 0;
    poke(t, (unsigned long)page, control, cl);
    if (observe) poke(t, (unsigned long)page + cl, observe, ol);
    long fd = remote(t, 2 /* open */, page, O_RDONLY | O_CLOEXEC, 0, 0, 0, 0);
    remote(t, 9, page + TW_CODE_BYTES, TW_CONTROL_BYTES, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
           0);
    remote(t, 3 /* close */, fd, 0, 0, 0, 0, 0);
    if (observe) {
        fd = remote(t, 2, page + (long)cl, O_RDWR | O_CLOEXEC, 0, 0, 0, 0);
        remote(t, 9, page + TW_CODE_BYTES + TW_CONTROL_BYTES, TW_OBSERVE_BYTES,
               PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
        remote(t, 3, fd, 0, 0, 0, 0, 0);
    }
    static const unsigned char zero[2 * MAX_PATH + 2];
    poke(t, (unsigned long)page, zero, cl + ol);  /* the paths gone before the code goes in */
    poke(t, (unsigned long)page, __start_zkjstub, code);
    const unsigned long long on = 1;
    if (observe) poke(t, (unsigned long)page + TW_OBSERVING, &on, sizeof on);
    remote(t, 10 /* mprotect */, page, TW_CODE_BYTES, PROT_READ | PROT_EXEC, 0, 0, 0);
    for (int k = 0; k < 3; k++) {  /* last: a failure before leaves the vDSO as it was */
        unsigned char jmp[12] = {0x48, 0xb8};  /* movabs $target, %rax; jmp *%rax */
        uint64_t target = (uint64_t)page + (uint64_t)ENTRIES[k];
        memcpy(jmp + 2, &target, 8);
        jmp[10] = 0xff;
        jmp[11] = 0xe0;
        poke(t, vdso + (unsigned long)voff[k], jmp, sizeof jmp);
    }
}

/* Patch the process stopped at its exec, `pid`. Returns 1 if it ended meanwhile (its wait
 * status in *status), else 0: it is stopped, patched or (said on stderr) left on real time. */
static int reach(pid_t pid, int *status) {
    struct tracee t = {.pid = pid};
    sigemptyset(&t.held);
    /* At PTRACE_EVENT_EXEC it is still inside execve, whose return (0, into rax) would
     * overwrite the registers set for the first syscall: run it to the syscall's exit first. */
    if (ptrace(PTRACE_SYSCALL, pid, 0, 0) < 0) fail(&t, "finishing its exec");
    int regs = !t.why && await_stop(&t, &t.saved, 1) == 0;
    if (!t.why && t.saved.cs != USER_CS_64) { errno = ENOEXEC; fail(&t, "it is not 64-bit"); }
    t.at = t.saved.rip;
    errno = 0;
    long orig = t.why ? 0 : ptrace(PTRACE_PEEKTEXT, pid, (void *)t.at, 0);
    if (errno) fail(&t, "reading its entry");
    int entry_written = !t.why;
    static const unsigned char trap[3] = {0x0f, 0x05, 0xcc};  /* syscall; int3 */
    poke(&t, t.at, trap, sizeof trap);
    map_and_patch(&t);
    if (t.died) {
        *status = t.status;
        record(pid, 0);
        return 1;
    }
    const char *why = t.why;
    int err = t.err;
    t.why = NULL;  /* put its entry and registers back whatever happened */
    if (entry_written) poke(&t, t.at, &orig, sizeof orig);
    if (regs && ptrace(PTRACE_SETREGS, pid, 0, &t.saved) < 0) fail(&t, "restoring registers");
    if (!why && t.why) { why = t.why; err = t.err; }
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&t.held, sig)) syscall(SYS_tgkill, pid, pid, sig);
    record(pid, why == NULL);
    if (why)
        fprintf(stderr, "zkj-timewarp: pid %d runs on real time: %s: %s\n", pid, why,
                strerror(err));
    else if (say)
        fprintf(stderr, "zkj-timewarp: pid %d reads its clocks through %s\n", pid, control);
    return 0;
}

static void check_control(void) {
    int fd = open(control, O_RDONLY);
    struct stat st;
    char magic[8];
    if (fd < 0 || fstat(fd, &st) < 0) die(control);
    if (st.st_size < TW_CONTROL_BYTES || read(fd, magic, 8) != 8 || memcmp(magic, TW_MAGIC, 8)) {
        fprintf(stderr, "zkj-timewarp: %s is not a clock control file\n", control);
        exit(254);
    }
    close(fd);
    if (strlen(control) > MAX_PATH || (observe && strlen(observe) > MAX_PATH)) {
        fprintf(stderr, "zkj-timewarp: a path longer than %d bytes\n", MAX_PATH);
        exit(254);
    }
}

/* The observation page: created (or reused, if a launcher before this one made it: a
 * restarted program keeps its record) and mapped here too, to record injections. */
static void open_observe(void) {
    int fd = open(observe, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || fchmod(fd, 0644) < 0 || ftruncate(fd, TW_OBSERVE_BYTES) < 0) die(observe);
    seen = mmap(NULL, TW_OBSERVE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (seen == MAP_FAILED) die(observe);
    close(fd);
    if (memcmp(seen->magic, TW_SEEN_MAGIC, 8) != 0) {
        memset(seen, 0, TW_OBSERVE_BYTES);
        memcpy(seen->magic, TW_SEEN_MAGIC, 8);
    }
}

static void forward(int sig) {
    if (child > 0) kill(child, sig);
}

/* SIGPWR: a power loss's first instant (docker/servers.py `halt`). The harness stops a
 * server by SIGSTOP to its container's PID 1; under the launcher that is the launcher, whose
 * tracees would run on (a tracer's stop does not stop them), so the program gets it instead. */
static void halt(int sig) {
    (void)sig;
    if (child > 0) kill(child, SIGSTOP);
}

/* Fork PROGRAM's process, traced from before its exec. */
static void start(char **argv) {
    int go[2];
    if (pipe2(go, O_CLOEXEC) < 0) die("pipe");
    child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1) _exit(255);  /* the launcher could not trace: it says why */
        execvp(argv[0], argv);
        fprintf(stderr, "zkj-timewarp: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(go[0]);
    if (ptrace(PTRACE_SEIZE, child, 0, (void *)(long)OPTIONS) < 0) {
        fprintf(stderr, "zkj-timewarp: ptrace is forbidden here: %s\n", strerror(errno));
        kill(child, SIGKILL);
        exit(255);
    }
    if (write(go[1], "x", 1) != 1) die("starting the program");
    close(go[1]);
}

static int stop_signal(int sig) {
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Is a SIGCONT pending for `pid`? A stop signal waits in its signal-delivery-stop until the
 * launcher passes it on; a SIGCONT sent meanwhile cannot cancel it as it would without a
 * tracer (the kernel cancels only pending stops), so the launcher drops the stop itself. */
static int cont_pending(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    int pending = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long mask;
        if ((sscanf(line, "SigPnd: %llx", &mask) == 1 || sscanf(line, "ShdPnd: %llx", &mask) == 1)
            && (mask & (1ULL << (SIGCONT - 1))))
            pending = 1;
    }
    if (f) fclose(f);
    return pending;
}

static int ended(int st) {
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fputs("usage: zkj-timewarp CONTROL PROGRAM [ARGS...]\n", stderr);
        return 254;
    }
    control = argv[1];
    observe = getenv("ZKJ_TIMEWARP_OBSERVE");
    if (observe && !*observe) observe = NULL;
    say = getenv("ZKJ_TIMEWARP_SAY") != NULL;
    check_control();
    if (__stop_zkjstub - __start_zkjstub > TW_OBSERVING) { errno = EFBIG; die("the stub"); }
    vdso_symbols();
    if (observe) open_observe();
    start(argv + 2);
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
    sigset_t fwd;
    sigemptyset(&fwd);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        signal(sigs[i], forward);
        sigaddset(&fwd, sigs[i]);
    }
    signal(SIGPWR, halt);
    sigaddset(&fwd, SIGPWR);
    for (;;) {
        int st;
        sigprocmask(SIG_UNBLOCK, &fwd, NULL);
        pid_t pid = waitpid(-1, &st, __WALL);
        /* a signal forwarded while a stop is handled would land between its steps (a SIGCONT
         * between cont_pending and PTRACE_LISTEN would be lost): it waits for the next wait */
        sigprocmask(SIG_BLOCK, &fwd, NULL);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) die("waitpid");
        if (WIFSTOPPED(st)) {
            int sig = WSTOPSIG(st), event = (unsigned)st >> 16, pass = 0;
            if (event == PTRACE_EVENT_EXEC) {
                if (reach(pid, &st)) goto gone;
            } else if (event == PTRACE_EVENT_STOP && stop_signal(sig)) {
                ptrace(PTRACE_LISTEN, pid, 0, 0);  /* a group-stop: stay stopped until SIGCONT */
                continue;
            } else if (event == 0) {
                pass = stop_signal(sig) && cont_pending(pid) ? 0 : sig;  /* deliver it */
            }  /* else: fork/vfork/clone events, a new tracee's first stop: just go on */
            ptrace(PTRACE_CONT, pid, 0, (void *)(long)pass);  /* ESRCH: killed meanwhile */
            continue;
        }
    gone:
        if (pid == child && (WIFEXITED(st) || WIFSIGNALED(st))) return ended(st);
    }
}
#endif
