/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bootstrap addresses: parsing ("a.b.c.d", "x::y", "fe80::1%eth0") and
 * formatting, ports, comparison, the wildcard and loopback forms, whether
 * an address is local, and the wire form.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap/bs_internal.h"

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
		ohc_be_put16(out, 6);
		ohc_be_put32(out + 4, a->u.in6.sin6_scope_id);
		memcpy(out + 8, &a->u.in6.sin6_addr, 16);
	} else {
		ohc_be_put16(out, 4);
		memcpy(out + 8, &a->u.in.sin_addr, 4);
	}
	ohc_be_put16(out + 2, bs_addr_port(a));
}

ohc_status_t bs_addr_decode(const uint8_t *in, struct bs_addr *a_p)
{
	struct bs_addr a;
	uint16_t fam = ohc_be_get16(in), port = ohc_be_get16(in + 2);

	memset(&a, 0, sizeof(a));
	if (port == 0)
		return OHC_ERR_INVALID;
	if (fam == 4) {
		a.u.in.sin_family = AF_INET;
		memcpy(&a.u.in.sin_addr, in + 8, 4);
		a.len = sizeof(a.u.in);
	} else if (fam == 6) {
		a.u.in6.sin6_family = AF_INET6;
		a.u.in6.sin6_scope_id = ohc_be_get32(in + 4);
		memcpy(&a.u.in6.sin6_addr, in + 8, 16);
		a.len = sizeof(a.u.in6);
	} else {
		return OHC_ERR_INVALID;
	}
	bs_addr_set_port(&a, port);
	*a_p = a;
	return OHC_OK;
}
