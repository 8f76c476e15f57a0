/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for cm_decode(). The input is the RoCEv2 part of a UDP payload, as for
 * fuzz_decode (the same seeds, CM MADs among them): the MAD after BTH and DETH. It must either
 * be refused with a named error, or decode to a message that encodes to 256 bytes which decode
 * to the same message and encode to the same bytes again. Any other outcome aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/wire.h"

#define BTH_DETH 20

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cm_msg a, b;
	uint8_t once[CM_MAD_LEN], twice[CM_MAD_LEN];
	enum cm_err err;

	if (size < BTH_DETH)
		return 0;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	err = cm_decode(data + BTH_DETH, size - BTH_DETH, &a);
	if (err != CM_OK) {
		if (!strcmp(cm_err_str(err), "unknown error"))
			abort();
		return 0;
	}
	if (cm_encode(&a, once) != CM_MAD_LEN || cm_decode(once, sizeof(once), &b) != CM_OK ||
	    memcmp(&a, &b, sizeof(a)) || cm_encode(&b, twice) != CM_MAD_LEN ||
	    memcmp(once, twice, sizeof(once))) {
		fprintf(stderr, "fuzz_cm: attribute %#x does not round-trip\n", a.hdr.attr_id);
		abort();
	}
	return 0;
}
