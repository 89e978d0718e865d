/* manipgen board ports: what board_template.c and its QEMU port board_qemu.c share. The robot's
 * pipeline header and names (-DMG_ROBOT=<robot> -DMG_ROBOT_UPPER=<ROBOT>
 * -DMG_RT_HEADER="<robot>_rt.h"), the configuration
 * to run (-DMG_CONFIG=<name> -DMG_CONFIG_HEADER="<file>.h" for an exported one, else the generated
 * default) and the SysTick registers (ARMv7-M and ARMv8-M: the same addresses on every Cortex-M).
 * A port for one robot may replace MG(...) by the robot's names and drop this header. */
#ifndef MG_PORT_H
#define MG_PORT_H

#if !defined(MG_ROBOT) || !defined(MG_ROBOT_UPPER) || !defined(MG_RT_HEADER)
#error "define MG_ROBOT (e.g. kuka_iiwa14), MG_ROBOT_UPPER (KUKA_IIWA14) and MG_RT_HEADER (\"kuka_iiwa14_rt.h\")"
#endif

#include <stdint.h>
#include MG_RT_HEADER
#ifdef MG_CONFIG_HEADER
#include MG_CONFIG_HEADER
#endif

#define MG_CAT_(a, b) a##b
#define MG_CAT(a, b) MG_CAT_(a, b)
#define MG(name) MG_CAT(MG_ROBOT, name)
#ifndef MG_CONFIG
#define MG_CONFIG MG(_rt_default_config)
#endif

typedef MG(_rt_input_t) mg_input_t;
typedef MG(_rt_output_t) mg_output_t;

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_ENABLE_TICKINT_CORECLK 7u

#endif /* MG_PORT_H */
