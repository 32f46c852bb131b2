/*
 * Checks the AF_ALG shim the way BlueZ's src/shared/crypto.c uses the kernel crypto API. Reads lines
 * "ecb KEYHEX DATAHEX" or "cmac KEYHEX DATAHEX" (DATAHEX may be "-" for no data) on stdin and prints the
 * result in hex, one line each ("error: …" when a call fails). Run with LD_PRELOAD=<shim>; the expected
 * values (FIPS-197, RFC 4493) are in tools/btvirt/crypto-vectors.ts.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef SOL_ALG
#define SOL_ALG 279
#endif

struct alg_addr {
	unsigned short family;
	unsigned char type[14];
	uint32_t feat, mask;
	unsigned char name[64];
};

static int unhex(const char *s, unsigned char *out, size_t max)
{
	size_t n = strlen(s);
	if (!strcmp(s, "-"))
		return 0;
	if (n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++)
		if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1)
			return -1;
	return (int)(n / 2);
}

static int open_alg(const char *type, const char *name, const unsigned char *key, int keylen)
{
	struct alg_addr addr = { .family = AF_ALG };
	strcpy((char *)addr.type, type);
	strcpy((char *)addr.name, name);
	int fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || setsockopt(fd, SOL_ALG, 1, key, (socklen_t)keylen) < 0)
		return -1;
	int op = accept(fd, NULL, 0);
	close(fd);
	return op;
}

int main(void)
{
	char line[8192], mode[16], keyhex[128], datahex[8000];
	unsigned char key[64], data[4000], out[4000];
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "%15s %127s %7999s", mode, keyhex, datahex) != 3) {
			puts("error: bad line");
			continue;
		}
		int keylen = unhex(keyhex, key, sizeof(key)), len = unhex(datahex, data, sizeof(data));
		int ecb = !strcmp(mode, "ecb");
		int op = keylen < 0 || len < 0 ? -1 : open_alg(ecb ? "skcipher" : "hash", ecb ? "ecb(aes)" : "cmac(aes)", key, keylen);
		if (op < 0) {
			puts("error: setup");
			continue;
		}
		ssize_t got;
		if (ecb) { /* alg_encrypt(): sendmsg with the ALG_SET_OP cmsg, then read */
			uint32_t encrypt = 1;
			char cbuf[CMSG_SPACE(sizeof(encrypt))];
			struct iovec iov = { data, (size_t)len };
			struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
			memset(cbuf, 0, sizeof(cbuf));
			struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
			c->cmsg_level = SOL_ALG;
			c->cmsg_type = 3;
			c->cmsg_len = CMSG_LEN(sizeof(encrypt));
			memcpy(CMSG_DATA(c), &encrypt, sizeof(encrypt));
			got = sendmsg(op, &msg, 0) < 0 ? -1 : read(op, out, (size_t)len);
		} else { /* aes_cmac(): send, then read 16 bytes */
			got = send(op, data, (size_t)len, 0) < 0 ? -1 : read(op, out, 16);
		}
		close(op);
		if (got < 0) {
			puts("error: operation");
			continue;
		}
		for (ssize_t i = 0; i < got; i++)
			printf("%02x", out[i]);
		putchar('\n');
	}
	return 0;
}
