/* main.c - the stepsim executable: all of the command line lives in cli.c (testable in-process);
 * the executable alone installs the handler that removes unfinished output files on a signal. */
#include <stdio.h>

#include "cli.h"

int main(int argc, char **argv) {
    cli_install_signal_handlers();
    return cli_main(argc, argv, stdout, stderr);
}
