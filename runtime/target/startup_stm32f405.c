/* Start-up of manipgen's STM32F405 board port (board_stm32f405.c), written from the Armv7-M
 * architecture and the STM32F405 reference manual (RM0090): the vector table and a reset handler
 * that prepares C's memory and the FPU, then calls main. No C library start-up (-nostartfiles):
 * nothing of newlib that needs one is linked (no stdio, no heap).
 *
 * The reset handler: copies .data from flash, clears .bss and .state (the pipeline instance),
 * paints the stack below the handler's own frame (for mg_stack_used), points VTOR at the table,
 * gives the FPU (CP10, CP11) full access, then calls main. Where the sections are and how many
 * words they hold come from stm32f405_sections.ld (the symbols mg_*). */
#include <stdint.h>
#include "mg_handlers.h"

/* The word the stack is painted with; mg_stack_used() finds the lowest one overwritten. */
#define MG_STACK_PAINT 0xC5C5C5C5u
/* Words under the stack's top left unpainted: the reset handler's own frame lives there. */
#define MG_STACK_UNPAINTED_WORDS 64u
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define CPACR_CP10_CP11_FULL 0x00F00000u
#define FLASH_START 0x08000000u

typedef void (*mg_handler_t)(void);

/* the linker script's sections: where they start (arrays of words) and their length in words (the
 * address of a symbol the script sets to that number) */
extern uint32_t mg_data_start[];
extern const uint32_t mg_data_load[];
extern uint32_t mg_bss_start[];
extern uint32_t mg_state_start[];
extern uint32_t mg_stack_limit[];
extern const uint8_t mg_data_words[];
extern const uint8_t mg_bss_words[];
extern const uint8_t mg_state_words[];
extern const uint8_t mg_stack_words[];
/* The initial stack pointer (the script's mg_stack_top), declared as a function only so that the
 * vector table can be an array of function pointers in ISO C. */
extern void mg_initial_sp(void);

extern int main(void);
extern const mg_handler_t mg_vectors[16u + 82u];
void mg_reset_handler(void);
void mg_default_handler(void);

static uint32_t words_of(const uint8_t *symbol)
{
    return (uint32_t)symbol;           /* the script's number, as the symbol's address */
}

static void fill(uint32_t *start, uint32_t words, uint32_t value)
{
    uint32_t i;
    for (i = 0u; i < words; ++i) {
        start[i] = value;
    }
}

void mg_reset_handler(void)
{
    const uint32_t data_words = words_of(mg_data_words);
    uint32_t i;
    for (i = 0u; i < data_words; ++i) {
        mg_data_start[i] = mg_data_load[i];
    }
    fill(mg_bss_start, words_of(mg_bss_words), 0u);
    fill(mg_state_start, words_of(mg_state_words), 0u);
    fill(mg_stack_limit, words_of(mg_stack_words) - MG_STACK_UNPAINTED_WORDS, MG_STACK_PAINT);
    SCB_VTOR = FLASH_START;            /* the table at the start of flash (also aliased at 0 at boot) */
    SCB_CPACR |= CPACR_CP10_CP11_FULL; /* CP10 and CP11 (the FPU): full access */
    __asm__ volatile ("dsb\n\tisb" : : : "memory");
    (void)main();
    for (;;) {
    }
}

uint32_t mg_stack_used(void)
{
    const uint32_t words = words_of(mg_stack_words);
    uint32_t i = 0u;
    while ((i < words) && (mg_stack_limit[i] == MG_STACK_PAINT)) {
        ++i;
    }
    return (words - i) * 4u;
}

/* Every exception and interrupt without a handler of its own: stop here (a debugger shows where). */
void mg_default_handler(void)
{
    for (;;) {
    }
}

/* The vector table (Armv7-M: the initial stack pointer, then the exceptions; RM0090's 82 interrupts
 * after them). Its section, .rodata.mg_vectors (-fdata-sections), is placed at 0x08000000 by the
 * linker script. The port's handlers: SysTick_Handler (mg_pil.c) and USART1_IRQHandler (IRQ 37). */
#define D mg_default_handler
const mg_handler_t mg_vectors[16u + 82u] = {
    mg_initial_sp,                     /* initial stack pointer */
    mg_reset_handler,
    D, D, D, D, D,                     /* NMI, HardFault, MemManage, BusFault, UsageFault */
    0, 0, 0, 0,                        /* reserved */
    D, D, 0, D,                        /* SVCall, DebugMonitor, reserved, PendSV */
    SysTick_Handler,
    D, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,                 /* IRQ 0-15 */
    D, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,                 /* IRQ 16-31 */
    D, D, D, D, D, USART1_IRQHandler, D, D, D, D, D, D, D, D, D, D, /* IRQ 32-47: USART1 is 37 */
    D, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,                 /* IRQ 48-63 */
    D, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,                 /* IRQ 64-79 */
    D, D,                                                           /* IRQ 80-81 (81: FPU) */
};
