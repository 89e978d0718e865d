/* What manipgen's frames are made of, shared by the processor-in-the-loop link (mg_pil.c) and the
 * real-time Linux program (runtime/linux/rt_linux.c): little-endian uint32 fields and the
 * CRC-16/CCITT-FALSE (polynomial 0x1021; start with 0xFFFF) that checks a frame. The host computes
 * the same CRC with Python's binascii.crc_hqx. */
#ifndef MG_FRAME_H
#define MG_FRAME_H

#include <stdint.h>

/* The CRC register after n bytes of p from `start`, four bits at a time: NIBBLE[v] is the register's
 * update for the top nibble v, v * x^16 mod the polynomial (a 32-byte table instead of 512). */
static uint16_t mg_crc16(uint16_t start, const uint8_t *p, uint32_t n)
{
    static const uint16_t NIBBLE[16] = {
        0x0000u, 0x1021u, 0x2042u, 0x3063u, 0x4084u, 0x50A5u, 0x60C6u, 0x70E7u,
        0x8108u, 0x9129u, 0xA14Au, 0xB16Bu, 0xC18Cu, 0xD1ADu, 0xE1CEu, 0xF1EFu,
    };
    uint16_t crc = start;
    uint32_t i;
    for (i = 0u; i < n; ++i) {
        crc = (uint16_t)(crc ^ (uint16_t)((uint16_t)p[i] << 8));
        crc = (uint16_t)((uint16_t)(crc << 4) ^ NIBBLE[crc >> 12]);
        crc = (uint16_t)((uint16_t)(crc << 4) ^ NIBBLE[crc >> 12]);
    }
    return crc;
}

static void mg_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t mg_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

#endif
