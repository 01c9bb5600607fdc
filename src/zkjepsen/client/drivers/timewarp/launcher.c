/* zkj-timewarp CONTROL PROGRAM [ARGS...]: run PROGRAM with its clocks read through CONTROL.
 *
 * The launcher forks; the child asks to be traced (PTRACE_TRACEME, which needs no capability)
 * and execs PROGRAM, so it stops before PROGRAM's first instruction. The launcher then, by
 * making the stopped child run single syscalls: maps one page of code (stub.c) and, right after
 * it, CONTROL (MAP_SHARED, read-only); overwrites the entries of the vDSO's clock_gettime,
 * gettimeofday and time, at their code addresses (Go keeps those addresses and calls them
 * directly; libc calls them too), with `movabs $stub, %rax; jmp *%rax`; and detaches. Every
 * thread, and every thread or fork made later, shares the patched pages. The nemesis changes
 * the skew by rewriting CONTROL in place: no ptrace after the start.
 *
 * The launcher stays as PROGRAM's parent, only to pass on the signals it gets (a container's
 * stop) and to exit with PROGRAM's status. It never traces again. x86_64 only. */
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

extern const char __start_zkjstub[], __stop_zkjstub[];
static const char *const NAMES[3] = {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time"};
static const long ENTRIES[3] = {TW_ENTRY_CLOCK_GETTIME, TW_ENTRY_GETTIMEOFDAY, TW_ENTRY_TIME};
static pid_t child;

static void die(const char *what) {
    fprintf(stderr, "zkj-timewarp: %s: %s\n", what, strerror(errno));
    if (child > 0) kill(child, SIGKILL);
    exit(255);
}

/* Offsets (from the vDSO's start) and sizes of the three functions, from our own vDSO: the
 * kernel maps the same image into every process. */
static void vdso_symbols(long off[3], long size[3]) {
    const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!base) { errno = ENOENT; die("no vDSO in this process"); }
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    long vaddr0 = -1;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) { vaddr0 = (long)ph[i].p_vaddr; break; }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    for (int i = 0; i < 3; i++) off[i] = -1;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM) continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
        const char *str = (const char *)(base + sh[sh[i].sh_link].sh_offset);
        for (size_t j = 0; j < sh[i].sh_size / sizeof(Elf64_Sym); j++)
            for (int k = 0; k < 3; k++)
                if (strcmp(str + sym[j].st_name, NAMES[k]) == 0) {
                    off[k] = (long)sym[j].st_value - vaddr0;
                    size[k] = (long)sym[j].st_size;
                }
    }
    for (int k = 0; k < 3; k++)
        if (off[k] < 0 || size[k] < 12) {
            fprintf(stderr, "zkj-timewarp: this kernel's vDSO has no patchable %s\n", NAMES[k]);
            exit(255);
        }
}

static unsigned long child_vdso(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/auxv", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) die(path);
    Elf64_auxv_t a;
    unsigned long found = 0;
    while (read(fd, &a, sizeof a) == (ssize_t)sizeof a && a.a_type != AT_NULL)
        if (a.a_type == AT_SYSINFO_EHDR) found = a.a_un.a_val;
    close(fd);
    if (!found) { errno = ENOENT; die("the program has no vDSO"); }
    return found;
}

/* Write `n` bytes at `addr` in the child, a word at a time (read-modify-write at the tail). */
static void poke(pid_t pid, unsigned long addr, const void *src, size_t n) {
    const unsigned char *p = src;
    for (size_t i = 0; i < n; i += 8) {
        long word;
        if (n - i < 8) {
            errno = 0;
            word = ptrace(PTRACE_PEEKDATA, pid, (void *)(addr + i), 0);
            if (errno) die("reading the program's memory");
            memcpy(&word, p + i, n - i);
        } else {
            memcpy(&word, p + i, 8);
        }
        if (ptrace(PTRACE_POKEDATA, pid, (void *)(addr + i), (void *)word) < 0)
            die("writing the program's memory");
    }
}

/* Make the stopped child run one syscall at `at` (where `syscall; int3` has been written). */
static long remote(pid_t pid, const struct user_regs_struct *saved, unsigned long at, long nr,
                   long a1, long a2, long a3, long a4, long a5, long a6) {
    struct user_regs_struct r = *saved;
    r.rax = nr; r.rdi = a1; r.rsi = a2; r.rdx = a3; r.r10 = a4; r.r8 = a5; r.r9 = a6;
    r.rip = at;
    r.orig_rax = -1;  /* no syscall restart from the exec stop */
    if (ptrace(PTRACE_SETREGS, pid, 0, &r) < 0) die("setting the program's registers");
    if (ptrace(PTRACE_CONT, pid, 0, 0) < 0) die("running the program's syscall");
    int st;
    if (waitpid(pid, &st, 0) < 0) die("waiting for the program's syscall");
    if (!WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP) {
        errno = EINVAL;
        die("the program did not stop after its syscall");
    }
    if (ptrace(PTRACE_GETREGS, pid, 0, &r) < 0) die("reading the program's registers");
    return (long)r.rax;
}

static void check(long ret, const char *what) {
    if (ret < 0 && ret > -4096) { errno = (int)-ret; die(what); }
}

static void inject(pid_t pid, const char *control) {
    long off[3], size[3];
    vdso_symbols(off, size);
    unsigned long vdso = child_vdso(pid);
    size_t code = (size_t)(__stop_zkjstub - __start_zkjstub);
    if (code > TW_CODE_BYTES) { errno = EFBIG; die("the stub"); }
    struct user_regs_struct saved;
    if (ptrace(PTRACE_GETREGS, pid, 0, &saved) < 0) die("reading the program's registers");
    unsigned long at = saved.rip;
    errno = 0;
    long orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)at, 0);
    if (errno) die("reading the program's entry");
    static const unsigned char trap[3] = {0x0f, 0x05, 0xcc};  /* syscall; int3 */
    poke(pid, at, trap, sizeof trap);
    long page = remote(pid, &saved, at, 9 /* mmap */, 0, TW_CODE_BYTES + TW_CONTROL_BYTES,
                       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(page, "mapping the stub");
    poke(pid, (unsigned long)page, control, strlen(control) + 1);
    long fd = remote(pid, &saved, at, 2 /* open */, page, O_RDONLY | O_CLOEXEC, 0, 0, 0, 0);
    check(fd, "opening the control file in the program");
    check(remote(pid, &saved, at, 9, page + TW_CODE_BYTES, TW_CONTROL_BYTES, PROT_READ,
                 MAP_SHARED | MAP_FIXED, fd, 0), "mapping the control file");
    check(remote(pid, &saved, at, 3 /* close */, fd, 0, 0, 0, 0, 0), "closing the control file");
    static unsigned char zero[TW_CODE_BYTES];
    poke(pid, (unsigned long)page, zero, 256);  /* the path gone before the code goes in */
    poke(pid, (unsigned long)page, __start_zkjstub, code);
    check(remote(pid, &saved, at, 10 /* mprotect */, page, TW_CODE_BYTES, PROT_READ | PROT_EXEC,
                 0, 0, 0), "protecting the stub");
    for (int k = 0; k < 3; k++) {
        unsigned char jmp[12] = {0x48, 0xb8};  /* movabs $target, %rax; jmp *%rax */
        uint64_t target = (uint64_t)page + (uint64_t)ENTRIES[k];
        memcpy(jmp + 2, &target, 8);
        jmp[10] = 0xff;
        jmp[11] = 0xe0;
        poke(pid, vdso + (unsigned long)off[k], jmp, sizeof jmp);
    }
    poke(pid, at, &orig, sizeof orig);
    if (ptrace(PTRACE_SETREGS, pid, 0, &saved) < 0) die("restoring the program's registers");
    if (ptrace(PTRACE_DETACH, pid, 0, 0) < 0) die("detaching from the program");
}

static void forward(int sig) {
    if (child > 0) kill(child, sig);
}

static void check_control(const char *control) {
    int fd = open(control, O_RDONLY);
    struct stat st;
    char magic[8];
    if (fd < 0 || fstat(fd, &st) < 0) die(control);
    if (st.st_size < TW_CONTROL_BYTES || read(fd, magic, 8) != 8 || memcmp(magic, TW_MAGIC, 8)) {
        fprintf(stderr, "zkj-timewarp: %s is not a clock control file\n", control);
        exit(254);
    }
    close(fd);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fputs("usage: zkj-timewarp CONTROL PROGRAM [ARGS...]\n", stderr);
        return 254;
    }
    check_control(argv[1]);
    child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0) {
            fprintf(stderr, "zkj-timewarp: %s forbids ptrace here: %s\n", argv[2],
                    strerror(errno));
            _exit(255);
        }
        execvp(argv[2], argv + 2);
        fprintf(stderr, "zkj-timewarp: cannot run %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int st;
    if (waitpid(child, &st, 0) < 0) die("waitpid");
    if (!WIFSTOPPED(st)) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    inject(child, argv[1]);
    if (getenv("ZKJ_TIMEWARP_SAY"))
        fprintf(stderr, "zkj-timewarp: %s (pid %d) reads its clocks through %s\n", argv[2],
                child, argv[1]);
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], forward);
    for (;;) {
        pid_t w = waitpid(child, &st, 0);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) die("waitpid");
        if (WIFEXITED(st)) return WEXITSTATUS(st);
        if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    }
}
#endif
