/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bootstrap networking: address parsing and formatting, interface and port
 * selection from the environment, non-blocking sockets with deadlines, and
 * the frame reader/writer. Nothing here blocks without a deadline.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

/* ---------------------------------------------------------------------- */
/* Big-endian fields                                                      */

void bs_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void bs_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

void bs_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

uint16_t bs_get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

uint32_t bs_get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v = (v << 8) | p[i];
	return v;
}

uint64_t bs_get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

void bs_text_clean(const uint8_t *text, size_t len, char *buf, size_t size)
{
	size_t i;

	if (!size)
		return;
	for (i = 0; i < len && i + 1 < size && text[i]; i++)
		buf[i] = (text[i] >= 0x20 && text[i] < 0x7f) ? (char)text[i]
							     : '?';
	buf[i] = '\0';
}

ohc_status_t bs_random64(uint64_t *v_p)
{
	uint64_t v = 0;
	size_t got = 0;

	while (got < sizeof(v)) {
		ssize_t n = getrandom((char *)&v + got, sizeof(v) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			OHC_ERROR(OHC_SS_BOOT, "getrandom failed: %s",
				  strerror(errno));
			return OHC_ERR_SYSCALL;
		}
		got += (size_t)n;
	}
	*v_p = v ? v : 0x9e3779b97f4a7c15ull;
	return OHC_OK;
}

/* ---------------------------------------------------------------------- */
/* Addresses                                                              */

ohc_status_t bs_addr_from_ip(const char *ip, uint16_t port, struct bs_addr *a_p)
{
	char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
	struct bs_addr a;
	char *scope;

	if (!ip || !*ip || strlen(ip) >= sizeof(buf))
		return OHC_ERR_INVALID;
	strcpy(buf, ip);
	memset(&a, 0, sizeof(a));
	scope = strchr(buf, '%');
	if (scope)
		*scope++ = '\0';
	if (!scope && inet_pton(AF_INET, buf, &a.u.in.sin_addr) == 1) {
		a.u.in.sin_family = AF_INET;
		a.u.in.sin_port = htons(port);
		a.len = sizeof(a.u.in);
	} else if (inet_pton(AF_INET6, buf, &a.u.in6.sin6_addr) == 1) {
		a.u.in6.sin6_family = AF_INET6;
		a.u.in6.sin6_port = htons(port);
		if (scope) {
			char *end;
			unsigned long idx = if_nametoindex(scope);

			if (!idx) {
				idx = strtoul(scope, &end, 10);
				if (*end || !*scope)
					idx = 0;
			}
			if (!idx || idx > UINT32_MAX)
				return OHC_ERR_INVALID;
			a.u.in6.sin6_scope_id = (uint32_t)idx;
		}
		a.len = sizeof(a.u.in6);
	} else {
		return OHC_ERR_INVALID;
	}
	*a_p = a;
	return OHC_OK;
}

int bs_addr_family(const struct bs_addr *a)
{
	return a->u.sa.sa_family;
}

uint16_t bs_addr_port(const struct bs_addr *a)
{
	return ntohs(a->u.sa.sa_family == AF_INET6 ? a->u.in6.sin6_port
						   : a->u.in.sin_port);
}

void bs_addr_set_port(struct bs_addr *a, uint16_t port)
{
	if (a->u.sa.sa_family == AF_INET6)
		a->u.in6.sin6_port = htons(port);
	else
		a->u.in.sin_port = htons(port);
}

void bs_addr_ip_str(const struct bs_addr *a, char *buf, size_t len)
{
	const void *src = a->u.sa.sa_family == AF_INET6
				  ? (const void *)&a->u.in6.sin6_addr
				  : (const void *)&a->u.in.sin_addr;

	if (!inet_ntop(a->u.sa.sa_family, src, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

const char *bs_addr_str(const struct bs_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN], ifn[IF_NAMESIZE + 1];

	bs_addr_ip_str(a, ip, sizeof(ip));
	if (a->u.sa.sa_family != AF_INET6) {
		snprintf(buf, len, "%s:%u", ip, bs_addr_port(a));
		return buf;
	}
	if (a->u.in6.sin6_scope_id) {
		ifn[0] = '%';
		if (!if_indextoname(a->u.in6.sin6_scope_id, ifn + 1))
			snprintf(ifn + 1, sizeof(ifn) - 1, "%u",
				 a->u.in6.sin6_scope_id);
	} else {
		ifn[0] = '\0';
	}
	snprintf(buf, len, "[%s%s]:%u", ip, ifn, bs_addr_port(a));
	return buf;
}

/* The IPv4 address of a (also from an IPv4-mapped IPv6 address). */
static int addr_v4(const struct bs_addr *a, struct in_addr *v4)
{
	if (a->u.sa.sa_family == AF_INET) {
		*v4 = a->u.in.sin_addr;
		return 1;
	}
	if (a->u.sa.sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&a->u.in6.sin6_addr)) {
		memcpy(v4, &a->u.in6.sin6_addr.s6_addr[12], 4);
		return 1;
	}
	return 0;
}

int bs_addr_same_ip(const struct bs_addr *a, const struct bs_addr *b)
{
	struct in_addr x = {0}, y = {0};
	int ax = addr_v4(a, &x), by = addr_v4(b, &y);

	if (ax || by)
		return ax && by && x.s_addr == y.s_addr;
	return a->u.sa.sa_family == AF_INET6 && b->u.sa.sa_family == AF_INET6 &&
	       !memcmp(&a->u.in6.sin6_addr, &b->u.in6.sin6_addr,
		       sizeof(struct in6_addr));
}

int bs_addr_is_any(const struct bs_addr *a)
{
	if (a->u.sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&a->u.in6.sin6_addr);
	return a->u.in.sin_addr.s_addr == htonl(INADDR_ANY);
}

void bs_addr_make_any(struct bs_addr *a)
{
	uint16_t port = bs_addr_port(a);
	int fam = a->u.sa.sa_family;

	memset(a, 0, sizeof(*a));
	if (fam == AF_INET6) {
		a->u.in6.sin6_family = AF_INET6;
		a->u.in6.sin6_addr = in6addr_any;
		a->len = sizeof(a->u.in6);
	} else {
		a->u.in.sin_family = AF_INET;
		a->u.in.sin_addr.s_addr = htonl(INADDR_ANY);
		a->len = sizeof(a->u.in);
	}
	bs_addr_set_port(a, port);
}

void bs_addr_make_loopback(struct bs_addr *a)
{
	uint16_t port = bs_addr_port(a);

	bs_addr_make_any(a);
	if (a->u.sa.sa_family == AF_INET6)
		a->u.in6.sin6_addr = in6addr_loopback;
	else
		a->u.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bs_addr_set_port(a, port);
}

int bs_addr_is_local(const struct bs_addr *a)
{
	struct ifaddrs *ifa, *i;
	int found = 0;

	if (bs_addr_is_any(a))
		return 1;
	if (getifaddrs(&ifa) != 0)
		return 1; /* let bind() decide */
	for (i = ifa; i && !found; i = i->ifa_next) {
		struct bs_addr b;

		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		memset(&b, 0, sizeof(b));
		memcpy(&b.u.sa, i->ifa_addr,
		       i->ifa_addr->sa_family == AF_INET
			       ? sizeof(struct sockaddr_in)
			       : sizeof(struct sockaddr_in6));
		found = bs_addr_same_ip(a, &b);
	}
	freeifaddrs(ifa);
	return found;
}

void bs_addr_encode(const struct bs_addr *a, uint8_t *out)
{
	memset(out, 0, BS_WIRE_ADDR_BYTES);
	if (a->u.sa.sa_family == AF_INET6) {
		bs_put16(out, 6);
		bs_put32(out + 4, a->u.in6.sin6_scope_id);
		memcpy(out + 8, &a->u.in6.sin6_addr, 16);
	} else {
		bs_put16(out, 4);
		memcpy(out + 8, &a->u.in.sin_addr, 4);
	}
	bs_put16(out + 2, bs_addr_port(a));
}

ohc_status_t bs_addr_decode(const uint8_t *in, struct bs_addr *a_p)
{
	struct bs_addr a;
	uint16_t fam = bs_get16(in), port = bs_get16(in + 2);

	memset(&a, 0, sizeof(a));
	if (port == 0)
		return OHC_ERR_INVALID;
	if (fam == 4) {
		a.u.in.sin_family = AF_INET;
		memcpy(&a.u.in.sin_addr, in + 8, 4);
		a.len = sizeof(a.u.in);
	} else if (fam == 6) {
		a.u.in6.sin6_family = AF_INET6;
		a.u.in6.sin6_scope_id = bs_get32(in + 4);
		memcpy(&a.u.in6.sin6_addr, in + 8, 16);
		a.len = sizeof(a.u.in6);
	} else {
		return OHC_ERR_INVALID;
	}
	bs_addr_set_port(&a, port);
	*a_p = a;
	return OHC_OK;
}

/* ---------------------------------------------------------------------- */
/* Interface selection                                                    */

ohc_status_t bs_ifrule_parse(const char *spec, struct bs_ifrule *rule_p)
{
	struct bs_ifrule r;
	const char *s = spec;

	memset(&r, 0, sizeof(r));
	if (!s)
		return OHC_ERR_INVALID;
	while (*s == ' ')
		s++;
	if (*s == '^') {
		r.exclude = 1;
		s++;
	}
	if (*s == '=') {
		r.exact = 1;
		s++;
	}
	for (;;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);

		while (n && *s == ' ') {
			s++;
			n--;
		}
		while (n && s[n - 1] == ' ')
			n--;
		if (n == 0 || n >= sizeof(r.names[0]) || r.n == BS_IFRULE_MAX)
			return OHC_ERR_INVALID;
		for (size_t i = 0; i < n; i++)
			if (!isgraph((unsigned char)s[i]) || s[i] == '^' ||
			    s[i] == '=')
				return OHC_ERR_INVALID;
		memcpy(r.names[r.n], s, n);
		r.names[r.n][n] = '\0';
		r.n++;
		if (!end)
			break;
		s = end + 1;
	}
	*rule_p = r;
	return OHC_OK;
}

static int rule_name_match(const struct bs_ifrule *rule, unsigned i,
			   const char *ifname)
{
	if (rule->exact)
		return !strcmp(ifname, rule->names[i]);
	return !strncmp(ifname, rule->names[i], strlen(rule->names[i]));
}

int bs_ifrule_match(const struct bs_ifrule *rule, const char *ifname)
{
	for (unsigned i = 0; i < rule->n; i++)
		if (rule_name_match(rule, i, ifname))
			return 1;
	return 0;
}

struct if_cand {
	char name[IF_NAMESIZE];
	struct bs_addr addr;
	int klass;     /* 0 ordinary, 1 docker, 2 loopback */
	int linklocal; /* IPv6 link-local: after the interface's others */
	int seq;       /* getifaddrs order */
};

static int cand_cmp(const void *pa, const void *pb)
{
	const struct if_cand *a = pa, *b = pb;
	int c;

	if (a->klass != b->klass)
		return a->klass - b->klass;
	c = strcmp(a->name, b->name);
	if (c)
		return c;
	if (a->linklocal != b->linklocal)
		return a->linklocal - b->linklocal;
	return a->seq - b->seq;
}

/* Interfaces that are up with an address of family, in automatic order. */
static ohc_status_t cands_collect(int family, struct if_cand **c_p, size_t *n_p)
{
	struct ifaddrs *ifa, *i;
	struct if_cand *c;
	size_t n = 0, cap = 0;

	if (getifaddrs(&ifa) != 0) {
		OHC_ERROR(OHC_SS_BOOT, "getifaddrs failed: %s",
			  strerror(errno));
		return OHC_ERR_SYSCALL;
	}
	for (i = ifa; i; i = i->ifa_next)
		cap++;
	c = calloc(cap ? cap : 1, sizeof(*c));
	if (!c) {
		freeifaddrs(ifa);
		return OHC_ERR_NO_MEMORY;
	}
	for (i = ifa; i; i = i->ifa_next) {
		struct if_cand *x = &c[n];

		if (!i->ifa_addr || i->ifa_addr->sa_family != family ||
		    !(i->ifa_flags & IFF_UP) || !i->ifa_name)
			continue;
		snprintf(x->name, sizeof(x->name), "%s", i->ifa_name);
		if (family == AF_INET) {
			memcpy(&x->addr.u.in, i->ifa_addr,
			       sizeof(x->addr.u.in));
			x->addr.len = sizeof(x->addr.u.in);
		} else {
			memcpy(&x->addr.u.in6, i->ifa_addr,
			       sizeof(x->addr.u.in6));
			x->addr.len = sizeof(x->addr.u.in6);
			x->linklocal =
				IN6_IS_ADDR_LINKLOCAL(&x->addr.u.in6.sin6_addr);
			if (!x->linklocal)
				x->addr.u.in6.sin6_scope_id = 0;
		}
		bs_addr_set_port(&x->addr, 0);
		x->klass = (i->ifa_flags & IFF_LOOPBACK)	? 2
			   : !strncmp(i->ifa_name, "docker", 6) ? 1
								: 0;
		x->seq = (int)n;
		n++;
	}
	freeifaddrs(ifa);
	qsort(c, n, sizeof(*c), cand_cmp);
	*c_p = c;
	*n_p = n;
	return OHC_OK;
}

ohc_status_t bs_addr_select(int family, const struct bs_ifrule *rule,
			    struct bs_addr *a_p, char *ifname_p, size_t len)
{
	struct if_cand *c, *pick = NULL;
	size_t n;
	ohc_status_t status;

	status = cands_collect(family, &c, &n);
	if (status < 0)
		return status;
	if (!rule) {
		pick = n ? &c[0] : NULL;
	} else if (rule->exclude) {
		for (size_t i = 0; i < n && !pick; i++)
			if (!bs_ifrule_match(rule, c[i].name))
				pick = &c[i];
	} else {
		/* The rule's entries in the user's order: first match wins. */
		for (unsigned r = 0; r < rule->n && !pick; r++)
			for (size_t i = 0; i < n && !pick; i++)
				if (rule_name_match(rule, r, c[i].name))
					pick = &c[i];
	}
	if (pick) {
		*a_p = pick->addr;
		if (ifname_p)
			snprintf(ifname_p, len, "%s", pick->name);
	}
	free(c);
	return pick ? OHC_OK : OHC_ERR_NOT_FOUND;
}

int bs_local_addr_forced(void)
{
	const struct ohc_env *env = ohc_env();

	return env->if_ip[0] || env->socket_ifname[0];
}

ohc_status_t bs_local_addr(struct bs_addr *a_p)
{
	const struct ohc_env *env = ohc_env();
	const char *fam = env->socket_family == AF_INET6 ? "IPv6" : "IPv4";
	struct bs_ifrule rule;
	char ifname[IF_NAMESIZE] = "", where[BS_ADDR_STRLEN];
	ohc_status_t status;

	if (env->if_ip[0]) {
		if (bs_addr_from_ip(env->if_ip, 0, a_p) != OHC_OK) {
			OHC_ERROR(OHC_SS_BOOT,
				  "HCCL_IF_IP='%s' is not an IPv4 or IPv6 "
				  "address",
				  env->if_ip);
			return OHC_ERR_INVALID;
		}
		return OHC_OK;
	}
	if (env->socket_ifname[0]) {
		if (bs_ifrule_parse(env->socket_ifname, &rule) != OHC_OK) {
			OHC_ERROR(OHC_SS_BOOT,
				  "HCCL_SOCKET_IFNAME='%s' is not a list of "
				  "interface names or prefixes (eth,enp / ^eth "
				  "/ =eth0 / ^=eth0)",
				  env->socket_ifname);
			return OHC_ERR_INVALID;
		}
		status = bs_addr_select((int)env->socket_family, &rule, a_p,
					ifname, sizeof(ifname));
		if (status == OHC_ERR_NOT_FOUND)
			OHC_ERROR(OHC_SS_BOOT,
				  "no interface that is up with an %s address "
				  "matches HCCL_SOCKET_IFNAME='%s'",
				  fam, env->socket_ifname);
	} else {
		status = bs_addr_select((int)env->socket_family, NULL, a_p,
					ifname, sizeof(ifname));
		if (status == OHC_ERR_NOT_FOUND)
			OHC_ERROR(OHC_SS_BOOT,
				  "no network interface with an %s address is "
				  "up (HCCL_SOCKET_FAMILY)",
				  fam);
	}
	if (status == OHC_OK)
		OHC_DEBUG(OHC_SS_BOOT, "bootstrap address %s (interface %s)",
			  bs_addr_str(a_p, where, sizeof(where)), ifname);
	return status;
}

/* ---------------------------------------------------------------------- */
/* Ports                                                                  */

static int parse_port(const char **sp, uint16_t *port_p)
{
	const char *s = *sp;
	unsigned long v = 0;
	int digits = 0;

	while (*s == ' ')
		s++;
	while (*s >= '0' && *s <= '9' && digits < 6) {
		v = v * 10 + (unsigned long)(*s - '0');
		s++;
		digits++;
	}
	while (*s == ' ')
		s++;
	if (!digits || v == 0 || v > 65535)
		return -1;
	*port_p = (uint16_t)v;
	*sp = s;
	return 0;
}

ohc_status_t bs_ports_parse(const char *spec, struct bs_ports *p_p)
{
	struct bs_ports p;
	const char *s = spec;

	memset(&p, 0, sizeof(p));
	if (!s)
		return OHC_ERR_INVALID;
	snprintf(p.desc, sizeof(p.desc), "%s", spec);
	while (*s == ' ')
		s++;
	if (!strncasecmp(s, "auto", 4)) {
		s += 4;
		while (*s == ' ')
			s++;
		if (*s)
			return OHC_ERR_INVALID;
		p.ephemeral = 1;
		*p_p = p;
		return OHC_OK;
	}
	for (;;) {
		uint16_t lo, hi;

		if (p.n == BS_PORT_RANGES_MAX || parse_port(&s, &lo))
			return OHC_ERR_INVALID;
		hi = lo;
		if (*s == '-') {
			s++;
			if (parse_port(&s, &hi) || hi < lo)
				return OHC_ERR_INVALID;
		}
		p.lo[p.n] = lo;
		p.hi[p.n] = hi;
		p.n++;
		if (!*s)
			break;
		if (*s != ',')
			return OHC_ERR_INVALID;
		s++;
	}
	*p_p = p;
	return OHC_OK;
}

static ohc_status_t ports_from_range_env(struct bs_ports *p_p)
{
	const char *spec = ohc_env()->host_port_range;

	if (bs_ports_parse(spec, p_p) != OHC_OK) {
		OHC_ERROR(OHC_SS_BOOT,
			  "HCCL_HOST_SOCKET_PORT_RANGE='%s' is not a list of "
			  "ports and ranges (e.g. 60000,60050-60100) or auto",
			  spec);
		return OHC_ERR_INVALID;
	}
	snprintf(p_p->desc, sizeof(p_p->desc), "HCCL_HOST_SOCKET_PORT_RANGE=%s",
		 spec);
	return OHC_OK;
}

ohc_status_t bs_ports_for_root(struct bs_ports *p_p)
{
	const struct ohc_env *env = ohc_env();
	struct bs_ports p;
	int64_t hi;

	if (env->host_port_range[0])
		return ports_from_range_env(p_p);
	memset(&p, 0, sizeof(p));
	hi = env->if_base_port + 31 > 65535 ? 65535 : env->if_base_port + 31;
	p.n = 1;
	p.lo[0] = (uint16_t)env->if_base_port;
	p.hi[0] = (uint16_t)hi;
	p.ephemeral = 1;
	snprintf(p.desc, sizeof(p.desc), "HCCL_IF_BASE_PORT %u-%u or ephemeral",
		 p.lo[0], p.hi[0]);
	*p_p = p;
	return OHC_OK;
}

ohc_status_t bs_ports_for_rank(struct bs_ports *p_p)
{
	if (ohc_env()->host_port_range[0])
		return ports_from_range_env(p_p);
	memset(p_p, 0, sizeof(*p_p));
	p_p->ephemeral = 1;
	snprintf(p_p->desc, sizeof(p_p->desc), "ephemeral");
	return OHC_OK;
}

void bs_ports_exact(uint16_t port, struct bs_ports *p_p)
{
	memset(p_p, 0, sizeof(*p_p));
	p_p->n = 1;
	p_p->lo[0] = p_p->hi[0] = port;
	snprintf(p_p->desc, sizeof(p_p->desc), "port %u", port);
}

/* ---------------------------------------------------------------------- */
/* Sockets                                                                */

static void set_nodelay(int fd)
{
	int one = 1;

	/* Best effort: only latency depends on it. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* socket + bind + listen on one port; -1 with errno on failure. */
static int try_listen(const struct bs_addr *addr, uint16_t port)
{
	struct bs_addr a = *addr;
	int fd, one = 1, err;

	bs_addr_set_port(&a, port);
	fd = socket(a.u.sa.sa_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, &a.u.sa, a.len) || listen(fd, SOMAXCONN)) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

ohc_status_t bs_listen(struct bs_addr *addr, const struct bs_ports *ports,
		       int *fd_p)
{
	char where[BS_ADDR_STRLEN];
	struct bs_addr bound;
	socklen_t len = sizeof(bound.u);
	int fd = -1;

	bs_addr_ip_str(addr, where, sizeof(where));
	for (unsigned i = 0; i <= ports->n && fd < 0; i++) {
		unsigned lo = 0, hi = 0;

		if (i == ports->n && !ports->ephemeral)
			break;
		if (i < ports->n) {
			lo = ports->lo[i];
			hi = ports->hi[i];
		}
		for (unsigned port = lo; port <= hi && fd < 0; port++) {
			fd = try_listen(addr, (uint16_t)port);
			if (fd >= 0)
				break;
			if (errno != EADDRINUSE) {
				OHC_ERROR(OHC_SS_BOOT,
					  "cannot listen on %s port %u: %s",
					  where, port, strerror(errno));
				return errno == EADDRNOTAVAIL ? OHC_ERR_INVALID
							      : OHC_ERR_SYSCALL;
			}
		}
	}
	if (fd < 0) {
		OHC_ERROR(OHC_SS_BOOT,
			  "cannot listen on %s: every port of %s is in use",
			  where, ports->desc);
		return OHC_ERR_UNAVAILABLE;
	}
	memset(&bound, 0, sizeof(bound));
	if (getsockname(fd, &bound.u.sa, &len) != 0) {
		OHC_ERROR(OHC_SS_BOOT, "getsockname on %s failed: %s", where,
			  strerror(errno));
		close(fd);
		return OHC_ERR_SYSCALL;
	}
	bs_addr_set_port(addr, ntohs(bound.u.sa.sa_family == AF_INET6
					     ? bound.u.in6.sin6_port
					     : bound.u.in.sin_port));
	*fd_p = fd;
	return OHC_OK;
}

ohc_status_t bs_connect_start(const struct bs_addr *a, int *fd_p, int *err_p)
{
	int fd = socket(a->u.sa.sa_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		*err_p = errno;
		return OHC_ERR_SYSCALL;
	}
	set_nodelay(fd);
	if (connect(fd, &a->u.sa, a->len) == 0) {
		*fd_p = fd;
		return OHC_OK;
	}
	if (errno == EINPROGRESS || errno == EINTR) {
		*fd_p = fd;
		return OHC_INPROGRESS;
	}
	*err_p = errno;
	close(fd);
	return OHC_ERR_TCP_CONNECT;
}

ohc_status_t bs_connect_check(int fd, int *err_p)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		err = errno;
	if (err) {
		*err_p = err;
		return OHC_ERR_TCP_CONNECT;
	}
	return OHC_OK;
}

static int connect_retryable(int err)
{
	return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET ||
	       err == EHOSTUNREACH || err == ENETUNREACH || err == EAGAIN;
}

ohc_status_t bs_connect(const struct bs_addr *a, uint64_t deadline, int retry,
			int *fd_p, int *err_p)
{
	int backoff_ms = 10;

	for (;;) {
		ohc_status_t status;
		int fd = -1;

		status = bs_connect_start(a, &fd, err_p);
		if (status == OHC_INPROGRESS) {
			status = bs_wait_fd(fd, POLLOUT, deadline);
			if (status == OHC_OK)
				status = bs_connect_check(fd, err_p);
			else if (status == OHC_ERR_TIMEOUT)
				*err_p = ETIMEDOUT;
			if (status != OHC_OK)
				close(fd);
		}
		if (status == OHC_OK) {
			*fd_p = fd;
			return OHC_OK;
		}
		if (status == OHC_ERR_TIMEOUT)
			return status;
		if (!retry || !connect_retryable(*err_p))
			return status;
		if (ohc_deadline_passed(deadline))
			return OHC_ERR_TIMEOUT;
		(void)bs_poll(NULL, 0, deadline, backoff_ms);
		if (ohc_deadline_passed(deadline))
			return OHC_ERR_TIMEOUT;
		backoff_ms = backoff_ms >= 100 ? 200 : backoff_ms * 2;
	}
}

ohc_status_t bs_accept(int lfd, int *fd_p, struct bs_addr *peer_p, int *err_p)
{
	struct bs_addr peer;

	for (;;) {
		socklen_t len = sizeof(peer.u);
		int fd;

		memset(&peer, 0, sizeof(peer));
		fd = accept4(lfd, &peer.u.sa, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			set_nodelay(fd);
			peer.len = len;
			*peer_p = peer;
			*fd_p = fd;
			return OHC_OK;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return OHC_INPROGRESS;
		*err_p = errno;
		return OHC_ERR_SYSCALL;
	}
}

int bs_poll(struct pollfd *fds, nfds_t n, uint64_t deadline, int cap_ms)
{
	for (;;) {
		int ms = ohc_deadline_left_ms(deadline, cap_ms);
		int r = poll(fds, n, ms);

		if (r >= 0 || errno != EINTR)
			return r;
		if (ohc_deadline_passed(deadline))
			return 0;
	}
}

ohc_status_t bs_wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int r = bs_poll(&p, 1, deadline, 1000);

		if (r > 0)
			return OHC_OK;
		if (r < 0)
			return OHC_ERR_SYSCALL;
		if (ohc_deadline_passed(deadline))
			return OHC_ERR_TIMEOUT;
	}
}

/* ---------------------------------------------------------------------- */
/* Frames                                                                 */

void bs_hdr_encode(const struct bs_hdr *h, uint8_t *out)
{
	bs_put16(out, BS_WIRE_MAGIC);
	out[2] = BS_WIRE_VERSION;
	out[3] = h->type;
	bs_put32(out + 4, 0);
	bs_put64(out + 8, h->ctx);
	bs_put64(out + 16, h->tag);
	bs_put64(out + 24, h->len);
}

ohc_status_t bs_hdr_decode(const uint8_t *in, struct bs_hdr *h_p)
{
	if (bs_get16(in) != BS_WIRE_MAGIC || in[2] != BS_WIRE_VERSION ||
	    in[3] == 0 || in[3] > BS_T_MAX || bs_get32(in + 4) != 0)
		return OHC_ERR_INVALID;
	h_p->type = in[3];
	h_p->ctx = bs_get64(in + 8);
	h_p->tag = bs_get64(in + 16);
	h_p->len = bs_get64(in + 24);
	return OHC_OK;
}

void bs_rx_init(struct bs_rx *rx, int fd)
{
	memset(rx, 0, sizeof(*rx));
	rx->fd = fd;
}

void bs_rx_reset(struct bs_rx *rx)
{
	free(rx->payload);
	rx->payload = NULL;
	rx->hgot = 0;
	rx->pgot = 0;
	rx->pcap = 0;
	rx->have_hdr = 0;
}

/* recv() once: >0 bytes, OHC_INPROGRESS, or OHC_ERR_REMOTE. */
static ohc_status_t rx_recv(int fd, void *buf, size_t len, size_t *got_p,
			    int *err_p)
{
	for (;;) {
		ssize_t n = recv(fd, buf, len, 0);

		if (n > 0) {
			*got_p = (size_t)n;
			return OHC_OK;
		}
		if (n == 0) {
			*err_p = 0;
			return OHC_ERR_REMOTE;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return OHC_INPROGRESS;
		*err_p = errno;
		return OHC_ERR_REMOTE;
	}
}

/*
 * The payload buffer doubles as bytes arrive, from BS_RX_FIRST: a header
 * alone (up to max_len) makes us hold no more than a peer really sent.
 */
#define BS_RX_FIRST ((size_t)64 << 10)

static ohc_status_t rx_grow(struct bs_rx *rx)
{
	size_t cap = rx->pcap ? rx->pcap * 2 : BS_RX_FIRST;
	uint8_t *p;

	if (cap > rx->hdr.len)
		cap = rx->hdr.len;
	p = realloc(rx->payload, cap);
	if (!p)
		return OHC_ERR_NO_MEMORY;
	rx->payload = p;
	rx->pcap = cap;
	return OHC_OK;
}

ohc_status_t bs_rx_read(struct bs_rx *rx, size_t max_len, int *err_p)
{
	ohc_status_t status;
	size_t got;

	for (;;) {
		if (!rx->have_hdr) {
			status = rx_recv(rx->fd, rx->hbuf + rx->hgot,
					 BS_HDR_BYTES - rx->hgot, &got, err_p);
			if (status != OHC_OK)
				return status;
			rx->hgot += got;
			if (rx->hgot < BS_HDR_BYTES)
				continue;
			if (bs_hdr_decode(rx->hbuf, &rx->hdr) != OHC_OK ||
			    rx->hdr.len > max_len) {
				*err_p = EPROTO;
				return OHC_ERR_INVALID;
			}
			rx->have_hdr = 1;
			rx->pgot = 0;
		}
		if (rx->pgot == rx->hdr.len)
			return OHC_OK;
		if (rx->pgot == rx->pcap) {
			status = rx_grow(rx);
			if (status != OHC_OK)
				return status;
		}
		status = rx_recv(rx->fd, rx->payload + rx->pgot,
				 rx->pcap - rx->pgot, &got, err_p);
		if (status != OHC_OK)
			return status;
		rx->pgot += got;
	}
}

uint8_t *bs_rx_take(struct bs_rx *rx, struct bs_hdr *h_p)
{
	uint8_t *p = rx->payload;

	*h_p = rx->hdr;
	rx->payload = NULL;
	rx->hgot = 0;
	rx->pgot = 0;
	rx->pcap = 0;
	rx->have_hdr = 0;
	return p;
}

void bs_tx_init(struct bs_tx *tx, const struct bs_hdr *h, const void *payload)
{
	memset(tx, 0, sizeof(*tx));
	bs_hdr_encode(h, tx->hbuf);
	tx->payload = payload;
	tx->len = h->len;
}

ohc_status_t bs_tx_write(int fd, struct bs_tx *tx, int *err_p)
{
	size_t total = BS_HDR_BYTES + tx->len;

	while (tx->off < total) {
		struct iovec iov[2];
		struct msghdr m;
		ssize_t n;
		int cnt = 0;

		if (tx->off < BS_HDR_BYTES) {
			iov[cnt].iov_base = tx->hbuf + tx->off;
			iov[cnt++].iov_len = BS_HDR_BYTES - tx->off;
			if (tx->len) {
				iov[cnt].iov_base = (void *)tx->payload;
				iov[cnt++].iov_len = tx->len;
			}
		} else {
			iov[cnt].iov_base =
				(void *)(tx->payload + tx->off - BS_HDR_BYTES);
			iov[cnt++].iov_len = total - tx->off;
		}
		memset(&m, 0, sizeof(m));
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)cnt;
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (n >= 0) {
			tx->off += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return OHC_INPROGRESS;
		*err_p = errno;
		return OHC_ERR_REMOTE;
	}
	return OHC_OK;
}

ohc_status_t bs_tx_own(struct bs_tx *tx)
{
	void *copy;

	if (tx->owned || !tx->len)
		return OHC_OK;
	copy = malloc(tx->len);
	if (!copy)
		return OHC_ERR_NO_MEMORY;
	memcpy(copy, tx->payload, tx->len);
	tx->owned = copy;
	tx->payload = copy;
	return OHC_OK;
}

ohc_status_t bs_send_frame(int fd, const struct bs_hdr *h, const void *payload,
			   uint64_t deadline, int *err_p)
{
	struct bs_tx tx;
	ohc_status_t status;

	bs_tx_init(&tx, h, payload);
	for (;;) {
		status = bs_tx_write(fd, &tx, err_p);
		if (status != OHC_INPROGRESS)
			return status;
		status = bs_wait_fd(fd, POLLOUT, deadline);
		if (status < 0)
			return status;
	}
}

ohc_status_t bs_recv_frame(int fd, size_t max_len, uint64_t deadline,
			   struct bs_hdr *h_p, uint8_t **payload_p, int *err_p)
{
	struct bs_rx rx;
	ohc_status_t status;

	bs_rx_init(&rx, fd);
	for (;;) {
		status = bs_rx_read(&rx, max_len, err_p);
		if (status == OHC_OK) {
			*payload_p = bs_rx_take(&rx, h_p);
			return OHC_OK;
		}
		if (status == OHC_INPROGRESS)
			status = bs_wait_fd(fd, POLLIN, deadline);
		if (status < 0) {
			bs_rx_reset(&rx);
			return status;
		}
	}
}
