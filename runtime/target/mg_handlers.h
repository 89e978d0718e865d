/* What the board ports' start-up files and their other files share: the interrupt handlers the
 * vector table names (CMSIS names) and the start-up's stack figure. One declaration each, here. */
#ifndef MG_HANDLERS_H
#define MG_HANDLERS_H

#include <stdint.h>

/* The control task: one sample per SysTick interrupt (mg_pil.c). */
void SysTick_Handler(void);
/* The STM32F405 port's serial line: USART1's interrupt, IRQ 37 (board_stm32f405.c). */
void USART1_IRQHandler(void);
/* The deepest the stack has gone since reset, in bytes below its top (startup_stm32f405.c, which
 * paints the stack at reset). */
uint32_t mg_stack_used(void);

#endif /* MG_HANDLERS_H */
