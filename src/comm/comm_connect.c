/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The communicator's transports: the parameters a transport is opened
 * with, opening every built-in transport, the exchange of address blobs
 * over the bootstrap, the choice of one transport per peer and the
 * connect; and closing them all. Used by create (comm.c), resume
 * (comm_state.c) and the NIC switch (nic_switch.c).
 */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/log.h"

/* One wire record per rank and transport in the address exchange. */
struct addr_rec {
	uint16_t len;
	uint8_t blob[OHC_ADDR_MAX];
};

void ohc_comm_transports_close(struct ohc_comm *comm)
{
	if (comm->eps) {
		for (uint32_t r = 0; r < comm->nranks; r++) {
			struct ohc_ep *ep = comm->eps[r];

			if (!ep)
				continue;
			ep->iface->ops->ep_fini(ep);
			free(ep);
			comm->eps[r] = NULL;
		}
	}
	for (unsigned i = 0; i < comm->nifaces; i++) {
		comm->ifaces[i]->ops->iface_close(comm->ifaces[i]);
		free(comm->ifaces[i]);
	}
	comm->nifaces = 0;
}

void ohc_comm_tp_params(struct ohc_comm *comm, const char *device_ip,
			char *hostid, struct ohc_transport_params *params)
{
	int dev = comm->device;

	snprintf(hostid, 256, "%s", ohc_bootstrap_hostid(comm->bs, comm->rank));
	memset(params, 0, sizeof(*params));
	params->rank = comm->rank;
	params->nranks = comm->nranks;
	params->session = comm->session;
	params->hostid = hostid;
	params->numa_node = ohc_rt_device_numa_node(dev < 0 ? 0 : dev);
	params->ring_bytes = (size_t)ohc_env()->shm_ring_kb * 1024;
	params->cma_bytes = (size_t)ohc_env()->shm_cma_kb * 1024;
	params->zc_bytes = (size_t)ohc_env()->shm_zc_kb * 1024;
	params->spin = 0;
	params->device_ip = device_ip && device_ip[0] ? device_ip : NULL;
	params->device_ip_key = device_ip == comm->cfg.backup_ip
					? "backup_device_ip"
					: "device_ip";
	params->rdma_tc = comm->cfg.rdma_tc;
	params->rdma_sl = comm->cfg.rdma_sl;
}

/*
 * Open every built-in transport, exchange address blobs, pick one
 * transport per peer (the first that reaches it: self, shm, verbs), and
 * connect. Transports nobody uses are closed again.
 */
ohc_status_t ohc_comm_transports_open(struct ohc_comm *comm, uint64_t session,
				      uint64_t deadline)
{
	const struct ohc_env *env = ohc_env();
	unsigned ntp = ohc_transport_count();
	struct ohc_iface *open[OHC_MAX_TRANSPORTS] = {0};
	struct addr_rec *recs = NULL;
	struct ohc_ep **eps_by_tp = NULL;
	struct ohc_transport_params params;
	char hostid[256];
	ohc_status_t status = OHC_OK;

	comm->session = session;
	ohc_comm_tp_params(comm, comm->cfg.device_ip, hostid, &params);

	recs = calloc((size_t)comm->nranks * ntp, sizeof(*recs));
	eps_by_tp = calloc(comm->nranks, sizeof(*eps_by_tp));
	comm->eps = calloc(comm->nranks, sizeof(*comm->eps));
	comm->ep_ops = calloc(comm->nranks, sizeof(*comm->ep_ops));
	if (!recs || !eps_by_tp || !comm->eps || !comm->ep_ops) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}

	for (unsigned t = 0; t < ntp && t < OHC_MAX_TRANSPORTS; t++) {
		const struct ohc_transport_ops *ops = ohc_transport_at(t);
		struct addr_rec *mine = &recs[(size_t)comm->rank * ntp + t];
		struct ohc_iface *iface = calloc(1, ops->iface_size);
		size_t len = OHC_ADDR_MAX;

		if (!iface) {
			status = OHC_ERR_NO_MEMORY;
			goto out;
		}
		iface->ops = ops;
		iface->rank = comm->rank;
		iface->nranks = comm->nranks;
		status = ops->iface_open(iface, &params);
		if (status == OHC_ERR_UNSUPPORTED) {
			/* not on this machine (e.g. no RDMA device) */
			OHC_INFO(OHC_SS_INIT,
				 "rank %u: transport %s not available here",
				 comm->rank, ops->name);
			free(iface);
			status = OHC_OK;
			continue;
		}
		if (status < 0) {
			OHC_WARN(OHC_SS_INIT,
				 "rank %u: transport %s unavailable: %s",
				 comm->rank, ops->name, ohc_status_str(status));
			free(iface);
			status = OHC_OK;
			continue;
		}
		open[t] = iface;
		status = ops->iface_address(iface, mine->blob, &len);
		if (status < 0)
			goto out;
		mine->len = (uint16_t)len;
	}

	status = ohc_bootstrap_allgather(comm->bs, recs, ntp * sizeof(*recs));
	if (status < 0)
		goto out;

	for (uint32_t r = 0; r < comm->nranks; r++) {
		if (r == comm->rank)
			continue;
		for (unsigned t = 0; t < ntp && t < OHC_MAX_TRANSPORTS; t++) {
			const struct addr_rec *peer =
				&recs[(size_t)r * ntp + t];
			struct ohc_iface *iface = open[t];
			struct ohc_ep *ep;

			if (!iface || peer->len == 0 ||
			    peer->len > OHC_ADDR_MAX)
				continue;
			/* HCCL_INTRA_ROCE_ENABLE: peers on this host over
			 * the NIC too, not over a host-only transport */
			if (env->intra_roce_enable &&
			    (iface->ops->caps & OHC_TP_CAP_SAME_HOST) &&
			    !(iface->ops->caps & OHC_TP_CAP_NIC))
				continue;
			if (!iface->ops->iface_reachable(iface, peer->blob,
							 peer->len))
				continue;
			ep = calloc(1, iface->ops->ep_size);
			if (!ep) {
				status = OHC_ERR_NO_MEMORY;
				goto out;
			}
			ep->iface = iface;
			ep->peer = r;
			status = iface->ops->ep_init(iface, ep, r, peer->blob,
						     peer->len);
			if (status < 0) {
				free(ep);
				OHC_ERROR(OHC_SS_INIT,
					  "rank %u: cannot set up %s endpoint "
					  "to rank %u: %s",
					  comm->rank, iface->ops->name, r,
					  ohc_status_str(status));
				goto out;
			}
			comm->eps[r] = ep;
			comm->ep_ops[r] = iface->ops;
			break;
		}
		if (!comm->eps[r]) {
			char has[64] = "";

			/* what the peer could open: a missing one failed
			 * there, and its log says why */
			for (unsigned t = 0; t < ntp && t < OHC_MAX_TRANSPORTS;
			     t++)
				if (recs[(size_t)r * ntp + t].len)
					snprintf(has + strlen(has),
						 sizeof(has) - strlen(has),
						 "%s%s", has[0] ? "," : "",
						 ohc_transport_at(t)->name);
			OHC_ERROR(OHC_SS_INIT,
				  "rank %u: no transport reaches rank %u (host "
				  "%s, transports it opened: %s)%s",
				  comm->rank, r,
				  ohc_bootstrap_hostid(comm->bs, r),
				  has[0] ? has : "none",
				  env->intra_roce_enable
					  ? ": HCCL_INTRA_ROCE_ENABLE=1 needs "
					    "an RDMA device"
					  : ": peers on other hosts need the "
					    "verbs transport and an RDMA "
					    "device");
			status = OHC_ERR_UNAVAILABLE;
			goto out;
		}
	}

	/* Connect per transport, then keep only the transports in use. */
	for (unsigned t = 0; t < ntp && t < OHC_MAX_TRANSPORTS; t++) {
		unsigned n = 0;

		if (!open[t])
			continue;
		for (uint32_t r = 0; r < comm->nranks; r++)
			if (comm->eps[r] && comm->eps[r]->iface == open[t])
				eps_by_tp[n++] = comm->eps[r];
		if (!n) {
			open[t]->ops->iface_close(open[t]);
			free(open[t]);
			open[t] = NULL;
			continue;
		}
		status = open[t]->ops->iface_connect(open[t], eps_by_tp, n,
						     deadline);
		if (status < 0)
			goto out;
		comm->ifaces[comm->nifaces++] = open[t];
		if (open[t]->ops->caps & OHC_TP_CAP_REMOTE_HOST)
			comm->link_class = OHC_LINK_RDMA;
		else if ((open[t]->ops->caps & OHC_TP_CAP_SAME_HOST) &&
			 comm->link_class < OHC_LINK_SHM)
			comm->link_class = OHC_LINK_SHM;
		open[t] = NULL;
	}

out:
	for (unsigned t = 0; t < OHC_MAX_TRANSPORTS; t++) {
		if (!open[t])
			continue;
		for (uint32_t r = 0; comm->eps && r < comm->nranks; r++) {
			if (comm->eps[r] && comm->eps[r]->iface == open[t]) {
				open[t]->ops->ep_fini(comm->eps[r]);
				free(comm->eps[r]);
				comm->eps[r] = NULL;
			}
		}
		open[t]->ops->iface_close(open[t]);
		free(open[t]);
	}
	free(recs);
	free(eps_by_tp);
	return status;
}
