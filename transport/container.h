/* SPDX-License-Identifier: MIT */
/*
 * The object that holds a member: uroce_container_of(ptr, type, member) is the struct @type
 * whose @member is at @ptr (the kernel's container_of). One definition for every layer.
 */
#ifndef UROCE_TRANSPORT_CONTAINER_H
#define UROCE_TRANSPORT_CONTAINER_H

#include <stddef.h>

#define uroce_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
