/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interface selection: HCCL_SOCKET_IFNAME rules, the automatic order of
 * the interfaces that are up, and the local bootstrap address per
 * HCCL_IF_IP > HCCL_SOCKET_IFNAME > automatic.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/config.h"
#include "util/log.h"

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
