/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Port lists of the bootstrap listeners ("60000,60050-60100" or "auto"):
 * HCCL_HOST_SOCKET_PORT_RANGE, else HCCL_IF_BASE_PORT for roots and
 * ephemeral ports for ranks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/config.h"
#include "util/log.h"

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
