/*
 * socket-activate SOCKET_PATH [--user NAME] [--die-with-parent] -- PROGRAM [ARGS...]
 *
 * Minimal systemd-style socket activation for a private pcscd (tools/pcscd/pcscd-daemon.ts).
 * pcscd 1.9.9 ignores PCSCLITE_CSOCK_NAME for its own socket and always binds
 * /run/pcscd/pcscd.comm, but it takes a listening socket passed as fd 3 with LISTEN_FDS=1 and
 * LISTEN_PID=<its pid>, and then skips the "another pcscd is running" check (pcsc-lite `pcscdaemon.c`, sd_listen_fds).
 *
 * --user NAME: drop root once the socket exists. A root pcscd overwrites, and at exit removes, the
 *   system instance's /run/pcscd/pcscd.pid (pcsc-lite `pcscdaemon.c`); NAME cannot.
 * --die-with-parent: SIGTERM when the parent dies, so a crashed test runner leaves no pcscd behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LISTEN_FD 3                /* SD_LISTEN_FDS_START */
#define PCSCD_IPC_DIR "/run/pcscd" /* compiled into pcscd */

static int fail(const char *what, const char *detail) {
  fprintf(stderr, "socket-activate: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "", strerror(errno));
  return 126;
}

static int usage(void) {
  fprintf(stderr, "usage: socket-activate SOCKET_PATH [--user NAME] [--die-with-parent] -- PROGRAM [ARGS...]\n");
  return 2;
}

/* Bind a temporary name in the same directory, then rename it over the final path: a stale socket
 * from an earlier run is replaced atomically and clients never see a half-made socket. */
static int make_socket(const char *path) {
  struct sockaddr_un addr;
  char tmp[sizeof addr.sun_path];
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  int n = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(addr.sun_path, tmp, (size_t)n + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  (void)unlink(tmp);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || chmod(tmp, 0666) != 0 || listen(fd, SOMAXCONN) != 0 ||
      rename(tmp, path) != 0) {
    int saved = errno;
    (void)unlink(tmp);
    (void)close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

static int drop_to(const char *user) {
  if (geteuid() != 0) return 0; /* already unprivileged: nothing to drop */
  /* pcscd exits at start when it can neither stat nor mkdir its IPC dir, and unprivileged it cannot
   * create it: make it as the system instance would (root, 0755). pcscd only fails to write its
   * pid file there, which is harmless. */
  if (mkdir(PCSCD_IPC_DIR, 0755) != 0 && errno != EEXIST) return -1;
  struct passwd *pw = getpwnam(user);
  if (pw == NULL) {
    errno = ENOENT;
    return -1;
  }
  if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) return -1;
  if (setuid(0) == 0) { /* the drop must be irreversible */
    errno = EPERM;
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *user = NULL;
  int die_with_parent = 0;
  if (argc < 4) return usage();
  const char *path = argv[1];
  int i = 2;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--user") == 0 && i + 1 < argc) {
      user = argv[++i];
    } else if (strcmp(argv[i], "--die-with-parent") == 0) {
      die_with_parent = 1;
    } else {
      return usage();
    }
  }
  if (i + 1 >= argc) return usage();
  char **command = &argv[i + 1];
  pid_t parent = getppid();

  int fd = make_socket(path);
  if (fd < 0) return fail("cannot create socket", path);
  if (fd != LISTEN_FD) {
    if (dup2(fd, LISTEN_FD) != LISTEN_FD) return fail("dup2", NULL);
    (void)close(fd);
  }
  if (user != NULL && drop_to(user) != 0) return fail("cannot switch to user", user);
  /* After the drop: a credential change clears the parent-death signal. It survives execv. */
  if (die_with_parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) return fail("prctl", NULL);
    if (getppid() != parent) return 0; /* the parent died before prctl */
  }

  char pid[24];
  snprintf(pid, sizeof pid, "%ld", (long)getpid()); /* execv keeps the pid */
  if (setenv("LISTEN_FDS", "1", 1) != 0 || setenv("LISTEN_PID", pid, 1) != 0) return fail("setenv", NULL);
  (void)unsetenv("LISTEN_FDNAMES");
  execv(command[0], command);
  return fail("cannot exec", command[0]);
}
