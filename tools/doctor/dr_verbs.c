/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The doctor's RDMA side: the only file of the tool that calls ibv_*.
 * Device, port and GID listing (GID types and netdevs from sysfs, as
 * rdma-core's own tools do), and a one-message RC exchange with a peer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "util/time.h"

static const char *port_state_name(enum ibv_port_state s)
{
	return ibv_port_state_str(s);
}

static unsigned mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

/* One line of sysfs (newline stripped) into buf; "" when unreadable. */
static void sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static int gid_is_zero(const union ibv_gid *g)
{
	static const uint8_t zero[16];

	return !memcmp(g->raw, zero, 16);
}

/* The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), else 0. */
static int gid_ipv4(const union ibv_gid *g, char *buf, size_t len)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};

	if (memcmp(g->raw, prefix, 12))
		return 0;
	inet_ntop(AF_INET, g->raw + 12, buf, (socklen_t)len);
	return 1;
}

/* List port p of ctx; fills *out; returns 1 if the port is usable. */
static int scan_port(struct dr_report *rep, struct ibv_context *ctx,
		     const char *dev, uint8_t p, struct dr_port *out)
{
	struct ibv_port_attr pa;
	char path[256], type[32], ndev[64], addr[64], ip4[64], fix[200];
	int is_eth, shown = 0, v2v4 = -1;

	memset(out, 0, sizeof(*out));
	if (ibv_query_port(ctx, p, &pa)) {
		dr_warn(rep, NULL, "%s port %u: ibv_query_port: %s", dev, p,
			strerror(errno));
		return 0;
	}
	is_eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	printf("        port %u: %s, active MTU %u (max %u), link layer "
	       "%s, %d GID entries%s\n",
	       p, port_state_name(pa.state), mtu_bytes(pa.active_mtu),
	       mtu_bytes(pa.max_mtu), is_eth ? "Ethernet (RoCE)" : "InfiniBand",
	       pa.gid_tbl_len, is_eth ? "" : "");
	if (!is_eth)
		printf("        port %u: LID %u\n", p, pa.lid);
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;
		int v4;

		if (ibv_query_gid(ctx, p, i, &g) || gid_is_zero(&g))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%d",
			 dev, p, i);
		sysfs_line(path, type, sizeof(type));
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d",
			 dev, p, i);
		sysfs_line(path, ndev, sizeof(ndev));
		inet_ntop(AF_INET6, g.raw, addr, sizeof(addr));
		v4 = gid_ipv4(&g, ip4, sizeof(ip4));
		if (v4 && strstr(type, "v2") && v2v4 < 0) {
			v2v4 = i;
			snprintf(out->ipv4, sizeof(out->ipv4), "%s", ip4);
		}
		printf("          GID[%d] %-40s %-12s %-8s%s%s%s\n", i, addr,
		       type[0] ? type : (is_eth ? "?" : "IB"), ndev,
		       v4 ? " IPv4 " : "", v4 ? ip4 : "",
		       v4 && strstr(type, "v2") ? "  <- RoCEv2 IPv4" : "");
		shown++;
	}
	if (!shown)
		printf("          (no GID entries)\n");
	out->port = p;
	out->active = pa.state == IBV_PORT_ACTIVE;
	out->is_eth = is_eth;
	out->mtu = mtu_bytes(pa.active_mtu);
	out->mtu_enum = pa.active_mtu;
	out->lid = pa.lid;
	out->gid_v2_ipv4 = v2v4;
	snprintf(out->dev, sizeof(out->dev), "%s", dev);
	if (!out->active) {
		snprintf(fix, sizeof(fix),
			 "bring the link up (`ip link set <netdev> up`, "
			 "check the cable/switch); `rdma link show` shows the "
			 "state of %s",
			 dev);
		dr_problem(rep, fix, "%s port %u is %s, not ACTIVE", dev, p,
			   port_state_name(pa.state));
		return 0;
	}
	if (is_eth && v2v4 < 0) {
		snprintf(fix, sizeof(fix),
			 "give the netdev under %s an IPv4 address (`ip addr "
			 "add A.B.C.D/N dev <netdev>`): RoCEv2 GIDs follow it",
			 dev);
		dr_problem(rep, fix,
			   "%s port %u has no RoCEv2 IPv4 GID: ranks cannot "
			   "be addressed by device_ip",
			   dev, p);
		return 0;
	}
	if (out->mtu && out->mtu < 1024)
		dr_warn(rep,
			"raise the netdev MTU (`ip link set <netdev> mtu 9000` "
			"gives RoCE 4096)",
			"%s port %u: active MTU %u bytes is small", dev, p,
			out->mtu);
	dr_ok("%s port %u usable%s%s (GID index %d)", dev, p,
	      is_eth ? ", RoCEv2 IPv4 " : "", is_eth ? out->ipv4 : "",
	      is_eth ? v2v4 : 0);
	return 1;
}

unsigned dr_rdma_scan(struct dr_report *rep, const char *need_rdma,
		      struct dr_port *ports, unsigned max, unsigned *nports_p)
{
	struct ibv_device **list;
	int n = 0;
	unsigned usable = 0;

	dr_section("RDMA devices");
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		const char *fix =
			"load an RDMA driver (hardware: mlx5_ib etc.; "
			"Soft-RoCE: `modprobe rdma_rxe && rdma link "
			"add rxe0 type rxe netdev eth0`)";

		if (!need_rdma)
			dr_ok("no RDMA devices%s: fine, shared memory is all "
			      "ranks on this host need (ranks on other hosts, "
			      "or HCCL_INTRA_ROCE_ENABLE=1, would need one: "
			      "--multi-host checks for that)",
			      list ? "" : " (libibverbs: no kernel support)");
		else
			dr_problem(rep, fix,
				   "no RDMA devices, but %s needs one%s",
				   need_rdma,
				   list ? ""
					: " (libibverbs: no kernel "
					  "support)");
		if (list)
			ibv_free_device_list(list);
		*nports_p = 0;
		return 0;
	}
	for (int d = 0; d < n; d++) {
		const char *name = ibv_get_device_name(list[d]);
		struct ibv_context *ctx = ibv_open_device(list[d]);
		struct ibv_device_attr da;
		char path[256], numa[16], fix[160], mr[32];

		if (!ctx) {
			snprintf(fix, sizeof(fix),
				 "check permissions of /dev/infiniband/"
				 "uverbs* (group rdma) and that %s's driver "
				 "is loaded",
				 name);
			dr_problem(rep, fix, "%s: ibv_open_device: %s", name,
				   strerror(errno));
			continue;
		}
		if (ibv_query_device(ctx, &da)) {
			dr_warn(rep, NULL, "%s: ibv_query_device: %s", name,
				strerror(errno));
			ibv_close_device(ctx);
			continue;
		}
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/device/numa_node", name);
		sysfs_line(path, numa, sizeof(numa));
		if (da.max_mr_size >= (1ull << 50))
			snprintf(mr, sizeof(mr), "unlimited");
		else
			snprintf(mr, sizeof(mr), "%llu MiB",
				 (unsigned long long)(da.max_mr_size >> 20));
		printf("device  %s: %u port(s), fw %s, max QPs %d, max MR %s"
		       "%s%s\n",
		       name, da.phys_port_cnt, da.fw_ver[0] ? da.fw_ver : "-",
		       da.max_qp, mr, numa[0] ? ", NUMA node " : "", numa);
		for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
			struct dr_port port;

			if (scan_port(rep, ctx, name, p, &port) && usable < max)
				ports[usable++] = port;
		}
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	if (!usable)
		dr_problem(rep,
			   "see the port lines above; `rdma link show` and "
			   "`ibv_devinfo -v` give details",
			   "%d RDMA device(s) but no usable port", n);
	*nports_p = usable;
	return (unsigned)n;
}

/* ---- one RC message ---- */

struct wire_qp {
	uint32_t qpn, psn;
	uint16_t lid;
	uint8_t gid_index, pad;
	uint8_t gid[16];
};

struct rc {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
};

#define RC_MSG "openhccl doctor rc ping"
#define RC_BUF 4096

static void rc_close(struct rc *rc)
{
	if (rc->qp)
		ibv_destroy_qp(rc->qp);
	if (rc->mr)
		ibv_dereg_mr(rc->mr);
	if (rc->cq)
		ibv_destroy_cq(rc->cq);
	if (rc->pd)
		ibv_dealloc_pd(rc->pd);
	if (rc->ctx)
		ibv_close_device(rc->ctx);
	free(rc->buf);
}

static int rc_open(struct rc *rc, const struct dr_port *port, char *why,
		   size_t len)
{
	struct ibv_device **list;
	struct ibv_qp_init_attr qia = {0};
	struct ibv_qp_attr qa = {0};
	int n = 0;
	const char *step;

	memset(rc, 0, sizeof(*rc));
	list = ibv_get_device_list(&n);
	for (int d = 0; list && d < n && !rc->ctx; d++)
		if (!strcmp(ibv_get_device_name(list[d]), port->dev))
			rc->ctx = ibv_open_device(list[d]);
	if (list)
		ibv_free_device_list(list);
	step = "ibv_open_device";
	if (!rc->ctx)
		goto fail;
	step = "ibv_alloc_pd";
	rc->pd = ibv_alloc_pd(rc->ctx);
	if (!rc->pd)
		goto fail;
	step = "ibv_create_cq";
	rc->cq = ibv_create_cq(rc->ctx, 4, NULL, NULL, 0);
	if (!rc->cq)
		goto fail;
	step = "malloc";
	rc->buf = calloc(1, RC_BUF);
	if (!rc->buf)
		goto fail;
	step = "ibv_reg_mr";
	rc->mr = ibv_reg_mr(rc->pd, rc->buf, RC_BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!rc->mr)
		goto fail;
	qia.send_cq = rc->cq;
	qia.recv_cq = rc->cq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = 1;
	qia.cap.max_recv_wr = 1;
	qia.cap.max_send_sge = 1;
	qia.cap.max_recv_sge = 1;
	step = "ibv_create_qp";
	rc->qp = ibv_create_qp(rc->pd, &qia);
	if (!rc->qp)
		goto fail;
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = port->port;
	qa.pkey_index = 0;
	qa.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	step = "ibv_modify_qp(INIT)";
	errno = ibv_modify_qp(rc->qp, &qa,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS);
	if (errno)
		goto fail;
	return 0;
fail:
	snprintf(why, len, "%s on %s: %s", step, port->dev,
		 strerror(errno ? errno : EIO));
	rc_close(rc);
	return -1;
}

static int rc_connect(struct rc *rc, const struct dr_port *port,
		      const struct wire_qp *me, const struct wire_qp *peer,
		      char *why, size_t len)
{
	struct ibv_qp_attr qa = {0};
	int err;

	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = (enum ibv_mtu)port->mtu_enum;
	qa.dest_qp_num = ntohl(peer->qpn);
	qa.rq_psn = ntohl(peer->psn);
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 12;
	qa.ah_attr.port_num = port->port;
	qa.ah_attr.dlid = ntohs(peer->lid);
	if (port->is_eth) {
		qa.ah_attr.is_global = 1;
		memcpy(qa.ah_attr.grh.dgid.raw, peer->gid, 16);
		qa.ah_attr.grh.sgid_index = me->gid_index;
		qa.ah_attr.grh.hop_limit = 64;
	}
	err = ibv_modify_qp(rc->qp, &qa,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	if (err) {
		snprintf(why, len, "ibv_modify_qp(RTR): %s", strerror(err));
		return -1;
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 6;
	qa.rnr_retry = 6;
	qa.sq_psn = ntohl(me->psn);
	qa.max_rd_atomic = 1;
	err = ibv_modify_qp(rc->qp, &qa,
			    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				    IBV_QP_MAX_QP_RD_ATOMIC);
	if (err) {
		snprintf(why, len, "ibv_modify_qp(RTS): %s", strerror(err));
		return -1;
	}
	return 0;
}

/* Wait for one completion until deadline; 0 if it succeeded. */
static int rc_wait(struct rc *rc, uint64_t deadline, char *why, size_t len)
{
	struct ibv_wc wc;

	for (;;) {
		int n = ibv_poll_cq(rc->cq, 1, &wc);

		if (n < 0) {
			snprintf(why, len, "ibv_poll_cq failed");
			return -1;
		}
		if (n == 1) {
			if (wc.status == IBV_WC_SUCCESS)
				return 0;
			snprintf(why, len, "completion error: %s",
				 ibv_wc_status_str(wc.status));
			return -1;
		}
		if (dr_now_ms() > deadline) {
			snprintf(why, len, "no completion within the timeout");
			return -1;
		}
	}
}

/* Send or receive one frame of type with exactly len bytes; 0 or -1. */
static int xchg(struct ohc_hs *hs, int fd, int out, uint8_t type, void *body,
		size_t len)
{
	struct ohc_hs_hello m = {.type = type,
				 .to = out ? 0 : OHC_HS_ANY,
				 .body = body,
				 .len = len};

	return (out ? ohc_hs_hello_send(hs, fd, &m)
		    : ohc_hs_hello_recv(hs, fd, &m)) < 0
		       ? -1
		       : 0;
}

int dr_rdma_pingpong(struct ohc_hs *hs, int fd, int initiator,
		     const struct dr_port *port, unsigned timeout_ms, char *why,
		     size_t len)
{
	uint64_t deadline = dr_now_ms() + timeout_ms;
	struct wire_qp me = {0}, peer;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = {0}, *rbad;
	struct ibv_send_wr swr = {0}, *sbad;
	union ibv_gid gid;
	struct rc rc;
	uint8_t verdict = 0;
	int rc_ok = -1, err;

	why[0] = '\0';
	hs->deadline = ohc_deadline_after_ms(timeout_ms);
	if (rc_open(&rc, port, why, len))
		return -1;
	me.qpn = htonl(rc.qp->qp_num);
	me.psn = htonl((uint32_t)(rand() & 0xffffff));
	me.lid = htons(port->lid);
	if (port->is_eth) {
		me.gid_index = (uint8_t)port->gid_v2_ipv4;
		if (ibv_query_gid(rc.ctx, port->port, port->gid_v2_ipv4,
				  &gid)) {
			snprintf(why, len, "ibv_query_gid: %s",
				 strerror(errno));
			goto out;
		}
		memcpy(me.gid, gid.raw, 16);
	}
	sge.addr = (uintptr_t)rc.buf;
	sge.length = sizeof(RC_MSG);
	sge.lkey = rc.mr->lkey;
	if (!initiator) {
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		err = ibv_post_recv(rc.qp, &rwr, &rbad);
		if (err) {
			snprintf(why, len, "ibv_post_recv: %s", strerror(err));
			goto out;
		}
		/* ready to receive before the initiator learns our QP */
		if (xchg(hs, fd, 0, DR_T_QP, &peer, sizeof(peer)) ||
		    rc_connect(&rc, port, &me, &peer, why, len) ||
		    xchg(hs, fd, 1, DR_T_QP, &me, sizeof(me)))
			goto io;
		if (rc_wait(&rc, deadline, why, len))
			goto out;
		verdict = memcmp(rc.buf, RC_MSG, sizeof(RC_MSG)) ? 2 : 1;
		if (verdict != 1)
			snprintf(why, len, "the message arrived corrupted");
		if (xchg(hs, fd, 1, DR_T_VERDICT, &verdict, 1))
			goto io;
		rc_ok = verdict == 1 ? 0 : -1;
		goto out;
	}
	if (xchg(hs, fd, 1, DR_T_QP, &me, sizeof(me)) ||
	    xchg(hs, fd, 0, DR_T_QP, &peer, sizeof(peer)))
		goto io;
	if (rc_connect(&rc, port, &me, &peer, why, len))
		goto out;
	memcpy(rc.buf, RC_MSG, sizeof(RC_MSG));
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	err = ibv_post_send(rc.qp, &swr, &sbad);
	if (err) {
		snprintf(why, len, "ibv_post_send: %s", strerror(err));
		goto out;
	}
	if (rc_wait(&rc, deadline, why, len))
		goto out;
	if (xchg(hs, fd, 0, DR_T_VERDICT, &verdict, 1))
		goto io;
	if (verdict != 1)
		snprintf(why, len, "the peer received a corrupted message");
	rc_ok = verdict == 1 ? 0 : -1;
	goto out;
io:
	if (!why[0])
		snprintf(why, len, "exchanging QP addresses over TCP: %s",
			 hs->why);
out:
	rc_close(&rc);
	return rc_ok;
}
