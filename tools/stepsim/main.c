/* main.c - the stepsim executable: all of the command line lives in cli.c (testable in-process). */
#include <stdio.h>

#include "cli.h"

int main(int argc, char **argv) {
    return cli_main(argc, argv, stdout, stderr);
}
