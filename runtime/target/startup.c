/* Minimal Cortex-M startup for manipgen's QEMU firmware (and a starting point for a board): the
 * vector table and a reset handler that enables the FPU, then enters newlib's _start (which sets
 * up .bss, semihosting and calls main). A board's own startup (CMSIS, RTOS) replaces this.
 *
 * The handlers a port defines (CMSIS names): SysTick_Handler (the control timer of
 * board_template.c) and UART0RX_Handler (the QEMU port's serial line, board_qemu.c). Undefined,
 * they are the default handler, which stops. MG_UART0_RX_IRQ: the UART's receive interrupt number
 * on the board (0 on mps2-an386 and mps2-an500, 32 on mps2-an505; runtime/target/Makefile). */
#include <stdint.h>

#ifndef MG_UART0_RX_IRQ
#define MG_UART0_RX_IRQ 0
#endif

extern void _start(void);
/* A linker-script symbol (the initial stack pointer), declared as a function only so that the
 * vector table can be an array of function pointers in ISO C. */
extern void __stack_top(void);

void mg_reset_handler(void);
void mg_default_handler(void);
void SysTick_Handler(void) __attribute__((weak, alias("mg_default_handler")));
void UART0RX_Handler(void) __attribute__((weak, alias("mg_default_handler")));

void mg_default_handler(void)
{
    for (;;) {
    }
}

#define D mg_default_handler
#if MG_UART0_RX_IRQ == 0
#define IRQ0 UART0RX_Handler
#define IRQ32 D
#elif MG_UART0_RX_IRQ == 32
#define IRQ0 D
#define IRQ32 UART0RX_Handler
#else
#error "MG_UART0_RX_IRQ: 0 (mps2-an386, mps2-an500) or 32 (mps2-an505)"
#endif

__attribute__((section(".vectors"), used))
static void (*const mg_vectors[16 + 48])(void) = {
    __stack_top,                       /* initial stack pointer */
    mg_reset_handler,
    D, D, D, D, D,                     /* NMI, HardFault, MemManage, BusFault, UsageFault */
    D, 0, 0, 0,                        /* SecureFault (v8-M), reserved */
    D,                                 /* SVCall */
    D, 0,                              /* DebugMonitor, reserved */
    D,                                 /* PendSV */
    SysTick_Handler,
    IRQ0, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,      /* IRQ 0-15 */
    D, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,         /* IRQ 16-31 */
    IRQ32, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,     /* IRQ 32-47 */
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
