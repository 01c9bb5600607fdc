/* powerfs: a FUSE passthrough that remembers what a power loss would take away.
 *
 * Mounted over a server's data directory (docker/powerfs.py). Every operation goes straight to
 * the backing directory, so the server reads what it wrote, as through a page cache; but each
 * write, truncate and name change made since the last fsync is also kept as an undo record:
 * the bytes a write overwrote and the file's size before it, the name a create made, the file
 * an unlink or a rename took away (moved to a trash directory beside the backing one, not
 * deleted). An fsync/fdatasync of a file commits that file's records; any fsync commits every
 * pending name change (ext4 has one journal for the whole filesystem: its commit carries every
 * name change before it), and so does an fsync of a directory.
 *
 * On command (a line on a Unix socket outside the mount) it plays the power loss: it undoes
 * every pending record, newest first, says how many bytes and names it dropped, and from then
 * on fails every operation with EIO until it is unmounted (the machine is off; the harness
 * kills the container next and a new mount starts with the next boot). "torn" does the same but
 * lets the newest pending write survive in part: its first half lands again.
 *
 *   powerfs BACKING TRASH SOCKET MOUNTPOINT [fuse options]   serve
 *   powerfs ctl SOCKET stat|sync|drop [AGE_S]|torn [AGE_S]   ask; prints one JSON line
 *
 * sync commits everything pending (sync(1)); drop and torn with AGE_S keep what is older than
 * AGE_S seconds, as the kernel's writeback would have written it (dirty_expire: 30 s).
 *
 * Written for zkjepsen (issue 34) on libfuse3's high-level API; Jepsen's use of LazyFS was read
 * for the idea of the commands, none of its code is here.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

enum kind { WRITE, TRUNC, MADE, GONE, MOVED, RMDIRED };

struct rec {
    enum kind kind;
    int committed;
    int fd;          /* WRITE, TRUNC: a descriptor of the file (its inode, whatever its name) */
    ino_t ino;
    off_t off;       /* WRITE: where; TRUNC: the new size */
    off_t old_size;  /* the size before */
    size_t written;  /* WRITE: bytes written */
    char *saved;     /* the bytes overwritten (WRITE) or cut off (TRUNC) */
    size_t saved_len;
    char *path, *path2, *trash; /* names, relative to the backing directory and the trash */
    int isdir;
    mode_t mode;
    double at; /* CLOCK_MONOTONIC seconds when it was made */
};

static int bfd = -1, tfd = -1;  /* the backing and trash directories */
static void drop_fd(int fd);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct rec *recs;
static size_t nrecs, caprecs;
static unsigned long trash_seq;
static int dead;
/* The newest write's bytes (for "torn"): a copy, and the index of its record. */
static char *last_buf;
static size_t last_len;
static long last_rec = -1;

static const char *rel(const char *path) {
    while (*path == '/') path++;
    return *path ? path : ".";
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct rec *push(enum kind k) {
    if (nrecs == caprecs) {
        caprecs = caprecs ? caprecs * 2 : 1024;
        recs = realloc(recs, caprecs * sizeof *recs);
        if (!recs) abort();
    }
    struct rec *r = &recs[nrecs++];
    memset(r, 0, sizeof *r);
    r->kind = k;
    r->fd = -1;
    r->at = now_s();
    return r;
}

static void release_rec(struct rec *r) {
    if (r->fd >= 0) drop_fd(r->fd);
    if (r->trash && r->committed) unlinkat(tfd, r->trash, 0);
    free(r->saved);
    free(r->path);
    free(r->path2);
    free(r->trash);
    r->fd = -1;
    r->saved = r->path = r->path2 = r->trash = NULL;
}

/* Drop committed records at the end of the list (compaction keeps the order of the rest). */
static void compact(void) {
    size_t j = 0;
    for (size_t i = 0; i < nrecs; i++) {
        if (recs[i].committed) {
            if ((long)i == last_rec) last_rec = -1;
            release_rec(&recs[i]);
            continue;
        }
        if ((long)i == last_rec) last_rec = (long)j;
        recs[j++] = recs[i];
    }
    nrecs = j;
}

static void commit_names(void) {
    for (size_t i = 0; i < nrecs; i++)
        if (recs[i].kind != WRITE && recs[i].kind != TRUNC) recs[i].committed = 1;
}

static void commit_file(ino_t ino, size_t upto) {
    for (size_t i = 0; i < upto && i < nrecs; i++)
        if ((recs[i].kind == WRITE || recs[i].kind == TRUNC) && recs[i].ino == ino)
            recs[i].committed = 1;
    commit_names();
    compact();
}

/* One kept descriptor per inode with pending records, shared by them (counted). */
struct kept {
    ino_t ino;
    int fd;
    long refs;
};
static struct kept *kepts;
static size_t nkepts, capkepts;

static int keep_fd(int fd, ino_t ino) {
    for (size_t i = 0; i < nkepts; i++)
        if (kepts[i].ino == ino && kepts[i].refs > 0) {
            kepts[i].refs++;
            return kepts[i].fd;
        }
    if (nkepts == capkepts) {
        capkepts = capkepts ? capkepts * 2 : 64;
        kepts = realloc(kepts, capkepts * sizeof *kepts);
        if (!kepts) abort();
    }
    kepts[nkepts] = (struct kept){ino, dup(fd), 1};
    return kepts[nkepts++].fd;
}

static void drop_fd(int fd) {
    for (size_t i = 0; i < nkepts; i++)
        if (kepts[i].fd == fd && kepts[i].refs > 0) {
            if (--kepts[i].refs == 0) {
                close(fd);
                kepts[i] = kepts[--nkepts];
            }
            return;
        }
}

static int record_write(int fd, const char *buf, size_t size, off_t off) {
    struct stat st;
    if (fstat(fd, &st) < 0) return -errno;
    struct rec *r = push(WRITE);
    r->ino = st.st_ino;
    r->fd = keep_fd(fd, st.st_ino);
    r->off = off;
    r->old_size = st.st_size;
    r->written = size;
    if (off < st.st_size) {
        size_t n = (size_t)(st.st_size - off) < size ? (size_t)(st.st_size - off) : size;
        r->saved = malloc(n ? n : 1);
        ssize_t got = pread(fd, r->saved, n, off);
        r->saved_len = got > 0 ? (size_t)got : 0;
    }
    free(last_buf);
    last_buf = malloc(size ? size : 1);
    memcpy(last_buf, buf, size);
    last_len = size;
    last_rec = (long)(nrecs - 1);
    return 0;
}

static int record_trunc(int fd, off_t size) {
    struct stat st;
    if (fstat(fd, &st) < 0) return -errno;
    struct rec *r = push(TRUNC);
    r->ino = st.st_ino;
    r->fd = keep_fd(fd, st.st_ino);
    r->off = size;
    r->old_size = st.st_size;
    if (size < st.st_size) {
        size_t n = (size_t)(st.st_size - size);
        r->saved = malloc(n);
        ssize_t got = r->saved ? pread(fd, r->saved, n, size) : 0;
        r->saved_len = got > 0 ? (size_t)got : 0;
    }
    return 0;
}

static void record_name(enum kind k, const char *path, const char *path2, const char *trash,
                        int isdir, mode_t mode) {
    struct rec *r = push(k);
    r->path = strdup(path);
    r->path2 = path2 ? strdup(path2) : NULL;
    r->trash = trash ? strdup(trash) : NULL;
    r->isdir = isdir;
    r->mode = mode;
}

/* Move `path` to the trash (so an undo can bring it back); its trash name in `out`. */
static int to_trash(const char *path, char *out, size_t outlen) {
    snprintf(out, outlen, "t%lu", ++trash_seq);
    if (renameat(bfd, path, tfd, out) < 0) return -errno;
    return 0;
}

static void undo(struct rec *r) {
    switch (r->kind) {
    case WRITE:
        if (r->saved_len) pwrite(r->fd, r->saved, r->saved_len, r->off);
        ftruncate(r->fd, r->old_size);
        break;
    case TRUNC:
        ftruncate(r->fd, r->old_size);
        if (r->saved_len) pwrite(r->fd, r->saved, r->saved_len, r->off);
        break;
    case MADE: /* what was made in it since is undone before (newest first) */
        unlinkat(bfd, r->path, r->isdir ? AT_REMOVEDIR : 0);
        break;
    case GONE:
        renameat(tfd, r->trash, bfd, r->path);
        break;
    case MOVED:
        renameat(bfd, r->path2, bfd, r->path);
        if (r->trash) renameat(tfd, r->trash, bfd, r->path2);
        break;
    case RMDIRED:
        mkdirat(bfd, r->path, r->mode);
        break;
    }
}

/* The power loss: undo every pending record, newest first. Returns the JSON answer. */
static void power_loss(int torn, double age, char *out, size_t outlen) {
    unsigned long long lost = 0, writes = 0, names = 0, kept = 0;
    struct rec *lastw = last_rec >= 0 && !recs[last_rec].committed ? &recs[last_rec] : NULL;
    double cut = age > 0 ? now_s() - age : -1; /* older: written back by the kernel already */
    for (size_t i = nrecs; i-- > 0;) {
        struct rec *r = &recs[i];
        if (r->committed || r->at < cut) continue;
        undo(r);
        if (r->kind == WRITE) {
            lost += r->written;
            writes++;
        } else if (r->kind != TRUNC) {
            names++;
        }
    }
    if (torn && lastw && last_buf && last_len) {
        size_t half = (last_len + 1) / 2;
        if (pwrite(lastw->fd, last_buf, half, lastw->off) == (ssize_t)half) kept = half;
        lost -= kept;
    }
    for (size_t i = 0; i < nrecs; i++) {
        free(recs[i].trash); /* restored: nothing of the trash to delete */
        recs[i].trash = NULL;
        recs[i].committed = 1;
    }
    compact();
    dead = 1;
    snprintf(out, outlen,
             "{\"lost_bytes\": %llu, \"lost_writes\": %llu, \"lost_names\": %llu, "
             "\"torn_bytes_kept\": %llu}\n",
             lost, writes, names, kept);
}

static void stat_line(char *out, size_t outlen) {
    unsigned long long bytes = 0, writes = 0, names = 0;
    for (size_t i = 0; i < nrecs; i++) {
        if (recs[i].committed) continue;
        if (recs[i].kind == WRITE) {
            bytes += recs[i].written;
            writes++;
        } else if (recs[i].kind != TRUNC) {
            names++;
        }
    }
    snprintf(out, outlen,
             "{\"pending_bytes\": %llu, \"pending_writes\": %llu, \"pending_names\": %llu, "
             "\"dead\": %d}\n",
             bytes, writes, names, dead);
}

#define LOCK()                                                                                 \
    pthread_mutex_lock(&mu);                                                                   \
    if (dead) {                                                                                \
        pthread_mutex_unlock(&mu);                                                             \
        return -EIO;                                                                           \
    }
#define UNLOCK() pthread_mutex_unlock(&mu)
#define RET(x)                                                                                 \
    do {                                                                                       \
        int _r = (x);                                                                          \
        UNLOCK();                                                                              \
        return _r;                                                                             \
    } while (0)

static void owned(const char *p) {
    struct fuse_context *c = fuse_get_context();
    fchownat(bfd, p, c->uid, c->gid, AT_SYMLINK_NOFOLLOW);
}

static int ctl_fd = -1;  /* the control socket, bound before the mount */
static void *control(void *arg);

static void *pf_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    (void)conn;
    /* Here, not in main: fuse_main forks into the background after parsing, and a thread
     * started before the fork would not be in the daemon. */
    pthread_t th;
    pthread_create(&th, NULL, control, (void *)(intptr_t)ctl_fd);
    cfg->use_ino = 1;
    cfg->nullpath_ok = 1;
    cfg->hard_remove = 1;
    cfg->kernel_cache = 0;
    cfg->direct_io = 0;
    return NULL;
}

static int pf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    LOCK();
    int r = fi ? fstat((int)fi->fh, st) : fstatat(bfd, rel(path), st, AT_SYMLINK_NOFOLLOW);
    RET(r < 0 ? -errno : 0);
}

static int pf_readlink(const char *path, char *buf, size_t size) {
    LOCK();
    ssize_t n = readlinkat(bfd, rel(path), buf, size - 1);
    if (n < 0) RET(-errno);
    buf[n] = 0;
    RET(0);
}

static int pf_mkdir(const char *path, mode_t mode) {
    LOCK();
    if (mkdirat(bfd, rel(path), mode) < 0) RET(-errno);
    owned(rel(path));
    record_name(MADE, rel(path), NULL, NULL, 1, mode);
    RET(0);
}

static int pf_unlink(const char *path) {
    LOCK();
    char t[32];
    struct stat st;
    if (fstatat(bfd, rel(path), &st, AT_SYMLINK_NOFOLLOW) < 0) RET(-errno);
    if (S_ISDIR(st.st_mode)) RET(-EISDIR);
    int e = to_trash(rel(path), t, sizeof t);
    if (e) RET(e);
    record_name(GONE, rel(path), NULL, t, 0, 0);
    RET(0);
}

static int pf_rmdir(const char *path) {
    LOCK();
    struct stat st;
    if (fstatat(bfd, rel(path), &st, 0) < 0) RET(-errno);
    if (unlinkat(bfd, rel(path), AT_REMOVEDIR) < 0) RET(-errno);
    record_name(RMDIRED, rel(path), NULL, NULL, 1, st.st_mode & 07777);
    RET(0);
}

static int pf_symlink(const char *target, const char *path) {
    LOCK();
    if (symlinkat(target, bfd, rel(path)) < 0) RET(-errno);
    owned(rel(path));
    record_name(MADE, rel(path), NULL, NULL, 0, 0);
    RET(0);
}

static int pf_rename(const char *from, const char *to, unsigned int flags) {
    LOCK();
    if (flags & ~RENAME_NOREPLACE) RET(-EINVAL);
    struct stat st;
    char t[32];
    int replaced = fstatat(bfd, rel(to), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (replaced && (flags & RENAME_NOREPLACE)) RET(-EEXIST);
    if (replaced && S_ISDIR(st.st_mode)) {
        if (renameat(bfd, rel(from), bfd, rel(to)) < 0) RET(-errno);
        record_name(MOVED, rel(from), rel(to), NULL, 0, 0);
        RET(0);
    }
    if (replaced) {
        int e = to_trash(rel(to), t, sizeof t);
        if (e) RET(e);
    }
    if (renameat(bfd, rel(from), bfd, rel(to)) < 0) {
        int e = -errno;
        if (replaced) renameat(tfd, t, bfd, rel(to));
        RET(e);
    }
    record_name(MOVED, rel(from), rel(to), replaced ? t : NULL, 0, 0);
    RET(0);
}

static int pf_link(const char *from, const char *to) {
    LOCK();
    if (linkat(bfd, rel(from), bfd, rel(to), 0) < 0) RET(-errno);
    record_name(MADE, rel(to), NULL, NULL, 0, 0);
    RET(0);
}

static int pf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    LOCK();
    int r = fi ? fchmod((int)fi->fh, mode) : fchmodat(bfd, rel(path), mode, 0);
    RET(r < 0 ? -errno : 0);
}

static int pf_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
    LOCK();
    int r = fi ? fchown((int)fi->fh, uid, gid)
               : fchownat(bfd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);
    RET(r < 0 ? -errno : 0);
}

static int do_trunc(int fd, off_t size) {
    int e = record_trunc(fd, size);
    if (e) return e;
    return ftruncate(fd, size) < 0 ? -errno : 0;
}

static int pf_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    LOCK();
    if (fi) RET(do_trunc((int)fi->fh, size));
    int fd = openat(bfd, rel(path), O_RDWR);
    if (fd < 0) RET(-errno);
    int e = do_trunc(fd, size);
    close(fd);
    RET(e);
}

static int pf_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    LOCK();
    int r = fi ? futimens((int)fi->fh, tv) : utimensat(bfd, rel(path), tv, AT_SYMLINK_NOFOLLOW);
    RET(r < 0 ? -errno : 0);
}

/* The backing file is opened for reading too (the undo records read what a write overwrites)
 * and without O_APPEND (an undo writes at its offset; pf_write appends itself). */
static int backing_flags(int flags) {
    flags &= ~(O_TRUNC | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND);
    return (flags & O_ACCMODE) == O_WRONLY ? (flags & ~O_ACCMODE) | O_RDWR : flags;
}

static int pf_open(const char *path, struct fuse_file_info *fi) {
    LOCK();
    int flags = backing_flags(fi->flags);
    int fd = openat(bfd, rel(path), flags);
    if (fd < 0) RET(-errno);
    if (fi->flags & O_TRUNC) {
        int e = do_trunc(fd, 0);
        if (e) {
            close(fd);
            RET(e);
        }
    }
    fi->fh = (uint64_t)fd;
    RET(0);
}

static int pf_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    LOCK();
    struct stat st;
    int existed = fstatat(bfd, rel(path), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (existed && (fi->flags & O_EXCL)) RET(-EEXIST);
    int fd = openat(bfd, rel(path), backing_flags(fi->flags) | O_CREAT, mode);
    if (fd < 0) RET(-errno);
    if (!existed) {
        owned(rel(path));
        record_name(MADE, rel(path), NULL, NULL, 0, mode);
    } else if (fi->flags & O_TRUNC) {
        int e = do_trunc(fd, 0);
        if (e) {
            close(fd);
            RET(e);
        }
    }
    fi->fh = (uint64_t)fd;
    RET(0);
}

static int pf_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi) {
    (void)path;
    if (__atomic_load_n(&dead, __ATOMIC_SEQ_CST)) return -EIO;
    ssize_t n = pread((int)fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int pf_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi) {
    (void)path;
    LOCK();
    int fd = (int)fi->fh;
    if (fi->flags & O_APPEND) {
        struct stat st;
        if (fstat(fd, &st) < 0) RET(-errno);
        off = st.st_size;
    }
    int e = record_write(fd, buf, size, off);
    if (e) RET(e);
    ssize_t n = pwrite(fd, buf, size, off);
    if (n < 0) RET(-errno);
    RET((int)n);
}

static int pf_statfs(const char *path, struct statvfs *st) {
    (void)path;
    return fstatvfs(bfd, st) < 0 ? -errno : 0;
}

static int pf_release(const char *path, struct fuse_file_info *fi) {
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int pf_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    (void)path;
    struct stat st;
    pthread_mutex_lock(&mu);
    size_t upto = nrecs;
    int bad = dead;
    pthread_mutex_unlock(&mu);
    if (bad) return -EIO;
    int fd = (int)fi->fh;
    if ((datasync ? fdatasync(fd) : fsync(fd)) < 0) return -errno;
    if (fstat(fd, &st) < 0) return -errno;
    LOCK();
    commit_file(st.st_ino, upto);
    RET(0);
}

static int pf_opendir(const char *path, struct fuse_file_info *fi) {
    LOCK();
    int fd = openat(bfd, rel(path), O_RDONLY | O_DIRECTORY);
    if (fd < 0) RET(-errno);
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = -errno;
        close(fd);
        RET(e);
    }
    fi->fh = (uint64_t)(uintptr_t)d;
    RET(0);
}

static int pf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
    (void)path;
    (void)off;
    (void)flags;
    if (__atomic_load_n(&dead, __ATOMIC_SEQ_CST)) return -EIO;
    DIR *d = (DIR *)(uintptr_t)fi->fh;
    rewinddir(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_ino = e->d_ino;
        st.st_mode = (mode_t)(DTTOIF(e->d_type));
        if (fill(buf, e->d_name, &st, 0, 0)) break;
    }
    return 0;
}

static int pf_releasedir(const char *path, struct fuse_file_info *fi) {
    (void)path;
    closedir((DIR *)(uintptr_t)fi->fh);
    return 0;
}

static int pf_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi) {
    (void)path;
    (void)datasync;
    DIR *d = (DIR *)(uintptr_t)fi->fh;
    if (fsync(dirfd(d)) < 0) return -errno;
    LOCK();
    commit_names();
    compact();
    RET(0);
}

static int pf_fallocate(const char *path, int mode, off_t off, off_t len,
                        struct fuse_file_info *fi) {
    (void)path;
    if (mode) return -EOPNOTSUPP;
    LOCK();
    struct stat st;
    int fd = (int)fi->fh;
    if (fstat(fd, &st) < 0) RET(-errno);
    if (off + len > st.st_size) {
        struct rec *r = push(TRUNC);
        r->ino = st.st_ino;
        r->fd = keep_fd(fd, st.st_ino);
        r->off = st.st_size;
        r->old_size = st.st_size;
    }
    int e = posix_fallocate(fd, off, len);
    RET(-e);
}

static const struct fuse_operations ops = {
    .init = pf_init,
    .getattr = pf_getattr,
    .readlink = pf_readlink,
    .mkdir = pf_mkdir,
    .unlink = pf_unlink,
    .rmdir = pf_rmdir,
    .symlink = pf_symlink,
    .rename = pf_rename,
    .link = pf_link,
    .chmod = pf_chmod,
    .chown = pf_chown,
    .truncate = pf_truncate,
    .utimens = pf_utimens,
    .open = pf_open,
    .create = pf_create,
    .read = pf_read,
    .write = pf_write,
    .statfs = pf_statfs,
    .release = pf_release,
    .fsync = pf_fsync,
    .opendir = pf_opendir,
    .readdir = pf_readdir,
    .releasedir = pf_releasedir,
    .fsyncdir = pf_fsyncdir,
    .fallocate = pf_fallocate,
};

static int ctl_socket(const char *path, struct sockaddr_un *a) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path, sizeof a->sun_path, "%s", path);
    return socket(AF_UNIX, SOCK_STREAM, 0);
}

static void *control(void *arg) {
    int s = (int)(intptr_t)arg;
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) continue;
        char cmd[64] = {0}, out[256];
        ssize_t n = read(c, cmd, sizeof cmd - 1);
        if (n < 0) n = 0;
        cmd[n] = 0;
        pthread_mutex_lock(&mu);
        double age = cmd[4] == ' ' ? atof(cmd + 5) : 0;
        if (!strncmp(cmd, "drop", 4))
            power_loss(0, age, out, sizeof out);
        else if (!strncmp(cmd, "torn", 4))
            power_loss(1, age, out, sizeof out);
        else if (!strncmp(cmd, "sync", 4)) { /* as sync(1): everything pending is on disk */
            for (size_t i = 0; i < nrecs; i++) recs[i].committed = 1;
            compact();
            stat_line(out, sizeof out);
        } else
            stat_line(out, sizeof out);
        pthread_mutex_unlock(&mu);
        if (write(c, out, strlen(out)) < 0) perror("powerfs: control");
        close(c);
    }
    return NULL;
}

static int ctl_main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: powerfs ctl SOCKET stat|sync|drop [AGE_S]|torn [AGE_S]\n");
        return 2;
    }
    struct sockaddr_un a;
    int s = ctl_socket(argv[2], &a);
    struct timeval tv = {10, 0}; /* a layer that does not answer is an error, not a hang */
    if (s >= 0) setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("powerfs: connect");
        return 1;
    }
    char cmd[64];
    snprintf(cmd, sizeof cmd, "%s%s%s", argv[3], argc == 5 ? " " : "", argc == 5 ? argv[4] : "");
    if (write(s, cmd, strlen(cmd)) < 0) return 1;
    shutdown(s, SHUT_WR);
    char buf[512];
    ssize_t n;
    while ((n = read(s, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)n, stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "ctl")) return ctl_main(argc, argv);
    if (argc < 5) {
        fprintf(stderr, "usage: powerfs BACKING TRASH SOCKET MOUNTPOINT [fuse options]\n");
        return 2;
    }
    bfd = open(argv[1], O_RDONLY | O_DIRECTORY);
    tfd = open(argv[2], O_RDONLY | O_DIRECTORY);
    if (bfd < 0 || tfd < 0) {
        perror("powerfs: backing or trash directory");
        return 1;
    }
    struct sockaddr_un a;
    int s = ctl_socket(argv[3], &a);
    unlink(argv[3]);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 4) < 0) {
        perror("powerfs: control socket");
        return 1;
    }
    ctl_fd = s;
    umask(0);
    /* argv[0] and the mountpoint onward go to libfuse */
    argv[3] = argv[0];
    return fuse_main(argc - 3, argv + 3, &ops, NULL);
}
