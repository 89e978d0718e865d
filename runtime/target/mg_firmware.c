/* manipgen test firmware (`manipgen target run`): replays recorded inputs through the generated
 * real-time step on a Cortex-M in QEMU and writes every output back with the step's cost in SysTick
 * ticks and its stack depth. Files reach the host through semihosting (newlib's rdimon), relative
 * to QEMU's working directory:
 *   mg_in.bin:  uint32 magic "MGT1", count, sizeof config, sizeof input, sizeof output; the
 *               config struct; count input structs (the host writes them in the target's layout,
 *               checked at build time by a probe of every field offset);
 *   mg_out.bin: uint32 magic, sizeof state, calibration ticks of 1000 and 3000 turns of a
 *               two-instruction loop, ticks of an empty measurement, bytes painted, 0, 0; then per
 *               sample the output struct, the step's ticks and the stack bytes it touched.
 * Under QEMU's -icount the SysTick (core clock) advances a fixed virtual time per instruction, so
 * ticks / (ticks per instruction) is the instruction count of the step.
 * Build: -DMG_ROBOT=<robot> -DMG_RT_HEADER="<robot>_rt.h" (runtime/target/Makefile, target firmware).
 * Exit status (QEMU's): 0 ok, 2 file I/O failed, 3 struct sizes differ from the host's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include MG_RT_HEADER

#define MG_CAT_(a, b) a##b
#define MG_CAT(a, b) MG_CAT_(a, b)
#define MG(name) MG_CAT(MG_ROBOT, name)

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define MG_MAGIC 0x3154474Du               /* "MGT1" */
#define MG_PAINT 0xA5C3E1F0u
#define MG_PAINT_WORDS 4096u               /* 16 KiB below the caller's stack pointer */

static MG(_rt_t) rt;
static MG(_rt_config_t) cfg;
static MG(_rt_input_t) in;
static MG(_rt_output_t) out;

static uint32_t elapsed(uint32_t start, uint32_t stop)
{
    return (start - stop) & 0xFFFFFFu;    /* SysTick counts down, 24 bits */
}

/* Ticks of n turns of a two-instruction loop (subs, bne): with the two calibrations the host
 * converts ticks to instructions. */
static uint32_t calibrate(uint32_t n)
{
    uint32_t t0 = SYST_CVR, t1;
    __asm__ volatile ("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
    t1 = SYST_CVR;
    return elapsed(t0, t1);
}

static int put(FILE *f, const void *p, size_t size)
{
    return fwrite(p, size, 1, f) == 1;
}

int main(void)
{
    uint32_t head[5], info[8], count, k;
    FILE *fi = fopen("mg_in.bin", "rb");
    FILE *fo = fopen("mg_out.bin", "wb");
    if (fi == NULL || fo == NULL) {
        exit(2);
    }
    if (fread(head, sizeof head, 1, fi) != 1 || head[0] != MG_MAGIC) {
        exit(2);
    }
    if (head[2] != sizeof cfg || head[3] != sizeof in || head[4] != sizeof out) {
        exit(3);
    }
    count = head[1];
    if (fread(&cfg, sizeof cfg, 1, fi) != 1) {
        exit(2);
    }
    SYST_CSR = 0u;
    SYST_RVR = 0xFFFFFFu;
    SYST_CVR = 0u;
    SYST_CSR = 5u;                          /* enabled, core clock, no interrupt */
    while (SYST_CVR == 0u) {
    }
    info[0] = MG_MAGIC;
    info[1] = (uint32_t)sizeof rt;
    info[2] = calibrate(1000u);
    info[3] = calibrate(3000u);
    {
        uint32_t t0 = SYST_CVR, t1 = SYST_CVR;
        info[4] = elapsed(t0, t1);
    }
    info[5] = MG_PAINT_WORDS * 4u;
    info[6] = 0u;
    info[7] = 0u;
    if (!put(fo, info, sizeof info)) {
        exit(2);
    }
    MG(_rt_init)(&rt, &cfg);
    for (k = 0u; k < count; ++k) {
        uint32_t t0, t1, i, stack[2];
        volatile uint32_t *sp;
        if (fread(&in, sizeof in, 1, fi) != 1) {
            exit(2);
        }
        __asm__ volatile ("mov %0, sp" : "=r"(sp));
        for (i = 4u; i < MG_PAINT_WORDS + 4u; ++i) {
            sp[-(int32_t)i] = MG_PAINT;
        }
        t0 = SYST_CVR;
        MG(_rt_step)(&rt, &in, &out);
        t1 = SYST_CVR;
        for (i = MG_PAINT_WORDS + 3u; i >= 4u && sp[-(int32_t)i] == MG_PAINT; --i) {
        }
        stack[0] = elapsed(t0, t1);
        stack[1] = i * 4u;                 /* bytes below the caller's sp that the step touched */
        if (!put(fo, &out, sizeof out) || !put(fo, stack, sizeof stack)) {
            exit(2);
        }
    }
    fclose(fo);
    fclose(fi);
    exit(0);
}
