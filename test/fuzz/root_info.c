/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root info (HcclRootInfo, 4108 bytes) as HcclCommInitRootInfo reads
 * it from the user: ohc_root_info_check, _name and _session, and the
 * root address that init then takes out of it. The input fills the blob
 * from its start (zeros after it). The three readers must agree on
 * validity; a valid blob's name is a NUL-terminated non-empty string
 * inside the blob, its token non-zero, its address of the family the
 * blob names with the blob's port.
 */
#include <arpa/inet.h>
#include <string.h>

#include "comm/bootstrap/bs_internal.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* on the heap, exactly the blob: ASan sees a read past its end */
	uint8_t *blob = malloc(OHC_ROOT_INFO_BYTES);
	struct fz f = fz_init(data, size);
	ohc_status_t st;
	const char *name;
	uint64_t token;

	if (!blob)
		return 0;
	fz_bytes(&f, blob, OHC_ROOT_INFO_BYTES);
	st = ohc_root_info_check(blob);
	name = ohc_root_info_name(blob);
	token = ohc_root_info_session(blob);
	FZ_ASSERT(st == OHC_OK || st == OHC_ERR_INVALID);
	FZ_ASSERT((st == OHC_OK) == (name != NULL));
	FZ_ASSERT((st == OHC_OK) == (token != 0));
	if (st == OHC_OK) {
		struct bs_addr a;
		uint16_t fam = ohc_be_get16(blob + 6);

		FZ_ASSERT(name > (const char *)blob &&
			  name < (const char *)blob + OHC_ROOT_INFO_BYTES);
		FZ_ASSERT(name[0] &&
			  memchr(name, '\0',
				 (size_t)((const char *)blob +
					  OHC_ROOT_INFO_BYTES - name)));
		FZ_ASSERT(bs_root_info_addr(blob, &a) == OHC_OK);
		FZ_ASSERT(bs_addr_family(&a) ==
			  (fam == 4 ? AF_INET : AF_INET6));
		FZ_ASSERT(bs_addr_port(&a) == ohc_be_get16(blob + 8));
		FZ_ASSERT(bs_addr_port(&a) != 0);
	}
	FZ_ASSERT(ohc_root_info_check(NULL) == OHC_ERR_NULL);
	free(blob);
	return 0;
}
