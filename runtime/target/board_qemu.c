/* manipgen's reference board port (board_template.c filled for QEMU's MPS2 boards), the firmware of
 * `manipgen target pil`: processor-in-the-loop. The link (mg_pil.c: the control task on SysTick,
 * the frames and their protocol) is shared with the other ports; this file is the MPS2 boards'
 * part: their CMSDK UART0 (a socket on the host) and the exit through semihosting.
 *
 * Build: runtime/target/Makefile, goal `pil` (-DMG_UART0_BASE, -DMG_UART0_RX_IRQ per board). */
#include <stdint.h>
#include <stdlib.h>
#include "mg_pil.h"   /* the link; mg_port.h: the pipeline header, MG(name), the config, SysTick */

#define NVIC_ISER ((volatile uint32_t *)0xE000E100u)

/* CMSDK APB UART (QEMU's cmsdk-apb-uart) */
#define UART_DATA (*(volatile uint32_t *)(MG_UART0_BASE + 0x0u))
#define UART_STATE (*(volatile uint32_t *)(MG_UART0_BASE + 0x4u))
#define UART_CTRL (*(volatile uint32_t *)(MG_UART0_BASE + 0x8u))
#define UART_INTCLEAR (*(volatile uint32_t *)(MG_UART0_BASE + 0xCu))
#define UART_BAUDDIV (*(volatile uint32_t *)(MG_UART0_BASE + 0x10u))
#define UART_TX_FULL 1u
#define UART_RX_FULL 2u
#define UART_TX_EN 1u
#define UART_RX_EN 2u
#define UART_RX_INT_EN 8u
#define UART_RX_INT 2u

void UART0RX_Handler(void);

/* ---- the port's part of the link (mg_pil.h) ---- */

void mg_board_put(const uint8_t *p, uint32_t n)
{
    uint32_t i;
    for (i = 0u; i < n; ++i) {
        while ((UART_STATE & UART_TX_FULL) != 0u) {
        }
        UART_DATA = p[i];
    }
}

void mg_board_fault(const mg_output_t *output)
{
    (void)output;                       /* the host sees out.fault in the frame; its plant gets the zero torques */
}

uint32_t mg_board_report(uint8_t *p)
{
    (void)p;                            /* nothing beyond the link's counts */
    return 0u;
}

/* ---- the hooks of board_template.c ---- */

static void board_init(void)
{
    UART_BAUDDIV = 16u;                 /* QEMU needs a valid divider; it does not model the rate */
    UART_CTRL = UART_TX_EN | UART_RX_EN | UART_RX_INT_EN;
    NVIC_ISER[MG_UART0_RX_IRQ / 32] = 1u << (MG_UART0_RX_IRQ % 32);
}

void UART0RX_Handler(void)
{
    UART_INTCLEAR = UART_RX_INT;
    while ((UART_STATE & UART_RX_FULL) != 0u) {
        mg_pil_receive((uint8_t)UART_DATA);
    }
}

int main(void)
{
    mg_pil_init();                      /* the pipeline before the first frame can arrive */
    board_init();
    mg_pil_ready();
    while (mg_pil_done() == 0u) {
        __asm__ volatile ("wfi");
    }
    exit(0);
}
