/*
 * LD_PRELOAD shim for a private test pcscd (tools/pcscd/pcscd-daemon.ts).
 *
 * 1. TCP_NODELAY on every accepted socket: Debian's vpcd 3.3 writes the length prefix and the
 *    payload with two send() calls, so Nagle + the card's delayed ACK add ~44 ms per APDU
 *    (vpcd.c never sets TCP_NODELAY: Nagle + delayed ACK, about 40 ms per APDU).
 * 2. bind() to the IPv4/IPv6 wildcard is rewritten to loopback: vpcd always binds 0.0.0.0, and
 *    servers started by tests must not be reachable from the network (vpcd listens on 0.0.0.0:35963 by default, frankmorgner/vsmartcard `vpcd.c`).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);
typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static void *next_symbol(const char *name) {
  void *fn = dlsym(RTLD_NEXT, name);
  if (fn == NULL) errno = ENOSYS;
  return fn;
}

/* Only TCP sockets take the option (pcscd also accept()s on its unix socket). */
static void set_nodelay(int fd) {
  if (fd < 0) return;
  int saved = errno; /* the caller must see accept()'s errno, not ours */
  int domain = 0;
  socklen_t len = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && (domain == AF_INET || domain == AF_INET6)) {
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  errno = saved;
}

int accept(int sockfd, struct sockaddr *addr, socklen_t *addrlen) {
  static accept_fn real;
  if (real == NULL) real = (accept_fn)next_symbol("accept");
  if (real == NULL) return -1;
  int fd = real(sockfd, addr, addrlen);
  set_nodelay(fd);
  return fd;
}

int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
  static accept4_fn real;
  if (real == NULL) real = (accept4_fn)next_symbol("accept4");
  if (real == NULL) return -1;
  int fd = real(sockfd, addr, addrlen, flags);
  set_nodelay(fd);
  return fd;
}

int bind(int sockfd, const struct sockaddr *addr, socklen_t addrlen) {
  static bind_fn real;
  if (real == NULL) real = (bind_fn)next_symbol("bind");
  if (real == NULL) return -1;
  if (addr != NULL && addr->sa_family == AF_INET && addrlen >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in in4;
    memcpy(&in4, addr, sizeof in4);
    if (in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
      in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return real(sockfd, (const struct sockaddr *)&in4, sizeof in4);
    }
  } else if (addr != NULL && addr->sa_family == AF_INET6 &&
             addrlen >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (memcmp(&in6.sin6_addr, &in6addr_any, sizeof in6.sin6_addr) == 0) {
      in6.sin6_addr = in6addr_loopback;
      return real(sockfd, (const struct sockaddr *)&in6, sizeof in6);
    }
  }
  return real(sockfd, addr, addrlen);
}
