/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which RDMA device, port and GID a rank uses. The rank's IP decides: the
 * device whose GID table holds that address (as an IPv4-mapped or IPv6
 * GID), RoCE v2 entries preferred over v1. Without an IP the first device
 * (or the named one) and its first RoCE v2 IPv4 GID are used, and the IP
 * is read back from that GID. An explicit GID index overrides the search.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "transport/verbs/verbs.h"
#include "util/log.h"

#define VX_GID_SCAN_MAX 256

/* The GID holding addr (an IPv4-mapped or IPv6 address), or 0. */
static int gid_of_ip(const char *ip, union ibv_gid *gid)
{
	struct in_addr a4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, ip, &a4) == 1) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &a4, 4);
		return 1;
	}
	return inet_pton(AF_INET6, ip, gid->raw) == 1;
}

static int gid_is_ipv4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0,	  0,
					0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

static void ip_of_gid(const union ibv_gid *g, char *buf, size_t len)
{
	if (gid_is_ipv4(g))
		inet_ntop(AF_INET, &g->raw[12], buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, g->raw, buf, (socklen_t)len);
}

static int gid_is_zero(const union ibv_gid *g)
{
	for (unsigned i = 0; i < sizeof(g->raw); i++)
		if (g->raw[i])
			return 0;
	return 1;
}

/*
 * Best GID index on ctx/port: matching want (when given) or, without want,
 * any IPv4-mapped GID; RoCE v2 beats v1. -1 if none.
 */
static int scan_gids(struct ibv_context *ctx, uint8_t port, int tbl_len,
		     const union ibv_gid *want, union ibv_gid *gid_p)
{
	int best = -1, best_v2 = 0;

	for (int i = 0; i < tbl_len && i < VX_GID_SCAN_MAX; i++) {
		struct ibv_gid_entry e;
		int v2;

		if (ohc_vx_query_gid_ex(ctx, port, (uint32_t)i, &e))
			continue;
		if (gid_is_zero(&e.gid))
			continue;
		if (want ? memcmp(e.gid.raw, want->raw, 16)
			 : !gid_is_ipv4(&e.gid))
			continue;
		v2 = e.gid_type == IBV_GID_TYPE_ROCE_V2;
		if (best < 0 || (v2 && !best_v2)) {
			best = i;
			best_v2 = v2;
			*gid_p = e.gid;
		}
	}
	return best;
}

ohc_status_t ohc_vx_dev_open(struct ohc_verbs_iface *vi, const char *ip,
			     const char *ip_origin, const char *dev_name,
			     int gid_index)
{
	uint32_t rank = vi->super.rank;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	union ibv_gid want, gid;
	ohc_status_t status = OHC_ERR_UNSUPPORTED;
	int n = 0, found = -1;
	uint8_t port = 1;

	if (ip && !gid_of_ip(ip, &want)) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: %s '%s' is not an IPv4 or IPv6 address",
			  rank, ip_origin, ip);
		return OHC_ERR_INVALID;
	}
	list = ohc_vx_get_device_list(&n);
	if (!list || n == 0) {
		OHC_INFO(OHC_SS_VERBS, "rank %u: no RDMA device (%s)", rank,
			 list ? "none listed" : strerror(errno));
		ohc_vx_free_device_list(list);
		return OHC_ERR_UNSUPPORTED;
	}
	for (int d = 0; d < n && found < 0; d++) {
		const char *name = ohc_vx_device_name(list[d]);
		struct ibv_device_attr da;

		if (dev_name && dev_name[0] && strcmp(name, dev_name))
			continue;
		ctx = ohc_vx_open_device(list[d]);
		if (!ctx) {
			OHC_WARN(OHC_SS_VERBS, "rank %u: cannot open %s: %s",
				 rank, name, strerror(errno));
			continue;
		}
		if (ohc_vx_query_device(ctx, &da)) {
			ohc_vx_close_device(ctx);
			ctx = NULL;
			continue;
		}
		for (uint8_t p = 1; p <= da.phys_port_cnt && found < 0; p++) {
			struct ibv_port_attr pa;

			if (ohc_vx_query_port(ctx, p, &pa))
				continue;
			if (gid_index >= 0) {
				struct ibv_gid_entry e;

				if (gid_index >= pa.gid_tbl_len ||
				    ohc_vx_query_gid_ex(
					    ctx, p, (uint32_t)gid_index, &e) ||
				    gid_is_zero(&e.gid)) {
					OHC_ERROR(OHC_SS_VERBS,
						  "rank %u: GID index %d does "
						  "not exist on %s port %u "
						  "(OPENHCCL_RDMA_GID_INDEX)",
						  rank, gid_index, name, p);
					status = OHC_ERR_INVALID;
					goto err_close;
				}
				if (ip && memcmp(e.gid.raw, want.raw, 16))
					continue;
				found = gid_index;
				gid = e.gid;
			} else {
				found = scan_gids(ctx, p, pa.gid_tbl_len,
						  ip ? &want : NULL, &gid);
			}
			if (found >= 0) {
				port = p;
				vi->mtu = pa.active_mtu;
				snprintf(vi->dev_name, sizeof(vi->dev_name),
					 "%s", name);
			}
		}
		if (found < 0) {
			ohc_vx_close_device(ctx);
			ctx = NULL;
		}
	}
	if (found < 0) {
		if (ip)
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: no RDMA device%s%s has %s %s in "
				  "its GID table%s",
				  rank,
				  dev_name && dev_name[0] ? " named " : "",
				  dev_name && dev_name[0] ? dev_name : "",
				  ip_origin, ip,
				  gid_index >= 0 ? " at that GID index" : "");
		else
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: no RDMA device%s%s has an IPv4 "
				  "RoCE GID (set HCCL_IF_IP or "
				  "OPENHCCL_RDMA_GID_INDEX)",
				  rank,
				  dev_name && dev_name[0] ? " named " : "",
				  dev_name && dev_name[0] ? dev_name : "");
		status = OHC_ERR_INVALID;
		goto err_free;
	}
	vi->ctx = ctx;
	vi->port = port;
	vi->gid_index = found;
	vi->gid = gid;
	ip_of_gid(&gid, vi->ip, sizeof(vi->ip));
	ohc_vx_free_device_list(list);
	OHC_INFO(OHC_SS_VERBS, "rank %u: RDMA device %s port %u GID %d (%s)",
		 rank, vi->dev_name, port, found, vi->ip);
	return OHC_OK;

err_close:
	ohc_vx_close_device(ctx);
err_free:
	ohc_vx_free_device_list(list);
	return status;
}
