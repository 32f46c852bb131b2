/*
 * LD_PRELOAD shim: the kernel crypto API sockets (AF_ALG) that BlueZ's src/shared/crypto.c opens, done in
 * user space with OpenSSL's libcrypto. btvirt's emulated LE controller calls bt_crypto_new() when it is
 * created; on a kernel without AF_ALG that fails and btvirt closes the connection at once. Only the calls
 * crypto.c makes are emulated:
 *
 *   fd = socket(AF_ALG, SOCK_SEQPACKET, 0); bind(fd, {"skcipher","ecb(aes)"} or {"hash","cmac(aes)"});
 *   setsockopt(fd, SOL_ALG, ALG_SET_KEY, key, 16|24|32); op = accept(fd, NULL, 0);
 *   sendmsg(op, {ALG_SET_OP encrypt, data}) | send | write | writev (op, data); read | recv (op, out, n);
 *   close(op), close(fd)
 *
 * Each emulated socket is a real descriptor (a /dev/null open, so close/dup/poll stay sane) whose number
 * indexes the state table below; every other descriptor goes straight to libc. Single-threaded, as btvirt.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef SOL_ALG
#define SOL_ALG 279
#endif
#define ALG_SET_KEY 1
#define ALG_SET_OP 3
#define ALG_OP_DECRYPT 0
#define ALG_OP_ENCRYPT 1

struct alg_addr { /* struct sockaddr_alg (linux/if_alg.h) */
	unsigned short family;
	unsigned char type[14];
	uint32_t feat, mask;
	unsigned char name[64];
};

enum kind { NONE, ECB, CMAC };
enum role { FREE, PARENT, OP };

#define MAX_FD 4096
#define MAX_MSG 4096 /* crypto.c hashes at most a few hundred bytes at once */

struct alg {
	enum role role;
	enum kind kind;
	unsigned char key[32];
	int keylen;
	int decrypt;
	unsigned char in[MAX_MSG];
	size_t inlen;
	unsigned char out[MAX_MSG];
	size_t outlen;
	int ready; /* out holds a result */
};

static struct alg *table[MAX_FD];

/* With MDL_BTVIRT_DIE_WITH_PARENT=1 (tests), btvirt ends with the process that started it: an orphan would
 * hold the fixed /tmp/bt-server-* paths and block every later run on the machine. */
__attribute__((constructor)) static void die_with_parent(void)
{
	const char *v = getenv("MDL_BTVIRT_DIE_WITH_PARENT");
	if (v && !strcmp(v, "1"))
		prctl(PR_SET_PDEATHSIG, SIGTERM);
}

#define REAL(name, ret, ...) \
	static ret (*real_##name)(__VA_ARGS__); \
	if (!real_##name) real_##name = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

static struct alg *find(int fd)
{
	return fd >= 0 && fd < MAX_FD ? table[fd] : NULL;
}

static int new_fd(enum role role, const struct alg *from)
{
	static struct alg blank;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fd >= MAX_FD) {
		REAL(close, int, int);
		real_close(fd);
		errno = EMFILE;
		return -1;
	}
	struct alg *a = OPENSSL_zalloc(sizeof(*a));
	if (!a) {
		REAL(close, int, int);
		real_close(fd);
		errno = ENOMEM;
		return -1;
	}
	*a = from ? *from : blank;
	a->role = role;
	a->inlen = a->outlen = 0;
	a->ready = 0;
	table[fd] = a;
	return fd;
}

static int ecb(struct alg *a)
{
	const EVP_CIPHER *cipher = a->keylen == 16 ? EVP_aes_128_ecb() : a->keylen == 24 ? EVP_aes_192_ecb() : EVP_aes_256_ecb();
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int n = 0, m = 0, ok = ctx && a->inlen % 16 == 0 &&
		EVP_CipherInit_ex(ctx, cipher, NULL, a->key, NULL, !a->decrypt) &&
		EVP_CIPHER_CTX_set_padding(ctx, 0) &&
		EVP_CipherUpdate(ctx, a->out, &n, a->in, (int)a->inlen) &&
		EVP_CipherFinal_ex(ctx, a->out + n, &m);
	EVP_CIPHER_CTX_free(ctx);
	a->outlen = ok ? (size_t)(n + m) : 0;
	return ok;
}

static int cmac(struct alg *a)
{
	const char *name = a->keylen == 16 ? "AES-128-CBC" : a->keylen == 24 ? "AES-192-CBC" : "AES-256-CBC";
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "CMAC", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, (char *)name, 0),
		OSSL_PARAM_construct_end(),
	};
	size_t len = 0;
	int ok = ctx && EVP_MAC_init(ctx, a->key, (size_t)a->keylen, params) &&
		EVP_MAC_update(ctx, a->in, a->inlen) &&
		EVP_MAC_final(ctx, a->out, &len, sizeof(a->out));
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	a->outlen = ok ? len : 0;
	return ok;
}

/* Data sent on an operation socket: kept until the read (a hash takes several sends with MSG_MORE). */
static ssize_t take(struct alg *a, const struct iovec *iov, size_t count)
{
	size_t total = 0;
	if (a->role != OP) {
		errno = EINVAL;
		return -1;
	}
	if (a->ready) { /* a new operation after a result was read */
		a->ready = 0;
		a->inlen = 0;
	}
	for (size_t i = 0; i < count; i++) {
		if (a->inlen + iov[i].iov_len > MAX_MSG) {
			errno = EMSGSIZE;
			return -1;
		}
		memcpy(a->in + a->inlen, iov[i].iov_base, iov[i].iov_len);
		a->inlen += iov[i].iov_len;
		total += iov[i].iov_len;
	}
	return (ssize_t)total;
}

static ssize_t give(struct alg *a, void *buf, size_t len)
{
	if (a->role != OP) {
		errno = EINVAL;
		return -1;
	}
	if (!a->ready) {
		if (!(a->kind == ECB ? ecb(a) : cmac(a))) {
			errno = EINVAL;
			return -1;
		}
		a->ready = 1;
	}
	size_t n = len < a->outlen ? len : a->outlen;
	memcpy(buf, a->out, n);
	a->inlen = 0;
	return (ssize_t)n;
}

int socket(int domain, int type, int protocol)
{
	REAL(socket, int, int, int, int);
	if (domain != AF_ALG)
		return real_socket(domain, type, protocol);
	return new_fd(PARENT, NULL);
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	REAL(bind, int, int, const struct sockaddr *, socklen_t);
	struct alg *a = find(fd);
	if (!a)
		return real_bind(fd, addr, len);
	const struct alg_addr *s = (const struct alg_addr *)addr;
	if (len < sizeof(*s) || s->family != AF_ALG) {
		errno = EINVAL;
		return -1;
	}
	if (!strcmp((const char *)s->type, "skcipher") && !strcmp((const char *)s->name, "ecb(aes)"))
		a->kind = ECB;
	else if (!strcmp((const char *)s->type, "hash") && !strcmp((const char *)s->name, "cmac(aes)"))
		a->kind = CMAC;
	else {
		errno = ENOENT; /* what the kernel says for an algorithm it does not have */
		return -1;
	}
	return 0;
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	REAL(setsockopt, int, int, int, int, const void *, socklen_t);
	struct alg *a = find(fd);
	if (!a)
		return real_setsockopt(fd, level, name, value, len);
	if (level != SOL_ALG || name != ALG_SET_KEY || (len != 16 && len != 24 && len != 32)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(a->key, value, len);
	a->keylen = (int)len;
	return 0;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	REAL(accept4, int, int, struct sockaddr *, socklen_t *, int);
	struct alg *a = find(fd);
	if (!a)
		return real_accept4(fd, addr, len, flags);
	if (a->role != PARENT || a->kind == NONE || a->keylen == 0) {
		errno = EINVAL;
		return -1;
	}
	return new_fd(OP, a);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return accept4(fd, addr, len, 0);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	REAL(sendmsg, ssize_t, int, const struct msghdr *, int);
	struct alg *a = find(fd);
	if (!a)
		return real_sendmsg(fd, msg, flags);
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		if (c->cmsg_level == SOL_ALG && c->cmsg_type == ALG_SET_OP) {
			uint32_t op;
			memcpy(&op, CMSG_DATA(c), sizeof(op));
			a->decrypt = op == ALG_OP_DECRYPT;
		}
	}
	return take(a, msg->msg_iov, msg->msg_iovlen);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	REAL(send, ssize_t, int, const void *, size_t, int);
	struct alg *a = find(fd);
	if (!a)
		return real_send(fd, buf, len, flags);
	struct iovec iov = { (void *)buf, len };
	return take(a, &iov, 1);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	REAL(write, ssize_t, int, const void *, size_t);
	struct alg *a = find(fd);
	if (!a)
		return real_write(fd, buf, len);
	struct iovec iov = { (void *)buf, len };
	return take(a, &iov, 1);
}

ssize_t writev(int fd, const struct iovec *iov, int count)
{
	REAL(writev, ssize_t, int, const struct iovec *, int);
	struct alg *a = find(fd);
	if (!a)
		return real_writev(fd, iov, count);
	return take(a, iov, (size_t)count);
}

ssize_t read(int fd, void *buf, size_t len)
{
	REAL(read, ssize_t, int, void *, size_t);
	struct alg *a = find(fd);
	if (!a)
		return real_read(fd, buf, len);
	return give(a, buf, len);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	REAL(recv, ssize_t, int, void *, size_t, int);
	struct alg *a = find(fd);
	if (!a)
		return real_recv(fd, buf, len, flags);
	return give(a, buf, len);
}

int close(int fd)
{
	REAL(close, int, int);
	struct alg *a = find(fd);
	if (a) {
		OPENSSL_clear_free(a, sizeof(*a));
		table[fd] = NULL;
	}
	return real_close(fd);
}
