/* Minimal Cortex-M startup for manipgen's test firmware (and a starting point for a board):
 * the vector table and a reset handler that enables the FPU, then enters newlib's _start (which
 * sets up .bss, semihosting and calls main). A board's own startup (CMSIS, RTOS) replaces this. */
#include <stdint.h>

extern void _start(void);
/* A linker-script symbol (the initial stack pointer), declared as a function only so that the
 * vector table can be an array of function pointers in ISO C. */
extern void __stack_top(void);

void mg_reset_handler(void);
static void mg_fault(void);

static void mg_fault(void)
{
    for (;;) {
    }
}

__attribute__((section(".vectors"), used))
static void (*const mg_vectors[16])(void) = {
    __stack_top,                       /* initial stack pointer */
    mg_reset_handler,
    mg_fault, mg_fault, mg_fault, mg_fault, mg_fault,     /* NMI, HardFault, MemManage, BusFault, UsageFault */
    0, 0, 0, 0,
    mg_fault,                          /* SVCall */
    mg_fault, 0,
    mg_fault,                          /* PendSV */
    mg_fault,                          /* SysTick (not enabled: the firmware polls it) */
};

void mg_reset_handler(void)
{
    volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= 0xFu << 20;              /* CP10 and CP11 (the FPU): full access */
    __asm__ volatile ("dsb\n\tisb" : : : "memory");
    _start();
    for (;;) {
    }
}
